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
The control services: each callback is one call on a public :class:`ClockServer` method.

As rclpy's ``ParameterService``, a plain class handed the node; the answers are filled from
the outcomes the server returns. Expected failures are in the response, never raised.
"""

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from sim_clock.core.units import split_ns
from sim_clock.names import ANONYMOUS_USER
from sim_clock.names import SERVICE_QOS
from sim_clock.srv import GetStatus
from sim_clock.srv import Step
from sim_clock.srv import SyncModeCmd
from std_srvs.srv import SetBool
from std_srvs.srv import Trigger


def fill(response, outcome):
    """
    Copy the fields of an outcome (a dataclass) into ``response``, by name.

    A field ``<name>_ns`` that the response lacks goes into its Time ``<name>`` (``clock_ns``
    into ``clock``); fields the response lacks otherwise are left out.
    """
    for name, value in vars(outcome).items():
        if hasattr(response, name):
            setattr(response, name, value)
        elif name.endswith('_ns') and hasattr(response, name[:-3]):
            stamp = getattr(response, name[:-3])
            stamp.sec, stamp.nanosec = split_ns(value)
    return response


def serve(node, table, callback_group=None) -> list:
    """Create the services of ``table`` (type, name, callback) on ``node``; return them."""
    return [node.create_service(srv_type, name, callback, qos_profile=SERVICE_QOS,
                                callback_group=callback_group)
            for srv_type, name, callback in table]


def _step_arguments(request) -> tuple:
    """Return a Step request as the server's step methods take it."""
    return (request.user_id, request.steps, request.target_frame,
            request.epoch if request.check_epoch else None)


class ControlServices:
    """``~/sync_mode_cmd``, ``~/step``, ``~/get_status`` and the std_srvs services."""

    def __init__(self, server):
        self._server = server
        # Steps in a group of their own: a step that waits for participants leaves the rest
        # of the node (status, pause, set_sync, the done topic) free to run meanwhile.
        self._steps = serve(server, (
            (Step, '~/step', self._on_step),
            (Trigger, '~/step_once', self._on_step_once)),
            callback_group=MutuallyExclusiveCallbackGroup())
        serve(server, (
            (SyncModeCmd, '~/sync_mode_cmd', self._on_sync_mode_cmd),
            (GetStatus, '~/get_status', self._on_get_status),
            (Trigger, '~/pause', self._on_pause),
            (Trigger, '~/resume', self._on_resume),
            (Trigger, '~/reset', self._on_reset),
            (SetBool, '~/set_sync', self._on_set_sync)))

    def await_steps(self) -> None:
        """Serve steps as coroutines, which may wait: for an executor that awaits them."""
        step, step_once = self._steps
        step.callback, step_once.callback = self._on_step_waiting, self._on_step_once_waiting

    async def _on_step_waiting(self, request, response):
        return fill(response, await self._server.step_async(*_step_arguments(request)))

    async def _on_step_once_waiting(self, request, response):
        return fill(response, await self._server.step_async(ANONYMOUS_USER, 1))

    def _on_sync_mode_cmd(self, request, response):
        return fill(response, self._server.sync_mode_cmd(
            request.user_id, request.start_sync_mode, request.time_step))

    def _on_step(self, request, response):
        return fill(response, self._server.step(*_step_arguments(request)))

    def _on_get_status(self, request, response):
        return fill(response, self._server.status())

    def _on_step_once(self, request, response):
        return fill(response, self._server.step(ANONYMOUS_USER, 1))

    def _on_pause(self, request, response):
        return fill(response, self._server.pause())

    def _on_resume(self, request, response):
        return fill(response, self._server.resume())

    def _on_reset(self, request, response):
        return fill(response, self._server.reset())

    def _on_set_sync(self, request, response):
        return fill(response, self._server.set_sync(request.data))
