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
The simulation_interfaces services and action, served where that package is importable.

simulation_interfaces (ros-simulation/simulation_interfaces) is the standard vocabulary
for simulator control. A clock server owns only time, so it serves the time set of it, with the
standard's semantics:

- ``~/get_simulator_features`` (GetSimulatorFeatures): what is served here, as the standard's
  feature codes: single and multi-step (StepSimulation), the SimulateSteps action, getting and
  setting the state (pause included) and resetting (time only). No entity, spawning or world
  feature: a clock has none.
- ``~/step_simulation`` (StepSimulation): step N frames, only while the simulation is paused (in
  sim_clock terms: paused, or sync mode); returns once the frames are finished, as ``~/step``
  (the frame engine: participants, acknowledgements).
- ``~/simulate_steps`` (the SimulateSteps action): the same N frames, one at a time, with
  feedback (completed and remaining steps) after each frame is finished; a cancel stops it at
  the next frame boundary (goal CANCELED, result RESULT_OK, the frames done in the message). The
  goal is accepted and its result says a refusal, as StepSimulation's does.
- ``~/get_simulation_state`` (GetSimulationState): PLAYING while time advances by itself,
  PAUSED while paused or in sync mode.
- ``~/set_simulation_state`` (SetSimulationState): PLAYING resumes (and turns an unheld sync
  mode off, which resets time); PAUSED pauses; STOPPED pauses and resets time.
- ``~/reset_simulation`` (ResetSimulation): SCOPE_TIME, SCOPE_DEFAULT and SCOPE_ALL reset time
  (``~/reset``); other scopes concern entities, which a clock does not have: unsupported.

Refusals of a step (either kind) answer RESULT_OPERATION_FAILED, as the standard's
StepSimulation and SimulateSteps definitions say for a simulation that is not paused, with the
reason in ``error_message``: playing, sync mode held by another client (these steps act as the
anonymous user), zero steps or too many, a late participant. Steps of every kind run one at a
time in the order they came (the frame engine), so a SimulateSteps goal's frames are never
interleaved with another step's.

