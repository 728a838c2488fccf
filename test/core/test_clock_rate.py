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

"""The /clock rate cap: the stride, the grid, the bound, and timers that fire on time."""

from bisect import bisect_left
from fractions import Fraction

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest
from sim_clock.core.clock_rate import BURST_NS
from sim_clock.core.clock_rate import ClockRateCap
from sim_clock.core.clock_rate import HEADROOM
from sim_clock.core.clock_rate import MIN_BURST
from sim_clock.core.clock_rate import stride_for
from sim_clock.core.clock_rate import WINDOW_NS
from sim_clock.core.rules import max_clock_rate_from_float
from sim_clock.core.rules import Refused
from sim_clock.core.timeline import Timeline

pytestmark = pytest.mark.fast

NS = 1_000_000_000
MS = 1_000_000
SERIES = [base * 10 ** power for power in range(13) for base in (1, 2, 5)]


class RclTimer:
    """An rcl timer on ROS time, as rcl/src/rcl/timer.c calls it and says it is ready."""

    def __init__(self, start_ns: int, period_ns: int):
        self.period_ns = period_ns
        self.next_call_ns = start_ns + period_ns
        self.fired = []

    def clock(self, now_ns: int) -> None:
        """Take a /clock message: fire once if due, and skip the periods missed."""
        if now_ns < self.next_call_ns:
            return
        self.fired.append(now_ns)
        self.next_call_ns += self.period_ns
        if self.next_call_ns < now_ns:
            ahead = now_ns - self.next_call_ns
            self.next_call_ns += (1 + (ahead - 1) // self.period_ns) * self.period_ns


def free_run(cap: ClockRateCap, timeline: Timeline, clock: list, tick_ns: int, ticks: int,
             keep_last: bool = False) -> list:
    """Poll the timeline each tick as the server does; return [(steady ns, time)] published."""
    out = []
    for _ in range(ticks):
        clock[0] += tick_ns
        frames = timeline.poll(100_000)
        for time_ns in cap.select(frames, timeline.frame, clock[0], keep_last):
            out.append((clock[0], time_ns))
    return out


def paced(rtf: Fraction, step_ns: int, max_rate: Fraction):
    clock = [0]
    timeline = Timeline(lambda: clock[0], time_step_ns=step_ns, real_time_factor=rtf)
    cap = ClockRateCap(max_rate)
    cap.pace(timeline.time_step_ns, timeline.real_time_factor)
    return cap, timeline, clock


def test_the_stride_is_the_smallest_of_one_two_five_under_the_cap():
    """100 kHz of frames under a 1 kHz cap: every 100th; 1.5 kHz: every 2nd; under: every one."""
    assert stride_for(Fraction(100_000), Fraction(1000)) == 100
    assert stride_for(Fraction(1500), Fraction(1000)) == 2
    assert stride_for(Fraction(2001), Fraction(1000)) == 5
    assert stride_for(Fraction(999), Fraction(1000)) == 1
    assert stride_for(Fraction(10 ** 9), Fraction(0)) == 1


@given(st.fractions(min_value=Fraction(1, 1000), max_value=10 ** 9),
       st.fractions(min_value=Fraction(1, 10), max_value=10 ** 6))
def test_stride_is_minimal_and_keeps_the_rate_under_the_cap(frames_per_sec, max_rate):
    """The stride is of the series, keeps the rate at the cap, and no smaller one would."""
    stride = stride_for(frames_per_sec, max_rate)
    assert stride in SERIES
    assert frames_per_sec / stride <= max_rate
    smaller = [s for s in SERIES if s < stride]
    assert not smaller or frames_per_sec / smaller[-1] > max_rate


@pytest.mark.parametrize('value, match', [
    (-1.0, 'max_clock_rate must be 0 \\(no cap\\) or up to 1000000 Hz'),
    (2e6, 'up to 1000000 Hz'),
    (float('nan'), 'finite'),
    ('fast', 'must be a number'),
])
def test_bad_caps_are_refused_naming_what_is_allowed(value, match):
    """A cap below 0, over the largest, or not a number is refused with what is allowed."""
    with pytest.raises(Refused, match=match):
        max_clock_rate_from_float(value)


def test_a_cap_keeps_exact_values():
    """The cap is the exact decimal written."""
    assert max_clock_rate_from_float(0.1) == Fraction(1, 10)
    assert max_clock_rate_from_float(1000) == 1000


def test_no_cap_publishes_every_frame_unchanged():
    """0: every frame goes out."""
    cap = ClockRateCap()
    frames = range(10, 110, 10)
    assert cap.select(frames, 10, 0) is frames


def test_paced_free_run_publishes_the_grid_exactly():
    """At rtf 1, 1 ms frames, cap 100 Hz: every 10th frame, each at its exact time."""
    cap, timeline, clock = paced(Fraction(1), MS, Fraction(100))
    assert cap.stride == 10
    out = free_run(cap, timeline, clock, MS, 2000)
    times = [t for _, t in out]
    assert times == list(range(10 * MS, 2000 * MS + 1, 10 * MS))
    assert cap.skipped == 0


@settings(deadline=None, max_examples=60)
@given(rtf=st.sampled_from([Fraction(1, 2), Fraction(1), Fraction(3), Fraction(10),
                            Fraction(100)]),
       step_ms=st.sampled_from([1, 2, 5, 10]),
       max_rate=st.sampled_from([Fraction(10), Fraction(50), Fraction(100), Fraction(333),
                                 Fraction(1000)]),
       tick_ms=st.integers(1, 10))
def test_paced_free_run_stays_under_the_cap_on_the_grid(rtf, step_ms, max_rate, tick_ms):
    """Any pace, cap and tick: only grid frames, none skipped, at most the cap per second."""
    step = step_ms * MS
    cap, timeline, clock = paced(rtf, step, max_rate)
    out = free_run(cap, timeline, clock, tick_ms * MS, 3000 // tick_ms)
    grid = cap.stride * step
    assert all(t % grid == 0 for _, t in out)
    assert [t for _, t in out] == list(range(grid, timeline.time_ns + 1, grid))
    assert cap.skipped == 0
    steady = [s for s, _ in out]
    for index, start in enumerate(steady):
        within = bisect_left(steady, start + NS) - index
        assert within <= max_rate + max(MIN_BURST, max_rate * BURST_NS / NS)


@pytest.mark.parametrize('period_ms', [10, 20, 50, 100, 1000])
def test_timers_on_the_grid_fire_at_their_exact_times_every_period(period_ms):
    """
    At rtf 100, 1 ms frames (10^5 frames/s), cap 1 kHz: every 100th frame goes out (100 ms).

    A timer whose period is a multiple of 100 ms fires at each deadline, exactly once, as the
    same timer without the cap (every frame) does; a shorter one fires at each frame out.
    """
    cap, timeline, clock = paced(Fraction(100), MS, Fraction(1000))
    assert cap.stride == 100
    period = period_ms * MS
    capped, full = RclTimer(0, period), RclTimer(0, period)
    for steady, time_ns in free_run(cap, timeline, clock, MS, 2000):
        capped.clock(time_ns)
    for time_ns in range(MS, timeline.time_ns + 1, MS):
        full.clock(time_ns)
    if period % (cap.stride * MS) == 0:
        assert capped.fired == full.fired == list(range(period, timeline.time_ns + 1, period))
    else:
        # Shorter than the stride: once per published frame, at its time (the jump's).
        assert capped.fired == list(range(100 * MS, timeline.time_ns + 1, 100 * MS))


def test_full_speed_measures_the_stride_and_holds_the_bound_meanwhile():
    """At rtf 0, 80k frames/s, cap 1 kHz: the bucket bounds the first window, then stride 100."""
    clock = [0]
    timeline = Timeline(lambda: clock[0], time_step_ns=MS, real_time_factor=Fraction(0))
    cap = ClockRateCap(Fraction(1000))
    cap.pace(timeline.time_step_ns, timeline.real_time_factor)
    out = []
    for _ in range(8000):  # 10 frames every 125 us: 80,000 frames a wall second, for 1 s
        clock[0] += 125_000
        frames = timeline.poll(10)
        out += cap.select(frames, timeline.frame, clock[0])
    assert cap.stride == stride_for(Fraction(80_000) * HEADROOM, Fraction(1000)) == 100
    assert len(out) <= 1000 + 1000 * BURST_NS // NS + 1
    after_window = [t for t in out if t > 2 * WINDOW_NS // 125_000 * 10 * MS]
    assert after_window and all(t % (100 * MS) == 0 for t in after_window)


def test_keep_last_always_publishes_the_due_frame():
    """A participant's due frame (the last of a batch) goes out even off the grid."""
    cap, timeline, clock = paced(Fraction(10), MS, Fraction(100))
    assert cap.stride == 100
    clock[0] += 7 * MS
    frames = timeline.poll(100)  # frames 1 to 70
    assert list(cap.select(frames, timeline.frame, clock[0], keep_last=True)) == [70 * MS]
    clock[0] += 7 * MS
    frames = timeline.poll(100)  # 71 to 140: 100 on the grid, 140 kept
    assert list(cap.select(frames, timeline.frame, clock[0], keep_last=True)) == [
        100 * MS, 140 * MS]


def test_the_grid_starts_again_at_each_reset():
    """Frame numbers count from the reset: the grid is every stride-th frame after it."""
    cap, timeline, clock = paced(Fraction(1), MS, Fraction(100))
    free_run(cap, timeline, clock, MS, 15)
    timeline.reset()
    out = free_run(cap, timeline, clock, MS, 25)
    assert [t for _, t in out] == [10 * MS, 20 * MS]


def test_a_new_cap_applies_from_the_next_frame():
    """A change of the cap chooses the stride again; 0 lifts it."""
    cap, timeline, clock = paced(Fraction(1), MS, Fraction(100))
    cap.set_max_rate(Fraction(500))
    assert cap.stride == 2
    cap.set_max_rate(Fraction(0))
    frames = range(MS, 5 * MS, MS)
    assert cap.select(frames, 4, 0) is frames


def test_a_paced_run_after_a_stall_holds_frames_back_and_skips_none():
    """A 1 s stall at rtf 10 under 10 Hz: the catch-up sends every grid frame, within the bound."""
    cap, timeline, clock = paced(Fraction(10), MS, Fraction(10))
    assert cap.stride == 1000
    out = []
    for tick in range(3000):
        clock[0] += MS if not 1000 <= tick < 1001 else NS  # one tick that comes 1 s late
        frames = timeline.poll(cap.limit(100_000, timeline.frame, clock[0]))
        out += [(clock[0], t) for t in cap.select(frames, timeline.frame, clock[0])]
    times = [t for _, t in out]
    assert times == list(range(NS, times[-1] + 1, NS)) and cap.skipped == 0
    steady = [s for s, _ in out]
    for index, start in enumerate(steady):
        assert bisect_left(steady, start + NS) - index <= 10 + MIN_BURST
