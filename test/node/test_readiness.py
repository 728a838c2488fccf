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
ExpectedParticipants on a node: ~/ready reports, the server's own writers, and the look again.

A real node of the test's context holds the server's /clock writer; an expected node
(``/planner``) is a second node in the same process that reads /clock and says so on
``~/ready``. The roster is the real one; ``ready`` is ours, counting.
"""

from node_doubles import ServerNode
from node_doubles import spin_for
from node_doubles import spin_until
import pytest
import rclpy
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy
from rclpy.qos import QoSProfile
from rosgraph_msgs.msg import Clock
from sim_clock.core.roster import Roster
from sim_clock.core.roster import WriterView
from sim_clock.msg import Ready
from sim_clock.node.readiness import ExpectedParticipants
from sim_clock.wire.names import CLOCK_QOS
from sim_clock.wire.names import READY_QOS
from std_msgs.msg import String

pytestmark = pytest.mark.dds

PLANNER = '/planner'


class Rig:
    """A server node with a /clock writer, expecting /planner; the planner's node."""

    def __init__(self, context, expected=(PLANNER,)):
        self.server = ServerNode(context)
        self.clock = self.server.create_publisher(Clock, '/clock', CLOCK_QOS)
        self.writers = [self.clock]
        roster = Roster()
        roster.configure(expected)
        self.readies = 0
        self.expected = ExpectedParticipants(self.server, roster, lambda: self.writers,
                                             self.server.steady_clock)
        self.expected.when_ready(self._ready)
        self.planner = Node('planner', context=context)
        self.say = self.planner.create_publisher(Ready, '/sim_clock/ready', READY_QOS)
        self.reader = None

    def _ready(self):
        self.readies += 1

    def read_clock(self):
        """Give the planner a reader of /clock."""
        self.reader = self.planner.create_subscription(Clock, '/clock', lambda msg: None,
                                                       CLOCK_QOS)

    def report(self, writers_matched: int = 1):
        """Say on ~/ready that the planner reads /clock, matched to ``writers_matched``."""
        self.say.publish(Ready(name=PLANNER, subscriptions=['/clock'],
                               writers=[writers_matched]))

    def spin_until(self, condition):
        """Spin both nodes until ``condition()`` holds."""
        spin_until([self.server, self.planner], condition)


def test_the_server_writers_are_counted_by_topic(context, domain_id):
    """Each writer of frames, by topic, with its matches and the readers the graph shows."""
    rig = Rig(context)
    # A participant of its own: one participant takes one type per topic.
    elsewhere = rclpy.Context()
    rclpy.init(context=elsewhere, domain_id=domain_id)
    stranger = Node('stranger', context=elsewhere)
    rig.writers.append(rig.server.create_publisher(Clock, '/view/clock', CLOCK_QOS))
    assert rig.expected.server_writers() == {'/clock': [WriterView(0, ())],
                                             '/view/clock': [WriterView(0, ())]}
    rig.read_clock()
    # A reader the writer can never match (transient local: the writer is volatile) is not
    # among those it sees; nor is one of another type.
    rig.planner.create_subscription(Clock, '/clock', lambda msg: None, QoSProfile(
        depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    stranger.create_subscription(String, '/view/clock', lambda msg: None, 1)
    rig.spin_until(lambda: rig.expected.server_writers()['/clock'] == [
        WriterView(1, (PLANNER,))] and rig.server.count_subscribers('/view/clock'))
    assert rig.expected.server_writers()['/view/clock'] == [WriterView(0, ())]
    stranger.destroy_node()
    rclpy.try_shutdown(context=elsewhere)


def test_a_report_on_ready_makes_the_node_ready_once(context):
    """The planner's report, with the server's writer matched: ready, called once, logged."""
    rig = Rig(context)
    assert not rig.expected.look()
    rig.read_clock()
    rig.spin_until(lambda: rig.clock.get_subscription_count() == 1)
    rig.report()
    rig.spin_until(lambda: rig.readies)
    assert rig.readies == 1 and rig.expected.roster.all_ready
    assert rig.server.log.at('info') == ['every expected participant is ready: /planner']
    rig.report()
    spin_for([rig.server, rig.planner], 0.3)
    assert rig.expected.look() and rig.readies == 1   # no second call while ready


def test_what_is_missing_is_said(context):
    """Not reported yet: the planner; reported, unmatched: its reader and the server's writer."""
    rig = Rig(context)
    assert rig.expected.describe_missing() == [
        '/planner: not joined, or has not said on ~/ready which topics it uses']
    rig.report(writers_matched=0)
    rig.spin_until(lambda: PLANNER in rig.expected.roster.reports)
    assert rig.expected.describe_missing() == [
        '/planner: its reader on /clock matched 0 of 1 writers',
        'the server: its writer on /clock does not see 1 of the 1 readers of /planner yet']
    assert rig.readies == 0


def test_a_match_without_a_message_is_found_by_looking_again(context):
    """Reported before the server's writer matched it: the timer's look finds it ready."""
    rig = Rig(context)
    rig.report()
    rig.spin_until(lambda: PLANNER in rig.expected.roster.reports)
    assert rig.readies == 0     # its reader said 1 writer, but the server's matched none
    rig.read_clock()
    rig.spin_until(lambda: rig.readies)
    assert rig.expected.roster.all_ready


def test_a_reader_nobody_expects_does_not_stand_in_for_the_expected_one(context):
    """
    Another node's match on /clock is not the planner's: the frame waits for the planner's.

    The planner says its reader of /clock matched the server's writer before that writer
    matched it (here: before the reader exists), while another node's reader of /clock has
    matched: the writer's count is 1, as expected.
    """
    rig = Rig(context)
    other = Node('test_client', context=context)
    other.create_subscription(Clock, '/clock', lambda msg: None, CLOCK_QOS)
    rig.spin_until(lambda: rig.clock.get_subscription_count() == 1)
    rig.report()
    rig.spin_until(lambda: PLANNER in rig.expected.roster.reports)
    spin_for([rig.server, rig.planner, other], 0.3)  # the timer looks again, and again
    assert rig.readies == 0 and rig.expected.describe_missing() == [
        'the server: its writer on /clock does not see 1 of the 1 readers of /planner yet']
    rig.read_clock()
    spin_until([rig.server, rig.planner, other], lambda: rig.readies)
    assert rig.clock.get_subscription_count() == 2
    other.destroy_node()


def test_a_node_forgotten_must_say_it_is_ready_again(context):
    """forget: not ready any more; its next report makes it ready, and ready is called again."""
    rig = Rig(context)
    rig.read_clock()
    rig.spin_until(lambda: rig.clock.get_subscription_count() == 1)
    rig.report()
    rig.spin_until(lambda: rig.readies)
    rig.expected.forget(PLANNER, '')
    assert not rig.expected.roster.all_ready
    rig.report()
    rig.spin_until(lambda: rig.readies == 2)


def test_nothing_expected_is_ready_at_once(context):
    """With no expected node a look is ready, and ready is never called."""
    rig = Rig(context, expected=())
    assert rig.expected.look()
    assert rig.expected.describe_missing() == []
    assert rig.readies == 0
