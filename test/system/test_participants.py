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
Participants across processes, through DDS.

A step waits for them, a late one stops it, a node that leaves the graph is dropped, free run
goes at their pace, real-time mode ignores them.
"""

import time

from harness import ChildProcess
from harness import SERVICE_QOS
from harness import stamp_ns
from harness import TestClient
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from sim_clock.msg import Done
from sim_clock.srv import Step

MS = 1_000_000

#: A node under test: a use_sim_time timer of PERIOD s that works WORK s (a slow node), run
#: as a participant by sim_clock.client.participant; at its VANISH-th firing (0: never) it
#: destroys its node without leaving (as a crash that the graph sees). Prints each firing.
#: A line 'leave' on its stdin makes it leave and end.
PARTICIPANT = """
import select, sys, time
import rclpy
from rclpy.parameter import Parameter
from sim_clock.client.participant import Participant
name, period, work, vanish = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
readers = int(sys.argv[5])
rclpy.init()
node = rclpy.create_node(name, parameter_overrides=[Parameter('use_sim_time', value=True)])
fired = []
def tick():
    fired.append(node.get_clock().now().nanoseconds)
    print('fired', fired[-1], flush=True)
    time.sleep(work)  # the work of a slow node under test
node.create_timer(period, tick)
participant = Participant(node, name=name, period=period)
# Joined once the done writer has matched every reader (the server's, and the test's if it
# has one): a done sent before a reader matched would never reach it.
while participant._done.get_subscription_count() < readers:
    rclpy.spin_once(node, timeout_sec=0.05)
print('joined', flush=True)
try:
    while rclpy.ok():
        participant.spin_once()
        if vanish and len(fired) >= vanish:
            print('vanishing', flush=True)
            node.destroy_node()
            break
        if select.select([sys.stdin], [], [], 0)[0] and sys.stdin.readline().strip() == 'leave':
            participant.close()
            print('left', flush=True)
            break
    else:
        participant.close()
except KeyboardInterrupt:
    pass
rclpy.try_shutdown()
"""


def _participant(domain_id, tmp_path, name='p', period=0.01, work=0.0, vanish=0, readers=2):
    """Start a participant; ``readers``: the done readers it waits for (the test has one)."""
    child = ChildProcess(domain_id, PARTICIPANT, str(tmp_path),
                         args=(name, period, work, vanish, readers))
    child.expect('joined')
    return child


def _printed(child: ChildProcess) -> str:
    """End the child; return all it printed (read to the end of its pipe: bounded)."""
    child.process.kill()
    child.process.wait()
    try:
        while True:
            child.read_line(5.0)
    except AssertionError:  # the end of the pipe
        pass
    return child.output()


class _Dones(list):
    """The Done messages on the server's ~/done topic, as (name, time, source ns)."""

    def __init__(self, client: TestClient):
        super().__init__()
        self.client = client
        self.subscription = client.node.create_subscription(
            Done, '/sim_clock/done',
            lambda msg, info: self.append(
                (msg.name, stamp_ns(msg.time), info['source_timestamp'])),
            QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))

    def wait_matched(self, publishers: int = 1) -> None:
        """Wait until this reader has matched the participants' done writers."""
        self.client.spin_until(lambda: self.subscription.get_publisher_count() >= publishers,
                               "the participant's done writer")


def _dones(client: TestClient) -> _Dones:
    return _Dones(client)


def _step(client, steps, timeout=30.0):
    return client.call(Step, 'step', Step.Request(user_id='', steps=steps), timeout=timeout)


def test_a_step_waits_for_a_slow_participant(start_server, client, domain_id, tmp_path):
    """Each frame goes out only after the participant finished the one before; then the answer."""
    start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01})
    dones = _dones(client)
    child = _participant(domain_id, tmp_path, work=0.05)
    try:
        dones.wait_matched()
        started = time.monotonic()
        response = _step(client, 5)
        elapsed = time.monotonic() - started
        assert response.success, response.message
        assert response.frame == 5 and list(response.late) == []
        assert elapsed >= 5 * 0.05
        client.spin_until(lambda: any(t == 50 * MS for _, t, _ in dones),
                          'the done of the last frame')
        # Every frame due was finished before the next one was published (source times of
        # the first done of each time: a participant says done again for a republished time).
        done_at = {}
        for _, t, source in dones:
            done_at.setdefault(t, source)
        clock_at = {}
        for (_, t), source in zip(client.clocks, client.clock_sources):
            clock_at.setdefault(t, source)
        for t in range(10 * MS, 50 * MS, 10 * MS):
            assert done_at[t] < clock_at[t + 10 * MS], t
        fired = [int(child.expect('fired')) for _ in range(5)]
        assert fired == [10 * MS, 20 * MS, 30 * MS, 40 * MS, 50 * MS]
        status = client.status()
        assert list(status.participants) == ['p'] and list(status.waiting_for) == []
        assert stamp_ns(status.participants_done[0]) == 50 * MS
        assert status.participants_slowest[0] >= 0.05
    finally:
        child.send('')
        child.kill()


