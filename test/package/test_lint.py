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

"""ament_flake8 and ament_pep257 over the sources, as `colcon test` runs them."""

import os
import subprocess
import sys

from ament_index_python.packages import get_package_prefix
from harness import ROOT
import pytest

pytestmark = pytest.mark.process

PYTHON_PATHS = [os.path.join(ROOT, path) for path in (
    'sim_clock', 'launch', 'test', 'examples', 'benchmarks', 'setup.py')]
SCRIPTS = os.path.join(ROOT, 'scripts')
PYTHON_PATHS += [os.path.join(SCRIPTS, name) for name in sorted(os.listdir(SCRIPTS))
                 if name.endswith('.py')]
# The executables configured from scripts/launcher.py.in are Python too (flake8 only); the
# others (stack_relay, in C) are not.
EXECUTABLES = os.path.join(get_package_prefix('sim_clock'), 'lib', 'sim_clock')


def _is_python(path: str) -> bool:
    with open(path, 'rb') as executable:
        first_line = executable.readline()
    return first_line.startswith(b'#!') and b'python' in first_line


PATHS = PYTHON_PATHS + [
    path for path in (os.path.join(EXECUTABLES, name) for name in sorted(os.listdir(EXECUTABLES)))
    if _is_python(path)]


def _lint(tool: str, paths: list) -> subprocess.CompletedProcess:
    """
    Run ament's ``tool`` over ``paths`` in a fresh interpreter.

    Not in this process: flake8 forks its workers, and a pytest worker that has run DDS tests
    holds Fast DDS's threads and objects; a forked child that frees one crashed (SIGSEGV), and
    the pool then waited for it for good.
    """
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), tool), *paths],
                          capture_output=True, text=True, timeout=600)


@pytest.mark.linter
def test_flake8():
    """The code follows ROS 2 style (ament_flake8's configuration)."""
    run = _lint('ament_flake8', PATHS)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.linter
def test_pep257():
    """Docstrings follow pep257 as ament_pep257 checks them."""
    run = _lint('ament_pep257', PYTHON_PATHS)
    assert run.returncode == 0, run.stdout + run.stderr
