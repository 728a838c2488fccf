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
The ``simclock`` command line: ``ros2 run sim_clock simclock <command>`` or ``ros2 simclock``.

Exit codes: 0 done, 1 refused by the server (the reason is printed), 2 bad usage, 3 no answer
(the server is not running on this ROS_DOMAIN_ID, or did not answer in time). ``diff`` needs no
server: 0 the same recordings, 1 different (the first difference is printed), 2 a bag that
cannot be read. ``trace``: 1 the server records no frame events, 2 the file cannot be written.
``report`` needs no server: 2 a trace that cannot be read or a page that cannot be written.
"""

import argparse
import math
import os
import re
import signal
import sys
import time

from sim_clock.client.top import DEFAULT_INTERVAL_S
from sim_clock.client.top import DEFAULT_WINDOW_S
from sim_clock.client.top import run_top
from sim_clock.client.top import window_argument
from sim_clock.core.rules import MAX_STEPS_PER_CALL
from sim_clock.core.rules import real_time_factor_from_float
from sim_clock.core.rules import Refused
from sim_clock.core.units import format_seconds
from sim_clock.core.units import seconds_text_to_ns
from sim_clock.names import DEFAULT_SERVER

EXIT_REFUSED = 1
EXIT_USAGE = 2
#: ``diff``: the recordings differ; one cannot be read.
EXIT_DIFFERENT = 1
EXIT_UNREADABLE = 2
EXIT_NO_ANSWER = 3
#: Seconds to wait for the server's service and for its answer, unless --timeout says.
DEFAULT_TIMEOUT = 5.0
#: The commands that step or change sync mode: the only ones a user_id means something to,
#: and what it means to each.
USER_ID_COMMANDS = {
    'step': "the user_id to step as (the sync holder's, if one holds sync mode)",
    'sync': "take (on) or give back (off) sync mode as this user_id, as MORAI's sync_mode_cmd "
            'does: then only it may step; without: the operator switch, no holder',
}
#: The service each command needs first, under the server's name; what its absence means.
SERVICES = {
    'status': 'get_status', 'step': 'step', 'pause': 'pause', 'resume': 'resume',
    'reset': 'reset', 'sync': 'set_sync', 'rate': 'set_parameters', 'mode': 'set_parameters',
    'resets': 'get_status', 'seek': 'seek', 'progress': 'get_progress',
    'trace': 'get_frame_events', 'top': 'get_frame_events',
}
#: The services that only a bag player has (a clock server has get_status but not these).
BAG_SERVICES = ('seek', 'get_progress')


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


#: Service names in the server's reasons -> the simclock command that does the same, in the
#: order they are replaced (longer phrases first).
COMMANDS_FOR_SERVICES = (
    ("set mode to 'simulation' first, or call ~/sync_mode_cmd or ~/set_sync, which switch to it",
     "run 'simclock mode simulation' first, or 'simclock sync on', which switches to it"),
    ('(~/sync_mode_cmd or ~/set_sync) or pause first',
     "('simclock sync on') or pause first ('simclock pause')"),
    ('an operator calls ~/set_sync false', "an operator runs 'simclock sync off'"),
    ('ask ~/get_status, then step again', "run 'simclock status', then step again"),
    ('~/set_sync false', "'simclock sync off'"),
    ('~/get_status', "'simclock status'"),
)


#: How a refusal names the holder of sync mode.
HELD_BY = re.compile(r"sync mode is held by '([^']*)'")


def for_the_command_line(reason: str, holder: str = '') -> str:
    """
    Return a server's reason with the simclock commands that fix it, not service names.

    ``holder``: who holds sync mode, where the answer says it apart (``sync_mode_cmd``); a
    step's refusal names it in its reason only.
    """
    for service, command in COMMANDS_FOR_SERVICES:
        reason = reason.replace(service, command)
    named = HELD_BY.search(reason)
    holder = holder or (named.group(1) if named else '')
    if holder and 'only that user_id may step' in reason:
        reason += (f" (step as it: 'simclock step --user-id {holder}'; or release it: "
                   "'simclock sync off')")
    return reason


def format_time(time_ns: int) -> str:
    """Format integer nanoseconds as seconds with every digit."""
    return format_seconds(time_ns) + ' s'


def format_status(status) -> str:
    """Return a human-readable status block."""
    if status.mode == 'real_time':
        mode = 'real_time'
    else:
        mode = 'simulation, sync ' + ('on' if status.sync else 'off')
    pace = 'as fast as possible' if status.real_time_factor == 0 else (
        f'{status.real_time_factor:g}x')
    return '\n'.join([
        f'mode:      {mode}' + (' (paused)' if status.paused else ''),
        f'time:      {format_time(status.time_ns)}',
        f'frame:     {status.frame}',
        f'epoch:     {status.epoch}',
        f'holder:    {status.owner or "(none)"}',
        f'time_step: {status.time_step_ns} ns',
        f'rate:      {pace}',
        f'publish:   {status.publish_rate:g} Hz' + _cap(status),
    ] + [f'view:      {view}' for view in status.clock_views]
      + [f'ALARM:     another clock source: {other}' for other in status.other_clock_sources]
      + format_participants(status) + format_gates(status))


def format_participants(status) -> list:
    """
    Return the status lines of the participants: who, what each finished, its slowest answer.

    Then what the current frame waits for: the participants named, or nothing.
    """
    if not status.participants:
        return ['participants: (none)']
    width = max(len(name) for name in status.participants)
    lines = [f'participants: {len(status.participants)}']
    for name, done_ns, slowest in zip(status.participants, status.participants_done_ns,
                                      status.participants_slowest):
        done = format_time(done_ns) if done_ns else '(no frame yet)'
        lines.append(f'  {name:<{width}}  done up to {done}, slowest answer {slowest:.3f} s')
    lines.append('waits for: ' + (', '.join(status.waiting_for) or
                                  'nothing (the current frame is finished)'))
    return lines


def format_gates(status) -> list:
    """Return the status lines of the output gates (none: no line): each, its last release."""
    if not status.output_gates:
        return []
    width = max(len(gate) for gate in status.output_gates)
    lines = [f'output gates: {len(status.output_gates)}']
    for gate, satisfied_ns, slowest in zip(status.output_gates, status.output_gates_satisfied_ns,
                                           status.output_gates_slowest):
        satisfied = format_time(satisfied_ns) if satisfied_ns else '(no frame yet)'
        lines.append(f'  {gate:<{width}}  released up to {satisfied}, slowest wait '
                     f'{slowest:.3f} s')
    lines.append('gates wait for: ' + (', '.join(status.output_gates_waiting) or 'nothing'))
    return lines


def _cap(status) -> str:
    """Say the free-run /clock cap, if one is set."""
    if not status.max_clock_rate:
        return ''
    every = 'every frame' if status.clock_stride == 1 else f'1 frame in {status.clock_stride}'
    return f' idle; free run at most {status.max_clock_rate:g} Hz ({every})'


def measured_rate(previous, current):
    """
    Return simulated over wall time between two ``(wall ns, simulated ns, epoch)`` readings.

    None when it cannot be told: no previous reading, a reset between them (another epoch), or
    no wall time between them. Two answers with the same time give 0, not a division by zero.
    """
    if previous is None or previous[2] != current[2] or current[0] <= previous[0]:
        return None
    return (current[1] - previous[1]) / (current[0] - previous[0])


def format_watch(status, rate) -> str:
    """Return the one line ``status --watch`` shows: frame, time, rate, holder, epoch."""
    if status.mode == 'real_time':
        mode = 'real_time'
    else:
        mode = 'sync on' if status.sync else 'free run'
    measured = '-' if rate is None else f'{rate:.3f}x'
    return (f'{mode}{" (paused)" if status.paused else ""}  frame {status.frame}  time '
            f'{format_time(status.time_ns)}  measured {measured}  holder '
            f'{status.owner or "(none)"}  epoch {status.epoch}')


def refresh(read_line, interval: float, out=sys.stdout) -> int:
    """
    Print ``read_line()`` every ``interval`` s, in place on a terminal; 0 on Ctrl-C.

    Not a terminal (a pipe, a file): a line per refresh.
    """
    terminal = out.isatty()
    try:
        while True:
            line = read_line()
            if terminal:
                out.write('\r\x1b[K' + line)
            else:
                out.write(line + '\n')
            out.flush()
            time.sleep(interval)
    except KeyboardInterrupt:
        if terminal:
            out.write('\n')
        return 0


def watch(client, interval: float, out=sys.stdout) -> int:
    """Print the status line every ``interval`` s with the measured rate; 0 on Ctrl-C."""
    previous = None

    def read_line() -> str:
        nonlocal previous
        status = client.status()
        current = (time.monotonic_ns(), status.time_ns, status.epoch)
        line = format_watch(status, measured_rate(previous, current))
        previous = current
        return line
    return refresh(read_line, interval, out)


def format_progress(progress) -> str:
    """Return a human-readable block of a bag player's progress."""
    if progress.time_left == 0:
        left = '0 s (at or past the end)'
    elif progress.time_left < 0:
        left = '- (not playing, or the pace is not measured yet)'
    else:
        left = f'{progress.time_left:.1f} s'
    rate = f'{progress.rate:.3f}x' if progress.rate > 0 else '- (not measured: paused or idle)'
    return '\n'.join([
        f'playback:  {progress.playback.value}',
        f'bag time:  {format_time(progress.bag_time_ns)} ({progress.percent:.1f}% of '
        f'{format_time(progress.start_ns)} to {format_time(progress.end_ns)})',
        f'messages:  {progress.messages_out} of {progress.messages_total} out since the last '
        f'reset',
        f'epoch:     {progress.epoch}',
        f'rate:      {rate}',
        f'time left: {left}',
    ])


