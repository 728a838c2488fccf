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
The simulation_interfaces services and action, against a test-only build of that package.

simulation_interfaces is not on PyPI; test/simulation_interfaces_pkg holds its published field
definitions (version 2.1.0, the messages, services and action sim_clock serves), built here
with CMake into a temporary prefix. The server runs on the package's executor (rclpy's
EventsExecutor on Jazzy and Kilted), which runs the SimulateSteps goals.
"""

import ctypes
import os
import subprocess
import sys
import time

from harness import ChildProcess
from harness import NS
from harness import ROOT
from harness import stamp_ns
from harness import TIMEOUT
import pytest

pytestmark = pytest.mark.process

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


#: A participant due every 10 ms frame whose callback works WORK_S of wall time per frame (a
#: node under test with real work to do); it prints 'joined', then runs until Ctrl-C.
SLOW_PARTICIPANT = """
import sys
import time
import rclpy
from rclpy.parameter import Parameter
from sim_clock.client.participant import Participant
rclpy.init()
node = rclpy.create_node('worker', parameter_overrides=[Parameter('use_sim_time', value=True)])
node.create_timer(0.01, lambda: time.sleep(float(sys.argv[1])))  # the node's work
participant = Participant(node, name='worker', period_sec=0.01)
while participant._done.get_subscription_count() < 1:
    participant.executor.spin_once(timeout_sec=0.05)
print('joined', flush=True)
try:
    participant.spin()
except KeyboardInterrupt:
    pass
rclpy.try_shutdown()
"""
WORK_S = 0.05


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


class StepsClient:
    """
    A SimulateSteps action client on the test client's node, and every feedback the server sent.

    The feedback is read from the action's feedback topic directly: rclpy's ActionClient
    forgets a goal's feedback callback once it has the result, and takes a result before a
    feedback that came with it, so the last feedback of a goal may never reach its callback.
    """

    def __init__(self, client):
        from rclpy.action import ActionClient
        from rclpy.qos import QoSProfile
        from rclpy.qos import ReliabilityPolicy
        from simulation_interfaces.action import SimulateSteps
        self._client = client
        self._goal_type = SimulateSteps.Goal
        name = f'{client.server}/simulate_steps'
        self.action = ActionClient(client.node, SimulateSteps, name)
        #: (completed_steps, remaining_steps), in arrival order
        self.feedback = []
        self._feedback = client.node.create_subscription(
            SimulateSteps.Impl.FeedbackMessage, f'{name}/_action/feedback',
            lambda message: self.feedback.append(
                (message.feedback.completed_steps, message.feedback.remaining_steps)),
            QoSProfile(depth=10_000, reliability=ReliabilityPolicy.RELIABLE))
        client.spin_until(self.action.server_is_ready, 'the simulate_steps action server')

    def send(self, steps: int):
        """Send a goal of ``steps``; return its handle once accepted."""
        sent = self.action.send_goal_async(self._goal_type(steps=steps))
        self._client.spin_until(sent.done, 'the goal response')
        handle = sent.result()
        assert handle.accepted, 'a SimulateSteps goal is accepted; refusals are in its result'
        return handle

    def result(self, handle, timeout: float = TIMEOUT):
        """Wait for the goal's end; return (status, simulation_interfaces Result)."""
        future = handle.get_result_async()
        self._client.spin_until(future.done, 'the SimulateSteps result', timeout)
        return future.result().status, future.result().result.result

    def run(self, steps: int):
        """Run a goal of ``steps`` to its end; return (status, Result)."""
        return self.result(self.send(steps))

    def wait_for_feedback_path(self) -> None:
        """
        Step one frame at a time until a goal's feedback arrives; forget that feedback.

        Feedback is a volatile topic: what the server sends before its writer has matched this
        client's reader is lost, and the client seeing the server ready (its own side of the
        match) does not say the server's side is done. The simulation must be paused.
        """
        from action_msgs.msg import GoalStatus
        deadline = time.monotonic() + TIMEOUT
        while not self.feedback:
            assert time.monotonic() < deadline, f'no SimulateSteps feedback within {TIMEOUT} s'
            status, result = self.run(1)
            assert status == GoalStatus.STATUS_SUCCEEDED, result.error_message
            # Its feedback, if it is delivered at all, comes about when its result does.
            settle = time.monotonic() + 1.0
            while not self.feedback and time.monotonic() < settle:
                self._client.executor.spin_once(timeout_sec=0.05)
        self.feedback.clear()


@pytest.fixture
def steps_client(served):
    """Return a SimulateSteps client of the served test client."""
    steps = StepsClient(served)
    yield steps
    steps.action.destroy()
    served.node.destroy_subscription(steps._feedback)


def pause(client):
    """Pause the simulation through SetSimulationState."""
    from simulation_interfaces.msg import Result
    from simulation_interfaces.msg import SimulationState
    from simulation_interfaces.srv import SetSimulationState
    response = client.call(SetSimulationState, 'set_simulation_state',
                           SetSimulationState.Request(state=SimulationState(
                               state=SimulationState.STATE_PAUSED)))
    assert response.result.result == Result.RESULT_OK, response.result.error_message


def test_features_say_the_time_set(served):
    """The features name the step kinds, state changes and reset scopes served, no more."""
    from simulation_interfaces.msg import SimulatorFeatures
    from simulation_interfaces.srv import GetSimulatorFeatures
    features = served.call(GetSimulatorFeatures, 'get_simulator_features').features
    assert sorted(features.features) == sorted((
        SimulatorFeatures.SIMULATION_RESET, SimulatorFeatures.SIMULATION_RESET_TIME,
        SimulatorFeatures.SIMULATION_STATE_GETTING, SimulatorFeatures.SIMULATION_STATE_SETTING,
        SimulatorFeatures.SIMULATION_STATE_PAUSE, SimulatorFeatures.STEP_SIMULATION_SINGLE,
        SimulatorFeatures.STEP_SIMULATION_MULTIPLE, SimulatorFeatures.STEP_SIMULATION_ACTION))
    assert list(features.spawn_formats) == []
    assert 'time' in features.custom_info


