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

"""The core's parameter table on the node: declared, validated, applied and mirrored."""

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
            node.set_parameters_atomically(changed)
