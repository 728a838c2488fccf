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

"""The first hour as the README says it: what a new user types first behaves."""

import os
import subprocess
import sys

from harness import ROOT

#: The distribution of the set-up that runs the suite: the script is asked for the same one.
DISTRO = 'kilted' if os.path.basename(sys.prefix) == '.venv-kilted' else 'jazzy'


def test_run_server_help_prints_the_usage_and_starts_nothing():
    """
    ``scripts/run_server.sh --help``: the script's usage, then the node's with its parameters.

    Exit 0 and no traceback (``--help`` once went to rclpy as a ROS argument). Set up already,
    the script sets nothing up again (the suite's installed package stays as it is).
    """
    result = subprocess.run(
        [os.path.join(ROOT, 'scripts', 'run_server.sh'), '--distro', DISTRO, '--help'],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith('usage: scripts/run_server.sh [--distro jazzy|kilted] [-p')
    assert 'usage: clock_server' in result.stdout
    assert 'participant_timeout (default 10.0)' in result.stdout  # the node's parameters
    assert 'Traceback' not in result.stdout + result.stderr
    assert 'setup:' not in result.stdout + result.stderr
