#!/usr/bin/env python3
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
Run chosen tests N times, optionally beside a CPU load, and count each test's failures.

    scripts/flake_hunt.py --runs 10 --load 1 --tier process
    scripts/flake_hunt.py --distro kilted --runs 5 test/scenarios/test_faults.py -k long_step

Each run is one ``scripts/run_tests.sh`` (set-up included, so the same tests CI runs), its
results read from its JUnit file. ``--load K`` keeps K busy-looping processes beside the
runs (one core each): a loaded CI machine. At the end a table gives, per test that failed at
least once, its runs and failures, and the first line of each distinct failure; then the
runs' wall times. The exit status is 1 if any test failed in any run.
"""

import argparse
import collections
import os
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args(argv):
    """Return the options and the arguments left for pytest."""
    parser = argparse.ArgumentParser(
        description='Run chosen tests N times (optionally beside a CPU load) and count each '
                    "test's failures. Arguments after the options go to pytest.")
    parser.add_argument('--runs', type=int, default=10, help='how many runs (default 10)')
    parser.add_argument('--distro', default='jazzy', choices=['jazzy', 'kilted'])
    parser.add_argument('--load', type=int, default=0, metavar='K',
                        help='busy-looping processes beside the runs, one core each '
                             '(default 0)')
    parser.add_argument('--tier', choices=['fast', 'dds', 'process'],
                        help="run one tier only (scripts/run_tests.sh's --tier)")
    args, pytest_args = parser.parse_known_args(argv)
    if args.runs < 1 or args.load < 0:
        parser.error('--runs must be at least 1 and --load at least 0')
    return args, pytest_args


def results(junit_path):
    """Return {test id: (outcome, message)} of one run's JUnit file (passed, failed, skipped)."""
    outcomes = {}
    try:
        tree = ElementTree.parse(junit_path)
    except (OSError, ElementTree.ParseError):
        return outcomes
    for case in tree.iter('testcase'):
        test = f"{case.get('classname')}::{case.get('name')}"
        failure = case.find('failure')
        if failure is None:
            failure = case.find('error')
        if failure is not None:
            message = (failure.get('message') or failure.text or '').strip().splitlines()
            outcomes[test] = ('failed', message[0][:160] if message else '')
        elif case.find('skipped') is not None:
            outcomes[test] = ('skipped', '')
        else:
            outcomes[test] = ('passed', '')
    return outcomes


#: One core's load: a busy loop that ends when its parent does (killed, it could not end it).
BUSY_LOOP = ('import os\n'
             'parent = os.getppid()\n'
             'while os.getppid() == parent:\n'
             '    for _ in range(1_000_000):\n'
             '        pass\n')


def _stopped(signum, frame) -> None:
    """End the hunt on a signal as on Ctrl-C, through its cleanup."""
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv=None) -> int:
    """Run the tests N times and print the table; return 1 if any test failed."""
    args, pytest_args = parse_args(sys.argv[1:] if argv is None else argv)
    command = [os.path.join(ROOT, 'scripts', 'run_tests.sh'), '--distro', args.distro]
    if args.tier:
        command += ['--tier', args.tier]
    # Stopped by a signal (SIGTERM, SIGHUP) as by Ctrl-C: the load is ended below either way.
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, _stopped)
    load = [subprocess.Popen([sys.executable, '-c', BUSY_LOOP]) for _ in range(args.load)]
    runs, failed, messages, walls, codes = collections.Counter(), collections.Counter(), \
        collections.defaultdict(set), [], []
    workdir = tempfile.mkdtemp(prefix='sim_clock-flake-hunt-')
    try:
        for run in range(1, args.runs + 1):
            junit = os.path.join(workdir, f'run-{run}.xml')
            log = os.path.join(workdir, f'run-{run}.log')
            start = time.monotonic()
            with open(log, 'w') as out:
                code = subprocess.call(
                    command + ['-q', '-p', 'no:cacheprovider', f'--junitxml={junit}',
                               *pytest_args], stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
            walls.append(time.monotonic() - start)
            codes.append(code)
            outcomes = results(junit)
            for test, (outcome, message) in outcomes.items():
                if outcome == 'skipped':
                    continue
                runs[test] += 1
                if outcome == 'failed':
                    failed[test] += 1
                    messages[test].add(message)
            print(f'run {run}/{args.runs}: exit {code}, {len(outcomes)} tests, '
                  f'{sum(outcome == "failed" for outcome, _ in outcomes.values())} failed, '
                  f'{walls[-1]:.0f} s (log: {log})', flush=True)
            if not outcomes:
                print(f'  no results were written: see {log}', flush=True)
    finally:
        for process in load:
            process.kill()
            process.wait()
    print()
    print(f'{args.distro}, {args.runs} runs, load {args.load}, '
          f'{len(runs)} tests run at least once')
    if failed:
        width = max(len(test) for test in failed)
        print(f'{"test".ljust(width)}  runs  failures')
        for test in sorted(failed, key=lambda name: (-failed[name], name)):
            print(f'{test.ljust(width)}  {runs[test]:4}  {failed[test]:8}')
            for message in sorted(messages[test]):
                print(f'    {message}')
    else:
        print('no test failed')
    print('wall time per run (s): ' + ', '.join(f'{wall:.0f}' for wall in walls))
    broken = [code for code in codes if code not in (0, 1)]
    if broken:
        print(f'runs that ended other than by passing or failing tests: exit codes {broken}')
    return 1 if failed or broken else 0


if __name__ == '__main__':
    sys.exit(main())
