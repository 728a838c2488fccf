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

"""
``--help`` on every executable the package installs: help at once, and no server, no node.

Each runs as installed (``lib/sim_clock/``), on a DDS domain of its own, while a node of the
test watches that domain's graph; its ROS log folder is its own too, where rclpy's init would
leave a file. Its time is its own: the wall time less what it waited for a CPU
(``/proc/<pid>/schedstat``), so that a machine busy with other work does not fail it.
"""

import os
import select
import subprocess
import time

from ament_index_python.packages import get_package_prefix
from harness import executable
from harness import TestClient
import pytest

pytestmark = pytest.mark.process

#: What CMakeLists.txt installs into lib/sim_clock.
INSTALLED = ('bag_player', 'clock_server', 'lockstep', 'plain_rcl_node', 'recorder', 'simclock',
             'stack_node_c', 'stack_relay')
FOLDER = os.path.join(get_package_prefix('sim_clock'), 'lib', 'sim_clock')
#: The most time of its own an executable may take to print its help.
HELP_BUDGET_S = 2.0
#: Past this much wall time, a process that has not ended is taken as waiting, and killed.
HARD_LIMIT_S = 15.0


def _installed() -> list:
    return sorted(name for name in os.listdir(FOLDER)
                  if os.access(os.path.join(FOLDER, name), os.X_OK))


class Run:
    """One process run to its end, while ``watcher`` records the nodes of its domain."""

    def __init__(self, argv, domain_id: int, folder, watcher: TestClient):
        self.log_dir = folder / 'ros_log'
        self.log_dir.mkdir()
        out_path, err_path = folder / 'stdout', folder / 'stderr'
        env = dict(os.environ, ROS_DOMAIN_ID=str(domain_id), ROS_LOG_DIR=str(self.log_dir))
        with open(out_path, 'w') as out, open(err_path, 'w') as err:
            process = subprocess.Popen(argv, env=env, stdout=out, stderr=err)
        started = time.monotonic()
        pidfd = os.pidfd_open(process.pid)
        self.nodes = set()
        own = watcher.node.get_fully_qualified_name()
        try:
            while not select.select([pidfd], [], [], 0)[0]:
                if time.monotonic() - started > HARD_LIMIT_S:
                    process.kill()
                    process.wait()
                    raise AssertionError(f'{argv} still ran after {HARD_LIMIT_S} s')
                watcher.executor.spin_once(timeout_sec=0.02)
                self.nodes.update(
                    ns.rstrip('/') + '/' + name
                    for name, ns in watcher.node.get_node_names_and_namespaces())
            self.nodes.discard(own)
            self.wall_s = time.monotonic() - started
            # Ended, not yet reaped: its scheduler statistics are still there.
            os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)
            with open(f'/proc/{process.pid}/schedstat') as stats:
                waited_ns = int(stats.read().split()[1])
            self.own_s = self.wall_s - waited_ns / 1e9
        finally:
            os.close(pidfd)
        self.code = process.wait()
        self.stdout, self.stderr = out_path.read_text(), err_path.read_text()
        self.ros_logs = os.listdir(self.log_dir)


@pytest.fixture
def watcher(domain_id):
    """Return a node on the test's domain (it subscribes to nothing)."""
    node = TestClient(domain_id, name='help_watcher', subscribe_clock=False)
    yield node
    node.close()


def test_every_executable_of_the_package_is_installed():
    """The list below covers what is installed: a new executable gets its --help checked."""
    assert set(INSTALLED) <= set(_installed()), _installed()


@pytest.mark.parametrize('name', _installed())
@pytest.mark.parametrize('option', ['--help', '-h'])
def test_help_prints_usage_and_exits_at_once_with_no_node(
        name, option, domain_id, tmp_path, watcher):
    """Exit code 0, usage on stdout, within 2 s of its own time; no ROS init, no node seen."""
    run = Run([os.path.join(FOLDER, name), option], domain_id, tmp_path, watcher)
    assert run.code == 0, run.stderr
    assert run.stdout.startswith(f'usage: {name} '), run.stdout
    assert run.own_s < HELP_BUDGET_S, (
        f'{name} {option} took {run.own_s:.2f} s of its own ({run.wall_s:.2f} s wall)')
    assert run.ros_logs == [], f'{name} {option} initialised ROS: {run.ros_logs}'
    assert run.nodes == set(), f'{name} {option} made nodes: {run.nodes}'


def test_the_checks_see_a_server_that_starts(domain_id, tmp_path, watcher):
    """Without --help, clock_server makes its node and its ROS log: both checks see them."""
    run_dir = tmp_path / 'server'
    run_dir.mkdir()
    log_dir = run_dir / 'ros_log'
    log_dir.mkdir()
    server = subprocess.Popen(
        [os.path.join(FOLDER, 'clock_server')], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ, ROS_DOMAIN_ID=str(domain_id), ROS_LOG_DIR=str(log_dir)))
    try:
        watcher.spin_until(
            lambda: ('sim_clock', '/') in watcher.node.get_node_names_and_namespaces(),
            'the server node in the graph')
        assert os.listdir(log_dir), 'no ROS log file'
    finally:
        server.terminate()
        assert server.wait(15) == 0


@pytest.mark.parametrize('name', ('clock_server', 'bag_player', 'recorder'))
def test_an_empty_parameter_value_is_the_empty_string_and_bad_ros_arguments_exit_2(
        name, tmp_path):
    """``-p NAME:=`` is the empty string; what rcl refuses ends with one line and exit 2."""
    program = executable(name)
    own = {'clock_server': [], 'recorder': [str(tmp_path / 'out'), '-a'],
           'bag_player': [str(tmp_path / 'missing.mcap')]}[name]
    ended = subprocess.run([program, *own, '--ros-args', '--remap', 'no_separator'],
                           capture_output=True, text=True, timeout=60)
    assert ended.returncode == 2, ended.stderr
    assert 'invalid ROS arguments' in ended.stderr and 'Traceback' not in ended.stderr
    assert not os.path.exists(tmp_path / 'out')  # the recorder made no bag


def test_a_server_started_with_empty_parameter_values_runs(start_server, client):
    """``-p output_gates:= -p expected_participants:=``, as a launch file may pass them."""
    start_server({'sync': True, 'output_gates': '', 'expected_participants': ''})
    status = client.status_when_ready()
    assert status.sync and not status.expected_participants
