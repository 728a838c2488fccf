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
What a frame timeline says: who held the frames, for how long, and the pace of the run.

Free of ROS; reads :class:`~sim_clock.core.frame_events.FrameEvent` sequences (the server's
ring, or a trace read back). A participant or a gate *holds* a frame from the moment the
frame's ``/clock`` went out until its done (or message) came: that is a DONE or GATE event's
duration. The trace, the report and ``simclock top`` all count through here.
"""

from dataclasses import dataclass
from typing import Dict
from typing import Iterable
from typing import List
from typing import Optional
from typing import Sequence
from typing import Tuple

from sim_clock.core.frame_events import ACK
from sim_clock.core.frame_events import DONE
from sim_clock.core.frame_events import FRAME
from sim_clock.core.frame_events import FrameEvent
from sim_clock.core.frame_events import GATE

#: A holder's kind, by event kind.
HOLDER_KINDS = {DONE: 'participant', GATE: 'gate'}


def percentile(ordered: Sequence[int], percent: int) -> int:
    """Return the nearest-rank ``percent`` percentile of ascending ``ordered`` (0 if empty)."""
    if not ordered:
        return 0
    rank = (percent * len(ordered) + 99) // 100
    return ordered[max(rank, 1) - 1]


@dataclass
class Holder:
    """A participant's or a gate's hold times over the events read."""

    name: str
    kind: str
    #: Each hold, ns, ascending.
    holds_ns: List[int]
    #: Holds that never ended in a done or a message (timed out, or the frame was stopped).
    missed: int = 0

    @property
    def p50_ns(self) -> int:
        """Return the median hold, ns (nearest rank)."""
        return percentile(self.holds_ns, 50)

    @property
    def p99_ns(self) -> int:
        """Return the 99th percentile hold, ns (nearest rank)."""
        return percentile(self.holds_ns, 99)

    @property
    def max_ns(self) -> int:
        """Return the longest hold, ns."""
        return self.holds_ns[-1] if self.holds_ns else 0

    @property
    def total_ns(self) -> int:
        """Return the sum of its holds, ns."""
        return sum(self.holds_ns)

    def share(self, wall_ns: int) -> float:
        """Return its holds' sum as a share of ``wall_ns`` (0 to 1; 0 if no wall time)."""
        return self.total_ns / wall_ns if wall_ns > 0 else 0.0


def holders(events: Iterable[FrameEvent]) -> List[Holder]:
    """Return each participant and gate with its holds, the slowest first (p99, then max)."""
    found: Dict[Tuple[int, str], Holder] = {}
    for event in events:
        kind = HOLDER_KINDS.get(event.kind)
        if kind is None:
            continue
        holder = found.setdefault((event.kind, event.name), Holder(event.name, kind, []))
        holder.holds_ns.append(event.duration_ns)
        if not event.success:
            holder.missed += 1
    for holder in found.values():
        holder.holds_ns.sort()
    return sorted(found.values(),
                  key=lambda h: (-h.p99_ns, -h.max_ns, h.kind, h.name))


@dataclass
class FrameSpan:
    """One frame: from its /clock to the last done, message or acknowledgement it waited for."""

    epoch: int
    sim_ns: int
    #: The frame's number since its epoch began (FrameEvent.count of its FRAME event).
    number: int
    start_ns: int
    end_ns: int
    #: Who ended it: the participant or gate whose done or message came last ('' none).
    holder: str = ''

    @property
    def duration_ns(self) -> int:
        """Return how long the frame was held, ns."""
        return self.end_ns - self.start_ns


def frame_spans(events: Iterable[FrameEvent]) -> List[FrameSpan]:
    """Return each frame that went out, in order, with who held it last."""
    spans: Dict[Tuple[int, int], FrameSpan] = {}
    order: List[Tuple[int, int]] = []
    for event in events:
        key = (event.epoch, event.sim_ns)
        if event.kind == FRAME:
            if key not in spans:
                order.append(key)
            spans[key] = FrameSpan(event.epoch, event.sim_ns, event.count, event.start_ns,
                                   event.end_ns)
            continue
        span = spans.get(key)
        if span is None or event.kind not in (DONE, GATE, ACK) or event.end_ns < span.end_ns:
            continue
        span.end_ns = event.end_ns
        span.holder = event.name if event.kind != ACK else f'acknowledgements of {event.name}'
    return [spans[key] for key in order]


def slowest_frames(events: Iterable[FrameEvent], count: int) -> List[FrameSpan]:
    """Return the ``count`` frames held longest, the longest first."""
    spans = frame_spans(events)
    return sorted(spans, key=lambda span: (-span.duration_ns, span.epoch, span.sim_ns))[:count]


def wall_ns(events: Sequence[FrameEvent]) -> int:
    """Return the steady time the events cover, from the first start to the last end, ns."""
    if not events:
        return 0
    return max(event.end_ns for event in events) - min(event.start_ns for event in events)


def real_time_factor(events: Iterable[FrameEvent],
                     window_ns: int) -> List[Tuple[int, float]]:
    """
    Return (steady ns at the window's end, simulated / steady time over it) per window.

    Frames are taken in windows of at least ``window_ns`` of steady time, each within one
    epoch (a reset starts a new window: simulated time jumps there).
    """
    points: List[Tuple[int, float]] = []
    first: Optional[FrameEvent] = None
    last: Optional[FrameEvent] = None
    for event in events:
        if event.kind != FRAME:
            continue
        if first is None or event.epoch != first.epoch or event.sim_ns < first.sim_ns:
            first = last = event
            continue
        last = event
        elapsed = last.start_ns - first.start_ns
        if elapsed >= window_ns:
            points.append((last.start_ns, (last.sim_ns - first.sim_ns) / elapsed))
            first = last
    return points
