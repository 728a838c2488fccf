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
How free run paces frames against wall time, and how often the node wakes up to publish them.

The rule: a frame of ``time_step_ns`` is due every ``time_step_ns / real_time_factor`` ns of
steady time, counted from a reference the timeline sets at each resume, reset or change of
pace (:func:`frames_due`, in integers; :func:`frame_period_ns`). The timeline advances by it
(``Timeline.poll``); the node's tick (``node/ticking.py``) wakes up once a frame period, at
most a :data:`FULL_SPEED_TICK_NS` at full speed, publishes what is due in batches
(``node/engine/free_run.py``), and republishes the time when idle (:class:`Pacing`).
"""

from fractions import Fraction
from typing import Optional

#: Free run is paced by a steady timer; frames due faster than this are published in batches.
MIN_TICK_NS = 1_000_000
#: The most frames one timer callback publishes: services are still answered between batches.
FRAMES_PER_TICK = 100
#: Free run at real_time_factor 0 publishes frames in batches of FULL_SPEED_BATCH_NS, one batch
#: between two events of the spin loop, or one per FULL_SPEED_TICK_NS tick when no loop drives
#: it. A batch starts with FULL_SPEED_CHUNK frames, then takes as many as its time left holds at
#: the rate measured so far (:func:`full_speed_chunk`), at most FULL_SPEED_MAX_CHUNK at once.
FULL_SPEED_BATCH_NS = 200_000
FULL_SPEED_CHUNK = 10
FULL_SPEED_MAX_CHUNK = 1000
FULL_SPEED_TICK_NS = 1_000_000
#: Free run at real_time_factor 0 goes over at least this many frames that carry nothing (a
#: bag's empty span) in one jump instead of publishing each: about 2 ms of work at the pace
#: of /clock alone, so fewer cost less than the jump saves.
SKIP_EMPTY_FRAMES = 1000
#: While free run holds a frame for participants that have each said a done before, its time
#: is republished at most this often (the bare rclpy barrier's resend): each participant
#: answers every republish with a done, so at publish_rate a frame held longer than the
#: republish period took a round of extra dones and wake-ups each period, a cost that grew
#: with the participants until frames all but stopped (64 participant processes on 2 cores).
HELD_REPUBLISH_NS = 100_000_000


def frames_due(elapsed_ns: int, real_time_factor: Fraction, time_step_ns: int) -> int:
    """
    Return the frames due ``elapsed_ns`` of steady time after the pacing's reference.

    ``real_time_factor`` > 0: simulated ns per steady ns, exact. Whole frames only (floor), so
    a frame is never early; integer arithmetic, so no error accumulates over a long run.
    """
    return ((elapsed_ns * real_time_factor.numerator)
            // (real_time_factor.denominator * time_step_ns))


def frame_period_ns(real_time_factor: Fraction, time_step_ns: int) -> Fraction:
    """Return the steady time between two frames, in ns (exact); 0 as fast as possible."""
    if not real_time_factor:
        return Fraction(0)
    return time_step_ns / real_time_factor


class Pacing:
    """The /clock republish period, and the tick period that fits a frame period."""

    def __init__(self, publish_period_ns: int):
        self.publish_period_ns = publish_period_ns
        #: When /clock last went out, on the steady clock (None: not yet): the next
        #: republish waits a period from it. Written on every publish (the ticker's).
        self.last_publish_ns: Optional[int] = None

    def tick_period_ns(self, frame_period_ns: Optional[Fraction], driven: bool) -> int:
        """
        Return the timer period for a frame period (:meth:`Timeline.frame_period_ns`).

        No frames by themselves: the republish period. As fast as possible: the republish
        period when a spin loop drives the batches (``driven``), else one batch a
        :data:`FULL_SPEED_TICK_NS`. Paced: the frame period, within
        [:data:`MIN_TICK_NS`, republish period].
        """
        if frame_period_ns is None:
            return self.publish_period_ns
        if frame_period_ns == 0:
            return self.publish_period_ns if driven else FULL_SPEED_TICK_NS
        return int(min(max(frame_period_ns, MIN_TICK_NS), self.publish_period_ns))

    def republish_due(self, now_ns: int, tick_ns: int, held_for_answered: bool = False) -> bool:
        """
        Whether the tick at ``now_ns`` (of a timer of period ``tick_ns``) republishes.

        It does when it is the tick nearest to a period after the last publish: a period has
        passed, less half a tick. A timer fires on its own schedule while a publish is noted
        when its callback ran, a little late, so with a tick of one period "a whole period
        has passed" held only every other tick: /clock came at half of publish_rate.

        The period is the republish period, or with ``held_for_answered`` (a frame held for
        participants that have each said a done before) at least :data:`HELD_REPUBLISH_NS`.
        A participant that has said none yet keeps the republish period: its first done may
        have gone out before its writer matched the server's reader, and only the republish
        it answers brings it again.
        """
        period = self.publish_period_ns
        if held_for_answered:
            period = max(period, HELD_REPUBLISH_NS)
        return (self.last_publish_ns is None
                or now_ns - self.last_publish_ns >= period - tick_ns // 2)


def full_speed_chunk(published: int, elapsed_ns: int, left_ns: int) -> int:
    """
    Return how many frames a full-speed batch takes next: as many as ``left_ns`` holds.

    ``published`` frames took ``elapsed_ns`` so far; at least 1 (the batch goes on only while
    time is left), at most :data:`FULL_SPEED_MAX_CHUNK`. Integer arithmetic only.
    """
    if published <= 0 or elapsed_ns <= 0:
        return FULL_SPEED_CHUNK
    return max(1, min(left_ns * published // elapsed_ns, FULL_SPEED_MAX_CHUNK))
