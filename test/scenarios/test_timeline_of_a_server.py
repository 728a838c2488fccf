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

Two participants take every frame; one works 100 ms in one frame of every ten. The timeline
names each frame, each done with its hold, the step call, and a reset, exactly.
"""

from bags import write_test_bag
from frame_timeline import check_worked_holds
from frame_timeline import SLOW_PARTICIPANT
from frame_timeline import SLOW_WORK_NS
from harness import ChildProcess
from harness import executable
import pytest
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from sim_clock.core.frame_events import DONE
from sim_clock.core.frame_events import FRAME
from sim_clock.core.frame_events import FrameEvent
from sim_clock.core.frame_events import GATE
from sim_clock.core.frame_events import RESET
from sim_clock.core.frame_events import STEP
from sim_clock.core.frame_stats import holders
from sim_clock.msg import FrameEvent as FrameEventMsg
from sim_clock.srv import GetFrameEvents
from sim_clock.srv import Step
from std_srvs.srv import Trigger

pytestmark = pytest.mark.process

MS = 1_000_000
STEP_NS = 10 * MS
#: How long the slow participant works in one frame of every ten.
WORK_NS = SLOW_WORK_NS
#: Frames stepped: five of them slow.
FRAMES = 50


def _events(client, after=0):
    response = client.call(GetFrameEvents, 'get_frame_events',
                           GetFrameEvents.Request(after=after))
    return response, [FrameEvent(e.sequence, e.kind, e.epoch, e.sim_ns, e.start_ns, e.end_ns,
                                 e.name, e.count, e.success, e.detail) for e in response.events]


def test_the_timeline_names_who_held_each_frame(start_server, client, domain_id, tmp_path):
    """Frames, dones with their holds, the step and a reset: each once, exact."""
    start_server({'sync': True, 'time_step': STEP_NS / 1e9})
    children = [ChildProcess(domain_id, SLOW_PARTICIPANT, str(tmp_path), args=(name, work))
                for name, work in (('fast', 0), ('slow', WORK_NS / 1e9))]
    try:
        for child in children:
            child.expect('joined')
        client.spin_until(lambda: len(client.status().participants) == 2, 'both participants')
        _, before = _events(client)
        after = before[-1].sequence if before else 0
        response = client.call(Step, 'step', Step.Request(steps=FRAMES), timeout=30.0)
        assert response.success, response.message
        reply, events = _events(client, after)
        assert reply.capacity == 10_000 and reply.dropped == 0
        assert reply.last_sequence == events[-1].sequence
        assert [e.sequence for e in events] == list(range(after + 1, after + 1 + len(events)))
        frames = [e for e in events if e.kind == FRAME]
        assert [(e.sim_ns, e.count, e.epoch) for e in frames] == [
            (k * STEP_NS, k, 0) for k in range(1, FRAMES + 1)]
        dones = [e for e in events if e.kind == DONE]
        assert sorted((e.name, e.sim_ns) for e in dones) == sorted(
            (name, k * STEP_NS) for name in ('fast', 'slow') for k in range(1, FRAMES + 1))
        out = {e.sim_ns: e.start_ns for e in frames}
        for done in dones:  # each hold starts when its frame went out
            assert done.start_ns == out[done.sim_ns] and done.end_ns > done.start_ns, done
        # The slow participant held each of its tenth frames for the work it did there.
        worked = {}
        for _ in range(FRAMES // 10):
            time_ns, work_ns = children[1].expect('worked').split()[-2:]
            worked[int(time_ns)] = int(work_ns)
        holds = {e.sim_ns: e.duration_ns for e in dones if e.name == 'slow'}
        assert sorted(worked) == [k * 10 * STEP_NS for k in range(1, FRAMES // 10 + 1)]
        check_worked_holds(holds, worked)
        ranked = holders(events)
        # Said on failure: each holder's three longest holds, and the frames it held past 15 ms.
        assert ranked[0].name == 'slow', [
            (h.name, h.holds_ns[-3:], [(e.sim_ns, e.duration_ns) for e in dones
                                       if e.name == h.name and e.duration_ns > 15 * MS])
            for h in ranked]
        steps = [e for e in events if e.kind == STEP]
        assert [(e.name, e.count, e.sim_ns, e.success) for e in steps] == [
            ('~/step', FRAMES, FRAMES * STEP_NS, True)]
        assert steps[0].start_ns < frames[0].start_ns and steps[0].end_ns >= dones[-1].end_ns

        assert client.call(Trigger, 'reset', Trigger.Request()).success
        _, events = _events(client, reply.last_sequence)
        resets = [e for e in events if e.kind == RESET]
        assert [(e.epoch, e.sim_ns, e.count) for e in resets] == [(1, 0, FRAMES * STEP_NS)], events
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
    reader = client.node.create_subscription(
        FrameEventMsg, '/sim_clock/frame_events', published.append,
        QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
    assert client.set_parameter('frame_events', 4).successful
    assert client.set_parameter('publish_frame_events', True).successful
    client.spin_until(lambda: reader.get_publisher_count() >= 1, 'the frame events writer')
    assert client.call(Step, 'step', Step.Request(steps=5)).success
    reply, events = _events(client)
    # 5 frames and the step: 6 recorded, the last 4 kept.
    assert (reply.capacity, reply.last_sequence, reply.dropped) == (4, 6, 2)
    assert [(e.kind, e.sim_ns) for e in events] == [
        (FRAME, 6 * STEP_NS), (FRAME, 7 * STEP_NS), (FRAME, 8 * STEP_NS), (STEP, 8 * STEP_NS)]
    client.spin_until(lambda: len(published) >= 6, f'the published events: {published}')
    assert [m.sequence for m in published] == list(range(1, 7))
    refused = client.set_parameter('frame_events', -1)
    assert not refused.successful and 'frame_events must be an integer' in refused.reason
    assert _events(client)[0].capacity == 4


def _check_epochs(events, step_ns):
    """Each epoch's frames a step apart, numbered on; a reset between epochs, from the last."""
    assert [e.sequence for e in events] == list(range(events[0].sequence,
                                                      events[0].sequence + len(events)))
    last = {}
    for event in events:
        if event.kind == RESET:
            before = last.get(event.epoch - 1)
            assert before is None or event.count == before.sim_ns, (event, before)
            last[event.epoch] = None
        elif event.kind == FRAME:
            previous = last.get(event.epoch)
            if previous is not None:
                assert (event.sim_ns - previous.sim_ns, event.count - previous.count) == (
                    step_ns, 1), (previous, event)
            last[event.epoch] = event
    return last


