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
from typing import Tuple

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
        return text + (f'; left out: {"; ".join(parts)}' if parts else '')


def account(bag: Bag, played: int) -> Account:
    """Return the :class:`Account` of ``bag`` with ``played`` messages out since the last reset."""
    return Account(bag.message_count, bag.playing_count, played, tuple(bag.left_out))
