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
The control services: each callback is one call on a part it was given.

As rclpy's ``ParameterService``, a plain class handed the node for its services; a step goes
to the frame engine (``steps``: :meth:`StepRunner.step`, answered within the call when
nothing can wait, else queued), every other request to one method of the control part
(:class:`Control`, ``node/control.py``'s ``ServerControl``). The answers are filled from the
outcomes those return. Expected failures are in the response, never raised.
"""

import dataclasses
import enum
import functools
from typing import Optional
from typing import Protocol
from typing import Tuple

from sim_clock.compat import DeferredReplies
from sim_clock.core.units import split_ns
from sim_clock.node.engine import StepRequest
from sim_clock.node.engine import StepRunner
from sim_clock.node.engine.parts import StepOutcome
from sim_clock.node.outcomes import Answer
from sim_clock.node.outcomes import SyncOutcome
from sim_clock.srv import GetStatus
from sim_clock.srv import Step
from sim_clock.srv import SyncModeCmd
from sim_clock.wire.names import ANONYMOUS_USER
from sim_clock.wire.names import SERVICE_QOS
from sim_clock.wire.status import fill_status
from sim_clock.wire.status import Status
from std_srvs.srv import SetBool
from std_srvs.srv import Trigger


def fill(response, outcome):
    """
    Set each field of an outcome (a dataclass) on ``response``, by its name.

    A field ``<name>_ns`` goes into the response's Time ``<name>`` (``clock_ns`` into
    ``clock``); an enum goes in as its value. An outcome field the response has no place for
    raises AttributeError: a mismatch is a defect, never dropped in silence
    (``test/node/test_services.py`` sends every outcome through its response).
    """
    for name, stamp in _plan(type(response), type(outcome)):
        value = getattr(outcome, name)
        if stamp is not None:
            time = getattr(response, stamp)
            time.sec, time.nanosec = split_ns(value)
        else:
            setattr(response, name, value.value if isinstance(value, enum.Enum) else value)
    return response


def fill_step(response, outcome: StepOutcome):
    """
    Set a step's outcome on ``response`` (``~/step``'s), as :func:`fill` does: the hot path's.

    Field by field, the empty lists left as the response has them: a quick step is answered
    in its callback, and this is part of every one (``test/node/test_services.py`` checks it
    against :func:`fill`).
    """
    response.success, response.message = outcome.success, outcome.message
    response.frame, response.epoch = outcome.frame, outcome.epoch
    stamp = response.clock
    stamp.sec, stamp.nanosec = split_ns(outcome.clock_ns)
    if outcome.late:
        response.late = outcome.late
    if outcome.unacknowledged:
        response.unacknowledged = outcome.unacknowledged
    return response


@functools.lru_cache(maxsize=None)
def _plan(response_type, outcome_type) -> Tuple[Tuple[str, Optional[str]], ...]:
    """
    Return where each field of ``outcome_type`` goes in ``response_type``, checked once.

    (name, None): the response's field of that name; (name, stamp): its Time field ``stamp``.
    """
    plan = []
    for name in (field.name for field in dataclasses.fields(outcome_type)):
        if name.endswith('_ns') and not hasattr(response_type, name):
            if not hasattr(response_type, name[:-3]):
                raise AttributeError(f'{response_type.__name__} has no field {name[:-3]} for '
                                     f'{outcome_type.__name__}.{name}')
            plan.append((name, name[:-3]))
        elif hasattr(response_type, name):
            plan.append((name, None))
        else:
            raise AttributeError(
                f'{response_type.__name__} has no field {name} for {outcome_type.__name__}')
    return tuple(plan)


def serve(node, table, callback_group=None) -> list:
    """Create the services of ``table`` (type, name, callback) on ``node``; return them."""
    return [node.create_service(srv_type, name, callback, qos_profile=SERVICE_QOS,
                                callback_group=callback_group)
            for srv_type, name, callback in table]


class Control(Protocol):
    """What the control services ask, besides steps (``control.ServerControl``'s)."""

    def sync_mode_cmd(self, user_id: str, start: bool, time_step_ms: int) -> SyncOutcome:
        """Take or give up sync mode, MORAI's way."""

    def set_sync(self, on: bool) -> Answer:
        """Sync on with no holder, or off releasing any holder."""

    def pause(self) -> Answer:
        """Freeze time."""

    def resume(self) -> Answer:
        """Unfreeze time."""

    def reset(self) -> Answer:
        """Time and frame back to the start, epoch + 1."""

    def status(self) -> Status:
        """Return the state as ``~/get_status`` answers it."""


class ControlServices:
    """
    ``~/sync_mode_cmd``, ``~/step``, ``~/get_status`` and the std_srvs services, on ``node``.

    ``control``: the control part (``ServerControl``); ``steps``: the engine's step runner.
    Each step is one :meth:`StepRunner.step`, its response deferred: a step answered within
    the call releases it before the callback returns, and it goes out as any other.
    """

    def __init__(self, node, control: Control, steps: StepRunner):
        self._control = control
        self._steps = steps
        # The steps answer once their frames are finished, which may be after the callback
        # returned (participants, acknowledgements): their replies are deferred.
        step, step_once = serve(node, (
            (Step, '~/step', self._on_step),
            (Trigger, '~/step_once', self._on_step_once)))
        self._step_replies = DeferredReplies(step)
        self._step_once_replies = DeferredReplies(step_once)
        serve(node, (
            (SyncModeCmd, '~/sync_mode_cmd', self._on_sync_mode_cmd),
            (GetStatus, '~/get_status', self._on_get_status),
            (Trigger, '~/pause', self._on_pause),
            (Trigger, '~/resume', self._on_resume),
            (Trigger, '~/reset', self._on_reset),
            (SetBool, '~/set_sync', self._on_set_sync)))

    def _on_step(self, request, response):
        self._steps.step(StepRequest(
            user_id=request.user_id, steps=request.steps, target_frame=request.target_frame,
            epoch=request.epoch if request.check_epoch else None,
            reply=self._step_replies.defer(response, functools.partial(fill_step, response))))
        return response

    def _on_step_once(self, request, response):
        def answer(outcome):
            response.success, response.message = outcome.success, outcome.message
        self._steps.step(StepRequest(
            user_id=ANONYMOUS_USER, steps=1, reply=self._step_once_replies.defer(response, answer),
            service='~/step_once'))
        return response

    def _on_sync_mode_cmd(self, request, response):
        return fill(response, self._control.sync_mode_cmd(
            request.user_id, request.start_sync_mode, request.time_step))

    def _on_get_status(self, request, response):
        return fill_status(response, self._control.status())

    def _on_pause(self, request, response):
        return fill(response, self._control.pause())

    def _on_resume(self, request, response):
        return fill(response, self._control.resume())

    def _on_reset(self, request, response):
        return fill(response, self._control.reset())

    def _on_set_sync(self, request, response):
        return fill(response, self._control.set_sync(request.data))
