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

Exit codes: 0 done, 1 refused by the server or a step stopped late (the reason is printed),
2 bad usage, 3 no answer (the server is not running on this ROS_DOMAIN_ID, or did not answer
in time). ``diff`` needs no server: 0 the same recordings, 1 different (the first difference
is printed), 2 a bag that cannot be read, or two recordings without a message (nothing to
compare). ``trace``: 1 the
server records no frame events, 2 the file cannot be written.
``report`` needs no server: 2 a trace that cannot be read or a page that cannot be written.
"""

import argparse
import os
import signal
import sys
import time

from sim_clock.client.cli_arguments import add_arguments
from sim_clock.client.cli_arguments import check_arguments
from sim_clock.client.cli_format import for_the_command_line
from sim_clock.client.cli_format import format_progress
from sim_clock.client.cli_format import format_progress_line
from sim_clock.client.cli_format import format_reset
from sim_clock.client.cli_format import format_status
from sim_clock.client.cli_format import format_step
from sim_clock.client.cli_format import format_time
from sim_clock.client.cli_format import format_watch
from sim_clock.client.cli_format import measured_rate
from sim_clock.client.top import run_top

EXIT_REFUSED = 1
EXIT_USAGE = 2
#: ``diff``: the recordings differ; one cannot be read, or neither holds a message.
EXIT_DIFFERENT = 1
EXIT_UNREADABLE = 2
EXIT_NO_ANSWER = 3
#: The service each command needs first, under the server's name; what its absence means.
SERVICES = {
    'status': 'get_status', 'step': 'step', 'pause': 'pause', 'resume': 'resume',
    'reset': 'reset', 'sync': 'set_sync', 'rate': 'set_parameters', 'mode': 'set_parameters',
    'resets': 'get_status', 'seek': 'seek', 'progress': 'get_progress',
    'trace': 'get_frame_events', 'top': 'get_frame_events', 'panel': 'get_status',
}
#: The services that only a bag player has (a clock server has get_status but not these).
BAG_SERVICES = ('seek', 'get_progress')


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
    if result.empty:
        print(f'cannot compare: {bag_a} and {bag_b} hold no message, nothing to compare (was '
              'the recorder subscribed before the frames went out?)', file=sys.stderr)
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
    from sim_clock.client.api import SimClockLate
    from sim_clock.client.api import SimClockRefused
    from sim_clock.client.api import SimClockServerGone
    from sim_clock.client.api import SimClockTimeout
    from sim_clock.process.fastdds_profiles import our_profile_meanwhile

    # Ctrl-C ends every command, also where the parent started this one with SIGINT ignored
    # (a background job of a non-interactive shell): rclpy chains its handler to this one.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # The participant is made with the executables' Fast DDS profile (unless one is given): on
    # Fast DDS 3 it has no type lookup service, whose thread could crash the process at its end.
    with our_profile_meanwhile():
        context = rclpy.Context()
        rclpy.init(args=[], context=context)
        client = SimClockClient(
            server=args.server, user_id=getattr(args, 'user_id', ''), timeout_sec=args.timeout,
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
        if args.command == 'panel':
            from sim_clock.client.panel import run_panel
            return run_panel(context, client.server, host=args.host, port=args.port,
                             read_only=args.read_only, interval_s=args.interval,
                             window_ns=args.window, timeout=args.timeout, out=sys.stdout,
                             allow_hosts=args.allow_host)
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
    except SimClockLate as late:
        # Time moved up to where the step stopped: not all that was asked was done.
        print(f'late: {late.reason}', file=sys.stderr)
        return EXIT_REFUSED
    except SimClockServerGone as gone:
        print(f'after {time.monotonic() - started:.1f} s: {gone}', file=sys.stderr)
        return EXIT_NO_ANSWER
    except SimClockTimeout as timeout:
        print(f'no answer after {time.monotonic() - started:.1f} s: {timeout}', file=sys.stderr)
        return EXIT_NO_ANSWER
    finally:
        # All of this process's middleware ends here, while it is whole: the node (the last
        # one takes the DDS participant with it), then the context. The executable's exit
        # then skips the libraries' teardown (sim_clock.process.process_exit).
        client.close()
        rclpy.try_shutdown(context=context)
        context.destroy()


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
    server, waited = client.server, f'{client.timeout_sec:g} s'
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
        return getattr(client, command)().message
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


def _sync(client, args) -> str:
    on = args.state == 'on'
    if getattr(args, 'user_id', None) is None:
        return client.set_sync(on).message
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
