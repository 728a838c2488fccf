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
rosbag2's player services on the bag player, each one call on the player's own controls.

``~/toggle_paused``, ``~/is_paused``, ``~/get_rate``, ``~/set_rate``, ``~/play_next``,
``~/burst`` and ``~/stop``, by rosbag2's names and with its fields (``~/pause``, ``~/resume``
and ``~/seek`` are the server's and the player's already). rosbag2_interfaces cannot be
installed here, so each type is std_srvs' Trigger or ours (doc/bags.md, "rosbag2's
services"). The bag plays by frames: ``~/play_next`` and ``~/burst`` step the frames that hold
the next messages, through the frame engine's steps, so their messages go out as a step's do.
"""

from typing import Callable

from rclpy.clock import Clock
from rclpy.clock import ClockType
from rclpy.node import Node
from rclpy.parameter import Parameter
from sim_clock.compat import DeferredReplies
from sim_clock.core.axes import Axes
from sim_clock.core.rules import frames_until
from sim_clock.node.engine import StepRequest
from sim_clock.node.outcomes import Answer
from sim_clock.node.services import Control
from sim_clock.node.services import fill
from sim_clock.node.services import serve
from sim_clock.srv import Burst
from sim_clock.srv import GetRate
from sim_clock.srv import IsPaused
from sim_clock.srv import SetRate
from sim_clock.wire.names import ANONYMOUS_USER
from std_srvs.srv import Trigger

#: Why ~/play_next and ~/burst refuse while time advances by itself (rosbag2's rule too).
PLAYING = ('playing: {service} plays the next messages of a paused player (~/pause first, or '
           'a step in sync mode)')
#: Why they refuse at the end of the bag.
NOTHING_LEFT = 'no message left to play: the end of the bag (~/seek or ~/reset to play again)'


class PlaybackServices:
    """
    rosbag2's player services on ``node`` (the player's).

    ``control``: pause, resume and status (``ServerControl``); ``steps``: takes a step (the frame
    engine's); ``timeline``: where time is and whether it advances by itself; ``frames``: the
    player's frame sink (its cursor says which message plays next, and where the bag ends);
    ``axes``: bag time to timeline time; ``stop``: ends the player.
    """

    def __init__(self, node: Node, control: Control, steps: Callable[[StepRequest], None],
                 timeline, frames, axes: Axes, stop: Callable[[], None]):
        self._node, self._control, self._steps = node, control, steps
        self._timeline, self._frames, self._axes = timeline, frames, axes
        self._stop = stop
        play_next, burst = serve(node, (
            (Trigger, '~/play_next', self._on_play_next),
            (Burst, '~/burst', self._on_burst)))
        # Answered once their frames are out, as a step is: deferred.
        self._play_next_replies = DeferredReplies(play_next)
        self._burst_replies = DeferredReplies(burst)
        serve(node, (
            (Trigger, '~/toggle_paused', self._on_toggle_paused),
            (IsPaused, '~/is_paused', self._on_is_paused),
            (GetRate, '~/get_rate', self._on_get_rate),
            (SetRate, '~/set_rate', self._on_set_rate),
            (Trigger, '~/stop', self._on_stop)))

    # -- the actions (the services', and the keyboard's) -----------------------------------------

    def toggle_paused(self) -> Answer:
        """Resume if paused, else pause."""
        paused = self._timeline.status().paused
        return self._control.resume() if paused else self._control.pause()

    def set_rate(self, rate: float) -> Answer:
        """Set ``real_time_factor`` to ``rate`` (> 0) as ``ros2 param set`` does."""
        if not rate > 0:
            return Answer(False, f'rate must be more than 0 (1.0: the recorded pace), got '
                                 f'{rate!r}; nothing changed')
        [result] = self._node.set_parameters([Parameter('real_time_factor', value=rate)])
        return Answer(result.successful, f'real_time_factor = {rate!r}' if result.successful
                      else result.reason)

    def rate(self) -> float:
        """Return ``real_time_factor``."""
        return self._node.get_parameter('real_time_factor').value

    def play_next(self, reply: Callable[[Answer], None]) -> None:
        """
        Step to the frame that holds the next message: every message of that frame plays.

        ``reply`` is given the outcome once the frame is out, or the refusal at once.
        """
        refusal = self._refusal('~/play_next')
        if refusal:
            reply(Answer(False, refusal))
            return
        timeline = self._timeline
        frames = max(1, frames_until(timeline.time_ns, timeline.time_step_ns,
                                     self._axes.from_bag(self._frames.cursor.next_time_ns)))
        self._steps(StepRequest(user_id=ANONYMOUS_USER, steps=frames, reply=reply,
                                service='~/play_next'))

    # -- the services -----------------------------------------------------------------------------

    def _on_toggle_paused(self, request, response):
        return fill(response, self.toggle_paused())

    def _on_is_paused(self, request, response):
        response.paused = self._timeline.status().paused
        return response

    def _on_get_rate(self, request, response):
        response.rate = self.rate()
        return response

    def _on_set_rate(self, request, response):
        return fill(response, self.set_rate(request.rate))

    def _on_play_next(self, request, response):
        def answer(outcome) -> None:
            response.success, response.message = outcome.success, outcome.message
        self.play_next(self._play_next_replies.defer(response, answer))
        return response

    def _on_burst(self, request, response):
        """Step frame by frame until ``num_messages`` more have played (0: to the end)."""
        refusal = self._refusal('~/burst')
        if refusal:
            response.success, response.message = False, refusal
            return response
        timeline, cursor = self._timeline, self._frames.cursor
        frames = max(1, frames_until(timeline.time_ns, timeline.time_step_ns,
                                     self._frames.end_ns))
        before, wanted = cursor.handed_out, request.num_messages

        def go_on(done: int) -> bool:
            return not wanted or cursor.handed_out - before < wanted

        def answer(outcome) -> None:
            played = response.actually_burst = cursor.handed_out - before
            # Stopped by go_on once enough had played: what was asked is done.
            if wanted and played >= wanted:
                response.success, response.message = True, f'played {played} messages'
            else:
                response.success, response.message = outcome.success, outcome.message
        self._steps(StepRequest(
            user_id=ANONYMOUS_USER, steps=frames,
            reply=self._burst_replies.defer(response, answer), progress=go_on,
            service='~/burst'))
        return response

    def _on_stop(self, request, response):
        """Pause, then end the player once this answer is out (its next turn)."""
        self._control.pause()
        timer = None

        def end() -> None:
            self._node.destroy_timer(timer)
            self._stop()
        # A steady clock of its own: the node's follows simulated time, which stands still now.
        timer = self._node.create_timer(0.0, end, clock=Clock(clock_type=ClockType.STEADY_TIME))
        response.success, response.message = True, 'stopping: the player ends'
        return response

    def _refusal(self, service: str) -> str:
        """Return why ``service`` cannot play the next messages now, or ''."""
        if self._timeline.free_running:
            return PLAYING.format(service=service)
        if (self._frames.cursor.next_time_ns is None
                or self._timeline.time_ns >= self._frames.end_ns):
            return NOTHING_LEFT
        return ''
