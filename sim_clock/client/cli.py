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
cannot be read.
"""

import argparse
import os
import signal
import sys
import time

from sim_clock.core.units import format_seconds
from sim_clock.names import DEFAULT_SERVER

EXIT_REFUSED = 1
EXIT_USAGE = 2
#: ``diff``: the recordings differ; one cannot be read.
EXIT_DIFFERENT = 1
EXIT_UNREADABLE = 2
EXIT_NO_ANSWER = 3
#: Seconds to wait for the server's service and for its answer, unless --timeout says.
DEFAULT_TIMEOUT = 5.0


def _add_options(parser: argparse.ArgumentParser, defaults: bool) -> None:
    """
    Add the options every command takes.

    On the main parser with their defaults; on each command's parser without (SUPPRESS): given
    after the command, an option overrides, and absent there it leaves the main parser's value.
    """
    def default(value):
        return value if defaults else argparse.SUPPRESS
    parser.add_argument(
        '--server', default=default(DEFAULT_SERVER),
        help=f'full name of the clock server node (default: {DEFAULT_SERVER})')
    parser.add_argument(
        '--timeout', type=float, default=default(DEFAULT_TIMEOUT),
        help=f'seconds to wait for the server (default: {DEFAULT_TIMEOUT})')
    parser.add_argument(
        '--user-id', default=default(''),
        help="user_id to step as (the sync holder's, if one holds sync mode)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the simclock options and commands to ``parser``."""
    _add_options(parser, defaults=True)
    commands = parser.add_subparsers(dest='command', metavar='COMMAND', required=True)

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        _add_options(sub, defaults=False)
        return sub
    status = command('status', 'print the clock server state, its participants and output '
                               'gates, and what the current frame waits for')
    status.add_argument('--watch', action='store_true',
                        help='refresh it in place with the measured rate, until Ctrl-C')
    status.add_argument('--interval', type=float, default=1.0, metavar='S',
                        help='seconds between refreshes with --watch (default: %(default)s)')
    step = command('step', 'advance N frames (sync mode, or while paused); returns once they '
                           'are published')
    step.add_argument('frames', nargs='?', type=int, default=1, metavar='N',
                      help='how many frames (default: %(default)s)')
    step.add_argument('--to', type=int, metavar='FRAME',
                      help='step until the frame counter is FRAME (nothing if it is there)')
    command('pause', 'freeze real-time and free-run time')
    command('resume', 'unfreeze time')
    command('reset', 'time and frame to 0 (epoch + 1)')
    sync = command('sync', 'turn sync mode on (no holder) or off (releases any holder)')
    sync.add_argument('state', choices=('on', 'off'),
                      help='on: time advances only by steps; off: free run')
    rate = command('rate', 'set real_time_factor (0: as fast as possible)')
    rate.add_argument('factor', type=float,
                      help='free-run pace: 1.0 wall pace, 2.0 twice as fast, 0 as fast as '
                           'possible')
    resets = command(
        'resets', 'print each reset as it comes (the last one before first), until Ctrl-C')
    resets.add_argument('--count', type=int, default=0, metavar='N',
                        help='end after N resets (default: 0, never)')
    mode = command('mode', 'switch mode (resets time)')
    mode.add_argument('mode', choices=('real_time', 'simulation'),
                      help='real_time: the wall clock; simulation: frames of time_step')
    diff = command('diff', 'compare two recordings, no server needed: exit 0 if the same, 1 if '
                           'not (naming the first message that differs), 2 if one is unreadable')
    diff.add_argument('bag_a', metavar='BAG_A',
                      help='a rosbag2 directory, or a .mcap or .db3 file')
    diff.add_argument('bag_b', metavar='BAG_B', help='the bag to compare it with')


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


def for_the_command_line(reason: str, holder: str = '') -> str:
    """Return a server's reason with the simclock commands that fix it, not service names."""
    for service, command in COMMANDS_FOR_SERVICES:
        reason = reason.replace(service, command)
    if holder and 'only that user_id may step' in reason:
        reason += (f" (step as it: 'simclock --user-id {holder} step'; or release it: "
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


def watch(client, interval: float, out=sys.stdout) -> int:
    """Print the status line every ``interval`` s, in place on a terminal; 0 on Ctrl-C."""
    if not interval > 0:
        print(f'--interval must be more than 0 s, got {interval}', file=sys.stderr)
        return EXIT_USAGE
    terminal = out.isatty()
    previous = None
    try:
        while True:
            status = client.status()
            current = (time.monotonic_ns(), status.time_ns, status.epoch)
            line = format_watch(status, measured_rate(previous, current))
            previous = current
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


def format_reset(event) -> str:
    """Return the line ``resets`` prints for a :class:`~sim_clock.client.api.ResetEvent`."""
    state = event.mode if event.mode == 'real_time' else (
        f'{event.mode}, sync {"on" if event.sync else "off"}')
    return (f'epoch {event.epoch}: {format_time(event.time_before_ns)} -> '
            f'{format_time(event.time_after_ns)} ({state}): {event.cause}')


def follow_resets(client, count: int, out=sys.stdout) -> int:
    """Print each reset event on its own line; 0 after ``count`` of them (0: never) or Ctrl-C."""
    from rclpy.executors import ExternalShutdownException
    if count < 0:
        print(f'--count must be 0 or more, got {count}', file=sys.stderr)
        return EXIT_USAGE
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
    if args.command == 'diff':
        return diff_bags(args.bag_a, args.bag_b)
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
        server=args.server, user_id=args.user_id, timeout=args.timeout, context=context)
    started = time.monotonic()
    try:
        if args.command == 'status' and args.watch:
            return watch(client, args.interval)
        if args.command == 'resets':
            return follow_resets(client, args.count)
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


def _carry_out(client, args) -> str:
    command = args.command
    if command == 'status':
        return format_status(client.status())
    if command == 'step':
        result = client.step(args.frames) if args.to is None else client.step_to(args.to)
        return f'frame {result.frame}, time {format_time(result.time_ns)} (epoch {result.epoch})'
    if command in ('pause', 'resume', 'reset'):
        return getattr(client, command)()
    if command == 'sync':
        return client.set_sync(args.state == 'on')
    if command == 'rate':
        client.set_parameter('real_time_factor', args.factor)
        return f'real_time_factor set to {args.factor:g}'
    client.set_parameter('mode', args.mode)
    return f'mode set to {args.mode}'


def main(argv=None) -> int:
    """Run ``simclock``; return the exit code."""
    parser = argparse.ArgumentParser(
        prog='simclock', description='Drive the sim_clock clock server.')
    add_arguments(parser)
    args = parser.parse_args(_strip_ros_args(sys.argv[1:] if argv is None else argv))
    try:
        return run(args)
    except KeyboardInterrupt:
        return 130


def _strip_ros_args(argv: list) -> list:
    # `ros2 run` may append --ros-args ...; the command line has no use for them.
    return argv[:argv.index('--ros-args')] if '--ros-args' in argv else argv
