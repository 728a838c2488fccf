# Copyright 2026 sim_clock maintainers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
The ``simclock`` command line's arguments: each command, its options and their checks.

Every value is checked as the server checks it, before any server is looked for: a wrong one
ends the command with exit 2 and a line saying what is allowed.
"""

import argparse
import math

from sim_clock.client.top import DEFAULT_INTERVAL_S
from sim_clock.client.top import DEFAULT_WINDOW_S
from sim_clock.client.top import window_argument
from sim_clock.core.rules import MAX_STEPS_PER_CALL
from sim_clock.core.rules import real_time_factor_from_float
from sim_clock.core.rules import Refused
from sim_clock.core.units import seconds_text_to_ns
from sim_clock.wire.names import DEFAULT_SERVER

USER_ID_COMMANDS = {
    'step': "the user_id to step as (the sync holder's, if one holds sync mode)",
    'sync': "take (on) or give back (off) sync mode as this user_id, as MORAI's sync_mode_cmd "
            'does: then only it may step; without: the operator switch, no holder',
}
#: Seconds a command waits for the server unless --timeout says.
DEFAULT_TIMEOUT = 5.0


# -- argument types: each refuses at once, saying what is allowed (exit code 2) ---------------


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected a number, got {text!r}') from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f'expected a finite number, got {text!r}')
    return value


def _whole(text: str, low: int, high=None, allowed: str = '') -> int:
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < low or (high is not None and value > high):
        raise argparse.ArgumentTypeError(f'expected {allowed}, got {text!r}')
    return value


def frames_argument(text: str) -> int:
    """Parse a number of frames to step: 1 to 10^6, as one call of the server's ~/step takes."""
    return _whole(text, 1, MAX_STEPS_PER_CALL,
                  f'a whole number of frames from 1 to {MAX_STEPS_PER_CALL}')


def frame_argument(text: str) -> int:
    """Parse a frame number: 0 or more."""
    return _whole(text, 0, None, 'a frame number, 0 or more')


def count_argument(text: str) -> int:
    """Parse a count of events: 0 (never end) or more."""
    return _whole(text, 0, None, 'a whole number, 0 (never end) or more')


