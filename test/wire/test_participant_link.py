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
ParticipantLink: a participant's join, dones and leave against the server's real wire.

The server side is the node's own ``Participants`` on a real node of the test's context (its
time core real, the rest fakes that record, as in test/node/test_participants.py); a participant's
node in the same process holds the link. A raw subscription to ``~/done`` reads each done
field by field.
"""

import time

from node_doubles import MS
from node_doubles import ServerNode
from node_doubles import spin_for
from node_doubles import spin_until
import pytest
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from sim_clock.core.units import join_ns
from sim_clock.msg import Done
from sim_clock.node.participants import Participants
from sim_clock.srv import Join
from sim_clock.wire.names import DONE_QOS
from sim_clock.wire.names import SERVICE_QOS
from sim_clock.wire.participant_link import Joining
from sim_clock.wire.participant_link import Left
from sim_clock.wire.participant_link import ParticipantLink

pytestmark = pytest.mark.dds


class Rig:
    """A server in sync mode at frame 1 (10 ms) with its participants, and a linked node."""

    def __init__(self, context, serve: bool = True):
        self.server = ServerNode(context)
        self.server.timeline.step('', 1)
        self.barrier = self.server.core.barrier
        if serve:
            self.participants = Participants(self.server.waits(), self.barrier)
            self.participants.when_released(self.server.engine.released)
        self.node = Node('planner', context=context)
        self.link = ParticipantLink(self.node, '/sim_clock/')
        self.dones = []
        self.node.create_subscription(Done, '/sim_clock/done', self.dones.append, DONE_QOS)

    def spin_until(self, condition):
        """Spin both nodes until ``condition()`` holds."""
        spin_until([self.server, self.node], condition)

    def join(self, name: str = 'planner', **fields):
        """Join through the link once it may; return the server's answer."""
        self.spin_until(self.link.ready_to_join)
        future = self.link.ask_join(name, **fields)
        self.spin_until(future.done)
        return future.result()


def _spinner(*nodes):
    """Return ``spin_once(timeout_sec)`` over ``nodes`` alone, and its executor."""
    executor = SingleThreadedExecutor(context=nodes[0].context)
    for node in nodes:
        executor.add_node(node)
    return executor.spin_once, executor


def test_the_endpoints_are_the_servers_protocol(context):
    """Leave and join clients and the done writer, under the server's name, with its QoS."""
    rig = Rig(context)
    link = rig.link
    assert link.server == '/sim_clock'
    assert link.leave_client.srv_name == '/sim_clock/leave'
    assert link.join_client.srv_name == '/sim_clock/join'
    assert link.done_publisher.topic_name == '/sim_clock/done'
    assert link.done_publisher.qos_profile == DONE_QOS
    assert list(rig.node.clients) == [link.leave_client, link.join_client]
    rig.spin_until(link.ready_to_join)
    assert link.done_matched()


def test_a_join_is_asked_with_every_field_and_answered(context):
    """The future answers the server's outcome; the barrier has the participant as asked."""
    rig = Rig(context)
    response = rig.join('planner', node='/planner', period_ns=20 * MS)
    assert (response.success, response.frame, join_ns(response.clock)) == (True, 1, 10 * MS)
    participant = rig.barrier.participants['planner']
    assert (participant.period_ns, participant.node) == (20 * MS, '/planner')
    refused = rig.join('')
    assert not refused.success and 'name' in refused.message


def test_a_next_frame_join_names_its_topics(context):
    """next_frame and topics reach the barrier."""
    rig = Rig(context)
    assert rig.join('relay', next_frame=True, topics=('/b', '/a')).success
    participant = rig.barrier.participants['relay']
    assert participant.next_frame and participant.topics == {'/a', '/b'}


def test_a_forgotten_join_is_never_answered(context):
    """A join given up before the server took it: its future stays open, whatever comes."""
    rig = Rig(context)
    rig.spin_until(rig.link.ready_to_join)
    future = rig.link.ask_join('planner')
    rig.link.forget(future)
    rig.spin_until(lambda: 'planner' in rig.barrier.participants)
    spin_for([rig.server, rig.node], 0.2)
    assert not future.done()


def test_joining_asks_once_ready_and_answers_the_servers_outcome(context):
    """Not asked before ``also_ready``; then asked with its fields, answered once."""
    rig = Rig(context)
    ready = []
    joining = Joining(rig.link, 'planner', also_ready=lambda: bool(ready), node='/planner',
                      period_ns=20 * MS)
    rig.spin_until(rig.link.ready_to_join)
    assert joining.poll(time.monotonic_ns()) is None
    spin_for([rig.server, rig.node], 0.2)
    assert 'planner' not in rig.barrier.participants
    ready.append(True)
    answers = []
    rig.spin_until(lambda: answers.append(joining.poll(time.monotonic_ns())) or answers[-1])
    assert answers[-1].success
    assert rig.barrier.participants['planner'].period_ns == 20 * MS


def test_joining_asks_again_when_no_answer_came_in_time(context):
    """No answer within answer_ns: the join is given up and asked again at the next poll."""
    rig = Rig(context, serve=False)
    joins = []

    def answer(request, response):
        joins.append(request.name)
        response.success = True
        return response
    rig.server.create_service(Join, '/sim_clock/join', answer, qos_profile=SERVICE_QOS)
    joining = Joining(rig.link, 'planner', answer_ns=0)
    rig.spin_until(rig.link.ready_to_join)
    now_ns = time.monotonic_ns()
    assert joining.poll(now_ns) is None  # asked
    assert joining.poll(now_ns) is None  # no answer within 0 ns: given up
    assert joining.poll(now_ns) is None  # asked again
    rig.spin_until(lambda: len(joins) == 2)
    assert joins == ['planner', 'planner']


