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

"""launch/sim_clock.launch.py starts a server that publishes /clock (needs launch_testing)."""

import os
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

from harness import ROOT  # noqa: E402, I100

LAUNCH_FILE = os.path.join(ROOT, 'launch', 'sim_clock.launch.py')


@pytest.mark.launch_test
def generate_test_description():
    """Launch the clock server in free run at 1 ms frames, with use_sim_time true."""
    return LaunchDescription([
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(LAUNCH_FILE),
            launch_arguments={'time_step': '0.001', 'use_sim_time': 'true'}.items()),
        launch_testing.actions.ReadyToTest(),
    ])


class TestClockServerLaunched(unittest.TestCase):
    """While the launch runs."""

    def test_clock_is_published(self):
        """A subscriber receives /clock advancing."""
        context = rclpy.Context()
        rclpy.init(context=context)
        try:
            node = rclpy.create_node('launch_test_listener', context=context)
            times = []
            node.create_subscription(
                Clock, '/clock', lambda msg: times.append(msg.clock.nanosec), 10)
            executor = rclpy.executors.SingleThreadedExecutor(context=context)
            executor.add_node(node)
            future = rclpy.task.Future()
            node.create_timer(0.01, lambda: len(set(times)) > 5 and future.set_result(True))
            executor.spin_until_future_complete(future, timeout_sec=20.0)
            self.assertTrue(future.done(), 'no advancing /clock within 20 s')
        finally:
            rclpy.try_shutdown(context=context)


@launch_testing.post_shutdown_test()
class TestClockServerShutdown(unittest.TestCase):
    """After the launch is shut down."""

    def test_exit_code(self, proc_info):
        """The clock server ends with exit code 0 on SIGINT."""
        launch_testing.asserts.assertExitCodes(proc_info)