def seconds_argument(text: str) -> int:
    """Parse seconds on the /clock axis into integer ns, exactly (decimal text, never a float)."""
    try:
        return seconds_text_to_ns(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def port_argument(text: str) -> int:
    """Parse a TCP port: 0 (any free one) to 65535."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f'a port is 0 (any free one) to 65535, got {text!r}')
    return port


def positive_seconds_argument(text: str) -> float:
    """Parse a wall-time duration in seconds: more than 0."""
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f'expected seconds, more than 0, got {text!r}')
    return value


def factor_argument(text: str) -> float:
    """Parse a real_time_factor, checked as the server checks it."""
    value = _number(text)
    try:
        real_time_factor_from_float(value)
    except Refused as refused:
        raise argparse.ArgumentTypeError(refused.reason) from None
    return value


def _add_options(parser: argparse.ArgumentParser, defaults: bool, user_id: str = '') -> None:
    """
    Add the options every command takes, and ``--user-id`` where it means something.

    On the main parser with their defaults; on each command's parser without (SUPPRESS): given
    after the command, an option overrides, and absent there it leaves the main parser's value.
    """
    def default(value):
        return value if defaults else argparse.SUPPRESS
    parser.add_argument(
        '--server', default=default(DEFAULT_SERVER),
        help=f'full name of the clock server node (default: {DEFAULT_SERVER})')
    parser.add_argument(
        '--timeout', type=positive_seconds_argument, default=default(DEFAULT_TIMEOUT),
        help=f'seconds to wait for the server (default: {DEFAULT_TIMEOUT})')
    if user_id:
        parser.add_argument('--user-id', default=argparse.SUPPRESS, help=user_id)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the simclock options and commands to ``parser``."""
    _add_options(parser, defaults=True)
    # Before the command, as simclock took it first: accepted for the commands it applies to
    # (check_arguments refuses it for the others), listed only in their help.
    parser.add_argument('--user-id', default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    commands = parser.add_subparsers(dest='command', metavar='COMMAND', required=True)

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        _add_options(sub, defaults=False, user_id=USER_ID_COMMANDS.get(name, ''))
        return sub
    status = command('status', 'print the clock server state, its participants and output '
                               'gates, and what the current frame waits for')
    status.add_argument('--watch', action='store_true',
                        help='refresh it in place with the measured rate, until Ctrl-C')
    status.add_argument('--interval', type=positive_seconds_argument, default=1.0, metavar='S',
                        help='seconds between refreshes with --watch (default: %(default)s)')
    step = command('step', 'advance N frames, to a frame or to a simulated time (sync mode, or '
                           'while paused); returns once they are published')
    target = step.add_mutually_exclusive_group()
    target.add_argument('frames', nargs='?', type=frames_argument, metavar='N',
                        help=f'how many frames, 1 to {MAX_STEPS_PER_CALL} (default: 1)')
    target.add_argument('--to', type=frame_argument, metavar='FRAME',
                        help='step until the frame counter is FRAME (nothing if it is there '
                             'or past); safe to run again')
    target.add_argument('--until', type=seconds_argument, metavar='SECONDS',
                        help='step until /clock reaches SECONDS (decimal seconds on the /clock '
                             'axis, exact to the ns): the first frame at or after it, so a '
                             'time between two frames is passed by less than a frame; nothing '
                             'if time is there or past; safe to run again')
    command('pause', 'freeze real-time and free-run time')
    command('resume', 'unfreeze time')
    command('reset', 'time and frame to 0 (epoch + 1)')
    sync = command('sync', 'turn sync mode on (no holder) or off (releases any holder); with '
                           '--user-id, take it as that holder or give it back')
    sync.add_argument('state', choices=('on', 'off'),
                      help='on: time advances only by steps; off: free run')
    rate = command('rate', 'set real_time_factor (0: as fast as possible)')
    rate.add_argument('factor', type=factor_argument,
                      help='free-run pace, 0 to 10000: 1.0 wall pace, 2.0 twice as fast, 0 as '
                           'fast as possible')
    resets = command(
        'resets', 'print each reset as it comes (the last one before first), until Ctrl-C')
    resets.add_argument('--count', type=count_argument, default=0, metavar='N',
                        help='end after N resets (default: 0, never)')
    mode = command('mode', 'switch mode (resets time)')
    mode.add_argument('mode', choices=('real_time', 'simulation'),
                      help='real_time: the wall clock; simulation: frames of time_step')
    seek = command('seek', 'bag player: go to a time of the bag (a reset: epoch + 1); the '
                           "bag's messages from that time on play next")
    seek.add_argument('time', type=seconds_argument, metavar='TIME',
                      help="decimal seconds on the /clock axis (the bag's timestamps, or from 0 "
                           'with --start-at-zero), within the bag')
    progress = command('progress', 'bag player: where the replay is (bag time, percent, '
                                   'messages out, measured rate, time left, playback)')
    progress.add_argument('--follow', action='store_true',
                          help='a line refreshed in place, until Ctrl-C')
    progress.add_argument('--interval', type=positive_seconds_argument, default=1.0,
                          metavar='S',
                          help='seconds between refreshes with --follow (default: %(default)s)')
    top = command('top', 'a live view of where simulated time goes: the frame, the measured '
                         'real-time factor, who holds the frame and for how long, and each '
                         "participant's and output gate's hold times, slowest first; q or "
                         'Ctrl-C ends it. Not to a terminal: a plain snapshot every interval, '
                         'a blank line between them, until Ctrl-C')
    top.add_argument('--once', action='store_true',
                     help='print one plain snapshot (no escape codes) and exit')
    top.add_argument('--interval', type=positive_seconds_argument, default=DEFAULT_INTERVAL_S,
                     metavar='S', help='seconds between refreshes (default: %(default)s)')
    top.add_argument('--window', type=window_argument, default=DEFAULT_WINDOW_S, metavar='S',
                     help='the last S seconds of frames the pace and hold times are measured '
                          'over (default: %(default)s)')
    panel = command('panel', 'serve a control panel on a web page and print its URL: the time, '
                             "the mode, who holds the frame, the real-time factor and a bag's "
                             'timeline, live; buttons to pause, resume, step, set the rate, '
                             'switch sync and seek. Ctrl-C ends it')
    panel.add_argument('--host', default='127.0.0.1',
                       help='the address served (default: %(default)s, this host only); any '
                            'other: control needs the token the printed URL carries')
    panel.add_argument('--allow-host', action='append', default=[], metavar='NAME',
                       help='a name the page may be opened by besides the IP addresses, '
                            "localhost and, served beyond loopback, this host's names (a "
                            "reverse proxy's, a DNS alias); requests for any other are refused "
                            '(repeat for more)')
    panel.add_argument('--port', type=port_argument, default=8765,
                       help='the port (default: %(default)s; 0: any free one)')
    panel.add_argument('--read-only', action='store_true',
                       help='a page to watch: no page may press a button')
    panel.add_argument('--interval', type=positive_seconds_argument, default=DEFAULT_INTERVAL_S,
                       metavar='S', help="seconds between two reads of the server's status, "
                                         'as top (default: %(default)s)')
    panel.add_argument('--window', type=window_argument, default=DEFAULT_WINDOW_S, metavar='S',
                       help='the last S seconds of frames the hold times are measured over '
                            '(default: %(default)s)')
    diff = command('diff', 'compare two recordings, no server needed: exit 0 if the same, 1 if '
                           'not (naming the first message that differs), 2 if one is unreadable')
    diff.add_argument('bag_a', metavar='BAG_A',
                      help='a rosbag2 directory, or a .mcap or .db3 file')
    diff.add_argument('bag_b', metavar='BAG_B', help='the bag to compare it with')
    trace = command('trace', "write the server's frame timeline to a trace file (Chrome's "
                             'trace format: open it in ui.perfetto.dev or chrome://tracing)')
    trace.add_argument('--out', required=True, metavar='FILE', help='the trace file to write')
    span = trace.add_mutually_exclusive_group()
    span.add_argument('--frames', type=frames_argument, metavar='N',
                      help='from the N-th last frame on (default: every event the ring holds)')
    span.add_argument('--follow', type=positive_seconds_argument, metavar='SECONDS',
                      help='what is recorded over SECONDS of wall time from now, read a few '
                           'times a second (Ctrl-C: stop early and write what came)')
    report = command('report', 'summarise a trace file written by trace, no server needed: '
                               'print the participants and gates, slowest first, and with '
                               '--html write a page of where the time went')
    report.add_argument('trace_file', metavar='TRACE', help='a file written by simclock trace')
    report.add_argument('--html', metavar='FILE',
                        help='write the report as one self-contained HTML page')


def check_arguments(args) -> str:
    """Return what is wrong with parsed arguments that argparse cannot see, or ''."""
    if getattr(args, 'user_id', None) is not None and args.command not in USER_ID_COMMANDS:
        return (f'--user-id applies to {" and ".join(USER_ID_COMMANDS)} only, not to '
                f'{args.command}')
    return ''


#: The commands that step or change sync mode: the only ones a user_id means something to,
#: and what it means to each.


#: Seconds to wait for the server's service and for its answer, unless --timeout says.
