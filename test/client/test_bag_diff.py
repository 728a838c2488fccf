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
``compare`` on bags written here: each kind of difference is named.

The bags are written with rosbags as the recorder writes them (10 ms frames, the step in the
metadata), then changed in one place each. ``simclock diff``: test/scenarios/test_same_bag.py.
"""

from bags import recording
from bags import write_recording as write
import pytest
from sim_clock.client.bag_diff import BagDiffError
from sim_clock.client.bag_diff import compare
from sim_clock.client.bag_diff import excerpt

pytestmark = pytest.mark.fast

MS = 1_000_000


def test_the_same_messages_are_the_same_whatever_the_storage_and_the_names(tmp_path):
    """Two recordings of the same messages: same, in MCAP and sqlite3, named differently."""
    result = compare(write(tmp_path / 'first', recording(), 'mcap'),
                     write(tmp_path / 'second', recording(), 'sqlite3'))
    assert result.same and result.difference is None
    assert result.messages_a == result.messages_b == 15
    assert result.lines()[0].startswith('same:')


def test_two_recordings_without_a_message_are_empty_not_only_the_same(tmp_path):
    """Nothing recorded in either: empty (nothing to compare); one empty: different."""
    result = compare(write(tmp_path / 'a', []), write(tmp_path / 'b', [], 'sqlite3'))
    assert result.empty and result.messages_a == result.messages_b == 0
    one = compare(write(tmp_path / 'c', recording()), write(tmp_path / 'd', []))
    assert not one.empty and not one.same and one.difference.kind == 'topic'


def test_one_message_whose_bytes_differ_is_named_with_its_bytes(tmp_path):
    """/a #5 (frame 3) differs in one character: its topic, index, stamp, frame, offset."""
    changed = recording()
    changed[6] = ('/a', 30 * MS, 'a3.X')  # /a's 5th message (index 4): 'a3.0'
    result = compare(write(tmp_path / 'a', recording()), write(tmp_path / 'b', changed))
    assert not result.same
    difference = result.difference
    assert (difference.kind, difference.topic) == ('bytes', '/a')
    assert (difference.a.index, difference.a.stamp_ns, difference.a.frame) == (4, 30 * MS, 3)
    assert (difference.b.index, difference.b.stamp_ns, difference.b.frame) == (4, 30 * MS, 3)
    # CDR: 4 bytes of header, 4 of length, then 'a3.0': the 4th character is at offset 11.
    assert difference.offset == 11
    assert (difference.a.data[11:12], difference.b.data[11:12]) == (b'0', b'X')
    text = '\n'.join(result.lines())
    assert '/a #4 (stamp 30000000 ns, frame 3, 13 bytes)' in text
    assert 'bytes differ from offset 11' in text
    assert '[30]' in text and '[58]' in text  # '0' and 'X' in hex


def test_a_stamp_that_differs_is_named_with_both_stamps(tmp_path):
    """/b #2 one frame later in B: the stamp, both frames, and no byte offset."""
    changed = recording()
    changed[8] = ('/b', 40 * MS, 'b3')
    result = compare(write(tmp_path / 'a', recording()), write(tmp_path / 'b', changed))
    difference = result.difference
    assert (difference.kind, difference.topic) == ('stamp', '/b')
    assert (difference.a.index, difference.a.stamp_ns, difference.a.frame) == (2, 30 * MS, 3)
    assert (difference.b.index, difference.b.stamp_ns, difference.b.frame) == (2, 40 * MS, 4)
    assert difference.offset is None
    assert '/b #2 is stamped 30000000 ns in A, 40000000 ns in B' in difference.detail


