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
What ``~/get_progress`` says of a bag's replay, and its one line of text.

Shared by the bag player, which measures it (:mod:`sim_clock.bag.progress`), and the client,
whose ``simclock progress --follow`` shows the line the player shows; no rclpy.
"""

from dataclasses import dataclass
import enum

from sim_clock.core.units import split_ns

#: ``time_left`` when it is unknown: paused, or the measured rate is 0.
UNKNOWN_TIME_LEFT = -1.0


class Playback(enum.Enum):
    """How the bag plays, as the clock runs now."""

    #: Free run or real-time mode, time advancing by itself.
    PLAYING = 'playing'
    #: Free run or real-time mode, paused.
    PAUSED = 'paused'
    #: Sync mode: time advances by steps only (no terminal line, no log line).
    STEPPED = 'stepped'


@dataclass(frozen=True)
class ProgressReport:
    """Where the replay is: ``~/get_progress`` field for field (``*_ns``: a Time there)."""

    #: The bag timestamp reached: every message stamped up to it has gone out.
    bag_time_ns: int
    #: The bag's first and last timestamps.
    start_ns: int
    end_ns: int
    #: Bag time from start to end, 0 to 100.
    percent: float
    #: Messages handed out since the last reset (the start, a seek, a loop, ~/reset).
    messages_out: int
    #: Messages of the topics that play, in the whole bag.
    messages_total: int
    #: Measured pace: bag seconds per wall second; 0 paused, unknown or standing still.
    rate: float
    #: Wall seconds to the end at that pace; 0 at the end; UNKNOWN_TIME_LEFT (-1) unknown.
    time_left: float
    #: Resets so far; messages_out counts from the last one.
    epoch: int
    playback: Playback
    #: Every message of the bags' data files, all topics.
    messages_in_bag: int = 0
    #: Of those, the ones that never play (a /clock, a type not installed, not selected, ...).
    messages_left_out: int = 0
    #: Why, one line a reason (``N reason: topics``); '' for none.
    left_out: str = ''

    def line(self) -> str:
        """Return the report as one line of text (for a terminal or the log)."""
        sec, nanosec = split_ns(self.bag_time_ns)
        total = str(self.messages_total)
        rate = f'{self.rate:6.2f}x' if self.rate > 0 else '    --x'
        if self.time_left == 0:
            state = '  (end)'
        elif self.playback is Playback.PLAYING:
            state = ''
        else:
            state = f'  ({self.playback.value})'
        return (f'bag {sec}.{nanosec // 1_000_000:03d} s {self.percent:5.1f}%  '
                f'{self.messages_out:>{len(total)}}/{total} msgs  {rate}  '
                f'left {_wall_time(self.time_left)}{state}')


def _wall_time(seconds: float) -> str:
    """Format seconds of wall time: ``4.2 s``, ``1:02:03``, ``--`` when unknown."""
    if seconds < 0:
        return '--'
    if seconds < 60:
        return f'{seconds:.1f} s'
    minutes, sec = divmod(int(seconds), 60)
    return f'{minutes // 60}:{minutes % 60:02d}:{sec:02d}'
