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

"""A bag along a followed /clock, without ROS: due messages, jumps, going back, the end."""

from bags import batch_stream
from bags import MS
from bags import START_NS
from bags import write_test_bag
from hypothesis import given
from hypothesis import strategies as st
import pytest

from sim_clock.bag.cursor import Cursor
from sim_clock.bag.follow_schedule import Following
from sim_clock.bag.reader import Bag
from sim_clock.bag.replay import python_run
from sim_clock.core.axes import Axes

pytestmark = pytest.mark.fast

#: Bag stamps: a first one off the ms grid, then uneven gaps.
TIMES = [START_NS + t for t in (0, 3 * MS, 4 * MS, 10 * MS, 25 * MS, 26 * MS, 40 * MS)]


def _following(times=TIMES, sizes=(3,), start_at_zero=True):
    """Return (following, handed): what it hands out goes into ``handed`` as bag stamps."""
    handed = []

    def emit(batch, start, stop):
        handed.extend(int(data) for data in batch[2][start:stop])
    axes = Axes(clock_offset_ns=0 if start_at_zero else times[0], bag_start_ns=times[0])
    cursor = Cursor(batch_stream(times, sizes), times[0])
    return Following(cursor, axes, python_run(emit, lambda t: None)), handed


def test_messages_come_once_clock_moves_past_their_stamp_from_zero():
    """--start-at-zero: the first stamp is /clock 0; each message once, when time moves."""
    following, handed = _following()
    moved = following.follow(0)
    # The first time places the bag: what is stamped up to it comes with the next time.
    assert (moved.previous_ns, moved.went_back, moved.played, moved.ended) == (None, False, 0,
                                                                               False)
    assert handed == [] and moved.next_clock_ns == 0
    assert following.follow(0).played == 0  # the same time again: nothing
    moved = following.follow(2 * MS)
    assert handed == TIMES[:1] and moved.played == 1 and moved.next_clock_ns == 3 * MS
    assert following.follow(3 * MS).played == 1 and handed == TIMES[:2]
    assert following.follow(3 * MS).played == 0
    # One /clock over many messages (and over batches): all of them, in order.
    moved = following.follow(30 * MS)
    assert handed == TIMES[:6] and moved.played == 4 and moved.next_clock_ns == 40 * MS


def test_a_first_time_inside_the_bag_catches_up_with_the_next():
    """Started late, the follower plays everything up to the source's time at once."""
    following, handed = _following()
    assert following.follow(25 * MS).played == 0
    assert following.follow(26 * MS).played == 6 and handed == TIMES[:6]


def test_stamps_as_they_are():
    """Without --start-at-zero the stamps are /clock times: nothing before the first."""
    following, handed = _following(start_at_zero=False)
    following.follow(0)
    assert following.follow(START_NS - 1).played == 0
    assert following.follow(START_NS - 1).next_clock_ns == START_NS
    assert following.follow(START_NS + 4 * MS).played == 3
    assert handed == TIMES[:3]


def test_going_back_plays_again_from_the_new_time():
    """A reset of the source: from its time on, the messages again as time moves on."""
    following, handed = _following()
    following.follow(0)
    following.follow(26 * MS)
    handed.clear()
    moved = following.follow(4 * MS)
    assert moved.went_back and moved.previous_ns == 26 * MS and moved.played == 0
    assert moved.next_clock_ns == 4 * MS
    assert following.follow(4 * MS).played == 0  # published again while it stands
    following.follow(26 * MS)
    assert handed == TIMES[2:6]


def test_the_end_is_said_once_a_pass():
    """The last message ends the bag once; time going back starts a new pass."""
    following, handed = _following()
    following.follow(0)
    assert following.follow(40 * MS).ended
    moved = following.follow(50 * MS)
    assert not moved.ended and moved.played == 0 and moved.next_clock_ns is None
    moved = following.follow(0)
    assert moved.went_back and not moved.ended and moved.next_clock_ns == 0
    assert following.follow(1000 * MS).ended
    assert handed == TIMES + TIMES


@given(sizes=st.lists(st.integers(0, 4), min_size=1, max_size=4).filter(any),
       clocks=st.lists(st.integers(-5, 45), min_size=1, max_size=30))
def test_against_the_model(sizes, clocks):
    """
    Any batches, any followed times (ms): each time hands out what the model says, in order.

    The model: a time later than the one before hands out the stamps up to it not handed
    out since the first time (all before it count) or since a time going back (those from
    that time on count); any other time hands out nothing.
    """
    following, handed = _following(sizes=sizes)
    stamps = [t - TIMES[0] for t in TIMES]
    previous = None
    left = list(stamps)  # what may still be handed out, in order
    for clock in clocks:
        clock_ns = clock * MS
        before = len(handed)
        moved = following.follow(clock_ns)
        due = []
        if previous is not None and clock_ns < previous:
            left = [s for s in stamps if s >= clock_ns]
        elif previous is not None and clock_ns > previous:
            due = [s for s in left if s <= clock_ns]
            left = left[len(due):]
        assert [t - TIMES[0] for t in handed[before:]] == due
        assert moved.played == len(due)
        assert moved.next_clock_ns == (left[0] if left else None)
        previous = clock_ns


@pytest.mark.parametrize('storage', ['sqlite3', 'mcap'])
def test_a_bag_abandoned_after_a_read_error_plays_again_after_a_reset(tmp_path, storage):
    """abandon(): nothing more until time goes back, on a real bag of either storage."""
    path = str(tmp_path / storage)
    records = write_test_bag(path, storage)
    bag = Bag(path)
    try:
        handed = []

        def emit(batch, start, stop):
            handed.extend(batch[0][start:stop])
        axes = Axes(clock_offset_ns=0, bag_start_ns=bag.start_ns)
        following = Following(Cursor(bag.batches, bag.start_ns), axes,
                              python_run(emit, lambda t: None))
        following.follow(0)
        following.follow(100 * MS)
        assert handed == [r.time_ns for r in records if r.time_ns <= START_NS + 100 * MS]
        following.abandon()
        assert following.next_clock_ns is None
        moved = following.follow(2000 * MS)
        assert moved.played == 0 and not moved.ended  # not "the end": a read error was said
        handed.clear()
        assert following.follow(0).went_back
        following.follow(2000 * MS)
        assert handed == [r.time_ns for r in records]
    finally:
        bag.close()
