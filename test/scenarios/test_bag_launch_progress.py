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
launch/bag_player.launch.py shows progress as log lines while the bag plays (needs launch_testing).

The launch file starts the player with emulate_tty: its stderr is a pseudo-terminal that launch
reads line by line. A line rewritten in place there would come out only at the end.
"""

import os
import re
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

from bags import write_test_bag  # noqa: E402, I100
from harness import ROOT  # noqa: E402
from harness import TestClient  # noqa: E402
from harness import TIMEOUT  # noqa: E402

LAUNCH_FILE = os.path.join(ROOT, 'launch', 'bag_player.launch.py')
#: The 1 s test bag at this pace plays for 6.7 s; a progress log line is due every 5 s.
RATE = 0.15
#: A progress line in the node's log: bag time, percent, messages out of the total.
LOG_LINE = re.compile(r'\[INFO\] \[[\d.]+\] \[sim_clock\]: bag (\d+\.\d{3}) s +(\d+\.\d)% +'
                      r'(\d+)/(\d+) msgs')


@pytest.mark.launch_test
def generate_test_description():
    """Launch the player on a 1 s MCAP bag, free run at 0.15 times the recorded pace."""
    folder = tempfile.mkdtemp()
    bag = os.path.join(folder, 'bag')
    records = write_test_bag(bag, storage='mcap')
    return LaunchDescription([
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(LAUNCH_FILE),
            launch_arguments={'bag': bag, 'real_time_factor': str(RATE)}.items()),
        launch_testing.actions.ReadyToTest(),
    ]), {'records': records}


class TestBagProgressUnderLaunch(unittest.TestCase):
    """While the launch runs."""

    def test_a_progress_log_line_comes_while_the_bag_plays(self, proc_output, records):
        """The log line arrives before the end of the bag, as a full line; no line rewritten."""
        client = TestClient(int(os.environ['ROS_DOMAIN_ID']), name='bag_launch_progress_test')
        try:
            client.status_when_ready()
            proc_output.assertWaitFor(LOG_LINE, timeout=TIMEOUT)
            # Still playing when it came: at the end of the bag the player pauses and ends.
            self.assertFalse(client.status().paused)
        finally:
            client.close()
        text = ''.join(event.text.decode(errors='replace') for event in proc_output)
        line = LOG_LINE.search(text)
        self.assertLess(float(line.group(2)), 100.0, line.group(0))
        self.assertEqual(int(line.group(4)), len(records), line.group(0))
        self.assertNotIn('\x1b[K', text)  # no line rewritten in place
        self.assertNotIn('end of the bag', text[:line.start()])


@launch_testing.post_shutdown_test()
class TestBagProgressUnderLaunchShutdown(unittest.TestCase):
    """After the launch is shut down."""

    def test_exit_code(self, proc_info):
        """The player ends with exit code 0 on SIGINT."""
        launch_testing.asserts.assertExitCodes(proc_info)
