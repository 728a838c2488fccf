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

"""Clock views through DDS: each on /<view>/clock at every frame, exact; they follow resets."""

import time

from harness import ServerProcess
from harness import SERVICE_QOS
from harness import soak
from harness import TestClient
import pytest
import rclpy
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sim_clock.client import SimClockClient
from sim_clock.compat import take_ready
from sim_clock.node.flow_control import WAIT_TIMEOUT_NS
from sim_clock.srv import Step

pytestmark = pytest.mark.process

NS = 1_000_000_000
MS = 1_000_000
#: The pausing reader's pause: longer than flow control's wait, so it is taken as stalled.
PAUSE_S = WAIT_TIMEOUT_NS / NS + 0.5
#: The pausing reader's step: 10,000 frames after its second pause (at the 30,000th message),
#: 70,000 in the soak. Every message goes through the reader's Python callback, which paces
#: the step: at 10^5 frames 16 to 24 s on a quiet machine, 65 to 87 s at a load average of 11.
PAUSING_STEP = soak(40_000, 100_000)
VIEWS = """views:
  robot1: {offset: 0.25, drift_ppm: 50}
  robot2: {offset: -0.1, drift_ppm: -20.5}
"""


def robot1(t):
    return t + 250 * MS + t * 50 // 10**6


