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
The /clock rate cap of free run: which frames go out when they come faster than a cap.

Every rclpy node with ``use_sim_time`` takes each /clock message in Python (rclpy#1378), so
free run at ``real_time_factor`` 0, a frame per /clock, keeps every such node busy. With a cap
of ``max_rate`` messages per wall second, free run publishes only the frames on a *grid*: those
whose number since the last reset is a multiple of the *stride*, the smallest of 1, 2, 5, 10,
20, 50, ... that brings the frame rate under the cap. Each message carries an exact frame time,
and a subscriber's timer whose period is a multiple of ``stride * time_step`` (started on the
grid, as a timer made at a /clock time or at zero is) finds each of its deadlines published:
it fires at its exact time, every period, as without the cap. Why the grid: rcl fires a timer
once per forward jump of the clock, at the jump's time, and skips the periods it passed, so
the frames that go out decide when timers fire; a grid of round strides keeps the common
periods (10, 20, 50, 100 ms of a 1 ms or 10 ms step) on it.

The stride follows from the pace when free run is paced (exact). At a real-time factor of 0
the frame rate is measured over windows of :data:`WINDOW_NS` and the stride taken with a
margin of :data:`HEADROOM`. A token bucket holds the bound itself (at most ``max_rate`` a
second plus a burst of :data:`BURST_NS` worth, at least :data:`MIN_BURST`): a grid frame over
it is skipped and counted (:attr:`ClockRateCap.skipped`), which happens at a real-time factor
of 0 while the stride is measured or grows. Paced, :meth:`ClockRateCap.limit` holds the run
back instead (after a stall, say), so no grid frame is skipped. Frames that must go out (a
participant's due frame: the last of a batch when ``keep_last``) always do; an extra frame
between grid frames fires no timer early. Steps and sync mode never pass through the cap.
"""

from fractions import Fraction
from typing import Optional
from typing import Sequence

from sim_clock.core.units import NS_PER_SEC

#: The frame rate at a real-time factor of 0 is measured over windows this long (wall ns).
WINDOW_NS = 250_000_000
#: The measured frame rate is taken this much higher when the stride is chosen.
HEADROOM = Fraction(5, 4)
#: The token bucket lets this much wall time's worth of messages out at once, and at least
#: MIN_BURST: a frame on the grid that comes a little early (its tick's phase) still goes.
BURST_NS = 100_000_000
MIN_BURST = 2
_BASES = (1, 2, 5)


def stride_for(frames_per_sec: Fraction, max_rate: Fraction) -> int:
    """Return the smallest stride of 1, 2, 5, 10, 20, 50, ... that keeps the rate at the cap."""
    if max_rate <= 0 or frames_per_sec <= max_rate:
        return 1
    need = Fraction(frames_per_sec) / max_rate
    scale = 1
    while True:
        for base in _BASES:
            if base * scale >= need:
                return base * scale
        scale *= 10


class ClockRateCap:
    """
    Choose the free-run frames that go out under a cap of ``max_rate`` messages a wall second.

    :param max_rate: the cap in Hz, an exact fraction; 0 publishes every frame.
    """

    def __init__(self, max_rate: Fraction = Fraction(0)):
        #: The stride in force: every stride-th frame since the last reset goes out.
        self.stride = 1
        #: Grid frames left out to hold the bound (the server ran behind, or the stride grew).
        self.skipped = 0
        #: Free run's frames a wall second when paced (None: as fast as possible, or unknown).
        self._paced_fps: Optional[Fraction] = None
        self._pace: Optional[tuple] = None
        self._credit = 0
        self._window_frames = 0
        #: The last time that went out on /clock (timeline ns; None: none since the reset):
        #: what an idle republish carries under the cap.
        self.last_out_ns: Optional[int] = None
        self.set_max_rate(max_rate)

    def restart(self) -> None:
        """Time went back (a reset): no time of the old epoch is republished."""
        self.last_out_ns = None

    def set_max_rate(self, max_rate: Fraction) -> None:
        """Change the cap from the next frame on; the stride is chosen again."""
        self.max_rate = Fraction(max_rate)
        #: Whether a cap is set (a plain flag: it is read for every batch of free run).
        self.active = self.max_rate > 0
        self.stride = 1 if self._paced_fps is None else stride_for(self._paced_fps, max_rate)
        self._credit_ns: Optional[int] = None
        self._window_start_ns: Optional[int] = None

    def pace(self, time_step_ns: int, real_time_factor: Fraction) -> None:
        """
        Take free run's pace into account (whether or not time runs now).

        Paced (a real-time factor > 0): the stride follows exactly. 0 (as fast as possible):
        it is measured, starting from the stride in force.
        """
        pace = (time_step_ns, Fraction(real_time_factor))
        if pace == self._pace:
            return
        self._pace = pace
        if real_time_factor > 0:
            self._paced_fps = Fraction(real_time_factor) * NS_PER_SEC / time_step_ns
            self.stride = stride_for(self._paced_fps, self.max_rate)
        else:
            self._paced_fps = None
        self._window_start_ns = None

    def limit(self, limit: int, frame: int, now_ns: int) -> int:
        """
        Return how many frames after ``frame`` a paced free run may advance now, up to ``limit``.

        Paced, the grid frames the bucket cannot afford yet are held back, not skipped: the
        run stops short of them and catches up as the bucket refills (after a stall, say), so
        every grid frame goes out. At a real-time factor of 0 nothing is held back.
        """
        if not self.active or self._paced_fps is None:
            return limit
        self._refill(now_ns)
        stride = self.stride
        next_on_grid = (frame // stride + 1) * stride
        affordable = self._credit // NS_PER_SEC
        return max(0, min(limit, next_on_grid + affordable * stride - 1 - frame))

    def select(self, frames: range, last_frame: int, now_ns: int,
               keep_last: bool = False) -> Sequence[int]:
        """
        Return the times of ``frames`` that go out; ``last_frame`` is the number of the last.

        ``frames``: the times of new consecutive frames (a range of one time_step), the last
        being frame number ``last_frame`` since the reset. ``now_ns``: the steady time.
        ``keep_last``: the last frame goes out whatever the cap (a participant is due for it).
        """
        if not self.active or not frames:
            return frames
        self._measure(len(frames), now_ns)
        self._refill(now_ns)
        stride, first_number = self.stride, last_frame - len(frames) + 1
        first_on_grid = -(-first_number // stride) * stride
        grid = range(frames[0] + (first_on_grid - first_number) * frames.step,
                     frames[-1] + 1, stride * frames.step)
        affordable = self._credit // NS_PER_SEC
        if len(grid) > affordable:
            # The newest ones go out: subscribers see the latest time.
            self.skipped += len(grid) - affordable
            grid = grid[len(grid) - affordable:]
        self._credit -= len(grid) * NS_PER_SEC
        if keep_last and (not grid or grid[-1] != frames[-1]):
            self._credit = max(self._credit - NS_PER_SEC, 0)
            return [*grid, frames[-1]]
        return grid

    def _refill(self, now_ns: int) -> None:
        capacity = max(MIN_BURST * NS_PER_SEC, self.max_rate * BURST_NS)
        if self._credit_ns is None:
            self._credit = int(capacity)
        else:
            self._credit = int(min(capacity,
                                   self._credit + self.max_rate * (now_ns - self._credit_ns)))
        self._credit_ns = now_ns

    def _measure(self, count: int, now_ns: int) -> None:
        """At a real-time factor of 0: count frames per window; choose the stride from them."""
        if self._paced_fps is not None:
            return
        if self._window_start_ns is None:
            self._window_start_ns, self._window_frames = now_ns, 0
        self._window_frames += count
        elapsed = now_ns - self._window_start_ns
        if elapsed >= WINDOW_NS:
            measured = Fraction(self._window_frames * NS_PER_SEC, elapsed)
            self.stride = stride_for(measured * HEADROOM, self.max_rate)
            self._window_start_ns, self._window_frames = now_ns, 0
