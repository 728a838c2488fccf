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
What the frame engine works with: one interface per collaborator, and the parts it is given.

The engine (:mod:`.engine`) is handed :class:`EngineParts` and nothing else: no node, no
server. Each field is typed by what the engine calls on it, so a test drives the engine with
small fakes of these parts (``test/node/engine/test_frame_engine.py``) and the server wires the
real ones (``node/server.py``). The readers of its waits on the wire (participants, output
gates) are handed :class:`WaitParts`; the engine, made after them, registers with each the
method it is called by when one of its waits ends (``when_released``, ``when_ready``), and with
the change dispatch what it does after each (``after_dispatch``): at run time they call the
engine itself, never through the server.
"""

from dataclasses import dataclass
from dataclasses import field
import time
from typing import Callable
from typing import Iterable
from typing import List
from typing import Optional
from typing import Protocol
from typing import Sequence
from typing import Tuple

from rclpy.clock import Clock
from sim_clock.core.axes import Axes
from sim_clock.core.settings import Core
from sim_clock.core.timeline import Timeline


def nothing() -> None:
    """Do nothing: what a part calls when its waits end, until the engine has registered."""


@dataclass
class StepOutcome:
    """Where a step left time, as the engine answers it (``~/step``'s response fields)."""

    success: bool
    message: str
    frame: int
    clock_ns: int
    epoch: int
    #: The participants that stopped the step by being late.
    late: List[str] = field(default_factory=list)
    #: The topics not acknowledged in time (ack_timeout).
    unacknowledged: List[str] = field(default_factory=list)


class FrameSink(Protocol):
    """Where the server's frames go: told each new frame, and the current time when idle."""

    #: Whether its frames may leave something to do at their end (:meth:`end_of_frames`):
    #: False, and the engine never asks.
    ends_frames: bool

    def publish_frames(self, frames: range,
                       clock_times: Optional[Sequence[int]] = None) -> None:
        """
        Publish each new frame in turn (its data, then its /clock).

        ``clock_times``: None, or the ascending times of the frames whose /clock goes out (the
        /clock rate cap of free run); the others publish their data only.
        """

    def publish_time(self, time_ns: int) -> None:
        """Publish /clock at ``time_ns`` again: not a new frame (idle, or after a reset)."""

    def limit(self, limit: int) -> int:
        """
        Return how many of the next ``limit`` frames free run may publish in one run (>= 1).

        A sink whose frames reach a boundary (a bag's end) ends the run there, so that what
        :meth:`end_of_frames` asks for is applied before any frame after it goes out. Asked
        only of a sink that :attr:`ends_frames`.
        """

    def empty_frames(self) -> int:
        """
        Return how many of the next frames carry no data and leave nothing to do at their end.

        Free run as fast as possible skips them (:meth:`Timeline.skip`) when they are many: a
        bag's long empty span. Asked only of a sink that :attr:`ends_frames`; 0: none known.
        """

    def publishers(self) -> list:
        """Return the publishers of the frames, whose acknowledgements a step may wait for."""

    def end_of_frames(self) -> Optional[Callable[[], object]]:
        """
        Return what the frames published last leave to do once finished, or None.

        A change of the timeline (a bag's loop, its pause at the end) that the frame engine
        applies at the frame boundary, once the participants have finished those frames.
        """

    def close(self) -> None:
        """Stop publishing: the node destroys its publishers next."""


class Logger(Protocol):
    """The node's logger (rclpy's), as the engine uses it."""

    def info(self, message: str, **kwargs) -> bool:
        """Log at INFO; ``throttle_duration_sec`` as rclpy takes it."""

    def warning(self, message: str, **kwargs) -> bool:
        """Log at WARN."""

    def error(self, message: str, **kwargs) -> bool:
        """Log at ERROR."""


class Timer(Protocol):
    """A steady one-shot timer: the engine's deadline for a waiting step."""

    timer_period_ns: int

    def cancel(self) -> None:
        """Stop it."""

    def reset(self) -> None:
        """Start it again with its period."""


class Changes(Protocol):
    """Where changes of the timeline are announced (:class:`~.changes.TimelineChanges`)."""

    def apply(self, change: Callable[[], object]) -> object:
        """Run ``change()``; then announce what it changed."""

    def dispatch(self) -> None:
        """Announce what the timeline changed since the last call."""

    def after_dispatch(self, callback: Callable[[list], None]) -> None:
        """Call ``callback`` with the changes (maybe none) at the end of every dispatch."""


class Pace(Protocol):
    """The server's tick (:class:`~.ticking.Ticker`): its period, and a frame out noted."""

    full_speed: bool
    period_ns: int

    def published(self) -> None:
        """Note that /clock went out (pacing, the node's own clock)."""


class FrameReaders(Protocol):
    """The participants' side of a frame (:class:`~.participants.Participants`)."""

    def frame_out(self, time_ns: Optional[int] = None) -> None:
        """Say what goes with the frame at ``time_ns`` (None: the time published again)."""

    def when_released(self, go_on: Callable[[], None]) -> None:
        """Call ``go_on`` whenever a wait for them ends (a done, a leave)."""


class GateReaders(Protocol):
    """The subscriptions of the gated topics (:class:`~.gates.OutputGates`)."""

    def drain(self) -> None:
        """Drop what the gated topics carried before the frames that go out now."""

    def when_released(self, go_on: Callable[[], None]) -> None:
        """Call ``go_on`` whenever a wait for a gated output ends (an output, a removal)."""


class ExpectedNodes(Protocol):
    """The nodes no frame goes out without (:class:`~.readiness.ExpectedParticipants`)."""

    def look(self) -> bool:
        """Return whether every expected node is ready now."""

    def describe_missing(self) -> List[str]:
        """Say, per expected node not ready, what it lacks."""

    def forget(self, *names: str) -> None:
        """Forget what the nodes ``names`` said (they left): each must say it again."""

    def when_ready(self, ready: Callable[[], None]) -> None:
        """Call ``ready`` whenever every expected node has become ready."""


class FrameRecorder(Protocol):
    """The frame timeline (:class:`~.frame_events.FrameTimeline`), as the engine feeds it."""

    ring: object

    def frames(self, epoch: int, times: range, first: int, now_ns: int) -> None:
        """Record the frames at ``times`` of ``epoch``, the first ``first``, out at ``now_ns``."""

    def missed(self, kind: int, names: Iterable[str], time_ns: int, since_ns: int) -> None:
        """Record that the frame at ``time_ns`` stopped waiting for ``names``."""

    def step(self, service: str, user_id: str, time_ns: int, start_ns: int, frames: int,
             success: bool, message: str) -> None:
        """Record a step call that came at ``start_ns``, answered now."""

    def done(self, epoch: int, time_ns: int, since_ns: int, now_ns: int, name: str,
             round_: int = 0, success: bool = True) -> int:
        """Record that ``name`` finished /clock time ``time_ns``, awaited since ``since_ns``."""

    def gate(self, epoch: int, time_ns: int, since_ns: int, now_ns: int, topic: str) -> int:
        """Record the gated output on ``topic`` for /clock time ``time_ns``."""


class AckWaits(Protocol):
    """The node's acknowledgement waits (:class:`~.acks.Acknowledgements`)."""

    #: Whether a wait waited, or found readers stalled, since :meth:`take_waits`.
    waited: bool

    def take_waits(self) -> Tuple[dict, List[str]]:
        """Return and forget the waits since the last call, and the stalled readers."""

    def take_report(self) -> str:
        """Take the waits as :meth:`take_waits` does; say them for a step's answer (or '')."""

    def wait(self, publishers, timeout_ns: int):
        """
        Return the wait for ``publishers``' acknowledgements: one slice per item iterated.

        Its ``stalled`` names the topics not acknowledged once the iteration ends.
        """


@dataclass
class EngineParts:
    """Everything the frame engine works with, each by its interface."""

    #: The time core: timeline, barrier, gates, pacing, rate cap, roster, ack timeout.
    core: Core
    #: Timeline time to /clock time.
    axes: Axes
    #: Where every frame goes: data, /clock, views.
    sink: FrameSink
    acks: AckWaits
    events: FrameRecorder
    changes: Changes
    pace: Pace
    participants: FrameReaders
    gate_readers: GateReaders
    expected: ExpectedNodes
    logger: Logger
    #: Makes the engine's steady timer for ``callback`` (canceled until armed).
    make_timer: Callable[[Callable[[], None]], Timer]
    #: Steady time, ns: the deadlines of holds and the times of frame events.
    now_ns: Callable[[], int] = time.monotonic_ns


class Wire(Protocol):
    """
    The rclpy node as the readers of the waits use it: what they make, the graph, the logger.

    Only rclpy Node's own methods: never the server's parts (``test_layout`` checks that no
    part reads them on its node).
    """

    def create_publisher(self, msg_type, topic: str, qos_profile, **kwargs):
        """Make a publisher (rclpy ``Node.create_publisher``)."""

    def create_subscription(self, msg_type, topic: str, callback, qos_profile, **kwargs):
        """Make a subscription."""

    def create_service(self, srv_type, name: str, callback, **kwargs):
        """Make a service."""

    def create_timer(self, timer_period_sec: float, callback, **kwargs):
        """Make a timer."""

    def destroy_subscription(self, subscription) -> bool:
        """Destroy a subscription made by :meth:`create_subscription`."""

    def get_logger(self):
        """Return the node's logger."""

    def get_node_names_and_namespaces(self) -> List[Tuple[str, str]]:
        """Return the nodes of the graph."""

    def get_publishers_info_by_topic(self, topic_name: str) -> list:
        """Return the graph's writers of ``topic_name``."""

    def resolve_topic_name(self, topic: str, *, only_expand: bool = False) -> str:
        """Return the full name of ``topic`` (``~/done``: under the node's name)."""


@dataclass
class WaitParts:
    """What the node's readers of the engine's waits (participants, output gates) work with."""

    #: The rclpy node: the services, subscriptions, publishers and timers they make, the
    #: graph they look at, the logger.
    node: Wire
    timeline: Timeline
    #: Timeline time to /clock time: participants and gates speak /clock time.
    axes: Axes
    events: FrameRecorder
    expected: ExpectedNodes
    #: The node's steady clock, for their timers (never ROS time).
    steady_clock: Clock
    #: Steady time, ns, as the engine's: when dones, outputs and joins came.
    now_ns: Callable[[], int] = time.monotonic_ns


class EngineMember:
    """
    A part of the frame engine (the engine, its steps, its free run): the parts they share.

    Bound once from :class:`EngineParts`, here, for each of them.
    """

    def __init__(self, parts: EngineParts):
        self._core = core = parts.core
        self._timeline = core.timeline
        self._hold = core.hold
        self._barrier = core.barrier
        self._gates = core.gates
        self._changes = parts.changes
        self._logger = parts.logger
        self._expected = parts.expected
        self._events = parts.events
        self._now = parts.now_ns
