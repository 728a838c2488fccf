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
The server's frame timeline on ROS: ``~/get_frame_events`` and ``~/frame_events``.

The engine, the participants, the gates, the acknowledgement waits and the resets each call
one method of :class:`FrameTimeline` at the moment the event happens; it adds the epoch and
records it in the core's ring (``sim_clock.core.frame_events``). With the ring off
(``frame_events`` 0) each call returns after one comparison.
"""

import functools
import time
from typing import Callable
from typing import Iterable
from typing import Protocol

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from sim_clock.core.frame_events import ACK
from sim_clock.core.frame_events import DONE
from sim_clock.core.frame_events import FrameEvent
from sim_clock.core.frame_events import FrameEventRing
from sim_clock.core.frame_events import GATE
from sim_clock.core.frame_events import RESET
from sim_clock.core.frame_events import STEP
from sim_clock.msg import FrameEvent as FrameEventMsg
from sim_clock.srv import GetFrameEvents
from sim_clock.wire.names import SERVICE_QOS

#: ~/frame_events: reliable and volatile, deep enough for a burst of frames.
EVENTS_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                        reliability=ReliabilityPolicy.RELIABLE,
                        durability=DurabilityPolicy.VOLATILE)


class Now(Protocol):
    """The time now and its epoch (resets so far): the timeline's."""

    epoch: int
    time_ns: int


def to_msg(event: FrameEvent, msg=None) -> FrameEventMsg:
    """Return ``event`` as a ``sim_clock/msg/FrameEvent`` (filled into ``msg`` if given)."""
    msg = FrameEventMsg() if msg is None else msg
    msg.sequence, msg.kind, msg.epoch = event.sequence, event.kind, event.epoch
    msg.sim_ns, msg.start_ns, msg.end_ns = event.sim_ns, event.start_ns, event.end_ns
    msg.name, msg.count, msg.success, msg.detail = (
        event.name, event.count, event.success, event.detail)
    return msg


class FrameTimeline:
    """
    Record the server's frame events in ``ring``; serve and (optionally) publish them.

    ``run``: what says the time and epoch now (the timeline); the events of a reset carry
    their own. ``to_clock``: timeline time to /clock time, for the events that happen at the
    time now (an acknowledgement wait).
    """

    def __init__(self, node: Node, ring: FrameEventRing, run: Now,
                 to_clock: Callable[[int], int],
                 now_ns: Callable[[], int] = time.monotonic_ns):
        self.ring = ring
        self._run = run
        self._to_clock = to_clock
        self._now = now_ns
        #: Record frames out in one run: ``frames(epoch, times, first_number, now_ns)``, the
        #: /clock times ``times`` of epoch ``epoch``, the first numbered ``first_number``.
        #: The ring's own method: every run of frames calls it.
        self.frames = ring.record_frames
        #: Record that a participant finished a frame: ``done(epoch, time_ns, since_ns,
        #: now_ns, name, round_=0, success=True)``, the /clock time it finished, awaited since
        #: ``since_ns``. The ring's own method, the kind given: every done calls it.
        self.done = functools.partial(ring.record, DONE)
        #: Record a gated output: ``gate(epoch, time_ns, since_ns, now_ns, topic)``, for the
        #: /clock time ``time_ns`` it answered.
        self.gate = functools.partial(ring.record, GATE)
        self._publisher = node.create_publisher(FrameEventMsg, '~/frame_events', EVENTS_QOS)
        node.create_service(GetFrameEvents, '~/get_frame_events', self._on_get,
                            qos_profile=SERVICE_QOS)

    def publish(self, on: bool) -> None:
        """Publish each event on ``~/frame_events`` from now on, or stop."""
        self.ring.listener = (lambda event: self._publisher.publish(to_msg(event))) if on else None

    def missed(self, kind: int, names: Iterable[str], time_ns: int, since_ns: int) -> None:
        """Record that the frame at ``time_ns`` stopped waiting for ``names`` (late ones)."""
        if self.ring.length:
            now = self._now()
            for name in names:
                self.ring.record(kind, self._run.epoch, time_ns, since_ns, now, name, 0, False)

    def acknowledged(self, topics: Iterable[str], start_ns: int, end_ns: int,
                     stalled: Iterable[str] = ()) -> None:
        """
        Record a wait for the readers of ``topics``, at the time now.

        From ``start_ns`` to ``end_ns`` (steady ns); ``stalled``: the topics not acknowledged
        in time. The node's acknowledgement waits call it at the end of each wait that waited
        (``Acknowledgements.on_wait``).
        """
        if self.ring.length:
            run = self._run
            self.ring.record(ACK, run.epoch, self._to_clock(run.time_ns), start_ns, end_ns,
                             ','.join(topics), 0, not stalled)

    def step(self, service: str, user_id: str, time_ns: int, start_ns: int, frames: int,
             success: bool, message: str) -> None:
        """Record a step call that came at ``start_ns``, answered now."""
        if self.ring.length:
            self.ring.record(STEP, self._run.epoch, time_ns, start_ns, self._now(),
                             service, frames, success, f'{user_id}: {message}')

    def reset(self, epoch: int, time_before_ns: int, time_after_ns: int, cause: str) -> None:
        """Record a reset from ``time_before_ns`` to ``time_after_ns`` (/clock times)."""
        if self.ring.length:
            self.ring.record(RESET, epoch, time_after_ns, self._now(), None, '',
                             time_before_ns, True, cause)

    def _on_get(self, request, response):
        events, dropped = self.ring.after(request.after, request.max_events)
        response.events = [to_msg(event) for event in events]
        response.dropped = dropped
        response.last_sequence = self.ring.last_sequence
        response.capacity = self.ring.length
        response.now_ns = self._now()
        return response