def test_simulate_steps_feedback_per_step_and_cancel(served, steps_client):
    """Feedback after each frame; a cancel stops at a frame boundary with the frames done."""
    from action_msgs.msg import GoalStatus
    from simulation_interfaces.msg import Result
    client = served
    pause(client)
    steps_client.wait_for_feedback_path()
    before = client.status()
    status, result = steps_client.run(5)
    assert (status, result.result) == (GoalStatus.STATUS_SUCCEEDED, Result.RESULT_OK)
    after = client.status()
    assert after.frame == before.frame + 5
    assert stamp_ns(after.clock) - stamp_ns(before.clock) == 50_000_000
    client.spin_until(lambda: len(steps_client.feedback) == 5, 'five feedback messages')
    assert steps_client.feedback == [
        (1, 4), (2, 3), (3, 2), (4, 1), (5, 0)]

    # The longest goal (far longer than the test's timeout), canceled after 3 frames.
    steps_client.feedback.clear()
    steps = 1_000_000
    handle = steps_client.send(steps)
    client.spin_until(lambda: len(steps_client.feedback) >= 3, 'three feedback messages')
    canceling = handle.cancel_goal_async()
    client.spin_until(canceling.done, 'the cancel response')
    status, result = steps_client.result(handle)
    assert (status, result.result) == (GoalStatus.STATUS_CANCELED, Result.RESULT_OK)
    done = client.status().frame - after.frame
    assert 3 <= done < steps
    assert f'canceled after {done} of {steps} steps' in result.error_message
    # Feedback came for each frame done, the last of them included: the stop was between frames.
    client.spin_until(lambda: steps_client.feedback[-1][0] == done, f'feedback {done}')
    assert [completed for completed, _ in steps_client.feedback] == list(range(1, done + 1))
    assert all(completed + left == steps for completed, left in steps_client.feedback)

    # A goal canceled while it waits behind another does no frame.
    first = steps_client.send(steps)
    client.spin_until(lambda: len(steps_client.feedback) > done, 'feedback of the first goal')
    queued = steps_client.send(5)
    client.spin_until(queued.cancel_goal_async().done, 'the cancel response')
    client.spin_until(first.cancel_goal_async().done, 'the cancel response')
    status, result = steps_client.result(queued)
    assert (status, result.result) == (GoalStatus.STATUS_CANCELED, Result.RESULT_OK)
    assert 'canceled after 0 of 5 steps' in result.error_message
    assert steps_client.result(first)[0] == GoalStatus.STATUS_CANCELED


def test_simulate_steps_refusals_answer_the_standard_codes(served, steps_client):
    """Playing, zero steps and another holder: goal aborted, RESULT_OPERATION_FAILED, why."""
    from action_msgs.msg import GoalStatus
    client = served
    from simulation_interfaces.msg import Result
    failed = (GoalStatus.STATUS_ABORTED, Result.RESULT_OPERATION_FAILED)

    status, result = steps_client.run(3)
    assert (status, result.result) == failed
    assert 'playing' in result.error_message and 'pause' in result.error_message

    pause(client)
    frame = client.status().frame
    status, result = steps_client.run(0)
    assert (status, result.result) == failed
    assert 'steps' in result.error_message, result.error_message

    assert client.sync_mode_cmd('holder', True, 0).result
    frame = client.status().frame
    status, result = steps_client.run(3)
    assert (status, result.result) == failed
    assert 'holder' in result.error_message
    assert client.status().frame == frame
    assert steps_client.feedback == []


def test_steps_wait_for_a_participant(served, steps_client, domain_id, tmp_path):
    """Both step kinds answer after a participant in its own process worked each frame."""
    from action_msgs.msg import GoalStatus
    from simulation_interfaces.msg import Result
    from simulation_interfaces.srv import StepSimulation
    client = served
    pause(client)
    worker = ChildProcess(domain_id, SLOW_PARTICIPANT, str(tmp_path), args=(WORK_S,))
    try:
        worker.expect('joined')
        client.spin_until(lambda: list(client.status().participants) == ['worker'],
                          'the participant in the status')
        steps_client.wait_for_feedback_path()
        steps = 5
        sent = time.monotonic()
        status, result = steps_client.run(steps)
        took = time.monotonic() - sent
        assert (status, result.result) == (GoalStatus.STATUS_SUCCEEDED, Result.RESULT_OK)
        # Due every frame, it worked WORK_S on each before the next frame went out.
        assert took >= steps * WORK_S, f'{steps} frames answered in {took:.3f} s'
        server_status = client.status()
        assert stamp_ns(server_status.participants_done[0]) == stamp_ns(server_status.clock)
        client.spin_until(lambda: len(steps_client.feedback) == steps, 'the feedback')
        assert [completed for completed, _ in steps_client.feedback] == [1, 2, 3, 4, 5]

        # StepSimulation waits the same way.
        sent = time.monotonic()
        response = client.call(StepSimulation, 'step_simulation',
                               StepSimulation.Request(steps=steps))
        took = time.monotonic() - sent
        assert response.result.result == Result.RESULT_OK, response.result.error_message
        assert took >= steps * WORK_S, f'{steps} frames answered in {took:.3f} s'
        server_status = client.status()
        assert stamp_ns(server_status.participants_done[0]) == stamp_ns(server_status.clock)
    finally:
        worker.stop()
