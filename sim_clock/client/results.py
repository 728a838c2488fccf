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
What the client's calls return and raise: results, status, reset events, errors.

Dataclasses and exceptions, importable from ``sim_clock.client`` and, as before, from
``sim_clock.client.api``.
"""

from dataclasses import dataclass

from sim_clock.core.units import join_ns
from sim_clock.core.units import NS_PER_SEC
from sim_clock.msg import Reset
# Status is declared beside its conversions, which the server shares; it is the client's too.
from sim_clock.wire.status import Status  # noqa: F401


class SimClockError(RuntimeError):
    """A sim_clock call did not do what was asked."""


class SimClockRefused(SimClockError):
    """The server refused a request; ``reason`` says why, ``holder`` who holds sync mode."""

    def __init__(self, server: str, what: str, reason: str, holder: str = ''):
        super().__init__(f'{server} refused {what}: {reason}')
        self.reason = reason
        self.holder = holder


class SimClockLate(SimClockRefused):
    """Participants were late: the step stopped at ``result``; ``late`` names them."""

    def __init__(self, server: str, what: str, reason: str, late, result: 'StepResult'):
        super().__init__(server, what, reason)
        self.late = list(late)
        self.result = result


class SimClockTimeout(SimClockError, TimeoutError):
    """No answer within the timeout; the message names the server and what was waited for."""


class SimClockNoService(SimClockTimeout):
    """The service did not appear within the timeout (no server of that name answers here)."""


class SimClockInterrupted(SimClockError):
    """A call ended by :meth:`SimClockClient.interrupt`, from another thread, before its answer."""


class SimClockServerGone(SimClockNoService):
    """
    The server went away while a call waited for its answer: its service left the graph.

    Said at once, not at the timeout. What the call did before the server stopped is not known.
    """


@dataclass(frozen=True)
class StepResult:
    """Where a step left time: the frame counter, the time in ns and the epoch (resets)."""

    frame: int
    time_ns: int
    epoch: int
    #: With ack_timeout on: the topics not acknowledged by all their reliable readers in time.
    unacknowledged: tuple = ()

    @property
    def time_sec(self) -> float:
        """Return the time in seconds, for display."""
        return self.time_ns / NS_PER_SEC


@dataclass(frozen=True)
class FrameEvents:
    """A piece of the server's frame timeline, as ``~/get_frame_events`` answers it."""

    #: The events (sim_clock.core.frame_events.FrameEvent), in the order recorded.
    events: tuple
    #: Events after the one asked from that had left the server's ring already.
    dropped: int
    #: The sequence of the last event the server recorded (0: none).
    last_sequence: int
    #: The server's ring length (its frame_events parameter); 0: recording is off.
    capacity: int
    #: The server's steady clock when it answered, ns (the events' start_ns and end_ns clock).
    now_ns: int


@dataclass(frozen=True)
class SeekResult:
    """Where a bag player's seek left time: the /clock time in ns and the epoch (resets)."""

    time_ns: int
    epoch: int


@dataclass(frozen=True)
class ResetEvent:
    """A reset of the server's time, as ``~/resets`` announces it (times are /clock times)."""

    epoch: int
    time_before_ns: int
    time_after_ns: int
    cause: str
    mode: str
    sync: bool

    @classmethod
    def from_msg(cls, msg: Reset) -> 'ResetEvent':
        """Return the event a ``sim_clock/msg/Reset`` message carries."""
        return cls(msg.epoch, join_ns(msg.time_before), join_ns(msg.time_after), msg.cause,
                   msg.mode, msg.sync)
