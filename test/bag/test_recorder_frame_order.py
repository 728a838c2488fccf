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

"""The recorder's stamps and write order, fed by hand: source timestamps and /clock times."""

from hypothesis import given
from hypothesis import strategies as st
import pytest
from sim_clock.bag.recorder_frame_order import FrameOrder

pytestmark = pytest.mark.fast

MS = 1_000_000
#: A frame's messages as three topics publish them (source timestamp, topic, data).
FRAME = [(1, '/b', b'b0'), (2, '/a', b'a0'), (3, '/c', b'c0'), (4, '/a', b'a1'), (5, '/b', b'b1')]


def written(order: FrameOrder, final: bool = False, before=None) -> list:
    return [(m.stamp_ns, m.topic, m.data) for m in order.take(final, before)]


def test_a_frame_is_written_by_topic_then_arrival_once_the_frame_after_it_ended():
    """Frame at 10 ms: held through the frame at 20 ms, written when 30 ms comes, sorted."""
    order = FrameOrder()
    order.clock(100, 10 * MS)
    for source, topic, data in FRAME:
        order.message(100 + source, topic, data)
    order.clock(200, 20 * MS)
    assert not order.ready() and written(order) == []  # the frame after it has not ended
    order.clock(250, 20 * MS)  # the same time published again: the same frame
    assert not order.ready()
    order.clock(300, 30 * MS)
    assert order.ready()
    assert written(order) == [(10 * MS, '/a', b'a0'), (10 * MS, '/a', b'a1'),
                              (10 * MS, '/b', b'b0'), (10 * MS, '/b', b'b1'),
                              (10 * MS, '/c', b'c0')]
    assert not order.ready()


@given(st.permutations(range(len(FRAME))))
def test_the_order_of_arrival_across_topics_changes_nothing(permutation):
    """However DDS interleaves the topics (each topic in its own order), the same bytes out."""
    expected = None
    for arrival in (range(len(FRAME)), permutation):
        by_topic = {}
        for index in arrival:
            by_topic.setdefault(FRAME[index][1], []).append(index)
        # Keep each topic's own order: the k-th arrival of a topic is its k-th message.
        queues = {topic: sorted(indices) for topic, indices in by_topic.items()}
        order = FrameOrder()
        order.clock(100, 0)
        for index in arrival:
            source, topic, data = FRAME[queues[FRAME[index][1]].pop(0)]
            order.message(100 + source, topic, data)
        for source, time_ns in ((200, 10 * MS), (300, 20 * MS)):
            order.clock(source, time_ns)
        result = written(order, final=True)
        expected = expected or result
        assert result == expected


def test_a_message_is_stamped_by_the_clock_published_before_it_not_by_arrival():
    """A message published before the 20 ms /clock but taken after it: stamped 10 ms."""
    order = FrameOrder()
    order.clock(100, 10 * MS)
    order.clock(200, 20 * MS)
    order.message(150, '/a', b'late taken')
    order.message(250, '/a', b'after')
    assert written(order, final=True) == [(10 * MS, '/a', b'late taken'),
                                          (20 * MS, '/a', b'after')]


def test_before_the_first_clock_nothing_is_written_and_it_is_counted():
    order = FrameOrder()
    order.message(50, '/a', b'early')
    order.clock(100, 0)
    order.message(150, '/a', b'kept')
    assert written(order, final=True) == [(0, '/a', b'kept')]
    assert order.before_clock == 1


def test_until_writes_what_came_before_the_end_and_discards_the_rest():
    order = FrameOrder()
    order.clock(100, 10 * MS)
    order.message(150, '/a', b'in')
    order.clock(200, 20 * MS)  # the /clock that reached --until
    order.message(250, '/a', b'out')
    assert written(order, final=True, before=200) == [(10 * MS, '/a', b'in')]
    assert order.discard() == 1


def test_a_message_for_a_frame_already_written_is_written_next_and_counted_late():
    order = FrameOrder()
    for source, time_ns in ((100, 0), (200, 10 * MS), (300, 20 * MS)):
        order.clock(source, time_ns)
    order.message(120, '/b', b'in time')
    assert written(order) == [(0, '/b', b'in time')]
    order.message(130, '/a', b'late')
    assert order.ready()
    assert written(order) == [(0, '/a', b'late')]
    assert order.late == 1


def test_a_reset_starts_new_frames_written_in_the_order_they_ran():
    """Time going back is a new frame: the pass after the reset follows the one before."""
    order = FrameOrder()
    for source, time_ns in ((100, 10 * MS), (200, 20 * MS), (300, 0), (400, 10 * MS)):
        order.clock(source, time_ns)
        order.message(source + 1, '/z', f'z{source}'.encode())
        order.message(source + 2, '/a', f'a{source}'.encode())
    assert [(stamp, data) for stamp, _, data in written(order, final=True)] == [
        (10 * MS, b'a100'), (10 * MS, b'z100'), (20 * MS, b'a200'), (20 * MS, b'z200'),
        (0, b'a300'), (0, b'z300'), (10 * MS, b'a400'), (10 * MS, b'z400')]


def test_held_data_past_the_bound_is_written_before_its_frame_ends_and_counted():
    """A clock that stands still while nodes publish: memory stays bounded."""
    order = FrameOrder(max_held_bytes=10)
    order.clock(100, 0)
    order.message(110, '/a', b'123456')
    order.clock(120, 0)
    assert not order.ready()
    order.message(130, '/a', b'789012')
    order.clock(140, 0)
    assert order.ready()
    assert written(order) == [(0, '/a', b'123456'), (0, '/a', b'789012')]
    assert order.early == 1


def test_the_time_step_is_known_only_while_it_never_changed():
    order = FrameOrder()
    assert order.time_step_ns is None
    for source, time_ns in ((1, 0), (2, 0), (3, 10 * MS), (4, 20 * MS), (5, 0), (6, 10 * MS)):
        order.clock(source, time_ns)
    assert order.time_step_ns == 10 * MS  # a reset (time back) is not a step
    order.clock(7, 25 * MS)
    assert order.time_step_ns is None