def test_frames_stay_exact_across_a_bag_loop_and_changes_of_mode(
        start_server, client, tmp_path):
    """A looping bag's resets and a mode change: every epoch's frames exact, each reset named."""
    path = str(tmp_path / 'bag')
    write_test_bag(path, 'sqlite3')
    start_server({'sync': True, 'time_step': 0.1, 'loop': True},
                 argv=[path, '--start-at-zero'], executable=executable('bag_player'))
    for _ in range(4):
        assert client.call(Step, 'step', Step.Request(steps=7), timeout=30.0).success
    assert client.set_parameter('sync', False).successful  # free run: a reset
    client.spin_until(lambda: client.status().epoch >= 5, 'free run through two more loops')
    events = _events(client)[1]
    _check_epochs(events, 100 * MS)
    resets = [(e.epoch, e.sim_ns, e.detail) for e in events if e.kind == RESET]
    loop = 'loop: end of the bag reached'
    sync_off = 'simulation (sync on) -> simulation (sync off)'
    assert resets[:5] == [(1, 0, loop), (2, 0, loop), (3, 0, sync_off), (4, 0, loop),
                          (5, 0, loop)], resets
    # Free run covers the whole bag in each epoch before its loop: frames 0.1 s to 1.0 s.
    last = _check_epochs(events, 100 * MS)
    assert last[4].sim_ns == 1000 * MS


#: A node that publishes on /cmd at each 50 ms of its ROS time; 'ready' once matched.
CONTROLLER = """
import rclpy
from rclpy.parameter import Parameter
from std_msgs.msg import String
rclpy.init()
node = rclpy.create_node('controller', parameter_overrides=[Parameter('use_sim_time', value=True)])
publisher = node.create_publisher(String, '/cmd', 10)
node.create_timer(0.05, lambda: publisher.publish(String(data='go')))
while publisher.get_subscription_count() < 1:
    rclpy.spin_once(node, timeout_sec=0.05)
print('ready', flush=True)
try:
    rclpy.spin(node)
except KeyboardInterrupt:
    pass
rclpy.try_shutdown()
"""


def test_a_gated_output_is_an_event_of_its_frame(start_server, client, domain_id, tmp_path):
    """Each gated frame has its gate's event: from that frame's /clock to the message."""
    start_server({'sync': True, 'time_step': STEP_NS / 1e9, 'output_gates': '/cmd@0.05'})
    client.status_when_ready()
    controller = ChildProcess(domain_id, CONTROLLER, str(tmp_path))
    try:
        controller.expect('ready')
        response = client.call(Step, 'step', Step.Request(steps=20), timeout=30.0)
        assert response.success, response.message
        events = _events(client)[1]
    finally:
        controller.stop()
    out = {e.sim_ns: e.start_ns for e in events if e.kind == FRAME}
    gated = [e for e in events if e.kind == GATE]
    assert [(e.name, e.sim_ns, e.success) for e in gated] == [
        ('/cmd', k * 50 * MS, True) for k in range(1, 5)]
    assert all(e.start_ns == out[e.sim_ns] < e.end_ns for e in gated), gated
    assert [h.name for h in holders(events)] == ['/cmd']
