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

"""launch/bag_player.launch.py replays a bag in sync mode that steps (needs launch_testing)."""

import os
import tempfile
import unittest

import pytest

launch_testing = pytest.importorskip(
    'launch_testing', reason='launch_testing is not installed (not on PyPI; see README)')

from launch import LaunchDescription  # noqa: E402, I100
from launch.actions import IncludeLaunchDescription  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
import rclpy  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from bags import write_test_bag  # noqa: E402, I100
from harness import ROOT  # noqa: E402
from sim_clock.client import SimClockClient  # noqa: E402, I100

LAUNCH_FILE = os.path.join(ROOT, 'launch', 'bag_player.launch.py')


@pytest.mark.launch_test
def generate_test_description():
    """Launch the player on a test bag in sync mode, /chatter remapped to /talk."""
    bag = os.path.join(tempfile.mkdtemp(), 'bag')
    write_test_bag(bag)
    return LaunchDescription([
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(LAUNCH_FILE),
            launch_arguments={'bag': bag, 'sync': 'true', 'time_step': '0.1',
                              'start_at_zero': 'true', 'topics': '/chatter',
                              'remappings': '/chatter:=/talk'}.items()),
        launch_testing.actions.ReadyToTest(),
    ])


class TestBagPlayerLaunched(unittest.TestCase):
    """While the launch runs."""

    def test_steps_play_the_remapped_topic_from_zero(self):
        """Ten steps of 100 ms: /clock from zero, /chatter's messages on /talk."""
        context = rclpy.Context()
        rclpy.init(context=context)
        try:
            node = rclpy.create_node('bag_launch_test', context=context)
            clocks, talk = [], []
            node.create_subscription(Clock, '/clock', clocks.append, 100)
            node.create_subscription(String, '/talk', talk.append, 100)
            executor = rclpy.executors.SingleThreadedExecutor(context=context)
            executor.add_node(node)
            ready = rclpy.task.Future()
            node.create_timer(0.01, lambda: (node.count_publishers('/talk') and clocks
                                             and not ready.done() and ready.set_result(True)))
            executor.spin_until_future_complete(ready, timeout_sec=20.0)
            self.assertTrue(ready.done(), 'no /talk publisher or /clock within 20 s')
            client = SimClockClient(node, timeout=20.0)
            result = client.step(10)
            self.assertEqual(result.time_ns, 10 * 100_000_000)
            future = rclpy.task.Future()
            node.create_timer(0.01, lambda: len(talk) >= 9 and future.set_result(True))
            executor.spin_until_future_complete(future, timeout_sec=20.0)
            self.assertTrue(future.done(), f'{len(talk)} messages on /talk within 20 s')
            client.close()
        finally:
            rclpy.try_shutdown(context=context)


@launch_testing.post_shutdown_test()
class TestBagPlayerShutdown(unittest.TestCase):
    """After the launch is shut down."""

    def test_exit_code(self, proc_info):
        """The player ends with exit code 0 on SIGINT."""
        launch_testing.asserts.assertExitCodes(proc_info)
