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
Run one simclock command many times against one clock server; count how the runs ended.

For the rare crash of a short-lived executable at its exit (a signal after it printed its
answer). Run it with the Python of the set-up to test, after scripts/setup.sh:

    .venv-kilted/bin/python scripts/soak_cli_exit.py                  # 10000 x `status`
    .venv-kilted/bin/python scripts/soak_cli_exit.py --runs 300 -- step 1

What it does:

- starts one clock_server in sync mode (its time stands still between steps, so `status`
  answers the same each time) on a DDS domain no other process of this host uses (claimed as
  the test suite claims its domains), with ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST and a
  ROS_HOME, ROS_LOG_DIR and TMPDIR of its own in a new temporary folder;
- waits until `simclock status` answers, then runs `simclock COMMAND...` (default `status`)
  --runs times (default 10000), one after the other, each with its stdout and stderr as pipes
  (block-buffered: PYTHONUNBUFFERED is unset) and PYTHONFAULTHANDLER=1 (a crashing run's
  stderr then shows where, while Python still ran);
- prints: the runs and seconds per run; the crashes (runs ended by a signal), by signal name;
  the other non-zero exit codes; the runs killed after --run-timeout s; and the runs whose
  stdout or stderr differ from the first run's, with a few of them as a diff.

Ctrl-C (SIGINT to this script alone: ``kill -INT PID``) ends the runs early; the figures
then count the runs done. The output of each crash or hang is kept in the temporary folder,
which is then not removed (nor with --keep). Exit status: 0, or 1 when a run crashed or hung;
2 when the server did not answer.
"""

import argparse
import collections
import difflib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from sim_clock.client.domains import domain_for_run

#: The installed executables of the set-up whose Python runs this script.
EXECUTABLES = os.path.join(sys.prefix, 'lib', 'sim_clock')


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        description='Run a simclock command many times against one clock server; count '
                    'crashes at exit.')
    parser.add_argument('--runs', type=int, default=10000, help='how many runs (10000)')
    parser.add_argument('--samples', type=int, default=3,
                        help='how many differing outputs to show (3)')
    parser.add_argument('--run-timeout', type=float, default=60.0,
                        help='seconds after which a run is killed and counted as hung (60)')
    parser.add_argument('--keep', action='store_true',
                        help='keep the temporary folder (server log, ROS logs)')
    parser.add_argument('command', nargs='*', default=['status'],
                        help='the simclock arguments (default: status); put -- before them')
    return parser.parse_args(argv)


def environment(folder: str, domain: int) -> dict:
    """Return the environment of the server and of every run: its domain, host, folder."""
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain), ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST',
               ROS_HOME=os.path.join(folder, 'ros_home'),
               ROS_LOG_DIR=os.path.join(folder, 'ros_log'),
               TMPDIR=os.path.join(folder, 'tmp'), AMENT_PREFIX_PATH=sys.prefix,
               PYTHONFAULTHANDLER='1')
    env.pop('ROS_STATIC_PEERS', None)
    env.pop('PYTHONUNBUFFERED', None)  # output block-buffered, as into a user's pipe
    for name in ('ros_home', 'ros_log', 'tmp'):
        os.makedirs(os.path.join(folder, name), exist_ok=True)
    return env


def run_once(argv, env, timeout):
    """Run ``argv``; return (exit code or None if it hung, stdout, stderr, seconds)."""
    started = time.monotonic()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL)
    try:
        out, err = process.communicate(timeout=timeout)
        code = process.returncode
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        code = None
    return code, out.decode(errors='replace'), err.decode(errors='replace'), (
        time.monotonic() - started)


def signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f'signal {-code}'


def show_difference(run: int, first: tuple, this: tuple) -> None:
    print(f'  run {run}:')
    for name, a, b in (('stdout', first[0], this[0]), ('stderr', first[1], this[1])):
        if a != b:
            lines = list(difflib.unified_diff(a.splitlines(), b.splitlines(), 'first run',
                                              f'run {run}', lineterm='', n=1))
            for line in lines[:20]:
                print(f'    {name}: {line}')
            if len(lines) > 20:
                print(f'    {name}: ... {len(lines) - 20} more lines')


def main(argv=None) -> int:
    args = parse_arguments(sys.argv[1:] if argv is None else argv)
    folder = tempfile.mkdtemp(prefix='soak_cli_exit-')
    domain = domain_for_run()
    env = environment(folder, domain)
    simclock = os.path.join(EXECUTABLES, 'simclock')
    command = [simclock, *args.command]
    print(f'{" ".join(["simclock", *args.command])}: {args.runs} runs on ROS_DOMAIN_ID '
          f'{domain}, in {folder}', flush=True)
    server_log = open(os.path.join(folder, 'server.log'), 'w')
    server = subprocess.Popen(
        [os.path.join(EXECUTABLES, 'clock_server'), '--ros-args', '-p', 'sync:=true'],
        env=env, stdout=server_log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    keep = args.keep
    try:
        code, _, err, _ = run_once([simclock, '--timeout', '30', 'status'], env, 60)
        if code != 0:
            print(f'the server did not answer (simclock status: {code}):\n{err}',
                  file=sys.stderr)
            keep = True
            return 2
        crashes = collections.Counter()
        exits = collections.Counter()
        hung = differing = 0
        first = None
        seconds = []
        for run in range(1, args.runs + 1):
            try:
                code, out, err, took = run_once(command, env, args.run_timeout)
            except KeyboardInterrupt:
                print(f'stopped by Ctrl-C during run {run}: the figures count the runs '
                      'before it', flush=True)
                break
            seconds.append(took)
            if code is None or code < 0:
                keep = True
                kind = 'hung' if code is None else signal_name(code)
                with open(os.path.join(folder, f'run-{run}-{kind}.txt'), 'w') as kept:
                    kept.write(f'--- stdout\n{out}--- stderr\n{err}')
                print(f'run {run}: {kind} (output in {kept.name})', flush=True)
                if code is None:
                    hung += 1
                else:
                    crashes[kind] += 1
            elif code != 0:
                exits[code] += 1
            if first is None:
                first = (out, err)
            elif (out, err) != first:
                differing += 1
                if differing <= args.samples:
                    show_difference(run, first, (out, err))
            if run % 1000 == 0 and run < args.runs:
                print(f'... {run} runs, {sum(crashes.values())} crashes', flush=True)
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server_code = server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server_code = server.wait()
        server_log.close()
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
    print(f'runs: {len(seconds)}, {statistics.fmean(seconds):.3f} s per run '
          f'(median {statistics.median(seconds):.3f} s, longest {max(seconds):.3f} s)')
    print(f'crashes: {sum(crashes.values())}' + (
        f' ({", ".join(f"{name} {count}" for name, count in sorted(crashes.items()))})'
        if crashes else ''))
    print(f'other non-zero exits: {sum(exits.values())}' + (
        f' ({", ".join(f"exit {code}: {count}" for code, count in sorted(exits.items()))})'
        if exits else ''))
    print(f'hung (killed after {args.run_timeout:g} s): {hung}')
    print(f'output different from the first run: {differing}')
    print(f'server exit code: {server_code}' + (f'; kept {folder}' if keep else ''))
    return 1 if crashes or hung else 0


if __name__ == '__main__':
    sys.exit(main())
