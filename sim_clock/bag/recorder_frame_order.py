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
The recorder's stamps and write order: each frame's messages by topic name, then arrival.

Free of rclpy: the recorder node hands it each ``/clock`` and each message with its DDS source
timestamp (the publisher's wall clock), and writes what :meth:`FrameOrder.take` returns, in that
order. A message is stamped with the ``/clock`` published last before it. A frame is the run of
``/clock`` messages of one time (a time published again while idle is the same frame); its
messages are held until the frame after it has ended too, and are then written sorted by topic
name, each topic's messages in the order they arrived (a writer's own order). So the bytes of a
bag depend on the messages alone, not on the order in which DDS delivered different topics.
"""

from bisect import bisect_right
from dataclasses import dataclass
from typing import List
from typing import Optional
from typing import Tuple

#: /clock messages kept to stamp messages by (from CLOCK_HISTORY to twice as many).
CLOCK_HISTORY = 10_000
#: Bytes of held data past which every message whose stamp is known is written at once, before
#: its frame has ended (a clock paused while nodes publish on wall timers): memory stays bounded.
MAX_HELD_BYTES = 64 << 20


@dataclass(frozen=True)
class Stamped:
    """A message to write: its stamp (ns of /clock), topic and serialized bytes."""

    stamp_ns: int
    topic: str
    data: bytes


class FrameOrder:
    """Messages held by frame and handed out in the recorder's order (module docstring)."""

    def __init__(self, max_held_bytes: int = MAX_HELD_BYTES):
        self._max_held_bytes = max_held_bytes
        # Per /clock received, oldest first: its source timestamp, time and frame number.
        self._sources: List[int] = []
        self._times: List[int] = []
        self._frames: List[int] = []
        self._trimmed = False
        #: The source timestamps at which the last two frames started.
        self._starts: List[int] = []
        #: Messages not yet handed out: (source timestamp, arrival number, topic, data).
        self._held: List[Tuple[int, int, str, bytes]] = []
        self._held_bytes = 0
        #: The earliest source timestamp held (meaningless while nothing is held).
        self._oldest_held = 0
        self._arrivals = 0
        #: Messages arriving for frames already handed out, in arrival order.
        self._late: List[Tuple[int, int, str, bytes]] = []
        #: Messages published before this source timestamp have been handed out.
        self._handed_before: Optional[int] = None
        self._step_ns: Optional[int] = None
        self._steps_vary = False
        #: Messages published before the first /clock: never written.
        self.before_clock = 0
        #: Messages that arrived after their frame was handed out, written as they came.
        self.late = 0
        #: Times the held data passed ``max_held_bytes`` and frames went out before they ended.
        self.early = 0

    @property
    def time_step_ns(self) -> Optional[int]:
        """Return the step between successive /clock times if it never changed, else None."""
        return None if self._steps_vary else self._step_ns

    def clock(self, source: int, time_ns: int) -> None:
        """Note a /clock published at wall time ``source`` (ns) carrying ``time_ns``."""
        if not self._times or time_ns != self._times[-1]:
            if self._times and time_ns > self._times[-1]:
                step = time_ns - self._times[-1]
                self._steps_vary |= self._step_ns not in (None, step)
                self._step_ns = step
            self._starts = (self._starts + [source])[-2:]
            frame = self._frames[-1] + 1 if self._frames else 0
        else:
            frame = self._frames[-1]
        self._sources.append(source)
        self._times.append(time_ns)
        self._frames.append(frame)
        if len(self._times) > 2 * CLOCK_HISTORY:
            del self._sources[:CLOCK_HISTORY]
            del self._times[:CLOCK_HISTORY]
            del self._frames[:CLOCK_HISTORY]
            self._trimmed = True

    def message(self, source: int, topic: str, data: bytes) -> None:
        """Hold a message published at wall time ``source`` (ns)."""
        self._arrivals += 1
        entry = (source, self._arrivals, topic, data)
        if self._handed_before is not None and source < self._handed_before:
            self._late.append(entry)
            self.late += 1
        else:
            self._oldest_held = min(self._oldest_held, source) if self._held else source
            self._held.append(entry)
            self._held_bytes += len(data)

    def _horizon(self) -> Optional[int]:
        """
        Return the source timestamp before which every frame has ended, with a frame to spare.

        The start of the frame before the latest one: the frames before it ended when it
        started, and it has ended too. None until two frames have started.
        """
        if len(self._starts) < 2:
            return None
        return self._starts[0]

    def ready(self) -> bool:
        """Whether :meth:`take` has something to hand out (cheap: no sorting)."""
        horizon = self._horizon()
        due = horizon is not None and self._held and self._oldest_held < horizon
        return bool(self._late or due or self._over_bound())

    def _over_bound(self) -> bool:
        """Whether held data passed the bound and some of it has a known stamp."""
        return (self._held_bytes > self._max_held_bytes and bool(self._sources)
                and self._oldest_held < self._sources[-1])

    def take(self, final: bool = False, before: Optional[int] = None) -> List[Stamped]:
        """
        Return what may be written now, in order: late messages first, then frame by frame.

        Not ``final``: the frames that have ended with one to spare, or, past the bytes bound,
        every message whose stamp is known. ``final`` (the end of the recording): every held
        message published before ``before`` (None: all of them; those after the last /clock
        get its time); :meth:`discard` counts the others.
        """
        late = [self._stamp(entry) for entry in self._late]
        self._late = []
        if final:
            limit = before
        else:
            limit = self._horizon()
            if self._over_bound():
                limit = self._sources[-1]
                self.early += 1
            if limit is None:
                return [message for _, message in filter(None, late)]
            if self._handed_before is None or limit > self._handed_before:
                self._handed_before = limit
        taken = [entry for entry in self._held if limit is None or entry[0] < limit]
        self._held = [entry for entry in self._held if limit is not None and entry[0] >= limit]
        self._held_bytes = sum(len(entry[3]) for entry in self._held)
        self._oldest_held = min((entry[0] for entry in self._held), default=0)
        ordered = sorted(filter(None, (self._stamp(entry) for entry in taken)),
                         key=lambda keyed: keyed[0])
        return [message for _, message in filter(None, late)] + [
            message for _, message in ordered]

    def held(self, before: int) -> List[Tuple[str, int]]:
        """Return (topic, frame time) of each message not handed out, sent before ``before``."""
        frames = []
        for source, _, topic, _ in self._late + self._held:
            index = bisect_right(self._sources, source)
            if source < before and (index or self._trimmed):
                frames.append((topic, self._times[max(index - 1, 0)]))
        return frames

    def discard(self) -> int:
        """Drop what is still held (published at or after the end); return how many."""
        count = len(self._held)
        self._held, self._held_bytes = [], 0
        return count

    def _stamp(self, entry) -> Optional[Tuple[tuple, Stamped]]:
        """Return (sort key, message) for a held entry, or None if it came before any /clock."""
        source, arrival, topic, data = entry
        index = bisect_right(self._sources, source)
        if index == 0 and not self._trimmed:
            self.before_clock += 1
            return None
        # Older than the history kept: the oldest time kept.
        index = max(index - 1, 0)
        return (self._frames[index], topic, arrival), Stamped(self._times[index], topic, data)
