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
The frame engine through DDS: lockstep across resets of every cause, and on any executor.

A participant in its own process works each frame due for it; after every step its last done
time must lie within one period before the step's time, in the step's epoch. Before the
engine, a bag's loop was applied while the frames were still being published, and no step
waited for the participant after it (its done times stayed in the old epoch).
"""

from bags import START_NS
from bags import write_test_bag
from harness import ChildProcess
from harness import executable
from harness import NS
from harness import stamp_ns
from harness import TestClient
import pytest
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sim_clock.srv import Seek

pytestmark = pytest.mark.process

MS = 1_000_000
STEP_NS = 10 * MS
PERIOD_NS = 20 * MS
BAG_NS = 1000 * MS
VIEW_OFFSET_NS = 1 * NS

#: A node under test, knowing nothing of the clock but its use_sim_time timer, run as a
#: participant (one line); it prints 'joined', then runs until Ctrl-C.
PARTICIPANT = """
import sys
import rclpy
from rclpy.parameter import Parameter
from sim_clock.client.participant import Participant
rclpy.init()
node = rclpy.create_node('worker', parameter_overrides=[Parameter('use_sim_time', value=True)])
node.create_timer(float(sys.argv[1]), lambda: None)
participant = Participant(node, name='worker', period_sec=float(sys.argv[1]))
while participant._done.get_subscription_count() < 1:
    participant.executor.spin_once(timeout_sec=0.05)
print('joined', flush=True)
try:
    participant.spin()
except KeyboardInterrupt:
    pass
rclpy.try_shutdown()
"""

#: The clock server spun by rclpy.spin on rclpy's default executor, not by the package's loop.
SPUN_SERVER = """
import sys
import rclpy
from rclpy.executors import ExternalShutdownException
from sim_clock.node.runtime import answer_late_clients
from sim_clock.node.server import ClockServer
answer_late_clients()  # the Fast DDS profile the executables load: answers wait for new clients
rclpy.init(args=sys.argv)
server = ClockServer()
print('ready', flush=True)
try:
    rclpy.spin(server)
except (KeyboardInterrupt, ExternalShutdownException):
    pass
