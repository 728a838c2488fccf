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

"""The core's parameter table on the node: declared, validated, applied, mirrored and logged."""

from typing import Callable
from typing import List

from rcl_interfaces.msg import FloatingPointRange
from rcl_interfaces.msg import ParameterDescriptor
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from rclpy.parameter import Parameter
from sim_clock.compat import coerce_integer_overrides
from sim_clock.core import settings
from sim_clock.core.rules import Mode
from sim_clock.core.rules import Refused
from sim_clock.core.rules import time_step_from_seconds


def _seconds(value) -> str:
    return f'{value:g} s'


#: What a new value of each setting does, as the log line of its change says it.
EFFECTS = {
    'mode': lambda value: (
        'time follows the wall clock (a reset)' if value == Mode.REAL_TIME.value
        else 'time advances in frames of time_step (a reset)'),
    'sync': lambda value: (
        'time advances only by steps (a reset)' if value
        else 'time runs by itself again (a reset)'),
    'time_step': lambda value: (
        f'frames are {time_step_from_seconds(value)} ns long from the next one on'),
    'real_time_factor': lambda value: (
        'free run goes as fast as possible' if value == 0
        else f'free run goes at {value:g}x wall pace'),
    'publish_rate': lambda value: (
        f'/clock goes out {value:g} times a second in real-time mode and while time stands '
        'still'),
    'paused': lambda value: 'time stands still' if value else 'time runs again',
    'owner_timeout': lambda value: (
        'a sync hold never lapses' if value == 0
        else f"a silent sync holder's hold lapses after {_seconds(value)}"),
    'participant_timeout': lambda value: (
        f'a frame waits up to {_seconds(value)} for a participant'),
    'ack_timeout': lambda value: (
        'steps answer without waiting for acknowledgements' if value == 0
        else f'steps wait up to {_seconds(value)} for acknowledgements'),
    'start_time': lambda value: f'time starts at {value!r} from the next reset on',
    'max_clock_rate': lambda value: (
        'free run publishes every frame' if value == 0
        else f'free run publishes at most {value:g} /clock a second'),
    'output_gates': lambda value: (
        f'frames wait for outputs: {value}' if value else 'no frame waits for an output'),
    'expected_participants': lambda value: (
        f'no frame goes out until these are ready: {value}' if value
        else 'no node is expected'),
    'frame_events': lambda value: (
        f'the last {value} frame events are kept' if value else 'no frame event is recorded'),
    'publish_frame_events': lambda value: (
        'each frame event is published on ~/frame_events' if value
        else 'frame events are not published'),
}


def descriptor(setting: settings.Setting) -> ParameterDescriptor:
    """Return the ROS descriptor of a setting: description, constraints and range."""
    result = ParameterDescriptor(
        description=setting.description, additional_constraints=setting.constraints,
        dynamic_typing=setting.dynamic)
    if setting.low is not None:
        result.floating_point_range = [
            FloatingPointRange(from_value=setting.low, to_value=setting.high, step=0.0)]
    return result


def declare(node: Node, table=settings.SETTINGS) -> dict:
    """Declare every setting of ``table`` on ``node``; return name -> starting value."""
    coerce_integer_overrides(
        node, [setting.name for setting in table if isinstance(setting.default, float)])
    node.declare_parameters('', [
        (setting.name, setting.default, descriptor(setting)) for setting in table])
    return {setting.name: node.get_parameter(setting.name).value for setting in table}


class ParameterBridge:
    """
    Keep the node's parameters and the core in step, both ways.

    A parameter set is completed (mode and sync kept consistent), validated (a refusal names
    what is allowed and changes nothing) and applied through ``apply_change(change)``;
    :meth:`mirror` makes the parameters show a state that a service call changed.
    """

    def __init__(self, node: Node, mode: Callable[[], Mode],
                 apply: Callable[[dict], None], core: settings.Core = None):
        self._node = node
        self._mode = mode
        self._core = core
        self._apply = apply
        #: True while the node's parameter callbacks run: no mirroring from inside them.
        self.setting = False
        #: True while the parameters follow a service call's change (logged there already).
        self._mirroring = False
        node.add_pre_set_parameters_callback(self._complete)
        node.add_on_set_parameters_callback(self._validate)
        node.add_post_set_parameters_callback(self._applied)

    def _complete(self, parameters: List[Parameter]) -> List[Parameter]:
        given = {p.name: p.value for p in parameters}
        completed = settings.complete(given, self._mode())
        ours = [Parameter(name, value=value) for name, value in completed.items()
                if name in settings.BY_NAME]
        return [p for p in parameters if p.name not in settings.BY_NAME] + ours

    def _validate(self, parameters: List[Parameter]) -> SetParametersResult:
        try:
            settings.parse({p.name: p.value for p in parameters}, self._mode(), self._core)
        except Refused as refused:
            return SetParametersResult(successful=False, reason=refused.reason)
        return SetParametersResult(successful=True)

    def _applied(self, parameters: List[Parameter]) -> None:
        parsed = settings.parse({p.name: p.value for p in parameters}, self._mode(), self._core)
        if parsed:
            self.setting = True
            try:
                self._apply(parsed)
            finally:
                self.setting = False

    def mirror(self, values: dict) -> None:
        """Set the parameters whose values differ from ``values`` (never from a callback)."""
        if self.setting:
            return
        node = self._node
        changed = [Parameter(name, value=value) for name, value in values.items()
                   if node.get_parameter(name).value != value]
        if changed:
            self._mirroring = True
            try:
                node.set_parameters_atomically(changed)
            finally:
                self._mirroring = False

    def set_logged(self, parameters: List[Parameter],
                   set_atomically: Callable[[List[Parameter]], SetParametersResult]
                   ) -> SetParametersResult:
        """
        Set ``parameters`` with ``set_atomically`` and log what happened.

        Each parameter that changed at INFO: its name, old -> new value, and what the new
        value does; a refusal (by a range, a type or a check of ours) as a warning with its
        reason. Changes that follow a service call (:meth:`mirror`) at DEBUG: the call's own
        line says it.
        """
        logger = self._node.get_logger()
        before = self._values()
        result = set_atomically(parameters)
        if not result.successful:
            asked = ', '.join(f'{p.name}: {before.get(p.name)!r} -> {p.value!r}'
                              for p in parameters)
            logger.warning(f'parameter change refused: {asked}: {result.reason}')
            return result
        log = logger.debug if self._mirroring else logger.info
        for name, value in self._values().items():
            if name not in before or before[name] != value:
                log(f'parameter {name}: {before.get(name)!r} -> {value!r}: '
                    f'{self._effect(name, value)}')
        return result

    def _values(self) -> dict:
        return {name: parameter.value
                for name, parameter in self._node.get_parameters_by_prefix('').items()}

    def _effect(self, name: str, value) -> str:
        """Say what ``value`` of parameter ``name`` does; else the start of its description."""
        if name in EFFECTS:
            return EFFECTS[name](value)
        description = self._node.describe_parameter(name).description
        return description.split('. ')[0].rstrip('.') or 'no description'
