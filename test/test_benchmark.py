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

"""The replay benchmark runs and prints its figures (a smoke run on tiny bags, not a timing)."""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow
def test_replay_benchmark_prints_figures(tmp_path):
    """Both bag sizes get a raw read rate, a replay rate, a ratio and peak RSS figures."""
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, 'benchmarks', 'replay.py'), '--messages', '200',
         '--storage', 'mcap'],
        capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()[1:]]
    assert [row[:3] for row in rows] == [['mcap', 'x1', '200'], ['mcap', 'x10', '2000']]
    for row in rows:
        assert all(re.fullmatch(r'[\d,.]+', figure) for figure in row[3:]), row