def test_a_done_without_counts_says_its_time_and_next(context):
    """Time and next as given, no rounds; the server's barrier takes it and the wait ends."""
    rig = Rig(context)
    rig.join()
    rig.barrier.published(10 * MS, time.monotonic_ns())
    assert rig.barrier.waiting_for == ['planner']
    rig.link.say_done('planner', 10 * MS, 50 * MS)
    rig.spin_until(lambda: rig.dones and rig.barrier.clear)
    (done,) = rig.dones
    assert (done.name, join_ns(done.time), join_ns(done.next)) == ('planner', 10 * MS, 50 * MS)
    assert (done.rounds, done.round, done.next_frame) == (False, 0, False)
    assert (list(done.topics), list(done.counts)) == ([], [])
    participant = rig.barrier.participants['planner']
    assert (participant.last_done_ns, participant.next_ns) == (10 * MS, 50 * MS)
    assert rig.server.engine.releases == 1


def test_a_done_with_counts_is_a_rounds_done(context):
    """Counts, empty or not, make a deterministic participant's done: round, topics, counts."""
    rig = Rig(context, serve=False)
    rig.spin_until(rig.link.done_matched)
    rig.link.say_done('stage', 30 * MS, counts={'/b': 2, '/a': 0}, round_number=3)
    rig.link.say_done('relay', 30 * MS, counts={}, next_frame=True)
    rig.spin_until(lambda: len(rig.dones) == 2)
    stage, relay = rig.dones
    assert (stage.name, join_ns(stage.time), join_ns(stage.next)) == ('stage', 30 * MS, 0)
    assert (stage.rounds, stage.round, stage.next_frame) == (True, 3, False)
    assert (list(stage.topics), list(stage.counts)) == (['/b', '/a'], [2, 0])
    assert (relay.rounds, relay.round, relay.next_frame) == (True, 0, True)
    assert (list(relay.topics), list(relay.counts)) == ([], [])


def test_a_leave_answered_ends_the_participation(context):
    """The server answers at once: ANSWERED, and no frame waits for it any more."""
    rig = Rig(context)
    rig.join()
    rig.barrier.published(10 * MS, time.monotonic_ns())
    spin_once, executor = _spinner(rig.server, rig.node)
    try:
        assert rig.link.leave('planner', spin_once) is Left.ANSWERED
    finally:
        executor.shutdown()
    assert not rig.barrier.participants
    assert rig.barrier.clear


def test_a_leave_with_no_server_is_not_asked(context):
    """Nothing serves ~/leave: NOT_SERVED at once, without spinning."""
    rig = Rig(context, serve=False)
    spun = []
    started = time.monotonic()
    assert rig.link.leave('planner', spun.append, 5 * 1_000_000_000) is Left.NOT_SERVED
    assert spun == [] and time.monotonic() - started < 1.0


def test_a_leave_not_answered_ends_at_its_bound(context):
    """A server that does not answer (not spun): UNANSWERED once the bound has passed."""
    rig = Rig(context)
    rig.join()
    spin_once, executor = _spinner(rig.node)
    try:
        started = time.monotonic_ns()
        assert rig.link.leave('planner', spin_once, 300 * MS) is Left.UNANSWERED
        waited = time.monotonic_ns() - started
    finally:
        executor.shutdown()
    assert 300 * MS <= waited < 300 * MS + 2_000 * MS
    assert 'planner' in rig.barrier.participants


def test_a_leave_ends_when_the_server_goes(context):
    """The server's ~/leave leaves the graph while the leave waits: UNANSWERED before the bound."""
    rig = Rig(context)
    rig.join()
    spin_node, executor = _spinner(rig.node)

    def spin_once(timeout_sec):
        if rig.server is not None:
            rig.server.destroy_node()  # it stops while the request is on its way
            rig.server = None
        spin_node(timeout_sec)
    try:
        started = time.monotonic()
        assert rig.link.leave('planner', spin_once, 20 * 1_000_000_000) is Left.UNANSWERED
        assert time.monotonic() - started < 10.0
    finally:
        executor.shutdown()


def test_destroy_releases_what_the_link_made(context):
    """Its writer and clients leave the node; the link can be made again on the same node."""
    rig = Rig(context, serve=False)
    link = rig.link
    made = (link.done_publisher, link.join_client, link.leave_client)
    link.destroy()
    assert not set(made) & {*rig.node.publishers, *rig.node.clients}
    assert link.done_publisher is link.join_client is link.leave_client is None
    again = ParticipantLink(rig.node)
    assert again.done_publisher in list(rig.node.publishers)


def test_shared_clients_come_from_the_cache_and_stay(context):
    """With ``clients``: made once into the cache, leave first, taken from it; never destroyed."""
    node = Node('client_node', context=context)
    cache = {}
    first = ParticipantLink(node, '/sim_clock', done=False, clients=cache)
    assert list(cache) == ['leave', 'join']
    assert (first.leave_client, first.join_client) == (cache['leave'], cache['join'])
    assert first.done_publisher is None
    assert not [p for p in node.publishers if p.topic_name == '/sim_clock/done']
    second = ParticipantLink(node, '/sim_clock', done=False, clients=cache)
    assert second.join_client is first.join_client and len(list(node.clients)) == 2
    second.destroy()
    assert list(node.clients) == [cache['leave'], cache['join']]


def test_a_link_without_calls_only_says_done(context):
    """``calls=False``: the done writer alone on the node."""
    node = Node('helper_node', context=context)
    link = ParticipantLink(node, calls=False)
    assert link.join_client is None and link.leave_client is None
    assert list(node.clients) == []
    assert link.done_publisher.topic_name == '/sim_clock/done'
