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
The simulation_interfaces services, served where that package is importable.

simulation_interfaces is the emerging standard vocabulary for simulator control. A clock server
owns only time, so it serves the time part of it, with the standard's semantics:

- ``~/step_simulation`` (StepSimulation): step N frames, only while the simulation is paused (in
  sim_clock terms: paused, or sync mode); returns once the frames are finished, as ``~/step``
  (the frame engine: participants, acknowledgements). Refused while another client holds
  sync mode.
- ``~/get_simulation_state`` (GetSimulationState): PLAYING while time advances by itself,
  PAUSED while paused or in sync mode.
- ``~/set_simulation_state`` (SetSimulationState): PLAYING resumes (and turns an unheld sync
  mode off, which resets time); PAUSED pauses; STOPPED pauses and resets time.
- ``~/reset_simulation`` (ResetSimulation): SCOPE_TIME, SCOPE_DEFAULT and SCOPE_ALL reset time
  (``~/reset``); other scopes concern entities, which a clock does not have: unsupported.
"""

from sim_clock.compat import DeferredReplies
from sim_clock.core.rules import Mode
from sim_clock.core.rules import Refused
from sim_clock.names import ANONYMOUS_USER
from sim_clock.node.engine import StepRequest
from sim_clock.node.services import answer_later
from sim_clock.node.services import serve

try:
    from simulation_interfaces.msg import Result
    from simulation_interfaces.msg import SimulationState
    from simulation_interfaces.srv import GetSimulationState
    from simulation_interfaces.srv import ResetSimulation
    from simulation_interfaces.srv import SetSimulationState
    from simulation_interfaces.srv import StepSimulation
    AVAILABLE = True
except ImportError:  # not installed: the server runs without these services
    AVAILABLE = False


class SimulationInterfaces:
    """Serve the simulation_interfaces time services on ``server`` (a ClockServer)."""

    def __init__(self, server):
        self._server = server
        step, *_ = serve(server, (
            (StepSimulation, '~/step_simulation', self._on_step),
            (GetSimulationState, '~/get_simulation_state', self._on_get_state),
            (SetSimulationState, '~/set_simulation_state', self._on_set_state),
            (ResetSimulation, '~/reset_simulation', self._on_reset)))
        # A step answers once its frames are finished, as ~/step does (the frame engine).
        self._step_replies = DeferredReplies(step)

    def _state(self) -> int:
        status = self._server.timeline.status()
        if status.paused or (status.mode is Mode.SIMULATION and status.sync):
            return SimulationState.STATE_PAUSED
        return SimulationState.STATE_PLAYING

    def _on_step(self, request, response):
        if self._state() != SimulationState.STATE_PAUSED:
            response.result = Result(
                result=Result.RESULT_OPERATION_FAILED,
                error_message='the simulation is playing; pause it (or turn sync mode on) '
                              'before stepping')
            return response

        def answer(outcome):
            response.result = Result(
                result=Result.RESULT_OK if outcome.success else Result.RESULT_OPERATION_FAILED,
                error_message='' if outcome.success else outcome.message)
        self._server.step(StepRequest(
            user_id=ANONYMOUS_USER, steps=request.steps,
            reply=answer_later(self._step_replies, response, answer)))
        return response

    def _on_get_state(self, request, response):
        response.state = SimulationState(state=self._state())
        response.result = Result(result=Result.RESULT_OK)
        return response

    def _on_set_state(self, request, response):
        target = request.state.state
        server = self._server
        timeline = server.timeline
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
        server.apply_change(apply)
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
            self._server.apply_change(
                lambda: self._server.timeline.reset('reset_simulation (simulation_interfaces)'))
        except Refused as refused:
            response.result = Result(
                result=Result.RESULT_OPERATION_FAILED, error_message=refused.reason)
            return response
        response.result = Result(result=Result.RESULT_OK)
        return response