def format_progress_line(progress) -> str:
    """Return the one line ``progress --follow`` shows: the bag player's own progress line."""
    return progress.line() + f'  epoch {progress.epoch}'


def format_reset(event) -> str:
    """Return the line ``resets`` prints for a :class:`~sim_clock.client.api.ResetEvent`."""
    state = event.mode if event.mode == 'real_time' else (
        f'{event.mode}, sync {"on" if event.sync else "off"}')
    return (f'epoch {event.epoch}: {format_time(event.time_before_ns)} -> '
            f'{format_time(event.time_after_ns)} ({state}): {event.cause}')


def follow_resets(client, count: int, out=sys.stdout) -> int:
    """Print each reset event on its own line; 0 after ``count`` of them (0: never) or Ctrl-C."""
    from rclpy.executors import ExternalShutdownException
    seen = []

    def on_reset(event):
        seen.append(event)
        out.write(format_reset(event) + '\n')
        out.flush()
    client.on_reset(on_reset)
    try:
        client.spin_until(lambda: count and len(seen) >= count)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass  # Ctrl-C
    return 0


def diff_bags(bag_a: str, bag_b: str, out=sys.stdout) -> int:
    """Print whether two recordings are the same, or their first difference; exit code."""
    from sim_clock.client.bag_diff import BagDiffError
    from sim_clock.client.bag_diff import compare
    try:
        result = compare(bag_a, bag_b)
    except BagDiffError as error:
        print(f'cannot compare: {error}', file=sys.stderr)
        return EXIT_UNREADABLE
    out.write('\n'.join(result.lines()) + '\n')
    out.flush()
    return 0 if result.same else EXIT_DIFFERENT


