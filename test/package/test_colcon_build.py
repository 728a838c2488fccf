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
import re
import shutil
import subprocess
import sys

from conftest import TEST_DIR
from harness import ROOT
from harness import ServerProcess
import pytest

pytestmark = pytest.mark.process

NOT_SOURCES = shutil.ignore_patterns(
    '.venv', 'build', 'install', 'log', '.git', '__pycache__', '.hypothesis', '.pytest_cache')


def _env() -> dict:
    """Return the environment of a user with ROS 2 from these wheels: the venv as the prefix."""
    return dict(os.environ, PATH=os.path.join(sys.prefix, 'bin') + os.pathsep + os.environ['PATH'],
                AMENT_PREFIX_PATH=sys.prefix, CMAKE_PREFIX_PATH=sys.prefix)


@pytest.fixture(scope='module')
def workspace(tmp_path_factory):
    """Return a colcon workspace holding this repository, built (tests included)."""
    colcon = os.path.join(sys.prefix, 'bin', 'colcon')
    if not os.path.exists(colcon):
        pytest.skip('colcon is not installed (requirements/test.txt installs it)')
    workspace = tmp_path_factory.mktemp('colcon') / 'ws'
    shutil.copytree(ROOT, workspace / 'src' / 'sim_clock', ignore=NOT_SOURCES)
    build = subprocess.run(
        [colcon, 'build', '--event-handlers', 'console_direct-'],
        cwd=workspace, env=_env(), capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stdout + build.stderr
    return workspace


def _suite_parts() -> list:
    """Return the folders of test/ that hold tests, and the modules of its top-level tests."""
    parts = []
    for entry in os.scandir(TEST_DIR):
        if entry.is_dir() and any(name.startswith('test_') and name.endswith('.py')
                                  for _, _, files in os.walk(entry.path) for name in files):
            parts.append(entry.name)
        elif entry.name.startswith('test_') and entry.name.endswith('.py'):
            parts.append(entry.name[len('test_'):-len('.py')])
    return sorted(parts)


@pytest.mark.slow
def test_colcon_test_runs_the_chosen_tests(workspace):
    """`colcon test` runs pytest folders through ament_cmake_pytest; test-result lists them."""
    colcon = os.path.join(sys.prefix, 'bin', 'colcon')
    # The time core, and the package checks (which see where sim_clock was imported from): their
    # fast tier, since test/package/ holds this test too, and a colcon test in it would nest.
    env = dict(_env(), SIM_CLOCK_EXPECTED_PREFIX=str(workspace / 'install' / 'sim_clock'),
               PYTEST_ADDOPTS='-m fast')
    run = subprocess.run(
        [colcon, 'test', '--event-handlers', 'console_direct-', '--ctest-args', '-R',
         '^(core|package)$'], cwd=workspace, env=env, capture_output=True, text=True,
        timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    result = subprocess.run(
        [colcon, 'test-result', '--verbose'], cwd=workspace, env=_env(), capture_output=True,
        text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    summary = re.search(r'Summary: (\d+) tests, (\d+) errors, (\d+) failures, (\d+) skipped',
                        result.stdout)
    assert summary, result.stdout
    tests, errors, failures, _ = map(int, summary.groups())
    assert tests > 100 and errors == failures == 0, result.stdout
    results = workspace / 'build' / 'sim_clock' / 'test_results' / 'sim_clock'
    assert sorted(os.listdir(results)) == ['core.xunit.xml', 'package.xunit.xml']
    # `colcon test` as a whole runs what scripts/run_tests.sh runs: one CTest test per folder
    # of test/ that holds tests, and the top-level test files, no marker leaving tests out.
    listed = subprocess.run(['ctest', '-N'], cwd=workspace / 'build' / 'sim_clock',
                            capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert sorted(re.findall(r'Test +#\d+: (\w+)', listed.stdout)) == _suite_parts()
    with open(workspace / 'build' / 'sim_clock' / 'CTestTestfile.cmake') as ctest_file:
        assert 'PYTEST_ADDOPTS' not in ctest_file.read()


@pytest.mark.slow
def test_colcon_build_yields_a_runnable_clock_server(workspace, tmp_path, domain_id, client):
    """`colcon build` installs clock_server and sim_clock.srv; the server publishes /clock."""
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
