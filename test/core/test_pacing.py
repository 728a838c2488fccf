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

"""Pacing without ROS: the idle republish, and the chunks of free run as fast as possible."""

from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st
import pytest
from sim_clock.core.pacing import frame_period_ns
from sim_clock.core.pacing import frames_due
from sim_clock.core.pacing import FULL_SPEED_BATCH_NS
from sim_clock.core.pacing import FULL_SPEED_CHUNK
from sim_clock.core.pacing import full_speed_chunk
from sim_clock.core.pacing import FULL_SPEED_MAX_CHUNK
from sim_clock.core.pacing import HELD_REPUBLISH_NS
from sim_clock.core.pacing import Pacing

pytestmark = pytest.mark.fast

MS = 1_000_000


def _republishes(pacing: Pacing, tick_ns: int, late_ns: list) -> int:
    """Run a timer of ``tick_ns`` whose callbacks run ``late_ns[k]`` late; count republishes."""
    count = 0
    for k, late in enumerate(late_ns):
        now = k * tick_ns + late
        if pacing.republish_due(now, tick_ns):
            pacing.last_publish_ns = now
            count += 1
    return count


@given(st.lists(st.integers(0, 20 * MS), min_size=1, max_size=200))
def test_a_tick_of_one_period_republishes_every_tick(late_ns):
    """Paused or idle (tick = period): every tick, however late its callback runs within it."""
    period = 50 * MS
    assert _republishes(Pacing(period), period, late_ns) == len(late_ns)


def test_late_callbacks_that_grow_shorter_still_republish():
    """The case that halved the rate: a tick a little less late than the one before it."""
    pacing = Pacing(10 * MS)
    assert _republishes(pacing, 10 * MS, [300_000, 200_000, 250_000, 100_000]) == 4


@given(st.lists(st.integers(0, 400_000), min_size=100, max_size=300))
def test_short_ticks_republish_about_once_a_period(late_ns):
    """1 ms ticks, 10 ms period: one republish in every 10 ticks or so, never more often."""
    pacing = Pacing(10 * MS)
    count = _republishes(pacing, MS, late_ns)
    assert len(late_ns) // 10 <= count <= len(late_ns) // 9 + 1


@given(published=st.integers(1, 10**6), elapsed_ns=st.integers(1, 10**9),
       left_ns=st.integers(-10**9, 10**9))
def test_a_full_speed_chunk_fills_the_time_left_at_the_rate_so_far(published, elapsed_ns,
                                                                   left_ns):
    chunk = full_speed_chunk(published, elapsed_ns, left_ns)
    assert 1 <= chunk <= FULL_SPEED_MAX_CHUNK
    if chunk < FULL_SPEED_MAX_CHUNK:
        # Not capped: no more than the time left holds at the rate so far (at least one).
        assert chunk == 1 or chunk * elapsed_ns <= left_ns * published
        # And not fewer: one more frame would not fit.
        assert (chunk + 1) * elapsed_ns > left_ns * published


def test_a_full_speed_batch_starts_with_a_first_chunk():
    assert full_speed_chunk(0, 0, FULL_SPEED_BATCH_NS) == FULL_SPEED_CHUNK
    assert full_speed_chunk(10, 0, FULL_SPEED_BATCH_NS) == FULL_SPEED_CHUNK
    # 10 frames in 10 us, 190 us left: 190 more.
    assert full_speed_chunk(10, 10_000, 190_000) == 190
    assert full_speed_chunk(10, 10_000, 0) == 1


@given(st.integers(0, 10**15), st.fractions(Fraction(1, 1000), Fraction(1000)).map(
    lambda rtf: rtf.limit_denominator(10**6)), st.integers(1, 10**9))
def test_the_frames_due_are_the_whole_frames_the_wall_time_holds(elapsed_ns, rtf, step_ns):
    """Never early, never a frame short: floor(elapsed * rtf / step), exact."""
    due = frames_due(elapsed_ns, rtf, step_ns)
    assert due * step_ns <= elapsed_ns * rtf < (due + 1) * step_ns
    assert frames_due(elapsed_ns + 1, rtf, step_ns) >= due  # time never runs back


def test_a_frame_period_is_the_step_over_the_factor_and_0_as_fast_as_possible():
    assert frame_period_ns(Fraction(2), 1_000_000) == 500_000
    assert frame_period_ns(Fraction(1, 3), 1_000_000) == 3_000_000
    assert frame_period_ns(Fraction(0), 1_000_000) == 0


def test_a_frame_held_for_participants_that_answered_is_republished_at_most_each_100_ms():
    """The republish period when idle; at least HELD_REPUBLISH_NS while held for answerers."""
    pacing = Pacing(10_000_000)
    pacing.last_publish_ns = 0
    assert pacing.republish_due(10_000_000, 1_000_000)
    assert not pacing.republish_due(10_000_000, 1_000_000, held_for_answered=True)
    assert not pacing.republish_due(HELD_REPUBLISH_NS - 1_000_000, 1_000_000, True)
    assert pacing.republish_due(HELD_REPUBLISH_NS, 1_000_000, held_for_answered=True)
    slow = Pacing(2 * HELD_REPUBLISH_NS)  # a publish_rate below 10 Hz stays as set
    slow.last_publish_ns = 0
    assert not slow.republish_due(HELD_REPUBLISH_NS, 1_000_000, held_for_answered=True)
    assert slow.republish_due(2 * HELD_REPUBLISH_NS, 1_000_000, held_for_answered=True)
