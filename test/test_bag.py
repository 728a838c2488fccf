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

"""The bag logic without ROS I/O: opening, selecting, streaming, the cursor, seek, summaries."""

import os
import re

from bags import BEST_EFFORT_QOS
from bags import MS
from bags import RELIABLE_QOS
from bags import START_NS
from bags import UNKNOWN_TYPE
from bags import write_test_bag
from hypothesis import given
from hypothesis import strategies as st
import pytest
from rclpy.qos import DurabilityPolicy
from rclpy.qos import ReliabilityPolicy
from rosbags.interfaces import QosDurability

from sim_clock.bag import Bag
from sim_clock.bag import BagError
from sim_clock.bag import Cursor
from sim_clock.bag import get_message
from sim_clock.bag import RecordingSummary
from sim_clock.bag_player import MIN_VOLATILE_DEPTH
from sim_clock.bag_player import qos_for
from sim_clock.timeline import MAX_TIME_NS
from sim_clock.timeline import Mode
from sim_clock.timeline import NS_PER_SEC
from sim_clock.timeline import Refused
from sim_clock.timeline import Timeline


@pytest.fixture(params=['sqlite3', 'mcap'])
def test_bag(request, tmp_path):
    """Return (path, records) of a test bag in each storage format."""
    path = str(tmp_path / f'bag_{request.param}')
    return path, write_test_bag(path, request.param)


def test_get_message_imports_known_types():
    """A message type name gives its Python class, type support loaded."""
    from std_msgs.msg import String
    assert get_message('std_msgs/msg/String') is String
    assert get_message('std_msgs/String') is String


@pytest.mark.parametrize('name', [UNKNOWN_TYPE, 'std_msgs/msg/NoSuchType', 'std_msgs/srv/X',
                                  'String', '', 'a/msg/'])
def test_get_message_refuses_with_the_type_named(name):
    """A type that is not importable raises LookupError naming it."""
    with pytest.raises(LookupError, match=re.escape(repr(name))):
        get_message(name)


