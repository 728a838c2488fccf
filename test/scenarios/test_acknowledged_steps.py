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
Acknowledged steps through DDS (ack_timeout).

A step answers once its frames are in every matched reliable reader; a reader that does not
acknowledge is named, then not waited for until it catches up.
"""

import os
import signal
import time

from harness import ChildProcess
from harness import FROZEN_READER as READER
from harness import ServerProcess
import pytest
from sim_clock.srv import Step

pytestmark = pytest.mark.process

MS = 1_000_000


def _step(client, steps, timeout=30.0):
    return client.call(Step, 'step', Step.Request(user_id='', steps=steps), timeout=timeout)


def _frames_in(client, frames):
    """Take what the client's /clock reader already has (no wait); return its last ``frames``."""
    for _ in range(5000):
        if frames * MS in client.times():
            break
        client.executor.spin_once(timeout_sec=0)
    return client.distinct_times_since_reset()[-frames:]


def test_an_acknowledged_step_answers_once_the_reader_has_every_frame(start_server, client):
    """After the answer, every frame is in this reader already: taken without waiting."""
    start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.001, 'ack_timeout': 5.0})
    client.wait_for_clock()
    response = _step(client, 1000)
    assert response.success, response.message
    assert list(response.unacknowledged) == []
    # No wait: each spin takes what is already there; all 1000 frames are.
    assert _frames_in(client, 1000) == [t * MS for t in range(1, 1001)]


def test_a_clock_depth_of_one_still_brings_every_frame_to_a_reliable_reader(
        start_server, client):
    """qos_overrides./clock.publisher.depth 1: each stepped frame waits for its acknowledgement."""
    start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.001, 'ack_timeout': 5.0,
                  'qos_overrides./clock.publisher.depth': 1})
    client.wait_for_clock()
    response = _step(client, 300)
    assert response.success, response.message
    assert list(response.unacknowledged) == []
    # A history of one sample overwrites nothing a reader lacks: flow control's window is 1.
    assert _frames_in(client, 300) == [t * MS for t in range(1, 301)]
    for _ in range(20):
        response = _step(client, 1)
        assert response.success and list(response.unacknowledged) == [], response.message


def test_a_clock_depth_out_of_range_stops_the_server_with_the_reason(domain_id, tmp_path):
    """Depth 0: the server exits 1 at start, naming what is allowed."""
    server = ServerProcess(domain_id, str(tmp_path), {'qos_overrides./clock.publisher.depth': 0})
    try:
        assert server.process.wait(30) == 1
    finally:
        server.stop()
    log = server.log()
    assert 'invalid configuration' in log and 'between 1 and 100000, got 0' in log, log
    assert 'Traceback' not in log, log


def test_a_reader_that_does_not_acknowledge_is_named_then_not_waited_for(
        start_server, client, domain_id, tmp_path):
    """A frozen reader: one step waits ack_timeout and names /clock; the next does not wait."""
    start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.001, 'ack_timeout': 1.0})
    reader = ChildProcess(domain_id, READER, str(tmp_path))
    try:
        reader.expect('ready')  # matched by the server's /clock writer
        client.wait_for_clock()
        assert list(_step(client, 1).unacknowledged) == []
        os.kill(reader.pid, signal.SIGSTOP)
        started = time.monotonic()
        response = _step(client, 10)
        assert response.success and list(response.unacknowledged) == ['/clock']
        assert time.monotonic() - started >= 1.0
        assert 'not acknowledged' in response.message
        started = time.monotonic()
        response = _step(client, 10)
        assert list(response.unacknowledged) == ['/clock']
        assert time.monotonic() - started < 1.0  # not waited for again
        os.kill(reader.pid, signal.SIGCONT)
        # Once it has caught up (it needs the CPU back, then a heartbeat), steps wait for it
        # again and it acknowledges them.
        deadline = time.monotonic() + 15.0
        response = _step(client, 1)
        while response.unacknowledged and time.monotonic() < deadline:
            response = _step(client, 1)
        assert list(response.unacknowledged) == []
    finally:
        os.kill(reader.pid, signal.SIGCONT)
        reader.stop()
