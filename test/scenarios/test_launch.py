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
launch/sim_clock.launch.py starts a server that publishes /clock (needs launch_testing).

Arguments given win over params_file even when they equal the defaults; those not given leave
the file's values.
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

from harness import ROOT  # noqa: E402, I100
from harness import TestClient  # noqa: E402

LAUNCH_FILE = os.path.join(ROOT, 'launch', 'sim_clock.launch.py')
MS = 1_000_000
#: A params file of lockstep at 5 ms frames and half pace.
PARAMS = """/**:
  ros__parameters:
    sync: true
    time_step: 0.005
    real_time_factor: 0.5
"""


@pytest.mark.launch_test
def generate_test_description():
    """Launch the clock server over PARAMS with sync:=false time_step:=0.01 use_sim_time:=true."""
    params_file = os.path.join(tempfile.mkdtemp(), 'params.yaml')
    with open(params_file, 'w') as params:
        params.write(PARAMS)
    # sync and time_step at the package's defaults: given, they win over the file all the same.
    return LaunchDescription([
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(LAUNCH_FILE),
            launch_arguments={'params_file': params_file, 'sync': 'false', 'time_step': '0.01',
                              'use_sim_time': 'true'}.items()),
        launch_testing.actions.ReadyToTest(),
    ])


class TestClockServerLaunched(unittest.TestCase):
    """While the launch runs."""

    def test_clock_is_published(self):
        """Free run in 10 ms frames as given, at the file's pace; use_sim_time is set."""
        client = TestClient(int(os.environ['ROS_DOMAIN_ID']), name='launch_test_listener')
        try:
            status = client.status_when_ready()
            self.assertEqual((status.mode, status.sync, status.time_step_ns),
                             ('simulation', False, 10 * MS))
            self.assertEqual(status.real_time_factor, 0.5)  # not given: the file's
            self.assertIs(client.get_parameter('use_sim_time'), True)
            client.spin_until(lambda: len(set(client.times())) > 5, 'advancing /clock')
            self.assertTrue(all(t % (10 * MS) == 0 for t in client.times()))
        finally:
            client.close()


@launch_testing.post_shutdown_test()
class TestClockServerShutdown(unittest.TestCase):
    """After the launch is shut down."""

    def test_exit_code(self, proc_info):
        """The clock server ends with exit code 0 on SIGINT."""
        launch_testing.asserts.assertExitCodes(proc_info)
