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
launch/bag_player.launch.py steps a bag in sync mode (needs launch_testing).

The arguments are checked by their effects: sync, time_step, publish_rate and use_sim_time in
the node's state, start_at_zero in /clock, topics and remappings in the graph and in what
comes out, which must be the bag's messages, in order, when the step returns.
"""

import os
import tempfile
import unittest

import pytest

pytestmark = pytest.mark.process

launch_testing = pytest.importorskip(
    'launch_testing', reason='launch_testing is not installed (not on PyPI; see README)')

from launch import LaunchDescription  # noqa: E402, I100
from launch.actions import IncludeLaunchDescription  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
from rclpy.qos import QoSProfile  # noqa: E402
from rclpy.qos import ReliabilityPolicy  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from bags import write_test_bag  # noqa: E402, I100
from harness import ROOT  # noqa: E402
from harness import TestClient  # noqa: E402

LAUNCH_FILE = os.path.join(ROOT, 'launch', 'bag_player.launch.py')
MS = 1_000_000
TIME_STEP_NS = 100 * MS
STEPS = 10


@pytest.mark.launch_test
def generate_test_description():
    """Launch the player on a 1 s test bag: sync, 100 ms frames, from zero, /chatter as /talk."""
    bag = os.path.join(tempfile.mkdtemp(), 'bag')
    records = write_test_bag(bag)
    return LaunchDescription([
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(LAUNCH_FILE),
            launch_arguments={'bag': bag, 'sync': 'true', 'time_step': '0.1',
                              'start_at_zero': 'true', 'topics': '/chatter',
                              'remappings': '/chatter:=/talk', 'publish_rate': '20.0',
                              'use_sim_time': 'true', 'play_args': '--rate 2.5'}.items()),
        launch_testing.actions.ReadyToTest(),
    ]), {'chatter': [r.key for r in records if r.topic == '/chatter']}


class TestBagPlayerLaunched(unittest.TestCase):
    """While the launch runs (the tests run in the order of their names)."""

    @classmethod
    def setUpClass(cls):
        """Subscribe /clock and /talk (reliable, deep enough for a whole step's burst)."""
        cls.client = TestClient(int(os.environ['ROS_DOMAIN_ID']), name='bag_launch_test')
        cls.talk = []
        cls.client.node.create_subscription(
            String, '/talk', lambda msg: cls.talk.append(msg.data),
            QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))

    @classmethod
    def tearDownClass(cls):
        """Shut the test node down."""
        cls.client.close()

    def test_1_arguments_take_effect(self):
        """sync, time_step, publish_rate, use_sim_time, start_at_zero, topics and remappings."""
        client = self.client
        status = client.status_when_ready()
        self.assertEqual((status.mode, status.sync, status.paused), ('simulation', True, False))
        self.assertEqual((status.time_step_ns, status.publish_rate), (TIME_STEP_NS, 20.0))
        self.assertEqual((status.frame, status.clock.sec, status.clock.nanosec), (0, 0, 0))
        self.assertIs(client.get_parameter('use_sim_time'), True)
        self.assertIs(client.get_parameter('loop'), False)
        # play_args: ros2 bag play's --rate is real_time_factor.
        self.assertEqual(client.get_parameter('real_time_factor'), 2.5)
        node = client.node
        client.spin_until(lambda: node.count_publishers('/talk') == 1, 'a /talk publisher')
        self.assertEqual(node.count_publishers('/chatter'), 0, 'remapped: no /chatter')
        self.assertEqual(node.count_publishers('/pose'), 0, 'not in topics: no /pose')
        # start_at_zero: the bag's first timestamp (1000 s) is /clock 0, republished while idle.
        client.spin_until(lambda: len(client.clocks) >= 3, 'three /clock messages')
        self.assertEqual(set(client.times()), {0})

    def test_2_a_step_plays_the_bag(self, chatter):
        """Ten steps of 100 ms: /clock 0.1 s to 1 s, each once; all of /chatter, on /talk."""
        client = self.client
        client.spin_until(lambda: client.node.count_subscribers('/talk') >= 1
                          and client.node.count_publishers('/talk') == 1, '/talk matched')
        response = client.step(steps=STEPS)
        self.assertTrue(response.success, response.message)
        self.assertEqual((response.frame, response.clock.sec, response.clock.nanosec),
                         (STEPS, 1, 0))
        client.wait_for_time(STEPS * TIME_STEP_NS)
        self.assertEqual(client.distinct_times()[-STEPS - 1:],
                         [k * TIME_STEP_NS for k in range(STEPS + 1)])
        self.assertEqual(len(chatter), 11)
        client.spin_until(lambda: len(self.talk) >= len(chatter),
                          f'{len(chatter)} messages on /talk')
        self.assertEqual(self.talk, chatter)


@launch_testing.post_shutdown_test()
class TestBagPlayerShutdown(unittest.TestCase):
    """After the launch is shut down."""

    def test_exit_code(self, proc_info):
        """The player ends with exit code 0 on SIGINT."""
        launch_testing.asserts.assertExitCodes(proc_info)
