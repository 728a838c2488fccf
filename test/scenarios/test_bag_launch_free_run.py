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
launch/bag_player.launch.py plays a bag in free run, paused, then looping (needs launch_testing).

A params file gives sync, time_step and real_time_factor; launch arguments override sync (with
its default, false) and real_time_factor; paused, loop, namespace and node_name are launch
arguments. The bag's own timeline is /clock.
"""

import os
import tempfile
import time
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
from std_srvs.srv import Trigger  # noqa: E402

from bags import START_NS  # noqa: E402, I100
from bags import write_test_bag  # noqa: E402
from harness import NS  # noqa: E402
from harness import ROOT  # noqa: E402
from harness import TestClient  # noqa: E402

LAUNCH_FILE = os.path.join(ROOT, 'launch', 'bag_player.launch.py')
SERVER = '/robot/player'
MS = 1_000_000
PARAMS = """/**:
  ros__parameters:
    sync: true
    time_step: 0.02
    real_time_factor: 1.0
"""
FACTOR = 10.0
LOOPS = 5


@pytest.mark.launch_test
def generate_test_description():
    """Launch the player on a 1 s MCAP bag: paused, 10 times the recorded pace, looping."""
    folder = tempfile.mkdtemp()
    bag = os.path.join(folder, 'bag')
    records = write_test_bag(bag, storage='mcap')
    params_file = os.path.join(folder, 'params.yaml')
    with open(params_file, 'w') as params:
        params.write(PARAMS)
    return LaunchDescription([
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(LAUNCH_FILE),
            launch_arguments={'bag': bag, 'params_file': params_file, 'sync': 'false',
                              'real_time_factor': str(FACTOR), 'paused': 'true',
                              'loop': 'true', 'namespace': 'robot',
                              'node_name': 'player'}.items()),
        launch_testing.actions.ReadyToTest(),
    ]), {'chatter': [r.key for r in records if r.topic == '/chatter']}


class TestBagPlayerFreeRun(unittest.TestCase):
    """While the launch runs (the tests run in the order of their names)."""

    @classmethod
    def setUpClass(cls):
        """Subscribe /clock and /chatter."""
        cls.client = TestClient(int(os.environ['ROS_DOMAIN_ID']), server=SERVER,
                                name='bag_launch_free_run_test')
        cls.chatter = []
        cls.client.node.create_subscription(
            String, '/chatter', lambda msg: cls.chatter.append(msg.data),
            QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))

    @classmethod
    def tearDownClass(cls):
        """Shut the test node down."""
        cls.client.close()

    def test_1_starts_paused_with_the_arguments_over_the_file(self):
        """Under /robot/player: paused at the start, the file's step, the arguments' sync, pace."""
        client = self.client
        status = client.status_when_ready()
        self.assertEqual((status.mode, status.sync, status.paused), ('simulation', False, True))
        self.assertEqual((status.time_step_ns, status.real_time_factor), (20 * MS, FACTOR))
        self.assertEqual((status.frame, status.clock.sec * NS + status.clock.nanosec),
                         (0, START_NS))
        self.assertIs(client.get_parameter('loop'), True)
        # Paused: /clock keeps coming, frozen at the bag's first timestamp, and no data.
        client.spin_until(lambda: len(client.clocks) >= 3, 'three /clock messages')
        self.assertEqual(set(client.times()), {START_NS})
        self.assertEqual(self.chatter, [])

    def test_2_resumed_it_loops_at_the_pace_given(self, chatter):
        """Resumed: each pass plays the bag's /chatter and the bag's times; a pass takes 0.1 s."""
        client = self.client
        client.spin_until(lambda: client.node.count_publishers('/chatter') == 1
                          and client.node.count_subscribers('/chatter') >= 1, '/chatter matched')
        epoch = client.status().epoch
        resumed = time.monotonic()
        self.assertTrue(client.call(Trigger, 'resume').success)
        client.spin_until(lambda: len(self.chatter) >= LOOPS * len(chatter),
                          f'{LOOPS} passes of /chatter', timeout=30.0)
        took = time.monotonic() - resumed
        status = client.status()
        self.assertGreaterEqual(status.epoch - epoch, LOOPS - 1)
        # At the recorded pace the passes would take 5 s, at ten times 0.5 s.
        self.assertLess(took, 2.5, f'{LOOPS} passes of a 1 s bag took {took:.2f} s')
        self.assertEqual(self.chatter[:LOOPS * len(chatter)], chatter * LOOPS)
        times = client.times()
        self.assertTrue(all(START_NS <= t <= START_NS + NS for t in times))
        self.assertTrue(all(t % (20 * MS) == START_NS % (20 * MS) for t in times))


@launch_testing.post_shutdown_test()
class TestBagPlayerFreeRunShutdown(unittest.TestCase):
    """After the launch is shut down."""

    def test_exit_code(self, proc_info):
        """The player ends with exit code 0 on SIGINT."""
        launch_testing.asserts.assertExitCodes(proc_info)
