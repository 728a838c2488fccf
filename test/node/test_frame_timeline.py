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
FrameTimeline: each event recorded with its epoch, served on ~/get_frame_events, published.

A real node of the test's context and a real ring; the epoch is the test's. The service and
the topic are taken through DDS, within the test process.
"""

import time

from node_doubles import spin_until
import pytest
from rclpy.node import Node
from sim_clock.core.frame_events import ACK
from sim_clock.core.frame_events import DONE
from sim_clock.core.frame_events import FRAME
from sim_clock.core.frame_events import FrameEvent
from sim_clock.core.frame_events import FrameEventRing
from sim_clock.core.frame_events import GATE
from sim_clock.core.frame_events import RESET
from sim_clock.core.frame_events import STEP
from sim_clock.msg import FrameEvent as FrameEventMsg
from sim_clock.node.frame_timeline import EVENTS_QOS
from sim_clock.node.frame_timeline import FrameTimeline
from sim_clock.node.frame_timeline import to_msg
from sim_clock.srv import GetFrameEvents

pytestmark = pytest.mark.dds


class Rig:
    """A frame timeline on a node of its own, its time and epoch set by the test."""

    def __init__(self, context, length: int = 100):
        self.node = Node('sim_clock', context=context)
        self.epoch = 3
        self.time_ns = 0
        self.ring = FrameEventRing(length)
        # /clock time: the timeline's time plus 1000, to show the wait's time is converted.
        self.timeline = FrameTimeline(self.node, self.ring, self, lambda ns: ns + 1000)

    def events(self) -> list:
        """Return every event in the ring."""
        return self.ring.after(0)[0]


def test_each_call_records_one_event_with_the_epoch_now(context):
    """
    done, gate, missed, acknowledged and step: their kind, times, name and outcome.

    An acknowledgement wait is recorded at the /clock time of the time now.
    """
    rig = Rig(context)
    rig.timeline.done(rig.epoch, 10, 100, 150, 'planner', 2)
    rig.timeline.gate(rig.epoch, 20, 200, 260, '/cmd', 0, False)
    rig.epoch = 4
    rig.timeline.missed(DONE, ['a', 'b'], 30, 300)
    rig.time_ns = 40 - 1000
    rig.timeline.acknowledged(['/clock', '/tf'], 400, 480, stalled=['/tf'])
    rig.time_ns = 50 - 1000
    rig.timeline.acknowledged(['/clock'], 500, 510)
    before = time.monotonic_ns()
    rig.timeline.step('~/step', 'alice', 60, 600, 5, True, 'ok')
    events = rig.events()
    assert [(e.kind, e.epoch, e.sim_ns, e.start_ns, e.name, e.count, e.success)
            for e in events[:6]] == [
        (DONE, 3, 10, 100, 'planner', 2, True),
        (GATE, 3, 20, 200, '/cmd', 0, False),
        (DONE, 4, 30, 300, 'a', 0, False),
        (DONE, 4, 30, 300, 'b', 0, False),
        (ACK, 4, 40, 400, '/clock,/tf', 0, False),
        (ACK, 4, 50, 500, '/clock', 0, True)]
    assert [e.end_ns for e in events[:2]] == [150, 260]
    assert events[2].end_ns == events[3].end_ns > 300 and events[4].end_ns == 480
    step = events[6]
    assert (step.kind, step.sim_ns, step.start_ns, step.name, step.count, step.success,
            step.detail) == (STEP, 60, 600, '~/step', 5, True, 'alice: ok')
    assert step.end_ns >= before
    assert [e.sequence for e in events] == list(range(1, 8))


def test_frames_are_recorded_with_their_numbers(context):
    """A run of frames: one FRAME event each, numbered from the first given."""
    rig = Rig(context)
    rig.timeline.frames(rig.epoch, range(10, 40, 10), 7, 1234)
    assert [(e.kind, e.epoch, e.sim_ns, e.count, e.start_ns) for e in rig.events()] == [
        (FRAME, 3, 10, 7, 1234), (FRAME, 3, 20, 8, 1234), (FRAME, 3, 30, 9, 1234)]


def test_a_reset_carries_its_own_epoch_and_both_times(context):
    """The reset's epoch, not the one now; the time after as its time, the time before kept."""
    rig = Rig(context)
    rig.timeline.reset(9, 500, 0, 'seek requested')
    [event] = rig.events()
    assert (event.kind, event.epoch, event.sim_ns, event.count, event.detail) == (
        RESET, 9, 0, 500, 'seek requested')


