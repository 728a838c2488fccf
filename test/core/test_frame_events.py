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

"""The frame timeline's ring and what is read from it (core.frame_events, core.frame_stats)."""

from hypothesis import given
from hypothesis import strategies as st
import pytest
from sim_clock.core.frame_events import ACK
from sim_clock.core.frame_events import DONE
from sim_clock.core.frame_events import FRAME
from sim_clock.core.frame_events import FrameEventRing
from sim_clock.core.frame_events import GATE
from sim_clock.core.frame_events import MAX_LENGTH
from sim_clock.core.frame_events import RESET
from sim_clock.core.frame_stats import frame_spans
from sim_clock.core.frame_stats import holders
from sim_clock.core.frame_stats import percentile
from sim_clock.core.frame_stats import real_time_factor
from sim_clock.core.frame_stats import slowest_frames
from sim_clock.core.frame_stats import wall_ns

pytestmark = pytest.mark.fast

MS = 1_000_000


@given(length=st.integers(0, 50), count=st.integers(0, 200), after=st.integers(0, 250),
       limit=st.integers(0, 60))
def test_the_ring_keeps_the_last_events_and_counts_those_it_lost(length, count, after, limit):
    """Sequences 1..count; the last ``length`` kept; dropped: exactly those past ``after``."""
    ring = FrameEventRing(length)
    for k in range(count):
        ring.record(FRAME, 0, k * MS, k * MS)
    events, dropped = ring.after(after, limit)
    kept = list(range(max(1, count - length + 1), count + 1)) if length else []
    expected = [s for s in kept if s > after]
    assert [e.sequence for e in events] == (expected[:limit] if limit else expected)
    assert ring.last_sequence == (count if length else 0)
    first_kept = kept[0] if kept else ring.last_sequence + 1
    assert dropped == max(0, first_kept - 1 - after)


@given(length=st.integers(0, 80), runs=st.lists(st.integers(0, 40), max_size=30),
       after=st.integers(0, 600), limit=st.integers(0, 60))
def test_runs_of_frames_and_single_events_keep_the_last_length(length, runs, after, limit):
    """Runs of frames and single events mixed: what is read is the last ``length`` of them."""
    ring, recorded = FrameEventRing(length), []
    for index, size in enumerate(runs):
        if index % 3 == 2:
            recorded.append((DONE, index * MS))
            ring.record(DONE, 0, index * MS, index * MS)
        else:
            times = range(index * MS, (index * MS) + size, 1)
            recorded.extend((FRAME, time_ns) for time_ns in times)
            ring.record_frames(0, times, 1, index * MS)
    kept = list(enumerate(recorded, start=1))[-length:] if length else []
    expected = [(sequence, kind, sim_ns) for sequence, (kind, sim_ns) in kept
                if sequence > after]
    events, dropped = ring.after(after, limit)
    assert [(e.sequence, e.kind, e.sim_ns) for e in events] == (
        expected[:limit] if limit else expected)
    first_kept = kept[0][0] if kept else ring.last_sequence + 1
    assert dropped == max(0, first_kept - 1 - after)


def test_a_ring_resized_keeps_the_newest_and_numbers_on():
    """Shrinking keeps the newest events; sequences never restart; 0 turns recording off."""
    seen = []
    ring = FrameEventRing(5, listener=seen.append)
    for k in range(5):
        ring.record(FRAME, 0, k, k)
    ring.resize(2)
    assert [e.sequence for e in ring.after(0)[0]] == [4, 5]
    ring.record(DONE, 0, 4, 4, 9, name='planning')
    assert [e.sequence for e in ring.after(0)[0]] == [5, 6]
    assert seen[-1].duration_ns == 5 and seen[-1].kind_name == 'done'
    ring.resize(0)
    assert ring.record(FRAME, 0, 5, 5) == 0
    assert ring.after(0)[0] == []
    ring.resize(3)
    assert ring.record(FRAME, 0, 6, 6) == 7
    ring.record_frames(0, range(10, 40, 10), 3, 99)
    assert [(e.sequence, e.sim_ns, e.count) for e in ring.after(7)[0]] == [
        (8, 10, 3), (9, 20, 4), (10, 30, 5)]
    assert ring.after(0)[1] == 7


