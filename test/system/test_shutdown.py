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
Ctrl-C while a callback waits: the process ends within 2 s with exit code 0, quietly.

No process may print a traceback or a FATAL line (the executor's report of a callback that
failed), also where a signal comes while a callback waits for a stalled reader.
"""

import os
import signal
import subprocess
import time

from harness import ChildProcess
from harness import FROZEN_READER
import pytest
from sim_clock.node.flow import MAX_WINDOW
from sim_clock.srv import Step

MS = 1_000_000
#: The bound on the end of each process, from the signal on (the issue's figure).
END_S = 2.0


def _ended(processes: dict) -> dict:
    """
    Wait until each of ``processes`` (name -> Popen) has ended, END_S after now at most.

    Return name -> (exit code, seconds to its end, at most as precise as the polling).
    """
    start = time.monotonic()
    ended = {}
    while len(ended) < len(processes) and time.monotonic() - start < END_S:
        for name, process in processes.items():
            if name not in ended and process.poll() is not None:
                ended[name] = (process.returncode, round(time.monotonic() - start, 3))
        if len(ended) < len(processes):
            try:  # woken by the end of any child (os.wait would reap it behind Popen's back)
                next(p for n, p in processes.items() if n not in ended).wait(0.01)
            except subprocess.TimeoutExpired:
                pass
    return ended


def _codes(ended: dict, names) -> dict:
    """Return name -> exit code of each of ``names``, or 'running' for one that has not ended."""
    return {name: ended[name][0] if name in ended else 'running' for name in names}


def _quiet(name: str, output: str) -> None:
    assert 'Traceback' not in output and 'FATAL' not in output, f'{name}:\n{output}'


@pytest.mark.slow
def test_a_server_stopped_while_flow_control_waits_for_a_stalled_reader_ends_quietly(
        start_server, client, domain_id, tmp_path):
    """
    SIGINT while a step waits for a frozen reader's acknowledgements: 0 within 2 s, no FATAL.

    A first step (the reader still live) leaves the /clock window short of one frame; the next
    step publishes the rest of that window (up to frame MAX_WINDOW) and then waits (5 s at
    most) for the reader, frozen meanwhile. The signal comes once that frame is here.
    """
    server = start_server({'sync': True, 'time_step': 0.001})
    reader = ChildProcess(domain_id, FROZEN_READER, str(tmp_path))
    try:
        reader.expect('ready', timeout=60.0)
        assert client.step('', 1).success
        os.kill(reader.pid, signal.SIGSTOP)
        step = client.node.create_client(Step, '/sim_clock/step')
        client.spin_until(step.service_is_ready, 'the step service')
        step.call_async(Step.Request(user_id='', steps=3000))
        client.wait_for_time(MAX_WINDOW * MS)
        server.process.send_signal(signal.SIGINT)
        ended = _ended({'server': server.process})
    finally:
        os.kill(reader.pid, signal.SIGCONT)
        reader.stop()
    assert _codes(ended, ['server']) == {'server': 0}, (ended, server.log())
    _quiet('server', server.log())
    # The wait was cut short: no reader was named as stalled.
    assert 'stalled' not in server.log(), server.log()
