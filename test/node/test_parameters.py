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

"""The parameters a service changes too are read from the core; a set reaches it once."""

import time

import pytest
from rcl_interfaces.msg import ParameterEvent
from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import GetParameters
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.parameter import parameter_value_to_python
from rclpy.qos import qos_profile_parameter_events
from sim_clock.core.units import NS_PER_MS
from sim_clock.node.parameters import CoreParameters
from sim_clock.node.server import ClockServer

pytestmark = pytest.mark.dds


class Rig:
    """A clock server in this process, a node that watches it, and one executor for both."""

    def __init__(self, context):
        self.server = ClockServer(context=context)
        self.watcher = watcher = Node('watcher', context=context)
        self.events = []
        watcher.create_subscription(
            ParameterEvent, '/parameter_events',
            lambda event: self.events.append(event) if event.node == '/sim_clock' else None,
            qos_profile_parameter_events)
        self.get_client = watcher.create_client(GetParameters, '/sim_clock/get_parameters')
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.server)
        self.executor.add_node(watcher)
        self.set_calls = []
        self.server.add_post_set_parameters_callback(
            lambda parameters: self.set_calls.append([p.name for p in parameters]))
        # The watcher's reader matches the server's writer before any event counts.
        self.spin_until(lambda: self.server.count_subscribers('/parameter_events') > 0
                        and self.get_client.service_is_ready(), 'the watcher matched')
        self.spin_for(0.2)
        self.events.clear()

    def spin_until(self, condition, what: str, timeout_s: float = 5.0) -> None:
        """Spin until ``condition()``; fail naming ``what`` after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while not condition():
            assert time.monotonic() < deadline, f'timed out waiting for {what}'
            self.executor.spin_once(timeout_sec=0.05)

    def spin_for(self, seconds: float) -> None:
        """Spin for ``seconds``: what is on its way arrives."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.02)

    def changed(self) -> list:
        """Return (name, value) of each changed parameter of every event so far, in order."""
        return [(p.name, Parameter.from_parameter_msg(p).value)
                for event in self.events for p in event.changed_parameters]

    def served(self, *names: str) -> list:
        """Return the values the get_parameters service answers for ``names``."""
        future = self.get_client.call_async(GetParameters.Request(names=list(names)))
        self.spin_until(future.done, 'the get_parameters answer')
        return [parameter_value_to_python(value) for value in future.result().values]

    def close(self) -> None:
        """Destroy both nodes and the executor."""
        self.executor.shutdown()
        self.watcher.destroy_node()
        self.server.destroy_node()


@pytest.fixture
def rig(context):
    """Return a :class:`Rig` on this test's context; close it at the end."""
    made = Rig(context)
    yield made
    made.close()


def test_a_service_change_is_what_every_read_shows(rig):
    """After a pause and a sync_mode_cmd: node reads, the service and the store all agree."""
    server = rig.server
    assert server.control.pause().success
    assert server.control.sync_mode_cmd('a', True, 20).result
    expected = {'mode': 'simulation', 'sync': True, 'paused': True, 'time_step': 0.02}
    for name, value in expected.items():
        assert server.get_parameter(name).value == value, name
        assert server.get_parameter_or(name).value == value, name
    assert {name: server.get_parameters_by_prefix('')[name].value
            for name in expected} == expected
    assert rig.served(*expected) == list(expected.values())
    assert server.get_parameter_type('time_step') == ParameterType.PARAMETER_DOUBLE
    assert set(expected) <= set(server.list_parameters([], 0).names)


def test_a_service_change_runs_no_parameter_set_and_one_event_says_it(rig):
    """No set (no callback runs); one /parameter_events message per change, with the values."""
    server = rig.server
    server.control.pause()
    rig.spin_until(lambda: rig.events, 'the pause event')
    server.control.sync_mode_cmd('a', True, 20)
    rig.spin_until(lambda: len(rig.events) >= 2, 'the sync_mode_cmd event')
    server.control.reset()  # mode, sync, paused and time_step stay: no event
    server.control.pause()  # paused already: no change, no event
    rig.spin_for(0.3)
    assert rig.set_calls == []
    assert rig.changed() == [('paused', True), ('sync', True), ('time_step', 0.02)]


def test_a_set_reaches_the_core_once_with_rclpys_event_alone(rig):
    """A set runs the callbacks once, changes the timeline, and gives one event, rclpy's."""
    server = rig.server
    [result] = server.set_parameters([Parameter('sync', value=True)])
    assert result.successful
    assert server.timeline.status().sync
    assert server.get_parameter('sync').value is True
    assert server.set_parameters_atomically(
        [Parameter('paused', value=True), Parameter('time_step', value=0.0123456789012)]
    ).successful
    status = server.timeline.status()
    assert status.paused and status.time_step_ns == 12345679
    rig.spin_until(lambda: len(rig.events) >= 2, 'the events of both sets')
    rig.spin_for(0.3)
    assert rig.set_calls == [['sync'], ['paused', 'time_step']]
    assert rig.changed() == [('sync', True), ('paused', True), ('time_step', 0.0123456789012)]
    # A value finer than 1 ns reads back as set while the timeline's step is the one it gave.
    assert server.get_parameter('time_step').value == 0.0123456789012
    assert rig.served('time_step') == [0.0123456789012]


def test_a_refused_set_changes_neither_the_core_nor_the_parameters(rig):
    """Refuse sync on with mode real_time: the timeline and what ROS reads stay."""
    server = rig.server
    result = server.set_parameters_atomically(
        [Parameter('mode', value='real_time'), Parameter('sync', value=True)])
    assert not result.successful
    assert server.timeline.status().mode.value == 'simulation'
    assert server.get_parameter('mode').value == 'simulation'
    assert server.get_parameter('sync').value is False


def test_the_store_holds_no_copy_of_the_shown_values(rig):
    """The node's store reads mode, sync, paused and time_step from the timeline itself."""
    server = rig.server
    store = server._parameters
    assert isinstance(store, CoreParameters)
    server.timeline.set_time_step_ns(5 * NS_PER_MS)  # no dispatch yet: the read is current
    assert store['time_step'].value == 0.005
    store['paused'] = Parameter('paused', value=True)  # as rclpy writes a set's value
    assert store['paused'].value is False  # the timeline's, until the core takes the set
    assert list(store) == list(server.get_parameters_by_prefix(''))
    assert 'loop' not in store and 'mode' in store
