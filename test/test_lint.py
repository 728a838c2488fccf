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
from ament_pep257.main import main as pep257_main
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON_PATHS = [os.path.join(ROOT, path) for path in (
    'sim_clock', 'launch', 'test', 'benchmarks', 'setup.py')]
# The launcher template is Python too, but pydocstyle only reads files ending in .py.
PATHS = PYTHON_PATHS + [os.path.join(ROOT, 'scripts', 'clock_server.in')]


@pytest.mark.linter
def test_flake8():
    """The code follows ROS 2 style (ament_flake8's configuration)."""
    code, errors = flake8_main(argv=PATHS)
    assert code == 0, f'{len(errors)} flake8 errors:\n' + '\n'.join(errors)


@pytest.mark.linter
def test_pep257():
    """Docstrings follow pep257 as ament_pep257 checks them."""
    assert pep257_main(argv=PYTHON_PATHS) == 0, 'pep257 errors (see output above)'
