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

from ament_flake8.main import main_with_errors as flake8_main
from ament_index_python.packages import get_package_prefix
from ament_pep257.main import main as pep257_main
from harness import ROOT
import pytest

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


@pytest.mark.linter
def test_flake8():
    """The code follows ROS 2 style (ament_flake8's configuration)."""
    code, errors = flake8_main(argv=PATHS)
    assert code == 0, f'{len(errors)} flake8 errors:\n' + '\n'.join(errors)


@pytest.mark.linter
def test_pep257():
    """Docstrings follow pep257 as ament_pep257 checks them."""
    assert pep257_main(argv=PYTHON_PATHS) == 0, 'pep257 errors (see output above)'
