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

"""What importing a part loads, in a fresh interpreter: each part's import rule at run time."""

import subprocess
import sys

from layout_rules import RULES
from layout_rules import within
import pytest

pytestmark = pytest.mark.process


def _loaded_by(statement: str, cwd: str) -> set:
    # Run elsewhere than the repository, whose sim_clock/ (no srv/) would shadow the install.
    code = f'import sys\n{statement}\nprint("\\n".join(sorted(sys.modules)))'
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            timeout=120, check=True, cwd=cwd)
    return set(result.stdout.split())


def test_client_loads_neither_node_nor_bags(tmp_path):
    """``import sim_clock.client`` loads no server, bag module or C extension."""
    loaded = _loaded_by('import sim_clock.client', str(tmp_path))
    assert 'sim_clock.client.api' in loaded
    assert not {name for name in loaded
                if any(within(name, banned) for banned in RULES['client'][1])}


def test_core_loads_no_ros(tmp_path):
    """The time core runs without rclpy and rosbags loaded at all."""
    loaded = _loaded_by('import sim_clock.core.settings, sim_clock.core.timeline', str(tmp_path))
    assert 'sim_clock.core.timeline' in loaded
    assert not {name for name in loaded if within(name, 'rclpy') or within(name, 'rosbags')}


def test_launch_arguments_load_no_ros(tmp_path):
    """The launch files' argument rules load neither rclpy nor launch: tested where neither is."""
    loaded = _loaded_by('import sim_clock.process.launch_arguments', str(tmp_path))
    assert 'sim_clock.process.launch_arguments' in loaded
    assert not {name for name in loaded if name.split('.')[0] in ('rclpy', 'launch', 'launch_ros')}


def test_read_ahead_process_loads_no_rclpy(tmp_path):
    """The bag's read-ahead child imports rosbags and our names, not rclpy (memory, start-up)."""
    loaded = _loaded_by('import sim_clock.bag.read_ahead', str(tmp_path))
    assert 'sim_clock.bag.reader' in loaded
    assert not {name for name in loaded if within(name, 'rclpy')}
