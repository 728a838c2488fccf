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
A server in the test's process: what it arms and sets as its state changes.

Flow control is armed exactly while time advances only by steps, after any change; the /clock
writer's heartbeat period follows the participants and ``ack_timeout``.
"""

import pytest
from rclpy.parameter import Parameter
from sim_clock.node.heartbeat import ASKING_NS
from sim_clock.node.heartbeat import HELD_NS
from sim_clock.node.server import ClockServer

pytestmark = pytest.mark.dds


def _armed_as_the_run_says(server: ClockServer) -> bool:
    return server.flow.armed == (not server.timeline.free_running)


def test_every_kind_of_change_leaves_flow_control_armed_as_the_run_says(context):
    """Sync, pause, the holder, mode and pace, by service and by parameter: each one checked."""
    server = ClockServer(context=context, parameter_overrides=[
        Parameter('time_step', value=0.001)])
    try:
        timeline = server.timeline
        changes = [
            ('start', lambda: server.control.set_sync(True)),
            ('sync on', lambda: server.control.set_sync(True)),
            ('held', lambda: server.control.sync_mode_cmd('planner', True, 0)),
            ('released', lambda: server.control.sync_mode_cmd('planner', False, 0)),
            ('paused', server.control.pause),
            ('resumed', server.control.resume),
            ('real time', lambda: server.set_parameters([Parameter('mode', value='real_time')])),
            ('real time, paused', server.control.pause),
            ('simulation', lambda: server.set_parameters(
                [Parameter('mode', value='simulation')])),
            ('sync by parameter', lambda: server.set_parameters([Parameter('sync', value=True)])),
            ('reset', server.control.reset),
            ('free run by parameter', lambda: server.set_parameters(
                [Parameter('sync', value=False), Parameter('paused', value=False)])),
            ('paused by parameter', lambda: server.set_parameters(
                [Parameter('paused', value=True)])),
        ]
        seen = set()
        for name, change in changes:
            change()
            assert _armed_as_the_run_says(server), (name, server.flow.armed, timeline.status())
            seen.add(server.flow.armed)
        assert seen == {True, False}  # both ways, each reached by a change
    finally:
        server.destroy_node()


def test_the_clock_heartbeat_slows_while_participants_hold_frames_and_no_step_awaits_acks(
        context):
    """Joins, leaves and ack_timeout set by parameter: the period follows each one."""
    server = ClockServer(context=context)
    try:
        heartbeat = server.clock_heartbeat
        assert heartbeat.period_ns == ASKING_NS
        assert server.participants.join('planner', '/planner', 0).success
        assert heartbeat.period_ns == HELD_NS
        assert server.set_parameters([Parameter('ack_timeout', value=0.5)])[0].successful
        assert heartbeat.period_ns == ASKING_NS
        assert server.set_parameters([Parameter('ack_timeout', value=0.0)])[0].successful
        assert heartbeat.period_ns == HELD_NS
        assert server.participants.leave('planner').success
        assert heartbeat.period_ns == ASKING_NS
    finally:
        server.destroy_node()
