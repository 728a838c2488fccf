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
``sim_clock._writer_times``: the heartbeat period of a live rclpy publisher's Fast DDS writer.

A reliable reader in a process of its own acknowledges a sample only when the writer's
heartbeat asks, and once when it matches a writer. On our profile it answers at once (and
acknowledges at the match itself), so how soon a sample is acknowledged shows the period the
writer has: within a second at 1 ms, not within a second at 30 s. Each writer gets its period
before it matches the reader: a period set while a heartbeat is pending (one is from the match
on) takes effect after that heartbeat.
"""

from harness import ChildProcess
import pytest
import rclpy
from rclpy.duration import Duration
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from sim_clock.process.fastdds_profiles import answer_late_clients
from std_msgs.msg import String

pytestmark = pytest.mark.process

writer_times = pytest.importorskip('sim_clock._writer_times')

QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
TOPIC = '/writer_times_test'

#: A reliable reader that says when it has matched two writers, then what it takes.
READER = f"""
import rclpy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from std_msgs.msg import String

rclpy.init()
node = rclpy.create_node('reader')
subscription = node.create_subscription(
    String, {TOPIC!r}, lambda msg: print('took', msg.data, flush=True),
    QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
while subscription.get_publisher_count() < 2:
    rclpy.spin_once(node, timeout_sec=0.05)
print('matched', flush=True)
try:
    while rclpy.ok():
        rclpy.spin_once(node, timeout_sec=0.1)
except KeyboardInterrupt:
    pass
node.destroy_node()
rclpy.try_shutdown()
"""


def test_a_period_set_on_a_live_writer_is_the_one_its_readers_are_asked_at(
        context, domain_id, tmp_path):
    node = rclpy.create_node('writer', context=context)
    fast, slow = (node.create_publisher(String, TOPIC, QOS) for _ in range(2))
    assert writer_times.set_heartbeat_period(fast.handle.pointer, 1_000_000) is True
    assert writer_times.set_heartbeat_period(slow.handle.pointer, 30_000_000_000) is True
    environ = {}
    answer_late_clients(environ)  # the reader on our profile: it answers at once
    reader = ChildProcess(domain_id, READER, str(tmp_path), env=environ)
    try:
        reader.expect('matched')
        # And each writer has matched the reader, so its first heartbeat to it is behind too.
        executor = rclpy.executors.SingleThreadedExecutor(context=context)
        executor.add_node(node)
        while min(fast.get_subscription_count(), slow.get_subscription_count()) < 1:
            executor.spin_once(timeout_sec=0.05)
        # The reader's acknowledgements at the match were made before it said so; its answer
        # to the fast writer's heartbeat comes after them.
        fast.publish(String(data='fast'))
        assert reader.expect('took') == 'fast'
        assert fast.wait_for_all_acked(Duration(seconds=1))
        slow.publish(String(data='slow'))
        assert reader.expect('took') == 'slow'
        assert not slow.wait_for_all_acked(Duration(seconds=1))  # asked in 30 s only
        with pytest.raises(ValueError, match='must be positive'):
            writer_times.set_heartbeat_period(fast.handle.pointer, 0)
    finally:
        reader.stop()
        node.destroy_node()
