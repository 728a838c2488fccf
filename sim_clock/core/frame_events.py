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

import bisect
from dataclasses import dataclass
from typing import Callable
from typing import List
from typing import Optional
from typing import Tuple

from sim_clock.core.rules import Refused

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


class _FrameRun(tuple):
    """
    Frames out in one call, kept as one item: FRAME events, made when read.

    ``(first sequence, epoch, /clock times (a range), out at ns, first frame number)``: a
    tuple made in C, not a Python object, since every run of frames records one.
    """

    __slots__ = ()

    def dropped(self, count: int) -> '_FrameRun':
        """Return the run without its first ``count`` frames."""
        first, epoch, times, now, number = self
        return _FrameRun((first + count, epoch, times[count:], now, number + count))

    def items(self, skip: int = 0):
        """Yield its events from the ``skip``-th, as the tuples of :class:`FrameEvent`."""
        first, epoch, times, now, number = self
        for k in range(skip, len(times)):
            yield (first + k, FRAME, epoch, times[k], now, now, '', number + k, True, '')


class FrameEventRing:
    """
    The last ``length`` events, numbered 1, 2, ... in the order recorded.

    Kept as plain tuples (the fields of :class:`FrameEvent` in order), a run of frames out
    at once as one item, and made events when read: recording stays cheap enough to leave on
    at a million frames a second. ``length`` 0 turns recording off; the recording methods
    then return at once. ``listener`` (optional) is called with each event recorded (to
    publish it).
    """

    def __init__(self, length: int = DEFAULT_LENGTH,
                 listener: Optional[Callable[[FrameEvent], None]] = None):
        check_length(length)
        self._items: list = []
        #: How many events the items hold: up to :attr:`_most`, of which the newest
        #: ``length`` are kept (the older ones go in one trim, not one per event).
        self._count = 0
        self.length = length
        self._most = _most(length)
        #: The sequence of the last event recorded (0: none yet).
        self.last_sequence = 0
        self.listener = listener

    def resize(self, length: int) -> None:
        """Keep at most ``length`` events from now on (the newest kept); 0 turns it off."""
        check_length(length)
        self.length = length
        self._most = _most(length)
        self._trim()

    def record(self, kind: int, epoch: int, sim_ns: int, start_ns: int,
               end_ns: Optional[int] = None, name: str = '', count: int = 0,
               success: bool = True, detail: str = '') -> int:
        """Record one event (``end_ns`` None: an instant); return its sequence (0: off)."""
        if not self.length:
            return 0
        self.last_sequence += 1
        item = (self.last_sequence, kind, epoch, sim_ns, start_ns,
                start_ns if end_ns is None else end_ns, name, count, success, detail)
        self._items.append(item)
        self._count += 1
        if self._count > self._most:
            self._trim()
        if self.listener is not None:
            self.listener(FrameEvent(*item))
        return self.last_sequence

    def record_frames(self, epoch: int, times: range, first_number: int, now_ns: int) -> None:
        """
        Record a FRAME event for each /clock time in ``times``, all out at ``now_ns``.

        Their frame numbers count from ``first_number``.
        """
        if not self.length or not times:
            return
        run = _FrameRun((self.last_sequence + 1, epoch, times, now_ns, first_number))
        count = len(times)
        self.last_sequence += count
        if self.listener is not None:  # each one, before the ring drops any
            for item in run.items():
                self.listener(FrameEvent(*item))
        self._items.append(run)
        self._count += count
        if self._count > self._most:
            self._trim()

    def _trim(self) -> None:
        """
        Drop the oldest events beyond the length (all of them when off).

        The items are in sequence order and number their events without a gap: the first item
        kept is found by bisection on the items' first sequences, and one straddling the cut
        keeps its newer frames.
        """
        if self._count <= self.length:
            return
        items, cut = self._items, self.last_sequence - self.length  # dropped: up to ``cut``
        gone = bisect.bisect_right(items, cut, key=_first_sequence)
        if gone:
            head = items[gone - 1]
            if type(head) is _FrameRun and head[0] + len(head[2]) - 1 > cut:
                items[gone - 1] = head.dropped(cut - head[0] + 1)
                gone -= 1
            del items[:gone]
        self._count = self.length

    def after(self, sequence: int, limit: int = 0) -> Tuple[List[FrameEvent], int]:
        """
        Return (events, dropped): the events kept with a sequence above ``sequence``.

        ``events`` oldest first, at most ``limit`` of them (0: all); ``dropped``: how many
        events above ``sequence`` had left the ring already.
        """
        first = self.last_sequence - min(self._count, self.length) + 1
        dropped = max(0, first - 1 - sequence)
        sequence = max(sequence, first - 1)  # the items beyond the length are not kept
        events: List[FrameEvent] = []
        for item in self._items:
            if limit and len(events) >= limit:
                break
            if type(item) is _FrameRun:
                first, count = item[0], len(item[2])
                if first + count - 1 <= sequence:
                    continue
                for fields in item.items(max(0, sequence - first + 1)):
                    events.append(FrameEvent(*fields))
                    if limit and len(events) >= limit:
                        break
            elif item[0] > sequence:
                events.append(FrameEvent(*item))
        return events, dropped


def _first_sequence(item: tuple) -> int:
    """Return the sequence of an item's first event (a run of frames or a single event)."""
    return item[0]


def _most(length: int) -> int:
    """Return how many events a ring of ``length`` holds before it trims to ``length``."""
    return length + min(length // 8, 1024)


def check_length(length: int) -> int:
    """
    Return ``length`` if it is a ring's length; else refuse it, saying what is allowed.

    The one check of the ``frame_events`` setting: its parser, and the ring's invariant.
    """
    if not isinstance(length, int) or isinstance(length, bool) or not 0 <= length <= MAX_LENGTH:
        raise Refused(f'frame_events must be an integer from 0 (off) to {MAX_LENGTH}, '
                      f'got {length!r}')
    return length
