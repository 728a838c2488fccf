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
The core's parameter table on the node: declared, validated, applied through the core, logged.

The core owns the state: ``mode``, ``sync``, ``paused`` and ``time_step`` change by services
(``~/pause``, ``~/set_sync``, ``~/sync_mode_cmd``, a bag's seek) as well as by ``ros2 param
set``, so they live in the timeline alone. :class:`CoreParameters` replaces the node's
parameter store (``compat.replace_parameter_store``): those names are declared there as any
other, and each read of their value, whatever reads it (``node.get_parameter``, the
get_parameters service, ``ros2 param get`` and ``dump``, the log of a set), is made from the
timeline (``settings.shown``). Every other parameter changes only by a set and is kept as
rclpy keeps it; its value is the one the core was given.

A set goes through rclpy's callbacks once: completed (mode and sync kept consistent),
validated (a refusal names what is allowed and changes nothing), then applied to the core,
whose one change dispatch announces it like any other change. A change made by a service
goes through that dispatch alone: no set follows it, so no callback runs again and nothing
has to tell a set of ours from the user's. Its /parameter_events message comes from
:meth:`ParameterBridge.announce` at the end of each dispatch: the shown values that differ
from those last announced, by rclpy's event of a set or by an earlier one of ours.

Reading the timeline on each read, rather than copying its state into rclpy's store after
each change, leaves one owner and no moment at which the two disagree (a listener of the
dispatch reads the new state). It leans on two private attributes of rclpy's Node, its store
and its event writer, which versions 7 and 9 use alike (``sim_clock.compat``).
"""

from collections.abc import MutableMapping
from typing import Callable
from typing import Iterator
from typing import List
from typing import Mapping
from typing import Tuple

from rcl_interfaces.msg import FloatingPointRange
from rcl_interfaces.msg import ParameterDescriptor
from rcl_interfaces.msg import ParameterEvent
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from rclpy.parameter import Parameter
from sim_clock import compat
from sim_clock.compat import coerce_integer_overrides
from sim_clock.core import settings
from sim_clock.core.rules import Mode
from sim_clock.core.rules import Refused
from sim_clock.core.rules import time_step_from_seconds
from sim_clock.core.timeline import Timeline
from sim_clock.node.engine.parts import Changes


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
        'a sync lease never lapses' if value == 0
        else f"a silent sync holder's lease lapses after {_seconds(value)}"),
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


class CoreParameters(MutableMapping):
    """
    A node's parameter store whose :data:`settings.SHOWN` values are the core's state.

    ``stored``: rclpy's store, name -> ``Parameter``, as declared. Every other name keeps its
    ``Parameter`` here as rclpy writes it. A write of a shown name is rclpy's set, validated,
    its event going out with this value, the core taking it next (the post-set callback): it
    keeps no value, only what /parameter_events carries (:attr:`announced`).
    """

    def __init__(self, stored: Mapping[str, Parameter], timeline: Timeline):
        self._timeline = timeline
        #: name -> Parameter, in the order of declaration; a shown name holds None.
        self._entries = {name: None if name in settings.SHOWN else parameter
                         for name, parameter in stored.items()}
        #: The shown values as the last /parameter_events message of each carried it.
        self.announced = {name: stored[name].value for name in settings.SHOWN}
        self._spell_time_step(stored['time_step'].value)

    def _spell_time_step(self, seconds: float) -> None:
        """Keep how time_step was last set (its seconds, and the ns they give), to read back."""
        self._time_step_set = (seconds, time_step_from_seconds(seconds))

    def shown(self) -> dict:
        """Return the shown names' values, from the timeline."""
        return settings.shown(self._timeline, self._time_step_set)

    def __getitem__(self, name: str) -> Parameter:
        parameter = self._entries[name]
        if parameter is None:
            return Parameter(name, value=self.shown()[name])
        return parameter

    def __setitem__(self, name: str, parameter: Parameter) -> None:
        if name in settings.SHOWN:
            self.announced[name] = parameter.value
            if name == 'time_step':
                self._spell_time_step(parameter.value)
            parameter = None
        self._entries[name] = parameter

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __contains__(self, name) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


class ParameterBridge:
    """
    Take a parameter set to the core, and make the parameters the core's state.

    A parameter set is completed (mode and sync kept consistent), validated (a refusal names
    what is allowed and changes nothing) and applied to the core through ``changes`` (the
    change dispatch announces it); then each part that follows a setting (:meth:`when_set`)
    is given its new value. :meth:`announce` puts on /parameter_events what a service changed.
    """

    def __init__(self, node: Node, core: settings.Core, changes: Changes):
        self._node = node
        self._core = core
        self._changes = changes
        self._followers: List[Tuple[str, Callable[[object], None]]] = []
        #: Within :meth:`set_logged`, which logs every value the set changed itself.
        self._setting = False
        self._store = compat.replace_parameter_store(
            node, lambda stored: CoreParameters(stored, core.timeline))
        node.add_pre_set_parameters_callback(self._complete)
        node.add_on_set_parameters_callback(self._validate)
        node.add_post_set_parameters_callback(self._applied)

    def _mode(self) -> Mode:
        return self._core.timeline.mode

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

    def when_set(self, name: str, follow: Callable[[object], None]) -> None:
        """Call ``follow(value)`` after each set of setting ``name`` is applied to the core."""
        self._followers.append((name, follow))

    def _applied(self, parameters: List[Parameter]) -> None:
        core = self._core
        parsed = settings.parse({p.name: p.value for p in parameters}, self._mode(), core)
        if not parsed:
            return
        self._changes.apply(lambda: settings.apply(parsed, core))
        for name, follow in self._followers:
            if name in parsed:
                follow(parsed[name])

    def after_changes(self, changes: list) -> None:
        """
        After a dispatch of changes of the timeline: :meth:`announce`, if there were any.

        The parameters read the timeline; what a service changed goes on /parameter_events.
        """
        if changes:
            self.announce()

    def announce(self) -> None:
        """
        Publish on /parameter_events the shown values that changed since last announced.

        Each is logged at INFO as a set is (old -> new value, what it does), as made by a
        service (a client taking sync mode with another ``time_step``, ``~/set_sync``, ...):
        every change of a parameter is in the log, whoever made it.
        """
        store = self._store
        changed = {name: value for name, value in store.shown().items()
                   if value != store.announced[name]}
        if not changed:
            return
        if not self._setting:
            logger = self._node.get_logger()
            for name, value in changed.items():
                logger.info(f'parameter {name}: {store.announced[name]!r} -> {value!r} '
                            f'(by a service call): {self._effect(name, value)}')
        store.announced.update(changed)
        node = self._node
        compat.publish_parameter_event(node, ParameterEvent(
            stamp=node.get_clock().now().to_msg(), node=node.get_fully_qualified_name(),
            changed_parameters=[Parameter(name, value=value).to_parameter_msg()
                                for name, value in changed.items()]))

    def set_logged(self, parameters: List[Parameter],
                   set_atomically: Callable[[List[Parameter]], SetParametersResult]
                   ) -> SetParametersResult:
        """
        Set ``parameters`` with ``set_atomically`` and log what happened.

        Each parameter that changed at INFO: its name, old -> new value, and what the new
        value does; a refusal (by a range, a type or a check of ours) as a warning with its
        reason. A change by a service is no set: :meth:`announce` logs it.
        """
        logger = self._node.get_logger()
        before = self._values()
        self._setting = True
        try:
            result = set_atomically(parameters)
        finally:
            self._setting = False
        if not result.successful:
            asked = ', '.join(f'{p.name}: {before.get(p.name)!r} -> {p.value!r}'
                              for p in parameters)
            logger.warning(f'parameter change refused: {asked}: {result.reason}')
            return result
        for name, value in self._values().items():
            if name not in before or before[name] != value:
                logger.info(f'parameter {name}: {before.get(name)!r} -> {value!r}: '
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
