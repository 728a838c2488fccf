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
What the server's Rounds announced, per topic and frame, against what the recorder has.

A deterministic stack's participants publish in rounds, and the clock server announces on
``~/rounds`` how many messages each round carried on each topic (``msg/Round.msg``): a Round of
the rounds kind at time T counts what was published in frame T, a Round of the next-frame kind
at time T what was published in the frame before T. A reliable message that reaches the
recorder late (a sample repaired after a heartbeat) may still be on its way when ``/clock``
reaches ``--until``; the recorder ends once every count announced for the frames it records
has arrived (:meth:`RoundTally.missing`), within a bound.

Counted per topic from the first frame the recorder has a message of it (what came before its
subscription matched is not its to wait for), up to the frame before the end; a reset (time
going back) makes frames of two epochs alike, so from then on nothing is awaited.
"""

from collections import Counter
from typing import Dict
from typing import Iterable
from typing import Optional
from typing import Tuple

#: The frames back from the latest /clock whose counts are kept: a message older than that is
#: not on its way any more (reliable delivery repairs within seconds), and memory stays bounded.
KEPT_FRAMES = 1000


class RoundTally:
    """The counts announced by Rounds and the messages recorded, per frame and topic."""

    def __init__(self, kept_frames: int = KEPT_FRAMES):
        self._kept_frames = kept_frames
        #: (time, round, next_frame) -> {topic: count}: a Round said again replaces itself.
        self._rounds: Dict[Tuple[int, int, bool], Dict[str, int]] = {}
        #: /clock time -> the /clock time before it, as the recorder saw them.
        self._before: Dict[int, int] = {}
        self._last_clock: Optional[int] = None
        #: frame time -> {topic: messages written}.
        self._written: Dict[int, Counter] = {}
        #: topic -> the earliest frame time of a message of it.
        self._first: Dict[str, int] = {}
        #: Whether a next-frame Round came: one is then due at the end's frame too.
        self.next_frame = False
        #: Time went back: frames of two epochs look alike, nothing is awaited.
        self.reset = False

    def clock(self, time_ns: int) -> None:
        """Note a /clock time the recorder received."""
        last = self._last_clock
        if last is not None and time_ns < last:
            self.reset = True
        elif last is not None and time_ns > last:
            self._before[time_ns] = last
            if len(self._before) > 2 * self._kept_frames:
                self._forget(sorted(self._before)[-self._kept_frames])
        self._last_clock = time_ns

    def _forget(self, oldest_ns: int) -> None:
        """Drop what is kept of the frames before ``oldest_ns``."""
        self._before = {time: before for time, before in self._before.items()
                        if time >= oldest_ns}
        self._rounds = {key: counts for key, counts in self._rounds.items()
                        if key[0] >= oldest_ns}
        self._written = {time: counts for time, counts in self._written.items()
                         if time >= oldest_ns}

    def announced(self, time_ns: int, round_number: int, topics: Iterable[str],
                  counts: Iterable[int], next_frame: bool) -> None:
        """Note a Round: ``counts`` messages on ``topics``."""
        self.next_frame |= next_frame
        self._rounds[(time_ns, round_number, next_frame)] = {
            topic: count for topic, count in zip(topics, counts) if count}

    def written(self, topic: str, frame_ns: int) -> None:
        """Note a message of ``topic`` recorded in the frame at ``frame_ns``."""
        self._written.setdefault(frame_ns, Counter())[topic] += 1
        first = self._first.get(topic)
        if first is None or frame_ns < first:
            self._first[topic] = frame_ns

    def missing(self, end_ns: int, held: Iterable[Tuple[str, int]] = ()) -> Dict[str, int]:
        """
        Return topic -> messages announced for a frame before ``end_ns`` and not recorded.

        ``held``: (topic, frame time) of messages received and not written yet. A next-frame
        Round due at ``end_ns`` and not come yet counts as one missing message on ''.
        """
        if self.reset:
            return {}
        first = dict(self._first)
        held_counts: Counter = Counter()
        for topic, frame_ns in held:
            held_counts[(topic, frame_ns)] += 1
            if topic not in first or frame_ns < first[topic]:
                first[topic] = frame_ns
        announced: Counter = Counter()
        for (time_ns, _, next_frame), counts in self._rounds.items():
            frame_ns = self._before.get(time_ns) if next_frame else time_ns
            if frame_ns is None or frame_ns >= end_ns:
                continue
            for topic, count in counts.items():
                if topic in first and frame_ns >= first[topic]:
                    announced[(topic, frame_ns)] += count
        missing: Counter = Counter()
        for (topic, frame_ns), count in announced.items():
            have = self._written.get(frame_ns, {}).get(topic, 0) + held_counts[(topic, frame_ns)]
            if count > have:
                missing[topic] += count - have
        if self.next_frame and not any(
                next_frame and time_ns == end_ns for time_ns, _, next_frame in self._rounds):
            missing[''] += 1
        return dict(missing)
