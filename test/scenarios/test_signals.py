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
A terminal's Ctrl-C under ``ros2 launch``: SIGINT to the process group, and launch's own.

The terminal sends SIGINT to every process of its foreground group, and launch forwards
another to each process it started: two SIGINTs a few ms apart, the second often arriving
while the process is on its way out. Every executable must end with exit code 0 each time,
without a traceback or a FATAL line (the executor's report of a callback that failed).

A signal may come at any moment of the way out, also while rclpy shuts its context down: there
the process must never be found without its handler (a flood of SIGINTs finds every gap).
"""

import os
import select
import signal
import subprocess
import time

from bags import write_test_bag
from harness import ChildProcess
from harness import executable
from harness import flood_with_sigints
from harness import soak
from harness import TIMEOUT
import pytest

pytestmark = pytest.mark.process

#: Runs of each executable (10 in a soak), the gaps between the two SIGINTs spread over 1 to
#: 10 ms whatever their number.
RUNS = soak(3, 10)
#: executable -> (arguments after it, given the test's folder; a line it prints once spinning)
EXECUTABLES = {
    'clock_server': (lambda folder: [], None),
    # Kept serving at the end of its 1 s bag: in free run it would end by itself there.
    'bag_player': (lambda folder: [write_bag(folder), '--stay-at-end'], None),
    'recorder': (lambda folder: [os.path.join(folder, f'out-{time.monotonic_ns()}'), '-t',
                                 '/chatter'], 'first /clock received'),
    # The control panel, serving once it prints its URL (a first contact under load: 60 s).
    'simclock': (lambda folder: ['panel', '--port', '0', '--timeout', '60'],
                 'sim_clock panel of'),
}


#: name -> a program that prints "ready", runs the cycles its argument says, then "survived";
#: the cycles it runs under a flood of SIGINTs (0.1 to 0.5 s of it). Where the code left
#: SIG_DFL in place for a moment (Kilted's rclpy, asked to take out handlers it never
#: installed), the flood killed the process within 0.01 to 0.23 s. Neither makes a DDS
#: participant: hundreds of thousands of SIGINTs, each interrupting a system call in one of
#: Fast DDS's threads, once crashed a participant's deletion (SIGSEGV in destroy_node), which
#: is not what these tests are about; two SIGINTs are.
FLOODED = {
    # The executables' loop from start to end, up to the context shut down: each cycle ends
    # at a signal that came during rclpy.init, or else at a node the configuration refuses.
    'spin_until_stopped': (300, """
import signal, sys
from sim_clock.core.rules import Refused
from sim_clock.node.runtime import spin_until_stopped
from sim_clock.process.process_exit import exit_without_teardown
def refused():
    raise Refused('no node in this test')
signal.signal(signal.SIGINT, lambda signum, frame: None)
print('ready', flush=True)
for _ in range(int(sys.argv[1])):
    spin_until_stopped(refused, [], logger_name='flooded')
print('survived', flush=True)
exit_without_teardown(0)
"""),
    # The participant's signals taken from rclpy, where rclpy was started without handlers.
    'signals_noted': (3000, """
import signal, sys
import rclpy
from rclpy.signals import SignalHandlerOptions
from sim_clock.client.spinning import signals_noted
from sim_clock.process.process_exit import exit_without_teardown
signal.signal(signal.SIGINT, lambda signum, frame: None)
rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
print('ready', flush=True)
for _ in range(int(sys.argv[1])):
    with signals_noted():
        pass
print('survived', flush=True)
exit_without_teardown(0)
"""),
}


def write_bag(folder: str) -> str:
    """Return a test bag in ``folder``, written on first use."""
    path = os.path.join(folder, 'bag')
    if not os.path.exists(path):
        write_test_bag(path, 'sqlite3')
    return path


def _wait_for_line(process: subprocess.Popen, text: str, output: list) -> None:
    """Read the process's output until a line holds ``text``; fail after TIMEOUT s."""
    deadline = time.monotonic() + TIMEOUT
    fd = process.stdout.fileno()
    while not any(text in line for line in b''.join(output).decode().splitlines()):
        remaining = deadline - time.monotonic()
        ready, _, _ = select.select([fd], [], [], max(remaining, 0))
        chunk = os.read(fd, 65536) if ready else b''
        if not chunk:
            process.kill()
            raise AssertionError(f'no line with {text!r} (code {process.poll()}):\n'
                                 + b''.join(output).decode(errors='replace'))
        output.append(chunk)


def _sigint_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGINT)
    except ProcessLookupError:
        pass  # every process of the group has ended already


@pytest.mark.slow
@pytest.mark.soak
@pytest.mark.parametrize('name', sorted(EXECUTABLES))
def test_process_group_sigint_twice_ends_with_exit_code_0(
        name, domain_id, tmp_path, client, start_server):
    """
    RUNS times: start, wait until it spins, SIGINT its group twice, 1 to 10 ms apart.

    Spinning: a clock server or bag player publishes /clock, which the test client receives
    (published after the start: stamped later by the publisher); the recorder says it received
    /clock from a clock server started for it.
    """
    arguments, spinning = EXECUTABLES[name]
    if spinning is not None:
        start_server()
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain_id))
    codes = []
    for run in range(RUNS):
        started_ns = time.time_ns()
        process = subprocess.Popen(
            [executable(name), *arguments(str(tmp_path))], env=env, start_new_session=True,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        output = []
        try:
            if spinning is None:
                # Published by this process: the last run's may still be queued here.
                client.spin_until(
                    lambda: client.clock_sources and client.clock_sources[-1] > started_ns,
                    f'/clock from {name} (run {run})')
            else:
                _wait_for_line(process, spinning, output)
            _sigint_group(process.pid)
            # The gap between the terminal's SIGINT and launch's: 1 ms, ..., 10 ms.
            time.sleep(0.001 * (1 + run * 9 // max(RUNS - 1, 1)))
            _sigint_group(process.pid)
            rest, _ = process.communicate(timeout=TIMEOUT)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        text = (b''.join(output) + rest).decode(errors='replace')
        assert process.returncode == 0, f'run {run}: exit code {process.returncode}:\n{text}'
        assert 'Traceback' not in text and 'FATAL' not in text, text
        codes.append(process.returncode)
    assert codes == [0] * RUNS


@pytest.mark.parametrize('name', sorted(FLOODED))
def test_a_flood_of_sigints_never_finds_the_default_handler(name, domain_id, tmp_path):
    """SIGINT sent without pause while the code runs its cycles never ends the process."""
    cycles, program = FLOODED[name]
    child = ChildProcess(domain_id, program, str(tmp_path), args=(cycles,))
    try:
        child.expect('ready')
        sent = flood_with_sigints(child.process)
        code = child.finish()
    finally:
        child.stop()
    assert code == 0, f'exit code {code} after {sent} SIGINTs:\n{child.output()}'
    assert 'survived' in child.output() and 'Traceback' not in child.output(), child.output()