def run(args) -> int:
    """Carry out a parsed command; print the result or the reason; return the exit code."""
    problem = check_arguments(args)
    if problem:
        print(f'simclock {args.command}: error: {problem}', file=sys.stderr)
        return EXIT_USAGE
    if args.command == 'diff':
        return diff_bags(args.bag_a, args.bag_b)
    if args.command == 'report':
        from sim_clock.client.report import report_command
        return report_command(args.trace_file, args.html)
    import rclpy
    from sim_clock.client.api import SimClockClient
    from sim_clock.client.api import SimClockRefused
    from sim_clock.client.api import SimClockTimeout

    # Ctrl-C ends every command, also where the parent started this one with SIGINT ignored
    # (a background job of a non-interactive shell): rclpy chains its handler to this one.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    context = rclpy.Context()
    rclpy.init(args=[], context=context)
    client = SimClockClient(
        server=args.server, user_id=getattr(args, 'user_id', ''), timeout=args.timeout,
        context=context)
    started = time.monotonic()
    try:
        missing = _missing_server(client, args)
        if missing:
            print(missing, file=sys.stderr)
            return EXIT_NO_ANSWER
        if args.command == 'status' and args.watch:
            return watch(client, args.interval)
        if args.command == 'progress' and args.follow:
            return refresh(lambda: format_progress_line(client.progress()), args.interval)
        if args.command == 'resets':
            return follow_resets(client, args.count)
        if args.command == 'trace':
            from sim_clock.client.frame_trace import take_trace
            return take_trace(client, args.out, args.frames, args.follow)
        if args.command == 'top':
            return run_top(client, args.interval, args.window, args.once, client.server)
        print(_carry_out(client, args))
        sys.stdout.flush()
        return 0
    except BrokenPipeError:
        # The reader went away (`simclock status | head -3`): what was asked was carried out.
        # Output goes nowhere from now on, so that the exit's flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except SimClockRefused as refused:
        print(f'refused: {for_the_command_line(refused.reason, refused.holder)}',
              file=sys.stderr)
        return EXIT_REFUSED
    except SimClockTimeout as timeout:
        print(f'no answer after {time.monotonic() - started:.1f} s: {timeout}', file=sys.stderr)
        return EXIT_NO_ANSWER
    finally:
        client.close()
        rclpy.try_shutdown(context=context)


