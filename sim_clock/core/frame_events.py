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
The frame timeline: what the clock server did with each frame, kept in a bounded ring.

Free of ROS. Each :class:`FrameEvent` says when (on the server's steady clock, integer ns)
a frame went out, a participant finished it, a gate's message came, a wait for readers'
acknowledgements began and ended, a step call came and was answered, or time was reset, and
which simulated time it concerns. :class:`FrameEventRing` keeps the last ``length`` of them,
numbered from 1 in the order recorded; a reader asks for those after the last it has
(``msg/FrameEvent.msg``, ``srv/GetFrameEvents.srv``, doc/timeline.md).
"""

from collections import deque
from dataclasses import dataclass
import itertools
from typing import Callable
from typing import List
from typing import Optional
from typing import Tuple

#: The kinds, as msg/FrameEvent.msg numbers them.
FRAME, DONE, GATE, ACK, STEP, RESET = range(6)
#: Each kind's name, by number: the trace and the report name them so.
KIND_NAMES = ('frame', 'done', 'gate', 'ack', 'step', 'reset')
#: The ring's default length: about a minute of frames at 100 Hz with a few participants.
DEFAULT_LENGTH = 10_000
#: The most a ring may hold (the parameter's upper bound).
MAX_LENGTH = 10_000_000


@dataclass(frozen=True)
class FrameEvent:
    """One event; fields as msg/FrameEvent.msg has them."""

    sequence: int
    kind: int
    epoch: int
    sim_ns: int
    start_ns: int
    end_ns: int
    name: str = ''
    count: int = 0
    success: bool = True
    detail: str = ''

    @property
    def kind_name(self) -> str:
        """Return the kind's name: 'frame', 'done', 'gate', 'ack', 'step' or 'reset'."""
        return KIND_NAMES[self.kind]

    @property
    def duration_ns(self) -> int:
        """Return how long it lasted on the steady clock (0 for an instant)."""
        return self.end_ns - self.start_ns


class FrameEventRing:
    """
    The last ``length`` events, numbered 1, 2, ... in the order recorded.

    Kept as plain tuples (the fields of :class:`FrameEvent` in order) and made events when
    read: recording stays cheap enough to leave on. ``length`` 0 turns recording off; the
    recording methods then return at once. ``listener`` (optional) is called with each event
    recorded (to publish it).
    """

    def __init__(self, length: int = DEFAULT_LENGTH,
                 listener: Optional[Callable[[FrameEvent], None]] = None):
        check_length(length)
        self._events = deque(maxlen=length or 1)
        self.length = length
        #: The sequence of the last event recorded (0: none yet).
        self.last_sequence = 0
        self.listener = listener

    def resize(self, length: int) -> None:
        """Keep at most ``length`` events from now on (the newest kept); 0 turns it off."""
        check_length(length)
        kept = list(self._events)[-length:] if length and self.length else []
        self._events = deque(kept, maxlen=length or 1)
        self.length = length

    def record(self, kind: int, epoch: int, sim_ns: int, start_ns: int,
               end_ns: Optional[int] = None, name: str = '', count: int = 0,
               success: bool = True, detail: str = '') -> int:
        """Record one event (``end_ns`` None: an instant); return its sequence (0: off)."""
        if not self.length:
            return 0
        self.last_sequence += 1
        item = (self.last_sequence, kind, epoch, sim_ns, start_ns,
                start_ns if end_ns is None else end_ns, name, count, success, detail)
        self._events.append(item)
        if self.listener is not None:
            self.listener(FrameEvent(*item))
        return self.last_sequence

    def record_frames(self, epoch: int, times: range, first_number: int, now_ns: int) -> None:
        """
        Record a FRAME event for each /clock time in ``times``, all out at ``now_ns``.

        Their frame numbers count from ``first_number``.
        """
        if not self.length:
            return
        first = self.last_sequence + 1
        self.last_sequence += len(times)
        items = [(first + k, FRAME, epoch, time_ns, now_ns, now_ns, '', first_number + k, True,
                  '') for k, time_ns in enumerate(times)]
        self._events.extend(items)
        if self.listener is not None:
            for item in items:
                self.listener(FrameEvent(*item))

    def after(self, sequence: int, limit: int = 0) -> Tuple[List[FrameEvent], int]:
        """
        Return (events, dropped): the events kept with a sequence above ``sequence``.

        ``events`` oldest first, at most ``limit`` of them (0: all); ``dropped``: how many
        events above ``sequence`` had left the ring already.
        """
        items = self._events if self.length else ()
        first = items[0][0] if items else self.last_sequence + 1
        dropped = max(0, first - 1 - sequence)
        skip = max(0, sequence - first + 1)
        kept = [FrameEvent(*item) for item in itertools.islice(
            items, skip, skip + limit if limit else None)]
        return kept, dropped


def check_length(length: int) -> None:
    """Raise ValueError, saying what is allowed, unless ``length`` is a ring's length."""
    if not isinstance(length, int) or isinstance(length, bool) or not 0 <= length <= MAX_LENGTH:
        raise ValueError(f'frame_events must be an integer from 0 (off) to {MAX_LENGTH}, '
                         f'got {length!r}')
