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
Test isolation and fixtures shared by the suite.

Every run talks DDS on loopback only, on DDS domains of its own (one per test that starts a
server), and writes logs and temporary files under a folder of its own.
"""

import os
import sys
import tempfile

import pytest


def pytest_configure(config):
    """Isolate the run before anything imports rclpy."""
    run_dir = tempfile.mkdtemp(prefix='sim_clock-test-')
    os.environ['TMPDIR'] = run_dir
    tempfile.tempdir = run_dir
    os.environ['ROS_HOME'] = os.path.join(run_dir, 'ros_home')
    os.environ['ROS_LOG_DIR'] = os.path.join(run_dir, 'ros_log')
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    os.environ.pop('ROS_STATIC_PEERS', None)
    os.environ.setdefault('AMENT_PREFIX_PATH', sys.prefix)
    # A child that crashes (SIGSEGV, SIGABRT, ...) prints its threads' Python stacks on its
    # stderr, which the test that started it shows: where in our code the crash came.
    os.environ['PYTHONFAULTHANDLER'] = '1'
    # The run's own domain; each test that needs one takes the next (sim_clock's allocator,
    # which the sim_clock fixture's harnesses share). Imported once the run is isolated.
    from sim_clock.client.domains import DOMAINS
    os.environ['ROS_DOMAIN_ID'] = str(DOMAINS.take())


@pytest.fixture(autouse=True)
def no_child_left():
    """Kill the child processes a test started and did not stop (it failed on the way)."""
    yield
    from harness import kill_children
    kill_children()


@pytest.fixture
def domain_id() -> int:
    """Return a DDS domain id that no other test of this run uses at the same time."""
    from sim_clock.client.domains import DOMAINS
    return DOMAINS.take()


@pytest.fixture
def context(domain_id):
    """Give the test an rclpy context of its own on its domain (init / yield / shutdown)."""
    import rclpy
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain_id)
    yield context
    rclpy.try_shutdown(context=context)


@pytest.fixture
def start_server(domain_id, tmp_path):
    """
    Return a function that starts a clock server on this test's domain; stop all at the end.

    Every server must end with exit code 0 on SIGINT.
    """
    from harness import ServerProcess
    servers = []

    def start(params=None, **kwargs):
        server = ServerProcess(domain_id, str(tmp_path), params, **kwargs)
        servers.append(server)
        return server
    yield start
    for server in servers:
        code = server.stop()
        assert code == 0, f'server exit code {code}:\n{server.log()}'
        assert 'Traceback' not in server.log(), server.log()


@pytest.fixture
def client(domain_id):
    """Return a test client node on this test's domain."""
    from harness import TestClient
    test_client = TestClient(domain_id)
    yield test_client
    test_client.close()
