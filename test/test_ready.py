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

"""``sim_clock.ready``: what a node says on ``~/ready``, through real nodes on DDS."""

import time

import rclpy
from rclpy.executors import SingleThreadedExecutor
from sim_clock.msg import Ready
from sim_clock.names import READY_QOS
from sim_clock.ready import LOOK_NS
from sim_clock.ready import ReadyReports
from std_msgs.msg import String

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
