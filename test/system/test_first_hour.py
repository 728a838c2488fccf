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
import re
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


def _readme_block(language: str, holding: str) -> str:
    """Return the README's ``language`` code block that holds ``holding``, as written."""
    with open(os.path.join(ROOT, 'README.md')) as readme:
        blocks = re.findall(rf'```{language}\n(.*?)```', readme.read(), re.S)
    [block] = [block for block in blocks if holding in block]
    return block


def test_the_readme_python_loop_as_typed_leaves_the_server_as_it_found_it(
        start_server, client, domain_id, tmp_path):
    """
    The README's lockstep loop, run as written against the Quick start's server.

    It prints what its comment says (frame 100 at 1 s, in frames of its own 10 ms); on exit
    the server is as the Quick start left it: sync on with no holder, frames of 1 ms.
    """
    block = _readme_block('python', 'with SimClockClient(time_step=0.01)')
    expected = re.search(r'print\(result\.frame, result\.time_ns\)\s+# (.*)', block).group(1)
    start_server({'sync': True, 'time_step': 0.001})
    client.status_when_ready()
    before = client.status()
    run = subprocess.run([sys.executable, '-c', block], capture_output=True, text=True,
                         timeout=120, cwd=str(tmp_path),
                         env=dict(os.environ, ROS_DOMAIN_ID=str(domain_id)))
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip() == expected == '100 1000000000'
    after = client.status()
    assert (after.mode, after.sync, after.owner, after.time_step_ns) == (
        before.mode, True, '', 1_000_000)
