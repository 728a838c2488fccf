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
The server's frame timeline (``~/get_frame_events``, ``~/frame_events``) with real processes.

Two participants take every frame; one works 20 ms in one frame of every ten. The timeline
names each frame, each done with its hold, the step call, and a reset, exactly.
"""

from harness import ChildProcess
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from sim_clock.core.frame_events import DONE
from sim_clock.core.frame_events import FRAME
from sim_clock.core.frame_events import FrameEvent
from sim_clock.core.frame_events import RESET
from sim_clock.core.frame_events import STEP
from sim_clock.core.frame_stats import holders
from sim_clock.msg import FrameEvent as FrameEventMsg
from sim_clock.srv import GetFrameEvents
from sim_clock.srv import Step
from std_srvs.srv import Trigger

MS = 1_000_000
STEP_NS = 10 * MS
#: How long the slow participant works in one frame of every ten.
WORK_NS = 20 * MS

#: A participant that works WORK_NS in each tenth frame it takes (argv: name, slow 0/1).
SLOW_PARTICIPANT = """
import sys, time
import rclpy
from rclpy.parameter import Parameter
from sim_clock.client.participant import Participant
name, slow = sys.argv[1], sys.argv[2] == '1'
rclpy.init()
node = rclpy.create_node(name, parameter_overrides=[Parameter('use_sim_time', value=True)])
frames = []
def tick():
    frames.append(node.get_clock().now().nanoseconds)
    if slow and len(frames) % 10 == 0:
        time.sleep(0.02)  # the work of a slow node under test, one frame in ten
node.create_timer(0.01, tick)
participant = Participant(node, name=name, period=0.01)
while participant._done.get_subscription_count() < 1:
    participant.executor.spin_once(timeout_sec=0.05)
print('joined', flush=True)
try:
    while rclpy.ok():
        participant.spin_once()
except KeyboardInterrupt:
    pass
participant.close()
rclpy.try_shutdown()
"""


def _events(client, after=0):
    response = client.call(GetFrameEvents, 'get_frame_events',
                           GetFrameEvents.Request(after=after))
    return response, [FrameEvent(e.sequence, e.kind, e.epoch, e.sim_ns, e.start_ns, e.end_ns,
                                 e.name, e.count, e.success, e.detail) for e in response.events]


def test_the_timeline_names_who_held_each_frame(start_server, client, domain_id, tmp_path):
    """Frames, dones with their holds, the step and a reset: each once, exact."""
    start_server({'sync': True, 'time_step': STEP_NS / 1e9})
    children = [ChildProcess(domain_id, SLOW_PARTICIPANT, str(tmp_path), args=(name, slow))
                for name, slow in (('fast', 0), ('slow', 1))]
    try:
        for child in children:
            child.expect('joined')
        client.spin_until(lambda: len(client.status().participants) == 2, 'both participants')
        _, before = _events(client)
        after = before[-1].sequence if before else 0
        response = client.call(Step, 'step', Step.Request(steps=30), timeout=30.0)
        assert response.success, response.message
        reply, events = _events(client, after)
        assert reply.capacity == 10_000 and reply.dropped == 0
        assert reply.last_sequence == events[-1].sequence
        assert [e.sequence for e in events] == list(range(after + 1, after + 1 + len(events)))
        frames = [e for e in events if e.kind == FRAME]
        assert [(e.sim_ns, e.count, e.epoch) for e in frames] == [
            (k * STEP_NS, k, 0) for k in range(1, 31)]
        dones = [e for e in events if e.kind == DONE]
        assert sorted((e.name, e.sim_ns) for e in dones) == sorted(
            (name, k * STEP_NS) for name in ('fast', 'slow') for k in range(1, 31))
        out = {e.sim_ns: e.start_ns for e in frames}
        for done in dones:  # each hold starts when its frame went out
            assert done.start_ns == out[done.sim_ns] and done.end_ns > done.start_ns, done
        # The slow participant's tenth frames hold the frame for its work: their median hold,
        # less its median hold of the other frames (taking /clock, saying done), is within 10%
        # of the work. Medians: one frame delayed by the machine's other load does not decide.
        holds = {e.sim_ns // STEP_NS: e.duration_ns for e in dones if e.name == 'slow'}
        worked = sorted(hold for frame, hold in holds.items() if frame % 10 == 0)
        other = sorted(hold for frame, hold in holds.items() if frame % 10)
        assert min(worked) >= WORK_NS, worked
        held_for_work = worked[len(worked) // 2] - other[len(other) // 2]
        assert abs(held_for_work - WORK_NS) <= WORK_NS // 10, (worked, other)
        assert holders(events)[0].name == 'slow'
        steps = [e for e in events if e.kind == STEP]
        assert [(e.name, e.count, e.sim_ns, e.success) for e in steps] == [
            ('~/step', 30, 30 * STEP_NS, True)]
        assert steps[0].start_ns < frames[0].start_ns and steps[0].end_ns >= dones[-1].end_ns

        assert client.call(Trigger, 'reset', Trigger.Request()).success
        _, events = _events(client, reply.last_sequence)
        resets = [e for e in events if e.kind == RESET]
        assert [(e.epoch, e.sim_ns, e.count) for e in resets] == [(1, 0, 30 * STEP_NS)], events
    finally:
        for child in children:
            child.stop()


def test_the_ring_follows_its_parameters(start_server, client):
    """frame_events 0 records nothing, a length keeps the newest; events can be published."""
    start_server({'sync': True, 'time_step': STEP_NS / 1e9, 'frame_events': 0})
    reply, events = _events(client)
    assert (reply.capacity, reply.last_sequence, events) == (0, 0, [])
    assert client.call(Step, 'step', Step.Request(steps=3)).success
    assert _events(client)[0].last_sequence == 0
    published = []
    client.node.create_subscription(
        FrameEventMsg, '/sim_clock/frame_events', published.append,
        QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
    assert client.set_parameter('frame_events', 4).successful
    assert client.set_parameter('publish_frame_events', True).successful
    client.spin_until(lambda: client.node.count_publishers('/sim_clock/frame_events') >= 1,
                      'the frame events writer')
    assert client.call(Step, 'step', Step.Request(steps=5)).success
    reply, events = _events(client)
    # 5 frames and the step: 6 recorded, the last 4 kept.
    assert (reply.capacity, reply.last_sequence, reply.dropped) == (4, 6, 2)
    assert [(e.kind, e.sim_ns) for e in events] == [
        (FRAME, 6 * STEP_NS), (FRAME, 7 * STEP_NS), (FRAME, 8 * STEP_NS), (STEP, 8 * STEP_NS)]
    client.spin_until(lambda: len(published) >= 6, 'the published events')
    assert [m.sequence for m in published] == list(range(1, 7))
    refused = client.set_parameter('frame_events', -1)
    assert not refused.successful and 'frame_events must be an integer' in refused.reason
    assert _events(client)[0].capacity == 4