def robot2(t):
    return max(t - 100 * MS + (t * -41) // (2 * 10**6), 0)


def _views_file(tmp_path):
    path = tmp_path / 'views.yaml'
    path.write_text(VIEWS)
    return str(path)


def test_views_publish_every_frame_exactly_and_follow_resets(start_server, domain_id, tmp_path):
    """Every frame on each view, exact, over 10^5 frames; status lists them; a reset restarts."""
    start_server({'sync': True, 'time_step': 0.001, 'clock_views_file': _views_file(tmp_path)})
    # No /clock reader here: stepping 10^5 frames waits for none (flow control), and this
    # process takes the views' messages only.
    client = TestClient(domain_id, name='views_client', subscribe_clock=False)
    try:
        _check_views(client)
    finally:
        client.close()


def _check_views(client):
    keep_all = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
    seen = {'robot1': [], 'robot2': []}
    # The views' readers are on a node of their own that no executor spins: they are taken
    # directly (about a microsecond a message) whenever the client's executor is not busy, so
    # that the 10^5-frame step below is paced by the server's flow control and DDS, not by a
    # Python executor's look per message (about 0.3 ms here, several times that on a loaded
    # machine).
    readers = rclpy.create_node('views_readers', context=client.context)
    subscriptions = {name: readers.create_subscription(Clock, f'/{name}/clock', lambda msg: None,
                                                       keep_all)
                     for name in seen}

    def take():
        for name, subscription in subscriptions.items():
            seen[name].extend(msg.clock.sec * NS + msg.clock.nanosec
                              for msg, in take_ready(subscription))

    def spin_until(condition, what, timeout=15.0):
        deadline = time.monotonic() + timeout
        take()
        while not condition():
            assert time.monotonic() < deadline, f'timed out after {timeout} s waiting for {what}'
            client.executor.spin_once(timeout_sec=0.001)
            take()
    try:
        _check_views_with(client, seen, spin_until)
    finally:
        readers.destroy_node()


def _check_views_with(client, seen, spin_until):
    status = client.status_when_ready()
    views = SimClockClient(context=client.context)
    try:
        assert views.status().clock_views == tuple(status.clock_views)
    finally:
        views.close()
    assert list(status.clock_views) == [
        'robot1: offset 0.25 s, drift 50 ppm, on /robot1/clock',
        'robot2: offset -0.1 s, drift -20.5 ppm, on /robot2/clock']
    spin_until(lambda: all(seen.values()), 'both views')
    for _ in range(20):
        assert client.step('', 1).success
    spin_until(lambda: robot1(20 * MS) in seen['robot1'], 'twenty frames')
    assert list(dict.fromkeys(seen['robot1']))[-21:] == [robot1(k * MS) for k in range(21)]
    assert set(seen['robot2']) == {0}  # 100 ms behind: held at 0 for the first 100 ms
    step = client.node.create_client(Step, f'{client.server}/step', qos_profile=SERVICE_QOS)
    spin_until(step.service_is_ready, 'the step service')
    start = time.monotonic()
    future = step.call_async(Step.Request(user_id='', steps=100_000))
    spin_until(future.done, 'the answer of a 10^5-frame step', timeout=300.0)
    response = future.result()
    assert response.success, response.message
    last = (100_000 + 20) * MS
    spin_until(lambda: seen['robot1'][-1] == robot1(last), 'the last frame', timeout=60)
    assert robot1(last) == last + 250 * MS + 5_001_000  # 100.02 s at 50 ppm: 5.001 ms
    spin_until(lambda: seen['robot2'][-1] == robot2(last), 'robot2 too', timeout=60)
    elapsed = time.monotonic() - start
    # Every frame on each view, exactly once and in order (robot2 repeats 0 while it is
    # held at 0, then goes on without a gap).
    assert list(dict.fromkeys(seen['robot1'])) == [robot1(k * MS) for k in range(100_021)]
    assert list(dict.fromkeys(seen['robot2'])) == list(
        dict.fromkeys(robot2(k * MS) for k in range(100_021)))
    print(f'10^5 frames on two views in {elapsed:.1f} s ({elapsed * 10:.0f} us a frame); '
          f'{response.message}')
    client.trigger('reset')
    spin_until(lambda: seen['robot1'][-1] == robot1(0), 'the view after the reset')
    assert client.step('', 1).success
    spin_until(lambda: seen['robot1'][-1] == robot1(MS), 'a frame after the reset')


def test_a_bad_views_file_stops_the_server_with_the_reason(domain_id, tmp_path):
    """A views file that cannot be used: FATAL naming the problem, exit code 1."""
    bad = tmp_path / 'bad.yaml'
    bad.write_text('views:\n  robot1: {offset: soon}\n')
    for path, reason in ((str(bad), "clock view 'robot1' offset must be a number"),
                         (str(tmp_path / 'missing.yaml'), 'cannot be read')):
        server = ServerProcess(domain_id, str(tmp_path), {'clock_views_file': path})
        assert server.process.wait(60) == 1
        assert server.stop() == 1
        assert reason in server.log(), server.log()


@pytest.mark.soak
@pytest.mark.parametrize('topic', ['/robot1/clock', '/clock'])
def test_a_reader_pausing_during_a_long_step_does_not_end_the_server(
        start_server, domain_id, tmp_path, topic):
    """
    A keep-all reader pausing past the stall wait, twice, in a long step: the server lives.

    Taken as stalled after WAIT_TIMEOUT_NS, its samples pile up; Fast DDS 3 then refuses the
    writer's next samples, which ended the server before (node/flow_control.py). The step still
    succeeds, the reader ends on the step's last time, and the server exits 0 (the fixture
    checks).
    """
    server = start_server({'sync': True, 'time_step': 0.001,
                           'clock_views_file': _views_file(tmp_path)})
    client = TestClient(domain_id, name='pausing_reader', subscribe_clock=False)
    keep_all = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
    seen = []
    #: Steady time of each thousandth message: the reader's pace, said if the step times out.
    paces = []

    def take(msg):
        seen.append(msg.clock.sec * NS + msg.clock.nanosec)
        if len(seen) % 1000 == 0:
            paces.append(time.monotonic())
        if len(seen) in (3_000, 30_000):
            time.sleep(PAUSE_S)  # the pause under test, inside the reader's callback
    try:
        client.node.create_subscription(Clock, topic, take, keep_all)
        client.status_when_ready()
        client.spin_until(lambda: seen, f'a first {topic}')
        try:
            response = client.call(Step, 'step', Step.Request(user_id='', steps=PAUSING_STEP),
                                   timeout=120.0)
        except AssertionError as error:  # where the reader was, and what the server said
            gaps = [round(b - a, 2) for a, b in zip(paces, paces[1:])]
            raise AssertionError(
                f'{error}; the reader took {len(seen)} messages, the last at '
                f'{seen[-1] if seen else None} ns; seconds per thousand: {gaps}\n'
                f'server:\n{server.log()}') from None
        assert response.success, response.message
        clock = response.clock.sec * NS + response.clock.nanosec
        last = clock if topic == '/clock' else robot1(clock)
        client.spin_until(lambda: seen[-1] == last, "the step's last time", timeout=60)
    finally:
        client.close()
