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

"""The repository builds as a package of a colcon workspace, and what it installs runs."""

import os
import shutil
import subprocess
import sys

from harness import ROOT
from harness import ServerProcess
import pytest

NOT_SOURCES = shutil.ignore_patterns(
    '.venv', 'build', 'install', 'log', '.git', '__pycache__', '.hypothesis', '.pytest_cache')


@pytest.mark.slow
def test_colcon_build_yields_a_runnable_clock_server(tmp_path, domain_id, client):
    """`colcon build` installs clock_server and sim_clock.srv; the server publishes /clock."""
    colcon = os.path.join(sys.prefix, 'bin', 'colcon')
    if not os.path.exists(colcon):
        pytest.skip('colcon is not installed (requirements/test.txt installs it)')
    workspace = tmp_path / 'ws'
    shutil.copytree(ROOT, workspace / 'src' / 'sim_clock', ignore=NOT_SOURCES)
    # As a user with ROS 2 from these wheels builds: the venv on PATH and as the ament prefix.
    env = dict(os.environ, PATH=os.path.join(sys.prefix, 'bin') + os.pathsep + os.environ['PATH'],
               AMENT_PREFIX_PATH=sys.prefix, CMAKE_PREFIX_PATH=sys.prefix)
    build = subprocess.run(
        [colcon, 'build', '--event-handlers', 'console_direct-', '--cmake-args',
         '-DBUILD_TESTING=OFF'],
        cwd=workspace, env=env, capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stdout + build.stderr

    prefix = workspace / 'install' / 'sim_clock'
    executable = prefix / 'lib' / 'sim_clock' / 'clock_server'
    assert os.access(executable, os.X_OK)
    site = prefix / 'lib' / f'python{sys.version_info[0]}.{sys.version_info[1]}' / 'site-packages'
    # What install/setup.bash sets, with the venv kept in the prefix path.
    run_env = {'AMENT_PREFIX_PATH': f'{prefix}{os.pathsep}{sys.prefix}', 'PYTHONPATH': str(site)}
    probe = subprocess.run(
        [sys.executable, '-c',
         'import sim_clock, sim_clock.srv; print(sim_clock.__file__, sim_clock.srv.Step)'],
        env=dict(os.environ, **run_env), cwd=tmp_path, capture_output=True, text=True,
        timeout=60)
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.startswith(str(site)), probe.stdout

    server = ServerProcess(domain_id, str(tmp_path), executable=str(executable), env=run_env)
    try:
        client.wait_for_clock(lambda t: t > 0, '/clock from the colcon-built server')
        assert client.status().mode == 'simulation'
    finally:
        assert server.stop() == 0, server.log()