server.destroy_node()
rclpy.try_shutdown()
"""


def participant(domain_id, tmp_path, period_ns=PERIOD_NS) -> ChildProcess:
    """Start the participant; return it once joined."""
    child = ChildProcess(domain_id, PARTICIPANT, str(tmp_path), args=(period_ns / NS,))
    child.expect('joined')
    return child


def assert_waited(client, response, period_ns=PERIOD_NS) -> int:
    """Assert that the step answered after the participant finished its frames; return clock."""
    assert response.success, response.message
    clock = stamp_ns(response.clock)
    status = client.status()
    assert status.epoch == response.epoch and stamp_ns(status.clock) == clock
    assert list(status.participants) == ['worker']
    done = stamp_ns(status.participants_done[0])
    assert clock - period_ns <= done <= clock, (
        f'step to {clock} ns (epoch {response.epoch}) answered with the participant done at '
        f'{done} ns: it did not wait for it')
    return clock


class ViewReader:
    """The values published on a clock view, in arrival order."""

    def __init__(self, client: TestClient, topic: str):
        self.values = []
        self._client = client
        client.node.create_subscription(
            Clock, topic, lambda msg: self.values.append(stamp_ns(msg.clock)),
            QoSProfile(depth=10_000, reliability=ReliabilityPolicy.RELIABLE))

    def wait_for(self, value: int) -> None:
        """Wait until ``value`` has been published on the view since the last call."""
        self._client.spin_until(lambda: value in self.values, f'view time {value} ns')
        self.values.clear()


@pytest.fixture
def bag(tmp_path):
    """Write a one-second sqlite3 test bag; return its path."""
    path = str(tmp_path / 'bag')
    write_test_bag(path, 'sqlite3')
    return path


def _player(start_server, bag, tmp_path, params):
    views = tmp_path / 'views.yaml'
    views.write_text(f'views:\n  robot: {{offset: {VIEW_OFFSET_NS / NS}, drift_ppm: 0}}\n')
    return start_server({'clock_views_file': str(views), **params}, argv=[bag],
                        executable=executable('bag_player'))


def test_every_step_waits_for_the_participant_after_a_bag_loops(
        start_server, client, bag, domain_id, tmp_path):
    """Sync mode, loop on: steps crossing the end still wait; the view follows the reset."""
    server = _player(start_server, bag, tmp_path,
                     {'sync': True, 'time_step': STEP_NS / NS, 'loop': True})
    view = ViewReader(client, '/robot/clock')
    client.status_when_ready()
    worker = participant(domain_id, tmp_path)
    try:
        epochs = []
        for _ in range(16):  # the bag's second at 10 frames a step: a loop at the 10th
            response = client.step('', 10)
            epochs.append(response.epoch)
            if len(epochs) > 1 and epochs[-1] != epochs[-2]:
                # The step that reached the end looped: back at the bag's start.
                assert stamp_ns(response.clock) == START_NS, response
                view.wait_for(START_NS + VIEW_OFFSET_NS)
                continue
            clock = assert_waited(client, response)
            view.wait_for(clock + VIEW_OFFSET_NS)
        assert epochs[0] == 0 and epochs[-1] == 1 and epochs.count(1) >= 5, epochs
    finally:
        worker.stop()
    assert 'loop: end of the bag reached' in server.log()


def test_steps_wait_for_the_participant_after_a_seek_and_a_reset(
        start_server, client, bag, domain_id, tmp_path):
    """~/seek and ~/reset between steps: the steps after them wait as before."""
    _player(start_server, bag, tmp_path, {'sync': True, 'time_step': STEP_NS / NS})
    client.status_when_ready()
    worker = participant(domain_id, tmp_path)
    try:
        assert_waited(client, client.step('', 10))
        request = Seek.Request()
        request.time.sec, request.time.nanosec = divmod(START_NS + 500 * MS, NS)
        assert client.call(Seek, 'seek', request).success
        for _ in range(3):
            clock = assert_waited(client, client.step('', 10))
        assert clock == START_NS + 800 * MS
        assert client.trigger('reset').success
        for _ in range(3):
            clock = assert_waited(client, client.step('', 10))
        assert clock == START_NS + 300 * MS and client.status().epoch == 2
    finally:
        worker.stop()


def test_free_run_keeps_the_participant_in_lockstep_across_loops(
        start_server, client, bag, domain_id, tmp_path):
    """Free run with loop on: after each loop, frames still wait for the participant."""
    _player(start_server, bag, tmp_path,
            {'time_step': STEP_NS / NS, 'loop': True, 'real_time_factor': 4.0, 'paused': True})
    client.status_when_ready()
    worker = participant(domain_id, tmp_path)
    try:
        assert client.trigger('resume').success
        client.spin_until(lambda: client.status().epoch >= 2, 'two loops of the bag',
                          timeout=60.0)
        checked = 0
        for _ in range(200):
            status = client.status()
            done = stamp_ns(status.participants_done[0])
            if done == 0:
                continue  # just reset: nothing done in this epoch yet
            clock = stamp_ns(status.clock)
            assert clock - PERIOD_NS <= done <= clock, (clock, done, status.epoch)
            checked += 1
        assert checked >= 20 and client.status().epoch >= 2
    finally:
        worker.stop()


def test_steps_and_free_run_wait_for_participants_under_rclpy_spin(
        client, domain_id, tmp_path):
    """A ClockServer spun by rclpy.spin (rclpy's default executor) waits as the executable."""
    server = ChildProcess(domain_id, SPUN_SERVER, str(tmp_path),
                          args=('--ros-args', '-p', 'sync:=true', '-p', 'time_step:=0.01'))
    try:
        server.expect('ready')
        client.status_when_ready()
        worker = participant(domain_id, tmp_path)
        try:
            for steps in (1, 10, 25):
                assert_waited(client, client.step('', steps))
            assert client.trigger('step_once').success
            assert_waited(client, client.step('', 1))
            assert client.set_sync(False).success  # free run, paced at real time
            client.spin_until(lambda: stamp_ns(client.status().clock) >= 300 * MS,
                              'free run to 0.3 s')
            status = client.status()
            clock, done = stamp_ns(status.clock), stamp_ns(status.participants_done[0])
            assert clock - PERIOD_NS <= done <= clock, (clock, done)
        finally:
            worker.stop()
    finally:
        server.stop()
    assert 'Traceback' not in server.output(), server.output()