The action's execute callback is a coroutine that awaits the frame engine's outcome (an rclpy
Future): rclpy's ActionServer runs it as a task of the executor that spins the node, the
package's executor or rclpy's SingleThreadedExecutor
(``test/node/test_simulation_interfaces.py``).
"""

from typing import Callable

from rclpy.action import ActionServer
from rclpy.action import CancelResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.task import Future
from sim_clock.compat import DeferredReplies
from sim_clock.core.rules import Mode
from sim_clock.core.rules import Refused
from sim_clock.core.timeline import Timeline
from sim_clock.node.engine import StepRequest
from sim_clock.node.engine.parts import Changes
from sim_clock.node.services import serve
from sim_clock.wire.names import ANONYMOUS_USER
from sim_clock.wire.names import SERVICE_QOS

try:
    from simulation_interfaces.action import SimulateSteps
    from simulation_interfaces.msg import Result
    from simulation_interfaces.msg import SimulationState
    from simulation_interfaces.msg import SimulatorFeatures
    from simulation_interfaces.srv import GetSimulationState
    from simulation_interfaces.srv import GetSimulatorFeatures
    from simulation_interfaces.srv import ResetSimulation
    from simulation_interfaces.srv import SetSimulationState
    from simulation_interfaces.srv import StepSimulation
    AVAILABLE = True
except ImportError:  # not installed: the server runs without these services
    AVAILABLE = False


#: What this server does, as the standard's feature codes (``~/get_simulator_features``).
FEATURES = () if not AVAILABLE else (
    SimulatorFeatures.SIMULATION_RESET,
    SimulatorFeatures.SIMULATION_RESET_TIME,
    SimulatorFeatures.SIMULATION_STATE_GETTING,
    SimulatorFeatures.SIMULATION_STATE_SETTING,
    SimulatorFeatures.SIMULATION_STATE_PAUSE,
    SimulatorFeatures.STEP_SIMULATION_SINGLE,
    SimulatorFeatures.STEP_SIMULATION_MULTIPLE,
    SimulatorFeatures.STEP_SIMULATION_ACTION)

CUSTOM_INFO = (
    'sim_clock: a clock server; it owns simulated time (/clock) only, no world or entities. '
    'Steps return once their frames are finished by the registered participants (and, with '
    'ack_timeout, acknowledged). Reset scopes: time only (SCOPE_TIME, SCOPE_DEFAULT, SCOPE_ALL).')

PLAYING_REFUSAL = ('the simulation is playing; pause it (or turn sync mode on) before stepping')


def _result(success: bool, message: str = '') -> 'Result':
    """Return RESULT_OK, or RESULT_OPERATION_FAILED with ``message``."""
    return Result(result=Result.RESULT_OK if success else Result.RESULT_OPERATION_FAILED,
                  error_message=message)


class SimulationInterfaces:
    """
    Serve the simulation_interfaces time services on ``node``.

    ``timeline``: the time core's timeline, read for the state; ``changes``: where its changes
    are applied and announced (``TimelineChanges``); ``steps``: takes a step (the frame
    engine's ``step``).
    """

    def __init__(self, node, timeline: Timeline, changes: Changes,
                 steps: Callable[[StepRequest], None]):
        self._timeline = timeline
        self._changes = changes
        self._steps = steps
        step, *_ = serve(node, (
            (StepSimulation, '~/step_simulation', self._on_step),
            (GetSimulatorFeatures, '~/get_simulator_features', self._on_get_features),
            (GetSimulationState, '~/get_simulation_state', self._on_get_state),
            (SetSimulationState, '~/set_simulation_state', self._on_set_state),
            (ResetSimulation, '~/reset_simulation', self._on_reset)))
        # A step answers once its frames are finished, as ~/step does (the frame engine).
        self._step_replies = DeferredReplies(step)
        # Its own group: a goal in progress holds nothing that the other callbacks need.
        self._simulate_steps = ActionServer(
            node, SimulateSteps, '~/simulate_steps', execute_callback=self._on_simulate_steps,
            cancel_callback=lambda goal: CancelResponse.ACCEPT,
            callback_group=ReentrantCallbackGroup(), goal_service_qos_profile=SERVICE_QOS,
            result_service_qos_profile=SERVICE_QOS, cancel_service_qos_profile=SERVICE_QOS)

    def close(self) -> None:
        """Destroy the action server (the node does not destroy it with itself)."""
        self._simulate_steps.destroy()

    def _state(self) -> int:
        status = self._timeline.status()
        if status.paused or (status.mode is Mode.SIMULATION and status.sync):
            return SimulationState.STATE_PAUSED
        return SimulationState.STATE_PLAYING

    def _on_get_features(self, request, response):
        response.features = SimulatorFeatures(features=list(FEATURES), custom_info=CUSTOM_INFO)
        return response

    def _on_step(self, request, response):
        if self._state() != SimulationState.STATE_PAUSED:
            response.result = _result(False, PLAYING_REFUSAL)
            return response

        def answer(outcome):
            response.result = _result(outcome.success, '' if outcome.success else outcome.message)
        self._steps(StepRequest(
            user_id=ANONYMOUS_USER, steps=request.steps,
            reply=self._step_replies.defer(response, answer),
            service='~/step_simulation'))
        return response

    async def _on_simulate_steps(self, goal):
        """Run a SimulateSteps goal through the frame engine: one frame, then its feedback."""
        steps = goal.request.steps
        result = SimulateSteps.Result()
        if self._state() != SimulationState.STATE_PAUSED:
            result.result = _result(False, PLAYING_REFUSAL)
            goal.abort()
            return result
        stopped = []

        def progress(done: int) -> bool:
            if done:
                goal.publish_feedback(SimulateSteps.Feedback(
                    completed_steps=done, remaining_steps=steps - done))
            if goal.is_cancel_requested:
                stopped.append(done)
                return False
            return True
        finished = Future()
        self._steps(StepRequest(user_id=ANONYMOUS_USER, steps=steps,
                                reply=finished.set_result, progress=progress,
                                service='~/simulate_steps'))
        outcome = await finished
        if outcome.success:
            goal.succeed()
            result.result = _result(True, outcome.message)
        elif stopped and goal.is_cancel_requested:
            goal.canceled()
            result.result = _result(
                True, f'canceled after {stopped[0]} of {steps} steps; frame {outcome.frame}')
        else:
            goal.abort()
            result.result = _result(False, outcome.message)
        return result

    def _on_get_state(self, request, response):
        response.state = SimulationState(state=self._state())
        response.result = Result(result=Result.RESULT_OK)
        return response

    def _on_set_state(self, request, response):
        target = request.state.state
        timeline = self._timeline
        status = timeline.status()
        if target not in (SimulationState.STATE_PLAYING, SimulationState.STATE_PAUSED,
                          SimulationState.STATE_STOPPED):
            response.result = Result(
                result=Result.RESULT_FEATURE_UNSUPPORTED,
                error_message=f'state {target} is not supported by a clock server '
                              '(PLAYING, PAUSED and STOPPED are)')
            return response
        if target == self._state() and target != SimulationState.STATE_STOPPED:
            response.result = Result(
                result=SetSimulationState.Response.ALREADY_IN_TARGET_STATE,
                error_message='already in that state')
            return response
        if target == SimulationState.STATE_PLAYING and status.holder:
            response.result = Result(
                result=SetSimulationState.Response.STATE_TRANSITION_ERROR,
                error_message=f'sync mode is held by {status.holder!r}; it must release it')
            return response

        def apply():
            if target == SimulationState.STATE_PLAYING:
                if status.mode is Mode.SIMULATION and status.sync:
                    timeline.set_sync(False)
                timeline.set_paused(False)
            else:
                timeline.set_paused(True)
                if target == SimulationState.STATE_STOPPED:
                    timeline.reset('simulation stopped (simulation_interfaces)')
        self._changes.apply(apply)
        response.result = Result(result=Result.RESULT_OK)
        return response

    def _on_reset(self, request, response):
        if request.scope not in (ResetSimulation.Request.SCOPE_DEFAULT,
                                 ResetSimulation.Request.SCOPE_TIME,
                                 ResetSimulation.Request.SCOPE_ALL):
            response.result = Result(
                result=Result.RESULT_FEATURE_UNSUPPORTED,
                error_message=f'scope {request.scope} is not supported: a clock server resets '
                              'time only (SCOPE_TIME, SCOPE_DEFAULT, SCOPE_ALL)')
            return response
        try:
            self._changes.apply(
                lambda: self._timeline.reset('reset_simulation (simulation_interfaces)'))
        except Refused as refused:
            response.result = Result(
                result=Result.RESULT_OPERATION_FAILED, error_message=refused.reason)
            return response
        response.result = Result(result=Result.RESULT_OK)
        return response