def test_a_ring_of_length_zero_records_nothing(context):
    """frame_events 0: every call returns without an event."""
    rig = Rig(context, length=0)
    rig.timeline.frames(rig.epoch, range(10, 40, 10), 1, 0)
    rig.timeline.done(rig.epoch, 1, 2, 3, 'p')
    rig.timeline.gate(rig.epoch, 1, 2, 3, '/t')
    rig.timeline.missed(GATE, ['/t'], 1, 2)
    rig.timeline.acknowledged(['/clock'], 2, 3)
    rig.timeline.step('~/step', '', 1, 2, 1, True, '')
    rig.timeline.reset(1, 2, 0, 'reset')
    assert rig.ring.last_sequence == 0 and rig.events() == []


def test_to_msg_carries_every_field():
    """Each field of the event lands in the message of the same name."""
    event = FrameEvent(sequence=5, kind=GATE, epoch=2, sim_ns=30, start_ns=40, end_ns=50,
                       name='/cmd', count=6, success=False, detail='late')
    msg = to_msg(event)
    assert (msg.sequence, msg.kind, msg.epoch, msg.sim_ns, msg.start_ns, msg.end_ns, msg.name,
            msg.count, msg.success, msg.detail) == (5, GATE, 2, 30, 40, 50, '/cmd', 6, False,
                                                    'late')
    again = FrameEventMsg()
    assert to_msg(event, again) is again and again.detail == 'late'


def test_the_events_are_published_while_asked(context):
    """publish(True): each event on ~/frame_events as recorded; publish(False): none more."""
    rig = Rig(context)
    reader = Node('reader', context=context)
    got = []
    reader.create_subscription(FrameEventMsg, '/sim_clock/frame_events', got.append, EVENTS_QOS)
    rig.timeline.publish(True)
    publisher = rig.node.get_publishers_info_by_topic('/sim_clock/frame_events')
    assert publisher, 'no ~/frame_events publisher'
    spin_until([rig.node, reader],
               lambda: rig.node.count_subscribers('/sim_clock/frame_events') > 0)
    rig.timeline.done(rig.epoch, 10, 1, 2, 'planner')
    rig.timeline.frames(rig.epoch, range(20, 40, 10), 1, 3)
    spin_until([rig.node, reader], lambda: len(got) >= 3)
    assert [(m.kind, m.sim_ns, m.sequence) for m in got] == [
        (DONE, 10, 1), (FRAME, 20, 2), (FRAME, 30, 3)]
    rig.timeline.publish(False)
    rig.timeline.done(rig.epoch, 40, 4, 5, 'planner')
    rig.timeline.publish(True)
    rig.timeline.done(rig.epoch, 50, 6, 7, 'planner')
    spin_until([rig.node, reader], lambda: len(got) >= 4)
    assert [m.sim_ns for m in got] == [10, 20, 30, 50]


def test_the_service_answers_what_the_ring_holds(context):
    """~/get_frame_events: the events after the one asked from, the dropped, the capacity."""
    rig = Rig(context, length=3)
    for k in range(5):
        rig.timeline.done(rig.epoch, k, 0, 1, f'p{k}')
    caller = Node('caller', context=context)
    client = caller.create_client(GetFrameEvents, '/sim_clock/get_frame_events')
    spin_until([rig.node, caller], client.service_is_ready)
    before = time.monotonic_ns()
    future = client.call_async(GetFrameEvents.Request(after=1, max_events=2))
    spin_until([rig.node, caller], future.done)
    response = future.result()
    assert [(e.sequence, e.name) for e in response.events] == [(3, 'p2'), (4, 'p3')]
    assert (response.dropped, response.last_sequence, response.capacity) == (1, 5, 3)
    assert response.now_ns >= before
