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

"""``sim_clock.wire.ready``: what a node says on ``~/ready``, through real nodes on DDS."""

import time

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy
from rclpy.qos import QoSProfile
from sim_clock.msg import Ready
from sim_clock.wire.names import READY_QOS
from sim_clock.wire.ready import LOOK_NS
from sim_clock.wire.ready import readers_seen
from sim_clock.wire.ready import ReadyReports
from sim_clock.wire.ready import SeenReaders
from sim_clock.wire.ready import UNKNOWN_NODE
from std_msgs.msg import String

pytestmark = pytest.mark.dds

TIMEOUT_S = 10.0


def test_a_pending_topic_is_said_as_a_reader_that_matched_nothing(context):
    """Topics the node waits to read count as readers with 0 writers until it reads them."""
    node = rclpy.create_node('reporter', context=context)
    listener = rclpy.create_node('listener', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    executor.add_node(listener)
    reports = []
    listener.create_subscription(Ready, '/sim_clock/ready', reports.append, READY_QOS)
    node.create_subscription(String, '/chatter', lambda _: None, 10)
    pending = ['/later', '/chatter']
    ready = ReadyReports(node, pending=lambda: pending)

    def said(now_ns: int) -> Ready:
        count = len(reports)
        assert ready.look(now_ns)
        deadline = time.monotonic() + TIMEOUT_S
        while len(reports) == count:
            assert time.monotonic() < deadline, 'no report came'
            executor.spin_once(timeout_sec=0.05)
        return reports[-1]

    first = said(LOOK_NS)
    assert list(first.subscriptions) == ['/chatter', '/later']
    assert list(first.writers) == [0, 0]
    assert not ready.look(2 * LOOK_NS), 'nothing changed: nothing is said again'

    # The node reads /later now and waits for nothing: said once, as its reader.
    pending.clear()
    node.create_subscription(String, '/later', lambda _: None, 10)
    writer = listener.create_publisher(String, '/later', 10)
    deadline = time.monotonic() + TIMEOUT_S
    while writer.get_subscription_count() < 1:
        assert time.monotonic() < deadline, 'the reader of /later never matched'
        executor.spin_once(timeout_sec=0.05)
    second = said(3 * LOOK_NS)
    assert list(second.subscriptions) == ['/chatter', '/later']
    assert list(second.writers) == [0, 1]
    executor.shutdown()


def test_each_writer_says_the_readers_it_sees_by_node(context):
    """A writer on /stage1: the graph's readers it could match, by node, and its count."""
    node = rclpy.create_node('reporter', context=context)
    listener = rclpy.create_node('listener', namespace='/robot', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    executor.add_node(listener)
    reports = []
    listener.create_subscription(Ready, '/sim_clock/ready', reports.append, READY_QOS)
    writer = node.create_publisher(String, '/stage1', 10)
    listener.create_subscription(String, '/stage1', lambda _: None, 10)
    # Transient local: the volatile writer never matches it, and it is not among those seen.
    listener.create_subscription(String, '/stage1', lambda _: None, QoSProfile(
        depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    deadline = time.monotonic() + TIMEOUT_S
    while writer.get_subscription_count() < 1 or len(
            node.get_subscriptions_info_by_topic('/stage1')) < 2:
        assert time.monotonic() < deadline, 'the reader of /stage1 never matched'
        executor.spin_once(timeout_sec=0.05)
    ready = ReadyReports(node)
    assert ready.look(LOOK_NS)
    while not reports:
        assert time.monotonic() < deadline, 'no report came'
        executor.spin_once(timeout_sec=0.05)
    said = reports[-1]
    assert list(said.publications) == ['/stage1'] and list(said.readers) == [1]
    assert list(said.readers_seen) == [1] and list(said.reader_nodes) == ['/robot/listener']
    executor.shutdown()


def test_the_graph_is_asked_again_only_when_a_topic_may_have_changed():
    """Settled (counts unchanged, as many matched as seen, all named): the last view."""
    graph = {'/stage1': ()}
    asked = []

    def look(topic):
        asked.append(topic)
        return graph[topic]

    seen = SeenReaders(look)
    assert seen('/stage1', (0,)) == () and len(asked) == 1
    graph['/stage1'] = ('/first',)
    assert seen('/stage1', (0,)) == (), 'settled at 0 of 0: not asked again'
    assert seen('/stage1', (1,)) == ('/first',), 'a count changed: asked again'
    assert len(asked) == 2
    assert seen('/stage1', (1,)) == ('/first',) and len(asked) == 2, 'settled'
    graph['/stage1'] = ('/first', '/second')
    assert seen('/stage1', (0,)) == ('/first', '/second'), 'a count changed: asked again'
    graph['/stage1'] = ('/first', '/second', '/third')
    assert seen('/stage1', (0,)) == ('/first', '/second', '/third'), '0 of 2: asked again'
    # A reader whose node the graph does not name yet: asked again until it is named.
    unknown = f'/_NODE_NAMESPACE_UNKNOWN_/{UNKNOWN_NODE}'
    graph['/stage1'] = ('/first', unknown)
    assert seen('/stage1', (2,)) == ('/first', unknown)
    graph['/stage1'] = ('/first', '/recorder')
    assert seen('/stage1', (2,)) == ('/first', '/recorder'), 'not named: asked again'
    asked.clear()
    assert seen('/stage1', (2,)) == ('/first', '/recorder') and not asked, 'settled'


def test_a_reader_of_the_graph_is_seen_by_its_node_name(context):
    """readers_seen: the graph's readers the writer could match, by full node name."""
    node = rclpy.create_node('reporter', context=context)
    node.create_publisher(String, '/stage1', 10)
    first = rclpy.create_node('first', namespace='/robot', context=context)
    first.create_subscription(String, '/stage1', lambda _: None, 10)
    deadline = time.monotonic() + TIMEOUT_S
    while readers_seen(node, '/stage1') != ('/robot/first',):
        assert time.monotonic() < deadline, 'the graph never showed /robot/first'
        time.sleep(0.01)
