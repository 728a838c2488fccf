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

"""What the recorder waits for at --until: the Rounds' counts against the messages it has."""

from hypothesis import given
from hypothesis import strategies as st
import pytest
from sim_clock.bag.recorder_frame_order import FrameOrder
from sim_clock.bag.recorder_round_tally import RoundTally

pytestmark = pytest.mark.fast

MS = 1_000_000


def clocks(tally: RoundTally, *times) -> None:
    for time_ns in times:
        tally.clock(time_ns)


def test_nothing_is_awaited_without_rounds():
    tally = RoundTally()
    clocks(tally, 0, 10 * MS, 20 * MS)
    tally.written('/a', 10 * MS)
    assert tally.missing(20 * MS) == {}


def test_a_message_announced_by_a_round_is_awaited_until_written_or_held():
    tally = RoundTally()
    clocks(tally, 0, 10 * MS, 20 * MS, 30 * MS)
    tally.written('/a', 10 * MS)
    tally.announced(10 * MS, 1, ['/a'], [1], False)
    tally.announced(20 * MS, 1, ['/a', '/b'], [2, 0], False)
    tally.written('/a', 20 * MS)
    assert tally.missing(30 * MS) == {'/a': 1}
    assert tally.missing(30 * MS, held=[('/a', 20 * MS)]) == {}
    tally.written('/a', 20 * MS)
    assert tally.missing(30 * MS) == {}


def test_rounds_of_the_end_frame_and_after_are_not_awaited():
    tally = RoundTally()
    clocks(tally, 0, 10 * MS, 20 * MS)
    tally.written('/a', 0)
    tally.announced(20 * MS, 1, ['/a'], [3], False)  # published after the /clock of the end
    assert tally.missing(20 * MS) == {}


def test_a_round_said_again_replaces_itself():
    tally = RoundTally()
    clocks(tally, 0, 10 * MS)
    tally.written('/a', 0)
    tally.announced(0, 1, ['/a'], [1], False)
    tally.announced(0, 1, ['/a'], [1], False)
    assert tally.missing(10 * MS) == {}


def test_frames_before_the_first_message_of_a_topic_are_not_awaited():
    """What was published before the recorder's subscription matched is not its to wait for."""
    tally = RoundTally()
    clocks(tally, 0, 10 * MS, 20 * MS, 30 * MS)
    tally.announced(0, 1, ['/a'], [1], False)
    tally.announced(10 * MS, 1, ['/a'], [1], False)
    assert tally.missing(30 * MS) == {}  # nothing of /a yet: not subscribed, as far as known
    tally.written('/a', 10 * MS)
    tally.announced(20 * MS, 1, ['/a'], [2], False)
    assert tally.missing(30 * MS) == {'/a': 2}


def test_next_frame_rounds_count_the_frame_before_and_one_is_due_at_the_end():
    tally = RoundTally()
    clocks(tally, 0, 10 * MS, 20 * MS)
    tally.written('/a', 0)
    tally.announced(10 * MS, 0, ['/a', '/b'], [1, 0], True)  # published during frame 0
    tally.written('/a', 10 * MS)
    assert tally.missing(20 * MS) == {'': 1}  # the Round of frame 20 ms says frame 10 ms
    tally.announced(20 * MS, 0, ['/a'], [2], True)
    assert tally.missing(20 * MS) == {'/a': 1}
    tally.written('/a', 10 * MS)
    assert tally.missing(20 * MS) == {}


def test_a_reset_ends_the_wait():
    tally = RoundTally()
    clocks(tally, 0, 10 * MS, 20 * MS)
    tally.written('/a', 0)
    tally.announced(10 * MS, 1, ['/a'], [5], False)
    assert tally.missing(20 * MS) == {'/a': 5}
    tally.clock(0)
    assert tally.missing(20 * MS) == {}


def test_old_frames_are_forgotten():
    tally = RoundTally(kept_frames=10)
    tally.clock(0)
    tally.written('/a', 0)
    tally.announced(0, 1, ['/a'], [7], False)  # never written: forgotten 10 frames on
    clocks(tally, *(i * MS for i in range(1, 40)))
    assert tally.missing(39 * MS) == {}


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(1, 3)), max_size=40),
       st.integers(0, 20))
def test_missing_is_what_was_announced_and_not_written(published, lost):
    """Each frame's messages, announced by its Round; all written but the ``lost`` frame's."""
    tally = RoundTally()
    clocks(tally, *(frame * MS for frame in range(22)))
    counts = {}
    for frame, count in published:
        counts[frame] = counts.get(frame, 0) + count
    for frame, count in counts.items():
        tally.announced(frame * MS, 1, ['/t'], [count], False)
        for _ in range(count if frame != lost else count - 1):
            tally.written('/t', frame * MS)
    expected = {'/t': 1} if lost in counts and min(counts) != lost or (
        lost in counts and counts[lost] > 1) else {}
    assert tally.missing(21 * MS) == expected


def test_frame_order_says_the_frames_of_what_it_holds():
    order = FrameOrder()
    order.message(5, '/early', b'x')  # before any /clock: never recorded
    order.clock(10, 0)
    order.message(12, '/a', b'x')
    order.clock(20, 10 * MS)
    order.message(25, '/a', b'x')
    order.message(31, '/a', b'x')
    assert sorted(order.held(30)) == [('/a', 0), ('/a', 10 * MS)]
