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

"""The two distributions' set-ups stay parallel, and the scripts refuse an unknown one."""

import os
import re
import subprocess

from harness import ROOT
import pytest

pytestmark = pytest.mark.process

#: Packages one distribution needs and the other has not (Kilted has no python_cmake_module).
ONLY = {'jazzy': {'python-cmake-module'}, 'kilted': {'ament-cmake-ros-core'}}


def _packages(path: str, distro: str) -> dict:
    """Return {name without the distro prefix: version} of a requirements file."""
    packages = {}
    with open(path) as requirements:
        for line in requirements:
            line = line.split('#', 1)[0].strip()
            if line:
                name, version = line.split('==')
                name = re.sub(r'\[.*\]', '', name).replace(f'ros-{distro}-', '')
                packages[name] = version
    return packages


@pytest.mark.parametrize('kind', ['run', 'test'])
def test_requirements_name_the_same_packages(kind):
    """Jazzy's and Kilted's files pin the same packages, but for the documented differences."""
    jazzy = _packages(os.path.join(ROOT, 'requirements', f'{kind}.txt'), 'jazzy')
    kilted = _packages(os.path.join(ROOT, 'requirements', 'kilted', f'{kind}.txt'), 'kilted')
    assert set(jazzy) - ONLY['jazzy'] == set(kilted) - ONLY['kilted']
    # What is not ROS is pinned alike.
    for name in jazzy:
        if name in kilted and not name.startswith(('ament-', 'rosidl-', 'rclpy', 'rcl-')) \
                and name not in ('builtin-interfaces', 'rosgraph-msgs', 'std-srvs',
                                 'diagnostic-msgs', 'std-msgs', 'geometry-msgs',
                                 'ament-package'):
            assert jazzy[name] == kilted[name], name


@pytest.mark.parametrize('script', ['setup.sh', 'run_tests.sh', 'run_server.sh'])
def test_an_unknown_distribution_is_refused(script):
    """Exit 2 with the allowed names, before anything is set up."""
    result = subprocess.run([os.path.join(ROOT, 'scripts', script), '--distro', 'rolling'],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert "unknown distribution 'rolling'" in result.stderr
    assert '--distro jazzy' in result.stderr and '--distro kilted' in result.stderr


def test_a_script_started_from_a_venvs_python_forgets_that_pythons_libraries():
    """
    distro.sh drops the library path a ROS wheels venv's Python set for its children.

    That Python executes itself again with its libraries on LD_LIBRARY_PATH and marks it in
    _ROS_WHEELS_BOOTSTRAP_COMPLETE; a script it starts for the other distribution (the flake
    hunt run by Jazzy's Python, asking for Kilted) failed to load libfastdds.so.3.2.
    """
    env = dict(os.environ, _ROS_WHEELS_BOOTSTRAP_COMPLETE='1', LD_LIBRARY_PATH='/jazzy/lib')
    script = ('source scripts/distro.sh --distro kilted; '
              'echo "${_ROS_WHEELS_BOOTSTRAP_COMPLETE:-unset} ${LD_LIBRARY_PATH:-unset} $venv"')
    result = subprocess.run(['bash', '-c', f'root={ROOT}; {script}'], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=30)
    assert result.stdout.split() == ['unset', 'unset', os.path.join(ROOT, '.venv-kilted')], (
        result.stdout + result.stderr)
    # Without the mark, a library path the user set is theirs, and stays.
    env.pop('_ROS_WHEELS_BOOTSTRAP_COMPLETE')
    result = subprocess.run(['bash', '-c', f'root={ROOT}; {script}'], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=30)
    assert result.stdout.split()[:2] == ['unset', '/jazzy/lib'], result.stdout + result.stderr
