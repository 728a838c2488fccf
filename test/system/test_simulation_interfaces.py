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
The simulation_interfaces services, against a test-only build of that interface package.

simulation_interfaces is not on PyPI; test/simulation_interfaces_pkg holds its published field
definitions (version 2.1.0, the messages and services sim_clock serves), built here with CMake
into a temporary prefix.
"""

import ctypes
import os
import subprocess
import sys

from harness import NS
from harness import ROOT
import pytest

PACKAGE = os.path.join(ROOT, 'test', 'simulation_interfaces_pkg')
SITE = f'lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages'


@pytest.fixture(scope='module')
def interfaces_prefix(tmp_path_factory):
    """Build the test-only simulation_interfaces into a prefix; put it on sys.path."""
    build = tmp_path_factory.mktemp('simulation_interfaces_build')
    prefix = tmp_path_factory.mktemp('simulation_interfaces_install')
    env = dict(os.environ, PATH=os.path.join(sys.prefix, 'bin') + os.pathsep + os.environ['PATH'],
               AMENT_PREFIX_PATH=sys.prefix)
    for step in (
            ['cmake', '-S', PACKAGE, '-B', str(build), '-DBUILD_TESTING=OFF',
             f'-DCMAKE_PREFIX_PATH={sys.prefix}', f'-DCMAKE_INSTALL_PREFIX={prefix}',
             f'-DPython3_EXECUTABLE={sys.executable}',
             # The typesupport libraries find each other without LD_LIBRARY_PATH.
             f'-DCMAKE_INSTALL_RPATH={prefix}/lib'],
            ['cmake', '--build', str(build), '-j', '2'],
            ['cmake', '--install', str(build)]):
        result = subprocess.run(step, env=env, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    # The middleware opens the typesupport libraries by name, through LD_LIBRARY_PATH as the
    # process started with: the server gets it in its environment; this process loads them
    # first, so that opening them by name finds them already loaded.
    library_path = os.environ.get('LD_LIBRARY_PATH', '')
    os.environ['LD_LIBRARY_PATH'] = f'{prefix}/lib{os.pathsep}{library_path}'
    for library in sorted((prefix / 'lib').glob('lib*.so')):
        ctypes.CDLL(str(library), mode=ctypes.RTLD_GLOBAL)
    sys.path.insert(0, str(prefix / SITE))
    yield prefix
    sys.path.remove(str(prefix / SITE))
    os.environ['LD_LIBRARY_PATH'] = library_path


@pytest.fixture
def served(interfaces_prefix, start_server, client):
    """Start a server that sees simulation_interfaces; return the test client."""
    env = {'PYTHONPATH': str(interfaces_prefix / SITE),
           'LD_LIBRARY_PATH': os.environ['LD_LIBRARY_PATH'],
           'AMENT_PREFIX_PATH': f'{interfaces_prefix}{os.pathsep}{sys.prefix}'}
    start_server({'time_step': 0.01}, env=env)
    client.status()
    return client


def test_state_step_and_reset_with_simulation_interfaces(served):
    """PLAYING/PAUSED follow pause; steps only while paused; SCOPE_TIME resets time."""
    from simulation_interfaces.msg import Result
    from simulation_interfaces.msg import SimulationState
    from simulation_interfaces.srv import GetSimulationState
    from simulation_interfaces.srv import ResetSimulation
    from simulation_interfaces.srv import SetSimulationState
    from simulation_interfaces.srv import StepSimulation
    client = served

    def state():
        response = client.call(GetSimulationState, 'get_simulation_state')
        assert response.result.result == Result.RESULT_OK
        return response.state.state

    def set_state(target):
        return client.call(SetSimulationState, 'set_simulation_state',
                           SetSimulationState.Request(state=SimulationState(state=target)))

    def step(steps):
        return client.call(StepSimulation, 'step_simulation', StepSimulation.Request(steps=steps))

    assert state() == SimulationState.STATE_PLAYING
    refused = step(5)
    assert refused.result.result == Result.RESULT_OPERATION_FAILED
    assert 'pause' in refused.result.error_message

    assert set_state(SimulationState.STATE_PAUSED).result.result == Result.RESULT_OK
    assert state() == SimulationState.STATE_PAUSED
    assert client.get_parameter('paused') is True
    again = set_state(SimulationState.STATE_PAUSED)
    assert again.result.result == SetSimulationState.Response.ALREADY_IN_TARGET_STATE
    before = client.status()
    assert step(5).result.result == Result.RESULT_OK
    after = client.status()
    assert after.frame == before.frame + 5
    assert (after.clock.sec * NS + after.clock.nanosec
            - before.clock.sec * NS - before.clock.nanosec) == 50_000_000

    unsupported = client.call(ResetSimulation, 'reset_simulation',
                              ResetSimulation.Request(scope=ResetSimulation.Request.SCOPE_SPAWNED))
    assert unsupported.result.result == Result.RESULT_FEATURE_UNSUPPORTED
    assert client.status().epoch == before.epoch
    reset = client.call(ResetSimulation, 'reset_simulation',
                        ResetSimulation.Request(scope=ResetSimulation.Request.SCOPE_TIME))
    assert reset.result.result == Result.RESULT_OK
    status = client.status()
    assert (status.frame, status.epoch) == (0, before.epoch + 1)

    assert set_state(SimulationState.STATE_PLAYING).result.result == Result.RESULT_OK
    assert state() == SimulationState.STATE_PLAYING
    stopped = set_state(SimulationState.STATE_STOPPED)
    assert stopped.result.result == Result.RESULT_OK
    status = client.status()
    assert (status.paused, status.frame, status.epoch) == (True, 0, before.epoch + 2)


def test_step_simulation_refused_while_another_client_holds_sync(served):
    """Sync mode counts as paused, but a holder's lockstep is not stepped by others."""
    from simulation_interfaces.msg import Result
    from simulation_interfaces.srv import StepSimulation
    client = served
    assert client.sync_mode_cmd('holder', True, 0).result
    refused = client.call(StepSimulation, 'step_simulation', StepSimulation.Request(steps=1))
    assert refused.result.result == Result.RESULT_OPERATION_FAILED
    assert 'holder' in refused.result.error_message
    assert client.status().frame == 0