def _missing_server(client, args) -> str:
    """
    Wait for the service the command needs; return '' once it is there, else what is missing.

    The message names the command, the server and the service looked for, and says whether
    a clock server that is not a bag player answers there instead (for seek and progress).
    """
    command = args.command
    service = SERVICES[command]
    if command == 'sync' and getattr(args, 'user_id', None) is not None:
        service = 'sync_mode_cmd'
    bag = service in BAG_SERVICES
    missing = client.wait_for_services([service, 'get_status'] if bag else [service])
    if not missing:
        return ''
    server, waited = client.server, f'{client.timeout:g} s'
    looked_for = f"looked for {server}/{service} for {waited}, for 'simclock {command}'"
    if bag and 'get_status' not in missing:
        return (f'the clock server at {server} is not a bag player ({looked_for}): seek and '
                'progress need bag_player (ros2 run sim_clock bag_player BAG)')
    domain = os.environ.get('ROS_DOMAIN_ID', '0')
    kind = 'bag player' if bag else 'clock server'
    return (f'no {kind} answered at {server} ({looked_for}): is it running, in this '
            f'ROS_DOMAIN_ID ({domain}), under that name (--server)?')


def _carry_out(client, args) -> str:
    command = args.command
    if command == 'status':
        return format_status(client.status())
    if command == 'step':
        return _step(client, args)
    if command in ('pause', 'resume', 'reset'):
        return getattr(client, command)()
    if command == 'sync':
        return _sync(client, args)
    if command == 'rate':
        client.set_parameter('real_time_factor', args.factor)
        return f'real_time_factor set to {args.factor:g}'
    if command == 'seek':
        result = client.seek(args.time)
        return f'at {format_time(result.time_ns)} (epoch {result.epoch}): a reset'
    if command == 'progress':
        return format_progress(client.progress())
    client.set_parameter('mode', args.mode)
    return f'mode set to {args.mode}'


def _step(client, args) -> str:
    if args.until is None:
        result = (client.step_to(args.to) if args.to is not None
                  else client.step(args.frames or 1))
        return format_step(result)
    until = format_time(args.until)
    before = client.status()
    if before.time_ns >= args.until:
        how = 'at' if before.time_ns == args.until else 'past'
        return (f'{format_step(before)}: already {how} {until}, nothing stepped (time goes '
                "back only by a reset: 'simclock reset', or 'simclock seek' in a bag)")
    result = client.step_until(args.until)
    if result.time_ns > args.until:
        return (f'{format_step(result)}: {until} is between two frames; stopped at the first '
                'frame after it')
    return format_step(result)


def format_step(result) -> str:
    """Return where a step left time: frame, time and epoch (a StepResult or a Status)."""
    return f'frame {result.frame}, time {format_time(result.time_ns)} (epoch {result.epoch})'


def _sync(client, args) -> str:
    on = args.state == 'on'
    if getattr(args, 'user_id', None) is None:
        return client.set_sync(on)
    if on:
        return f'sync on, held by {client.acquire()!r}'
    client.release()
    return f'sync off, released by {client.user_id!r}'


def main(argv=None) -> int:
    """Run ``simclock``; return the exit code."""
    parser = argparse.ArgumentParser(
        prog='simclock', description='Drive the sim_clock clock server.')
    add_arguments(parser)
    args = parser.parse_args(_strip_ros_args(sys.argv[1:] if argv is None else argv))
    problem = check_arguments(args)
    if problem:
        parser.error(problem)
    try:
        return run(args)
    except KeyboardInterrupt:
        return 130


def _strip_ros_args(argv: list) -> list:
    # `ros2 run` may append --ros-args ...; the command line has no use for them.
    return argv[:argv.index('--ros-args')] if '--ros-args' in argv else argv