@pytest.mark.parametrize('length', [-1, MAX_LENGTH + 1, 2.0, True, '10'])
def test_a_ring_refuses_a_length_it_cannot_have(length):
    """The error says what is allowed."""
    with pytest.raises(ValueError, match='integer from 0'):
        FrameEventRing(length)


@given(length=st.integers(1, 30), runs=st.lists(st.integers(0, 12), max_size=12),
       after=st.integers(0, 100))
def test_runs_of_frames_read_as_single_frames(length, runs, after):
    """A run of frames is its frames, each numbered; the ring trims inside a run; each heard."""
    heard = []
    ring, single = FrameEventRing(length, listener=heard.append), FrameEventRing(length)
    number = 0
    for size in runs:
        times = range(number * 10, (number + size) * 10, 10)
        ring.record_frames(2, times, number, 7)
        for k, time_ns in enumerate(times):
            single.record(FRAME, 2, time_ns, 7, count=number + k)
        ring.record(DONE, 2, 0, 7, 9, name='p')
        single.record(DONE, 2, 0, 7, 9, name='p')
        number += size
    assert ring.after(after) == single.after(after)
    assert ring.after(after, 3) == single.after(after, 3)
    assert [e.sequence for e in heard] == list(range(1, ring.last_sequence + 1))


def test_percentiles_by_nearest_rank():
    """p50 of 1..100 is 50, p99 is 99; one value is every percentile; none is 0."""
    values = list(range(1, 101))
    assert [percentile(values, p) for p in (50, 99, 100)] == [50, 99, 100]
    assert percentile([7], 1) == percentile([7], 99) == 7
    assert percentile([], 50) == 0


def _stack(frames: int, slow_every: int, slow_ns: int):
    """Return a run of frames: 'perception' holds 1 ms, 'planning' slow_ns one in N."""
    ring = FrameEventRing(10_000)
    for k in range(frames):
        out = k * 30 * MS
        ring.record(FRAME, 0, k * 10 * MS, out, count=k)
        ring.record(DONE, 0, k * 10 * MS, out, out + MS, name='perception')
        hold = slow_ns if k % slow_every == slow_every - 1 else MS // 2
        ring.record(DONE, 0, k * 10 * MS, out, out + hold, name='planning')
        ring.record(GATE, 0, k * 10 * MS, out, out + MS // 4, name='/cmd')
    return ring.after(0)[0]


def test_the_slow_participant_comes_first_with_its_holds():
    """One frame in ten held 20 ms: p99 and max 20 ms, p50 0.5 ms; it is named first."""
    events = _stack(100, 10, 20 * MS)
    found = holders(events)
    assert [(h.name, h.kind) for h in found] == [
        ('planning', 'participant'), ('perception', 'participant'), ('/cmd', 'gate')]
    planning = found[0]
    assert (planning.p50_ns, planning.p99_ns, planning.max_ns) == (MS // 2, 20 * MS, 20 * MS)
    assert planning.total_ns == 10 * 20 * MS + 90 * (MS // 2)
    assert planning.share(wall_ns(events)) == pytest.approx(
        planning.total_ns / (99 * 30 * MS + 20 * MS))
    slow = slowest_frames(events, 3)
    assert [(s.sim_ns, s.holder, s.duration_ns) for s in slow] == [
        (9 * 10 * MS, 'planning', 20 * MS), (19 * 10 * MS, 'planning', 20 * MS),
        (29 * 10 * MS, 'planning', 20 * MS)]


def test_frames_stay_apart_across_a_reset_and_the_pace_restarts():
    """The same time in two epochs is two frames; the pace is measured within an epoch."""
    ring = FrameEventRing(100)
    for epoch in (0, 1):
        for k in range(4):
            out = (epoch * 10 + k) * 20 * MS
            ring.record(FRAME, epoch, k * 10 * MS, out, count=k)
            ring.record(ACK, epoch, k * 10 * MS, out, out + 3 * MS, name='/chatter')
        if epoch == 0:
            ring.record(RESET, 1, 0, (epoch * 10 + 4) * 20 * MS, count=30 * MS, detail='loop')
    events = ring.after(0)[0]
    spans = frame_spans(events)
    assert [(s.epoch, s.sim_ns) for s in spans] == [(e, k * 10 * MS) for e in (0, 1)
                                                    for k in range(4)]
    assert all(s.holder == 'acknowledgements of /chatter' for s in spans)
    assert real_time_factor(events, 40 * MS) == [(40 * MS, 0.5), (240 * MS, 0.5)]
