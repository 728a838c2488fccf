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

"""What a recording holds, as the recorder prints it at the end: ``RecordingSummary``."""

from dataclasses import dataclass
from typing import Dict
from typing import List
from typing import Optional
from typing import Tuple

from sim_clock.bag.recorder_frame_order import MAX_HELD_BYTES
from sim_clock.core.units import format_seconds


@dataclass
class TopicCount:
    """Messages recorded on one topic, with the first and last timestamps."""

    type_name: str
    count: int = 0
    first_ns: Optional[int] = None
    last_ns: Optional[int] = None


class RecordingSummary:
    """What a recording holds: messages per topic, the time span, and what was left out."""

    def __init__(self):
        self.topics: Dict[str, TopicCount] = {}
        self.before_clock = 0
        self.after_end = 0
        #: Messages written outside the order rule (doc/bags.md), and why.
        self.late = 0
        self.early = 0
        self.time_jumps_back = 0
        self._last_clock_ns: Optional[int] = None

    def clock(self, time_ns: int) -> None:
        """Note a /clock value; count the times it went back (a reset, seek or loop)."""
        if self._last_clock_ns is not None and time_ns < self._last_clock_ns:
            self.time_jumps_back += 1
        self._last_clock_ns = time_ns

    def add_topic(self, topic: str, type_name: str) -> None:
        """Note that a topic is recorded (it is listed even if no message comes)."""
        self.topics.setdefault(topic, TopicCount(type_name))

    def message(self, topic: str, time_ns: int) -> None:
        """Note a message written at ``time_ns``."""
        entry = self.topics[topic]
        entry.count += 1
        if entry.first_ns is None or time_ns < entry.first_ns:
            entry.first_ns = time_ns
        if entry.last_ns is None or time_ns > entry.last_ns:
            entry.last_ns = time_ns

    @property
    def total(self) -> int:
        """Return the messages recorded, all topics."""
        return sum(entry.count for entry in self.topics.values())

    def span(self) -> Optional[Tuple[int, int]]:
        """Return (first, last) simulated time of the messages recorded, or None."""
        firsts = [e.first_ns for e in self.topics.values() if e.first_ns is not None]
        lasts = [e.last_ns for e in self.topics.values() if e.last_ns is not None]
        return (min(firsts), max(lasts)) if firsts else None

    def lines(self, path: str) -> List[str]:
        """Return the summary as text lines."""
        lines = [f'recorded {self.total} messages into {path}']
        span = self.span()
        if span:
            lines.append(
                f'simulated time span: {format_seconds(span[0])} s to {format_seconds(span[1])} s '
                f'({format_seconds(span[1] - span[0])} s)')
        width = max((len(name) for name in self.topics), default=0)
        for name in sorted(self.topics):
            entry = self.topics[name]
            lines.append(f'  {name:<{width}}  {entry.count:>9}  {entry.type_name}')
        if self.before_clock:
            lines.append(f'{self.before_clock} messages came before any /clock and were not '
                         'recorded')
        if self.after_end:
            lines.append(f'{self.after_end} messages were published at or after --until and '
                         'were not recorded')
        if self.late:
            lines.append(f'{self.late} messages arrived after their frame was written and were '
                         'written as they came: the order of this bag may differ from another '
                         "run's")
        if self.early:
            lines.append(f'{self.early} times the data held for unfinished frames passed '
                         f'{MAX_HELD_BYTES >> 20} MiB and was written before its frame ended: '
                         "the order of this bag may differ from another run's")
        if self.time_jumps_back:
            lines.append(f'simulated time went back {self.time_jumps_back} times (resets): '
                         'the bag holds several passes')
        return lines
