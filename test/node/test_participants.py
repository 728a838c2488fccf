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
Participants on a node: join and leave, dones off the wire, rounds said, resets, the graph.

A real node of the test's context serves ~/join and reads ~/done; a participant's node in
the same process writes them. The barrier is the time core's; the engine, the expected
participants and the frame timeline are fakes of ours that record.
"""

import time

from node_doubles import MS
from node_doubles import ServerNode
from node_doubles import spin_for
from node_doubles import spin_until
import pytest
from rclpy.node import Node
from sim_clock.core.rules import Mode
from sim_clock.msg import Done
from sim_clock.msg import Round
from sim_clock.node.participants import Participants
from sim_clock.srv import Join
from sim_clock.wire.names import DONE_QOS

pytestmark = pytest.mark.dds


class Rig:
    """A server node in sync mode at frame 1 (10 ms), and a participant's node."""

    def __init__(self, context):
        self.server = ServerNode(context)
        self.server.timeline.step('', 1)
        self.barrier = self.server.core.barrier
        self.participants = Participants(self.server.waits(), self.barrier)
        self.participants.when_released(self.server.engine.released)
        self.node = Node('planner', context=context)
        self.done = self.node.create_publisher(Done, '/sim_clock/done', DONE_QOS)
        self.rounds = []
        self.node.create_subscription(Round, '/sim_clock/rounds', self.rounds.append, DONE_QOS)

    def spin_until(self, condition):
        """Spin both nodes until ``condition()`` holds."""
        spin_until([self.server, self.node], condition)

    def spin_for(self, seconds):
        """Spin both nodes for ``seconds``."""
        spin_for([self.server, self.node], seconds)

    def say_done(self, name: str, time_ns: int):
        """Publish a done for ``time_ns`` once the server reads ~/done."""
        self.spin_until(lambda: self.done.get_subscription_count() == 1)
        msg = Done(name=name)
        msg.time.sec, msg.time.nanosec = divmod(time_ns, 1_000_000_000)
        self.done.publish(msg)


def test_join_and_leave_say_what_happened(context):
    """A join answers the frame and time it counts from; a leave forgets the node's report."""
    rig = Rig(context)
    outcome = rig.participants.join('planner', '/planner', 20 * MS)
    assert (outcome.success, outcome.frame, outcome.clock_ns) == (True, 1, 10 * MS)
    assert outcome.message == 'joined; frame 1 is the last before its first'
    assert 'planner' in rig.barrier.participants
    assert rig.server.log.at('info') == [
        "participant 'planner' joined (period 20000000 ns, node /planner)"]
    refused = rig.participants.join('', '', 0)
    assert not refused.success and 'name' in refused.message
    assert rig.participants.leave('nobody').message == "no participant named 'nobody'"
    left = rig.participants.leave('planner')
    assert (left.success, left.message) == (True, "'planner' left")
    assert rig.server.expected.forgotten == [('planner', '/planner')]
    assert rig.server.log.at('info')[-1] == "participant 'planner' left"
    assert not rig.barrier.participants
    assert rig.server.engine.releases == 1


def test_join_through_the_service(context):
    """~/join adds the participant and answers the outcome in its response."""
    rig = Rig(context)
    client = rig.node.create_client(Join, '/sim_clock/join')
    rig.spin_until(client.service_is_ready)
    future = client.call_async(Join.Request(name='planner', period_ns=0))
    rig.spin_until(future.done)
    response = future.result()
    assert response.success and response.frame == 1
    assert (response.clock.sec, response.clock.nanosec) == (0, 10 * MS)
    assert 'planner' in rig.barrier.participants


def test_a_done_off_the_wire_releases_the_frame(context):
    """The awaited participant's done: recorded, the wait ends, frames go on."""
    rig = Rig(context)
    rig.participants.join('planner', '', 0)
    assert rig.barrier.published(10 * MS, time.monotonic_ns()) == ['planner']
    rig.say_done('planner', 10 * MS)
    rig.spin_until(lambda: rig.barrier.clear)
    assert [call[:3] for call in rig.server.frame_timeline.calls] == [
        ('done', 'planner', 10 * MS)]
    assert rig.server.engine.releases == 1


def test_a_done_for_a_time_not_out_yet_is_stale(context):
    """A done for a time after /clock now (or before the epoch) releases nothing."""
    rig = Rig(context)
    rig.participants.join('planner', '', 0)
    rig.barrier.published(10 * MS, time.monotonic_ns())
    rig.say_done('planner', 20 * MS)
    rig.spin_for(0.3)
    assert rig.barrier.waiting_for == ['planner']
    assert rig.server.frame_timeline.calls == []


