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
OutputGates on a node: a gated topic subscribed once a writer shows, its messages, its drain.

A real node of the test's context subscribes; a writer node in the same process publishes on
the gated topic. The gates are the time core's; the engine and the frame timeline are fakes
of ours that record.
"""

import time

from node_doubles import MS
from node_doubles import ServerNode
from node_doubles import spin_for
from node_doubles import spin_until
import pytest
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from sim_clock.core.gates import parse_gates
from sim_clock.node.gate_readers import OutputGates
from std_msgs.msg import String

pytestmark = pytest.mark.dds

GATED_NS = 20 * MS


class Rig:
    """A server node gating /cmd every 20 ms, and a node that may write on /cmd."""

    def __init__(self, context):
        self.server = ServerNode(context)
        self.gates = self.server.core.gates
        self.gates.configure(parse_gates('/cmd@0.02'))
        self.output = OutputGates(self.server.waits(), self.gates)
        self.output.when_released(self.server.engine.released)
        self.writer_node = Node('controller', context=context)
        self.writer = None

    def write(self, reliability=ReliabilityPolicy.RELIABLE):
        """Make the controller's writer on /cmd."""
        self.writer = self.writer_node.create_publisher(
            String, '/cmd', QoSProfile(depth=10, reliability=reliability))

    def subscribed(self) -> list:
        """Return the topics the server node subscribes."""
        return sorted(subscription.topic_name for subscription in self.server.subscriptions)

    def spin_until(self, condition):
        """Spin both nodes until ``condition()`` holds."""
        spin_until([self.server, self.writer_node], condition)

    def await_frame(self):
        """Send a gated frame out: it waits for a message on /cmd."""
        assert self.gates.published(0, GATED_NS, time.monotonic_ns()) == ['/cmd']


def test_a_gated_topic_is_subscribed_once_its_writer_shows(context):
    """No writer: nothing subscribed; the discovery timer subscribes it with its type."""
    rig = Rig(context)
    rig.output.refresh()
    assert '/cmd' not in rig.subscribed()
    assert rig.server.engine.releases == 0      # a refresh alone lets no frame go
    rig.write()
    rig.spin_until(lambda: '/cmd' in rig.subscribed())
    assert 'output gate /cmd: subscribed (std_msgs/msg/String, reliable)' in (
        rig.server.log.at('info'))
    rig.spin_until(lambda: rig.gates.gates['/cmd'].writers == 1)


def test_a_best_effort_writer_gets_a_best_effort_reader(context):
    """A reliable reader would not match a best-effort writer: the gate reads best effort."""
    rig = Rig(context)
    rig.write(ReliabilityPolicy.BEST_EFFORT)
    rig.spin_until(lambda: '/cmd' in rig.subscribed())
    assert 'output gate /cmd: subscribed (std_msgs/msg/String, best effort)' in (
        rig.server.log.at('info'))


def test_a_message_releases_the_awaited_frame(context):
    """The awaited gate is satisfied, recorded, and the engine is woken to go on."""
    rig = Rig(context)
    rig.write()
    rig.spin_until(lambda: rig.gates.gates['/cmd'].writers == 1)
    rig.await_frame()
    releases = rig.server.engine.releases
    rig.writer.publish(String(data='go'))
    rig.spin_until(lambda: not rig.gates.awaited)
    assert rig.server.frame_timeline.calls == [('gate', '/cmd', GATED_NS)]
    assert rig.gates.gates['/cmd'].last_satisfied_ns == GATED_NS
    assert rig.server.engine.releases > releases


def test_a_message_taken_before_the_frame_is_drained(context):
    """What the reader held when the gated frame went out never releases it."""
    rig = Rig(context)
    rig.write()
    rig.spin_until(lambda: rig.gates.gates['/cmd'].writers == 1)
    rig.writer.publish(String(data='early'))
    assert rig.writer.wait_for_all_acked()
    rig.await_frame()
    rig.output.drain()
    spin_for([rig.server, rig.writer_node], 0.3)
    assert rig.gates.awaited and rig.server.frame_timeline.calls == []
    rig.writer.publish(String(data='in time'))
    rig.spin_until(lambda: not rig.gates.awaited)


def test_a_gate_removed_is_unsubscribed(context):
    """A new table without the gate drops its subscription and lets the engine go on."""
    rig = Rig(context)
    rig.write()
    rig.spin_until(lambda: '/cmd' in rig.subscribed())
    rig.gates.configure(())
    releases = rig.server.engine.releases
    rig.output.reconfigure()
    assert '/cmd' not in rig.subscribed()
    assert rig.server.engine.releases == releases + 1


def test_a_reset_ends_every_wait(context):
    """A reset of the timeline: the gated frame waits no more."""
    rig = Rig(context)
    rig.await_frame()
    rig.server.timeline.reset('test')
    rig.server.dispatch()
    assert not rig.gates.awaited and rig.gates.waiting_for == []