def test_a_leave_does_not_release_a_frame_another_participant_has_not_finished(
        start_server, client, domain_id, tmp_path):
    """One participant leaves while a slow one works on frame 1: frame 2 still waits for it."""
    start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01})
    dones = _dones(client)
    slow = _participant(domain_id, tmp_path, name='slow', work=1.0)
    quitter = _participant(domain_id, tmp_path, name='quitter')
    try:
        dones.wait_matched(2)
        step = client.node.create_client(Step, '/sim_clock/step', qos_profile=SERVICE_QOS)
        client.spin_until(step.service_is_ready, 'the step service')
        future = step.call_async(Step.Request(user_id='', steps=2))
        assert int(slow.expect('fired')) == 10 * MS  # frame 1 is out; slow works on it
        quitter.send('leave')
        quitter.expect('left')
        client.spin_until(future.done, 'the answer of the step')
        assert future.result().success and future.result().frame == 2
        done_at = {}
        for name, t, source in dones:
            done_at.setdefault((name, t), source)
        clock_at = {}
        for (_, t), source in zip(client.clocks, client.clock_sources):
            clock_at.setdefault(t, source)
        # Seen missing on Kilted (twice in fresh-clone runs): say what this reader did get.
        assert ('slow', 10 * MS) in done_at, (list(dones), _printed(slow))
        assert done_at[('slow', 10 * MS)] < clock_at[20 * MS]
    finally:
        slow.kill()
        quitter.kill()


def test_a_late_participant_stops_the_step_and_is_named(
        start_server, client, domain_id, tmp_path):
    """Beyond participant_timeout the step answers success false at the frame reached."""
    start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01,
                  'participant_timeout': 0.3})
    dones = _dones(client)
    child = _participant(domain_id, tmp_path, name='slow', work=1.0)
    try:
        dones.wait_matched()
        response = _step(client, 3)
        assert not response.success
        assert list(response.late) == ['slow'] and response.frame == 1
        assert 'late participants: slow' in response.message
        # Once it has finished frame 1, the next step goes on: frame 2 is out (and, as slow
        # as every frame, late again).
        client.spin_until(lambda: any(t == 10 * MS for _, t, _ in dones), 'its done of frame 1')
        response = _step(client, 1)
        assert response.frame == 2 and list(response.late) == ['slow']
    finally:
        child.kill()


def test_a_participant_whose_node_leaves_the_graph_is_dropped(
        start_server, client, domain_id, tmp_path):
    """A node gone without leaving: dropped with a warning, and the step goes on."""
    server = start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01})
    child = _participant(domain_id, tmp_path, name='gone', vanish=2, readers=1)
    try:
        response = _step(client, 5)
        assert response.success, response.message
        assert response.frame == 5
        child.expect('vanishing')
        assert list(client.status().participants) == []
        assert "participant 'gone' dropped" in server.log()
    finally:
        child.kill()


def test_free_run_goes_at_the_participants_pace(start_server, client, domain_id, tmp_path):
    """As fast as possible, yet no frame passes a participant that has not finished."""
    start_server({'mode': 'simulation', 'real_time_factor': 0.0, 'time_step': 0.001,
                  'paused': True})
    dones = _dones(client)
    child = _participant(domain_id, tmp_path, period=0.001, work=0.01)
    try:
        assert client.trigger('resume').success
        try:
            client.spin_until(lambda: len({t for _, t, _ in dones}) >= 20,
                              '20 frames finished by the participant')
        except AssertionError as error:
            # Seen on Kilted (twice in fresh-clone runs): the server waited for the first frame's
            # done. Say what the participant received and said, and what this reader got.
            raise AssertionError(f'{error}; dones seen here: {list(dones)[:10]}; the '
                                 f'participant printed: {_printed(child)[-2000:]}') from None
        assert client.trigger('pause').success
        status = client.status()
        # Without the participant this free run makes tens of thousands of frames a second;
        # with it, at most one frame is out that it has not finished (as the server counts).
        last_finished = stamp_ns(status.participants_done[0]) // MS
        assert 20 <= status.frame <= last_finished + 1
    finally:
        child.kill()


def test_real_time_mode_ignores_participants(start_server, client, domain_id, tmp_path):
    """A participant that never finishes does not hold real time."""
    start_server({'mode': 'real_time'})
    child = _participant(domain_id, tmp_path, name='stuck', period=0.001, work=30.0,
                         readers=1)
    try:
        first = client.wait_for_clock(lambda t: t > 0)
        client.wait_for_clock(lambda t: t > first + 200 * MS, timeout=10.0)
    finally:
        child.kill()
