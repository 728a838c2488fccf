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
from dataclasses import fields
import warnings

from sim_clock.core.units import join_ns
from sim_clock.core.units import NS_PER_SEC
from sim_clock.msg import Reset
# Status is declared beside its conversions, which the server shares; it is the client's too.
from sim_clock.wire.status import Status  # noqa: F401


class SimClockError(RuntimeError):
    """
    A sim_clock call did not do what was asked: the base of the client's errors.

    Beneath it, one class per meaning: the server said no (:class:`SimClockRefused`), a step
    stopped because what it waited for was late (:class:`SimClockLate`), no answer in time
    (:class:`SimClockTimeout`), no server to ask (:class:`SimClockUnavailable`), the call was
    interrupted (:class:`SimClockInterrupted`) or the client closed (:class:`SimClockClosed`).
    """


class SimClockRefused(SimClockError):
    """The server refused a request; ``reason`` says why, ``holder`` who holds sync mode."""

    def __init__(self, server: str, what: str, reason: str, holder: str = ''):
        super().__init__(f'{server} refused {what}: {reason}')
        self.reason = reason
        self.holder = holder


class SimClockLate(SimClockError):
    """
    A step stopped early: participants or gated outputs were late.

    Time moved up to ``result`` (where the step stopped); ``late`` names what was late and
    ``reason`` is the server's words. Not a refusal: a refused request changes nothing.
    """

    def __init__(self, server: str, what: str, reason: str, late, result: 'StepResult'):
        super().__init__(f'{server} stopped {what}: {reason}')
        self.reason = reason
        self.late = list(late)
        self.result = result


class SimClockTimeout(SimClockError, TimeoutError):
    """No answer within the timeout; the message names the server and what was waited for."""


class SimClockUnavailable(SimClockError):
    """No server answers the call: its service is not there, or left during the call."""


class SimClockNoService(SimClockUnavailable, SimClockTimeout):
    """
    The service did not appear within the timeout (no server of that name answers here).

    Both unavailable and a timeout: it waited ``timeout_sec`` for the service.
    """


class SimClockServerGone(SimClockUnavailable):
    """
    The server went away while a call waited for its answer: its service left the graph.

    Said at once, not at the timeout. What the call did before the server stopped is not known.
    """


class SimClockInterrupted(SimClockError):
    """A call ended by :meth:`SimClockClient.interrupt`, from another thread, before its answer."""


class SimClockClosed(SimClockError):
    """A call on a client that was closed (``close()`` or the end of its ``with`` block)."""


class _MessageResult:
    """
    The ``str()`` of a result that carries the server's words is those words (``message``).

    These results were plain strings before: comparing one with a string (``==``, ``in``)
    still compares its message for one release, with a DeprecationWarning; compare
    ``result.message`` instead.
    """

    def __str__(self) -> str:
        return self.message

    def _fields(self) -> tuple:
        return tuple(getattr(self, f.name) for f in fields(self))

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            _compared_as_text(type(self).__name__)
            return self.message == other
        if type(other) is type(self):
            return self._fields() == other._fields()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._fields())

    def __contains__(self, text: str) -> bool:
        _compared_as_text(type(self).__name__)
        return text in self.message


def _compared_as_text(kind: str) -> None:
    warnings.warn(
        f'{kind} is not a str: comparing it with one is deprecated; use its .message',
        DeprecationWarning, stacklevel=3)


@dataclass(frozen=True, eq=False)
class ControlResult(_MessageResult):
    """
    What ``pause``, ``resume``, ``set_sync`` and ``leave`` did, in the server's words.

    The server answers these in free text only (``std_srvs`` Trigger and SetBool, ``Leave``);
    a refusal is raised, never returned.
    """

    message: str


@dataclass(frozen=True, eq=False)
class ResetResult(_MessageResult):
    """
    What ``reset`` did: the server's words and the epoch (count of resets) after it.

    ``answer_lost``: the reset's answer never came, but the epoch moved since it was asked,
    so the reset is taken as done (``message`` then says so).
    """

    message: str
    epoch: int
    answer_lost: bool = False


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
