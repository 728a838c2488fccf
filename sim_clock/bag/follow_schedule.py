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
Which bag messages a followed /clock makes due: in order, once, again after time goes back.

No rclpy: :class:`Following` is handed a :class:`~sim_clock.bag.cursor.Cursor` and the
:class:`~sim_clock.core.axes.Axes` that place the bag on the followed /clock, and hands the
messages due out through the cursor's run. The bag player's ``--follow-clock`` node
(:mod:`sim_clock.bag.follower`) owns the ROS side.
"""

from dataclasses import dataclass
from typing import Optional

from sim_clock.bag.cursor import Cursor
from sim_clock.bag.cursor import Run
from sim_clock.core.axes import Axes


@dataclass(frozen=True)
class Moved:
    """What one /clock time of the followed source did, times on the /clock axis in ns."""

    clock_ns: int
    #: The time followed before it (None: it is the first).
    previous_ns: Optional[int]
    #: Time went back (a reset of the source): the bag was sought to ``clock_ns``.
    went_back: bool
    #: Messages handed out for it (0 unless it is later than the time before).
    played: int
    #: It moved time on and found no message left, for the first time since the start or
    #: the last time going back.
    ended: bool
    #: The /clock time of the next message (None: none left until time goes back).
    next_clock_ns: Optional[int]


class Following:
    """
    A bag played along a /clock that another node publishes.

    Each bag message is handed out once /clock has moved to or past its stamp placed on the
    /clock axis (``axes``: the bag's stamps as they are, or its first stamp at 0), in the
    bag's order, once: a /clock that jumps over many messages hands them all out, in order.
    A /clock earlier than the one before is a reset of the source, followed as a seek: the
    bag starts again at the new time, and its messages from that time on are handed out
    again as time moves on. ``run`` is the cursor's run (:data:`~sim_clock.bag.cursor.Run`):
    one frame per followed time, whose "finish" is nothing.
    """

    def __init__(self, cursor: Cursor, axes: Axes, run: Run):
        self._cursor = cursor
        self._axes = axes
        self._run = run
        #: The last time followed (None: none yet).
        self.clock_ns: Optional[int] = None
        self._ended = False

    @property
    def handed_out(self) -> int:
        """Return the messages handed out so far, over every seek."""
        return self._cursor.handed_out

    @property
    def next_clock_ns(self) -> Optional[int]:
        """Return the /clock time of the next message to hand out, or None."""
        bag_ns = self._cursor.next_time_ns
        if bag_ns is None:
            return None
        return self._axes.to_clock(self._axes.from_bag(bag_ns))

    def follow(self, clock_ns: int) -> Moved:
        """
        Follow /clock to ``clock_ns``; hand out what that makes due; say what happened.

        A later time hands out every message due by it and not handed out yet. The first
        time, and a time earlier than the one before (the bag is sought to it), hand out
        nothing: the messages up to them (after a seek, those at its time) come with the
        first later time, as the bag player's own frames bring a start's or a seek's
        messages with the first frame after it. The same time again hands out nothing. What
        the cursor's stream raises (a read error) propagates once the messages before it are
        out; :meth:`abandon` then stops the bag until time goes back.
        """
        axes, cursor = self._axes, self._cursor
        previous = self.clock_ns
        self.clock_ns = clock_ns
        went_back = previous is not None and clock_ns < previous
        if went_back:
            cursor.seek(axes.to_bag(axes.from_clock(clock_ns)))
            self._ended = False
        played, ended = 0, False
        if previous is not None and clock_ns > previous:
            before = cursor.handed_out
            cursor.play([axes.from_clock(clock_ns)], axes.bag_start_ns, self._run)
            played = cursor.handed_out - before
            ended = cursor.exhausted and not self._ended
            self._ended = self._ended or ended
        return Moved(clock_ns, previous, went_back, played, ended, self.next_clock_ns)

    def abandon(self) -> None:
        """Hand out nothing more until time goes back (the bag could not be read on)."""
        self._cursor.seek(_PAST_EVERY_TIME_NS)
        self._ended = True


#: A bag time after every message: a cursor sought there has none left.
_PAST_EVERY_TIME_NS = 2**63 - 1