def test_the_order_within_a_topic_is_named(tmp_path):
    """/a's two messages of frame 2 swapped: 'order', A #2 is B #3, their first byte apart."""
    changed = recording()
    changed[3], changed[4] = changed[4], changed[3]
    result = compare(write(tmp_path / 'a', recording()), write(tmp_path / 'b', changed))
    difference = result.difference
    assert (difference.kind, difference.topic) == ('order', '/a')
    assert (difference.a.index, difference.a.stamp_ns, difference.a.frame) == (2, 20 * MS, 2)
    assert 'A #2 is B #3' in difference.detail
    assert difference.offset == 11


def test_a_missing_topic_is_named_with_its_first_message(tmp_path):
    """B has no /b: the topic, the bag that has it, and its first message."""
    without_b = [message for message in recording() if message[0] != '/b']
    result = compare(write(tmp_path / 'a', recording()), write(tmp_path / 'b', without_b))
    difference = result.difference
    assert (difference.kind, difference.topic) == ('topic', '/b')
    assert difference.b is None
    assert (difference.a.index, difference.a.stamp_ns, difference.a.frame) == (0, 10 * MS, 1)
    assert 'topic /b (std_msgs/msg/String) is in A only: B has no such topic' in difference.detail
    assert (result.messages_a, result.messages_b) == (15, 10)


def test_a_message_more_on_a_topic_is_named(tmp_path):
    more = recording() + [('/b', 60 * MS, 'b6')]
    difference = compare(write(tmp_path / 'a', recording()),
                         write(tmp_path / 'b', more)).difference
    assert (difference.kind, difference.topic, difference.a) == ('count', '/b', None)
    assert (difference.b.index, difference.b.stamp_ns, difference.b.frame) == (5, 60 * MS, 6)
    assert 'B has 6 messages on /b, A 5' in difference.detail


def test_the_first_difference_is_the_earliest_of_all_topics(tmp_path):
    """/b differs at frame 2, /a at frame 4: /b is named, although /a comes first by name."""
    changed = recording()
    changed[5] = ('/b', 20 * MS, 'bX')
    changed[9] = ('/a', 40 * MS, 'aX')
    difference = compare(write(tmp_path / 'a', recording()),
                         write(tmp_path / 'b', changed)).difference
    assert (difference.topic, difference.a.frame) == ('/b', 2)


def test_the_order_across_topics_at_one_stamp_is_named(tmp_path):
    """Each topic the same, but B wrote frame 2's /b before its /a: 'interleave'."""
    changed = recording()
    changed[3:6] = [changed[5], changed[3], changed[4]]
    difference = compare(write(tmp_path / 'a', recording()),
                         write(tmp_path / 'b', changed)).difference
    assert difference.kind == 'interleave'
    assert (difference.a.topic, difference.a.index, difference.a.frame) == ('/a', 2, 2)
    assert (difference.b.topic, difference.b.index, difference.b.frame) == ('/b', 1, 2)


def test_without_the_step_in_the_metadata_no_frame_is_named(tmp_path):
    changed = recording()
    changed[0] = ('/a', 10 * MS, 'zz')
    difference = compare(write(tmp_path / 'a', recording(), time_step_ns=None),
                         write(tmp_path / 'b', changed, time_step_ns=None)).difference
    assert difference.a.frame is None and 'frame' not in difference.a.describe()


def test_an_unreadable_bag_raises_naming_it(tmp_path):
    broken = tmp_path / 'broken'
    broken.mkdir()
    (broken / 'metadata.yaml').write_text('rosbag2_bagfile_information: [not, a, bag]\n')
    good = write(tmp_path / 'good', recording())
    with pytest.raises(BagDiffError, match=f'{broken}: not a readable bag'):
        compare(good, str(broken))
    with pytest.raises(BagDiffError, match='no such bag'):
        compare(str(tmp_path / 'absent'), good)


def test_excerpt_marks_the_byte_and_shows_its_surroundings():
    assert excerpt(bytes(range(20)), 10) == (
        '@2: ... 02 03 04 05 06 07 08 09 [0a] 0b 0c 0d 0e 0f 10 11 12')
    assert excerpt(b'\x01\x02', 2) == '@0: 01 02 [end]'
