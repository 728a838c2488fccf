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
Every message of a bag, played or left out with its reason: the player's account of a replay.

The bag's messages (all topics, from the data files) add up to those that play in a whole pass
and those left out (:class:`~sim_clock.bag.reader.LeftOut`); at the end, those that played
since the last reset against those that should have. Free of rclpy.
"""

from dataclasses import dataclass
from typing import Sequence
from typing import Tuple

from sim_clock.bag.reach import Unheard
from sim_clock.bag.reader import Bag
from sim_clock.bag.reader import LeftOut

#: The player's exit code under ``--strict`` when messages were left out that nobody chose to
#: leave out (a type not installed, several types on one topic, another serialization) or
#: did not play (a read error, or the player stopped before them).
STRICT_EXIT_CODE = 3


def describe_left_out(bag: Bag) -> str:
    """Return the messages that never play, one ``N reason: topics`` a reason, or ''."""
    return '; '.join(f'{entry.count} {entry.reason}' for entry in bag.left_out)


@dataclass(frozen=True)
class Account:
    """What a replay published of its bag, and what it left out and why."""

    #: Messages in the bags' data files, all topics.
    in_bag: int
    #: Messages that play in a whole pass (from the start offset to the end).
    playing: int
    #: Messages published since the last reset (the start, a seek, a loop, ~/reset).
    played: int
    left_out: Tuple[LeftOut, ...]
    #: Messages that went out before any reader of their topic had matched (DDS discovery).
    unheard: Tuple[Unheard, ...] = ()

    @property
    def lost(self) -> int:
        """Return the messages that a reader matched too late to get (:attr:`unheard`)."""
        return sum(entry.count for entry in self.unheard if entry.matched_later)

    @property
    def reached_nobody(self) -> bool:
        """Whether messages played and no writer ever matched a reader: none reached anyone."""
        return bool(self.played) and bool(self.unheard) and not any(
            entry.matched_later for entry in self.unheard) and sum(
            entry.count for entry in self.unheard) >= self.played

    @property
    def not_played(self) -> int:
        """Return the messages of a whole pass that did not go out since the last reset."""
        return max(self.playing - self.played, 0)

    @property
    def short(self) -> bool:
        """Whether messages were left out that nobody chose, or some of a pass did not play."""
        return self.not_played > 0 or any(not entry.chosen for entry in self.left_out)

    def line(self) -> str:
        """Return the account as one line of the log."""
        text = f"played {self.played} of the bag's {self.in_bag} messages"
        parts = [f'{entry.count} {entry.reason}' for entry in self.left_out]
        if self.not_played:
            parts.append(f'{self.not_played} not played since the last reset (the player '
                         'stopped before them, a read error, or a seek past them)')
        text += f'; left out: {"; ".join(parts)}' if parts else ''
        for later, what in ((True, 'went out before the player saw a reader of their topic '
                                   'match, and that reader may not have got them'),
                            (False, 'went out while no reader of their topic had matched')):
            entries = [entry for entry in self.unheard if entry.matched_later is later]
            if entries:
                text += (f'; {"up to " if later else ""}'
                         f'{sum(entry.count for entry in entries)} {what}: '
                         + ', '.join(f'{entry.topic} {entry.count}' for entry in entries))
        if self.lost or self.reached_nobody:
            text += (' (DDS discovery: a volatile reader gets nothing published before it '
                     'matched, and a reader started just before the player can take seconds '
                     'to be discovered; --delay SEC, -p paused:=true then ~/resume, or '
                     'expected_participants hold the start for it)')
        return text


def account(bag: Bag, played: int, unheard: Sequence[Unheard] = ()) -> Account:
    """Return the :class:`Account` of ``bag``: ``played`` messages out since the last reset."""
    return Account(bag.message_count, bag.playing_count, played, tuple(bag.left_out),
                   tuple(unheard))