def test_bag_selects_topics_and_streams_in_order(test_bag):
    """/clock and the unknown type do not play; the rest streams in time order, all of it."""
    path, records = test_bag
    bag = Bag(path)
    try:
        assert [t.name for t in bag.topics] == ['/chatter', '/pose']
        assert bag.skipped.clock == ['/clock']
        assert list(bag.skipped.unknown_types) == [UNKNOWN_TYPE]
        assert bag.skipped.unknown_types[UNKNOWN_TYPE][0] == ['/mystery']
        assert bag.start_ns == START_NS
        assert bag.end_ns == START_NS + 1000 * MS
        streamed = [(t, c.topic) for c, t, _ in bag.messages(bag.start_ns)]
        assert streamed == [(r.time_ns, r.topic) for r in records]
        assert sum(t.message_count for t in bag.topics) == len(records)
        qos = {t.name: t.offered_qos for t in bag.topics}
        assert qos == {'/chatter': (RELIABLE_QOS,), '/pose': (BEST_EFFORT_QOS,)}
        # From the middle: the first message at or after the time.
        middle = records[len(records) // 2].time_ns
        assert [t for _, t, _ in bag.messages(middle)] == [
            r.time_ns for r in records if r.time_ns >= middle]
    finally:
        bag.close()


def test_topic_filter(tmp_path):
    """Only the topics asked for play; those not in the bag are listed."""
    path = str(tmp_path / 'bag')
    records = write_test_bag(path)
    bag = Bag(path, ['/pose', '/nope'])
    try:
        assert [t.name for t in bag.topics] == ['/pose']
        assert bag.skipped.filtered == ['/chatter', '/mystery']
        assert bag.missing_topics == ['/nope']
        assert [t for _, t, _ in bag.messages(0)] == [
            r.time_ns for r in records if r.topic == '/pose']
    finally:
        bag.close()


def _truncate(path: str, suffix: str) -> None:
    [name] = [n for n in os.listdir(path) if n.endswith(suffix)]
    with open(os.path.join(path, name), 'r+b') as data:
        data.truncate(300)


@pytest.mark.parametrize('damage, match', [
    ('missing', 'does not exist'),
    ('empty_directory', 'cannot be read'),
    ('bad_metadata', 'cannot be read'),
    ('truncated_sqlite3', 'bag'),
    ('truncated_mcap', 'bag'),
])
def test_damaged_or_missing_bag_is_refused(tmp_path, damage, match):
    """A bag that cannot play raises BagError with a reason naming the bag."""
    path = str(tmp_path / 'bag')
    if damage == 'empty_directory':
        os.mkdir(path)
    elif damage == 'bad_metadata':
        write_test_bag(path)
        with open(os.path.join(path, 'metadata.yaml'), 'w') as metadata:
            metadata.write('rosbag2_bagfile_information: [this is not\n')
    elif damage.startswith('truncated'):
        storage = damage.split('_')[1]
        write_test_bag(path, storage)
        _truncate(path, '.db3' if storage == 'sqlite3' else '.mcap')
    with pytest.raises(BagError, match=match) as error:
        Bag(path)
    assert path in str(error.value)


def test_bag_without_messages_is_refused(tmp_path):
    """A bag that holds no message at all has nothing to play."""
    from rosbags.rosbag2 import Writer
    path = str(tmp_path / 'empty')
    with Writer(path, version=9) as writer:
        writer.add_connection('/x', 'std_msgs/msg/String', msgdef='string data',
                              rihs01='RIHS01_' + '0' * 64)
    with pytest.raises(BagError, match='holds no messages'):
        Bag(path)


# -- the cursor --------------------------------------------------------------------------------

def _stream(times):
    def open_stream(start_ns):
        return iter([(None, t, str(t)) for t in times if t >= start_ns])
    return open_stream


def test_cursor_releases_up_to_and_including_the_time():
    """Each release hands out the messages stamped up to the time, once, in order."""
    cursor = Cursor(_stream([0, 10, 20, 20, 35]), 0)
    out = []
    assert cursor.release(-1, out.append) == 0
    assert cursor.release(10, out.append) == 2
    assert cursor.release(10, out.append) == 0
    assert cursor.next_time_ns == 20
    assert cursor.release(34, out.append) == 2
    assert not cursor.exhausted
    assert cursor.release(100, out.append) == 1
    assert cursor.exhausted and cursor.next_time_ns is None
    assert [m[1] for m in out] == [0, 10, 20, 20, 35]


def test_cursor_seek_starts_again():
    """A seek hands out again every message at or after the time."""
    cursor = Cursor(_stream([0, 10, 20, 30]), 0)
    cursor.release(100, lambda m: None)
    cursor.seek(15)
    out = []
    cursor.release(25, out.append)
    assert [m[1] for m in out] == [20]


@given(times=st.lists(st.integers(0, 10_000), max_size=50).map(sorted),
       cuts=st.lists(st.integers(-5, 10_005), max_size=20).map(sorted))
def test_cursor_any_split_hands_out_each_message_once_in_order(times, cuts):
    """However the time is cut into frames, each message comes once, in the frame due."""
    cursor = Cursor(_stream(times), 0)
    seen = []
    previous = None
    for cut in cuts + [10_005]:
        batch = []
        cursor.release(cut, batch.append)
        assert all(m[1] <= cut and (previous is None or m[1] > previous) for m in batch)
        seen += batch
        previous = cut
    assert [m[1] for m in seen] == times


# -- Timeline.seek -----------------------------------------------------------------------------

class _Steady:

    def __init__(self):
        self.ns = 10**12

    def __call__(self):
        return self.ns


def test_timeline_seek_is_a_reset_to_a_time():
    """Seek: time set, frame 0, epoch + 1, mode, sync and holder kept; steps go on from it."""
    timeline = Timeline(_Steady(), time_step_ns=10 * MS)
    user, _ = timeline.sync_mode_cmd('a', True, 0)
    timeline.step(user, 3)
    epoch = timeline.epoch
    timeline.seek(5 * NS_PER_SEC + 3, 'test seek')
    status = timeline.status()
    assert (status.time_ns, status.frame, status.epoch) == (5 * NS_PER_SEC + 3, 0, epoch + 1)
    assert (status.mode, status.sync, status.owner) == (Mode.SIMULATION, True, 'a')
    assert timeline.last_reset_reason == 'test seek'
    assert list(timeline.step('a', 2)) == [5 * NS_PER_SEC + 3 + 10 * MS,
                                           5 * NS_PER_SEC + 3 + 20 * MS]


def test_timeline_seek_paces_free_run_from_the_new_time():
    """After a seek, free run counts its frames from there (no burst, no loss)."""
    steady = _Steady()
    timeline = Timeline(steady, time_step_ns=10 * MS)
    steady.ns += 50 * MS
    assert len(timeline.poll(100)) == 5
    timeline.seek(NS_PER_SEC)
    assert list(timeline.poll(100)) == []
    steady.ns += 20 * MS
    assert list(timeline.poll(100)) == [NS_PER_SEC + 10 * MS, NS_PER_SEC + 20 * MS]


def test_timeline_seek_in_real_time_mode():
    """Real-time mode follows the wall clock from the seek time on."""
    steady = _Steady()
    timeline = Timeline(steady, mode=Mode.REAL_TIME)
    timeline.seek(7 * NS_PER_SEC)
    steady.ns += 3 * MS
    assert list(timeline.poll(1)) == [7 * NS_PER_SEC + 3 * MS]


@pytest.mark.parametrize('time_ns', [-1, MAX_TIME_NS + 1, 1.5, True, '1'])
def test_timeline_seek_refuses_bad_times_unchanged(time_ns):
    """A seek outside 0..MAX_TIME_NS, or not an integer, changes nothing."""
    timeline = Timeline(_Steady())
    before = timeline.status()
    with pytest.raises(Refused, match='seek time must be between 0 and'):
        timeline.seek(time_ns)
    assert timeline.status() == before


# -- QoS and the recording summary -------------------------------------------------------------

def test_qos_follows_the_recorded_offers():
    """Reliable and transient local only if every recorded publisher was; depths as stated."""
    assert qos_for(()).reliability == ReliabilityPolicy.RELIABLE
    best_effort = qos_for((RELIABLE_QOS, BEST_EFFORT_QOS))
    assert best_effort.reliability == ReliabilityPolicy.BEST_EFFORT
    assert best_effort.depth == MIN_VOLATILE_DEPTH
    latched = RELIABLE_QOS._replace(durability=QosDurability.TRANSIENT_LOCAL, depth=1)
    static = qos_for((latched,))
    assert (static.durability, static.depth) == (DurabilityPolicy.TRANSIENT_LOCAL, 1)
    assert qos_for((latched, RELIABLE_QOS)).durability == DurabilityPolicy.VOLATILE


def test_recording_summary():
    """Counts per topic, the simulated time span, messages before /clock and time jumps."""
    summary = RecordingSummary()
    summary.add_topic('/a', 'std_msgs/msg/String')
    summary.add_topic('/never', 'std_msgs/msg/String')
    summary.before_clock = 2
    for t in (NS_PER_SEC, 2 * NS_PER_SEC, NS_PER_SEC // 2):
        summary.clock(t)
        summary.message('/a', t)
    assert summary.total == 3
    assert summary.span() == (NS_PER_SEC // 2, 2 * NS_PER_SEC)
    text = '\n'.join(summary.lines('out'))
    assert 'recorded 3 messages into out' in text
    assert '0.500000000 s to 2.000000000 s (1.500000000 s)' in text
    assert '/never' in text and '2 messages came before any /clock' in text
    assert 'went back 1 times' in text