def test_a_reset_awaits_everyone_at_the_new_time_and_old_dones_are_stale(context):
    """In simulation mode the reset's time is a frame like any other; older dones are stale."""
    rig = Rig(context)
    rig.participants.join('planner', '', 0)
    rig.server.timeline.step('', 4)                         # 50 ms
    rig.server.timeline.seek(30 * MS)
    rig.server.dispatch()
    assert rig.barrier.waiting_for == ['planner']
    rig.say_done('planner', 10 * MS)                        # of the epoch before
    rig.spin_for(0.3)
    assert rig.barrier.waiting_for == ['planner']
    rig.say_done('planner', 30 * MS)
    rig.spin_until(lambda: rig.barrier.clear)


def test_a_reset_to_real_time_awaits_nobody(context):
    """Real-time mode ignores participants: a reset into it ends the wait for them."""
    rig = Rig(context)
    rig.participants.join('planner', '', 0)
    rig.barrier.published(10 * MS, time.monotonic_ns())
    rig.server.timeline.set_mode_sync(Mode.REAL_TIME, False)
    rig.server.dispatch()
    assert rig.barrier.clear and rig.barrier.waiting_for == []


def test_each_frame_out_says_what_next_frame_participants_published(context):
    """A Round per frame out for next_frame participants: their topics, counts, that time."""
    rig = Rig(context)
    rig.participants.frame_out(10 * MS)                     # nobody next_frame: nothing said
    rig.participants.join('relay', '', 0, next_frame=True, topics=['/scan'])
    rig.spin_until(lambda: rig.node.count_publishers('/sim_clock/rounds') == 1)
    rig.spin_until(lambda: rig.server.count_subscribers('/sim_clock/rounds') == 1)
    rig.participants.frame_out(10 * MS)
    rig.participants.frame_out()                            # the same time again: said again
    rig.spin_until(lambda: len(rig.rounds) >= 2)
    rig.spin_for(0.2)
    assert [(r.time.nanosec, r.round, r.next_frame, list(r.topics), list(r.counts))
            for r in rig.rounds] == [(10 * MS, 0, True, ['/scan'], [0])] * 2


def test_a_participant_whose_node_leaves_the_graph_is_dropped(context):
    """Seen in the graph, then gone: dropped with a warning that names its node."""
    rig = Rig(context)
    watched = Node('watched', context=context)
    rig.participants.join('watcher', '/watched', 0)
    spin_for([rig.server, rig.node, watched], 1.2)          # the graph check sees it
    assert 'watcher' in rig.barrier.participants
    watched.destroy_node()
    rig.spin_until(lambda: not rig.barrier.participants)
    assert rig.server.log.at('warning') == [
        "participant 'watcher' dropped: its node /watched left the graph"]


def test_a_participant_whose_node_never_appears_is_dropped_after_the_grace(context):
    """Never in the graph, every done writer named: dropped once the grace has passed."""
    rig = Rig(context)
    rig.participants.join('ghost', '/ghost', 0)
    joined = time.monotonic_ns()
    rig.spin_until(lambda: not rig.barrier.participants)
    assert time.monotonic_ns() - joined > 2_000_000_000
    assert rig.server.log.at('warning') == [
        "participant 'ghost' dropped: its node /ghost never appeared in the graph in the "
        '2 s after it joined']


def test_after_a_reset_to_the_same_time_what_is_said_again_is_new(context):
    """A reset back to the time of the last Round: the time again says what came since."""
    rig = Rig(context)
    rig.participants.join('relay', '', 0, next_frame=True, topics=['/scan'])
    rig.spin_until(lambda: rig.node.count_publishers('/sim_clock/rounds') == 1)
    rig.spin_until(lambda: rig.server.count_subscribers('/sim_clock/rounds') == 1)
    rig.participants.frame_out(10 * MS)                     # said: nothing published yet
    rig.barrier.done('relay', 10 * MS, time.monotonic_ns(), counts={'/scan': 2},
                     next_frame=True)                       # it published 2 while at 10 ms
    rig.server.timeline.seek(10 * MS)                       # a reset to the same time
    rig.server.dispatch()
    rig.participants.frame_out()                            # the reset's time goes out
    rig.spin_until(lambda: len(rig.rounds) >= 2)
    rig.spin_for(0.2)
    assert [(r.time.nanosec, list(r.topics), list(r.counts)) for r in rig.rounds] == [
        (10 * MS, ['/scan'], [0]), (10 * MS, ['/scan'], [2])]
