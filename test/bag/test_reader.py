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

"""The bag logic without ROS I/O: opening, streaming, read-ahead, the cursor, seek, summaries."""

from array import array
import os
import re

from bags import bag_messages
from bags import batch_stream
from bags import BEST_EFFORT_QOS
from bags import flatten_batches
from bags import MS
from bags import read_metadata
from bags import RELIABLE_QOS
from bags import START_NS
from bags import UNKNOWN_TYPE
from bags import write_large_bag
from bags import write_test_bag
from hypothesis import given
from hypothesis import strategies as st
import pytest
from rclpy.qos import DurabilityPolicy
from rclpy.qos import ReliabilityPolicy
from rosbags.interfaces import QosDurability

from sim_clock.bag.cursor import Cursor
from sim_clock.bag.frame_sink import MIN_VOLATILE_DEPTH
from sim_clock.bag.frame_sink import qos_for
from sim_clock.bag.reader import Bag
from sim_clock.bag.reader import BagError
from sim_clock.bag.reader import get_message
from sim_clock.bag.recorder_summary import RecordingSummary
from sim_clock.bag.replay import python_run
from sim_clock.core.units import NS_PER_SEC

pytestmark = pytest.mark.fast


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
        streamed = [(t, bag.topics[i].name) for i, t, _ in bag.messages(bag.start_ns)]
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
    ('empty_directory', 'is an empty directory: a rosbag2 bag is a directory that holds '
                        'metadata.yaml and its .db3 or .mcap files'),
    ('no_data_file', 'holds no data file'),
    ('not_a_data_file', 'is not a rosbag2 data file'),
    ('truncated_sqlite3', 'bag'),
    ('truncated_mcap', 'bag'),
])
def test_damaged_or_missing_bag_is_refused(tmp_path, damage, match):
    """A bag that cannot play raises BagError with a reason naming the bag."""
    path = str(tmp_path / 'bag')
    if damage == 'empty_directory':
        os.mkdir(path)
    elif damage == 'no_data_file':
        write_test_bag(path)
        os.remove(os.path.join(path, read_metadata(path)['relative_file_paths'][0]))
    elif damage == 'not_a_data_file':
        path = str(tmp_path / 'notes.txt')
        with open(path, 'w') as text:
            text.write('not a bag')
    elif damage.startswith('truncated'):
        storage = damage.split('_')[1]
        write_test_bag(path, storage)
        _truncate(path, '.db3' if storage == 'sqlite3' else '.mcap')
    with pytest.raises(BagError, match=match) as error:
        Bag(path)
    assert path in str(error.value)


# -- batches and the read-ahead -----------------------------------------------------------------

def test_batches_are_the_messages_in_bounded_batches(test_bag):
    """Batches hold every message in order, never more than the count asked."""
    path, records = test_bag
    bag = Bag(path)
    try:
        for start in (bag.start_ns, records[len(records) // 3].time_ns, bag.end_ns + 1):
            batches = list(bag.batches(start, max_messages=7))
            assert all(len(times) <= 7 for times, _, _ in batches)
            assert flatten_batches(batches) == bag_messages(bag, start)
        assert [bag.topics[i].name for _, i, _ in flatten_batches(bag.batches(bag.start_ns))] == [
            r.topic for r in records]
    finally:
        bag.close()


def test_batches_are_bounded_in_bytes(tmp_path):
    """A batch stops once it holds the byte limit: memory does not follow message size."""
    path = str(tmp_path / 'large')
    times = write_large_bag(path, count=100, size=10_000)
    bag = Bag(path)
    try:
        batches = list(bag.batches(bag.start_ns, max_bytes=50_000))
        assert all(sum(map(len, datas)) < 50_000 + 10_100 for _, _, datas in batches)
        assert len(batches) >= 100 * 10_000 // (50_000 + 10_100)
        assert [t for t, _, _ in flatten_batches(batches)] == times
    finally:
        bag.close()


# -- the cursor --------------------------------------------------------------------------------

def _ignore(*args):
    pass


def _collect(out):
    """Return an emit that puts the time of each message handed out into ``out``."""
    def emit(batch, start, stop):
        out.extend(int(data) for data in batch[2][start:stop])
    return emit


def _played(cursor, frames, offset_ns=0):
    """Play ``frames`` with the model run; return the times of the messages handed out."""
    out = []
    cursor.play(frames, offset_ns, python_run(_collect(out), _ignore))
    return out


def test_cursor_plays_up_to_and_including_the_time():
    """Each frame hands out the messages stamped up to its time, once, in order."""
    cursor = Cursor(batch_stream([0, 10, 20, 20, 35], sizes=(2, 0, 1)), 0)
    assert _played(cursor, [-1]) == []
    assert _played(cursor, [10]) == [0, 10]
    assert _played(cursor, [10]) == []
    assert cursor.next_time_ns == 20
    assert _played(cursor, [34]) == [20, 20]
    assert not cursor.exhausted
    assert _played(cursor, [100]) == [35]
    assert cursor.exhausted and cursor.next_time_ns is None
    assert _played(cursor, [200]) == []
    assert cursor.frames_played == 1


def test_cursor_seek_starts_again():
    """A seek hands out again every message at or after the time."""
    cursor = Cursor(batch_stream([0, 10, 20, 30]), 0)
    _played(cursor, [100])
    cursor.seek(15)
    assert _played(cursor, [25]) == [20]


@given(times=st.lists(st.integers(0, 10_000), max_size=50).map(sorted),
       cuts=st.lists(st.integers(-5, 10_005), max_size=20).map(sorted),
       sizes=st.lists(st.integers(0, 8), min_size=1, max_size=5).filter(any),
       offset=st.integers(-20_000, 20_000),
       calls=st.integers(1, 4))
def test_cursor_any_split_hands_out_each_message_once_in_order(times, cuts, sizes, offset,
                                                               calls):
    """However time is cut into frames, batches and calls, each message comes once, when due."""
    cursor = Cursor(batch_stream(times, sizes), 0)
    frames = [cut - offset for cut in cuts + [10_005]]
    events = []
    run = python_run(_collect(events), lambda t: events.append(('frame', t)))
    for k in range(calls):
        part = frames[k * len(frames) // calls:(k + 1) * len(frames) // calls]
        cursor.play(part, offset, run)
        assert cursor.frames_played == len(part)
    assert cursor.exhausted
    # Before each frame is done: exactly the messages stamped after the one before, up to it.
    expected = []
    due = iter(times)
    message = next(due, None)
    for frame in frames:
        while message is not None and message <= frame + offset:
            expected.append(message)
            message = next(due, None)
        expected.append(('frame', frame))
    assert events == expected


@given(messages=st.lists(st.tuples(st.integers(0, 1_000), st.integers(0, 2)), max_size=60),
       cuts=st.lists(st.integers(0, 1_000), max_size=15).map(sorted),
       size=st.integers(1, 8),
       windows=st.lists(st.sampled_from([-1, 1, 2, 3, 7]), min_size=4, max_size=4))
def test_budgets_hold_each_writer_to_its_window_and_lose_nothing(messages, cuts, size,
                                                                 windows):
    """
    With budgets (flow control), play stops before a writer exceeds its window.

    Refilled where it stops, it puts out exactly what play without budgets does, in order,
    and no writer (three topics, then /clock) publishes more than its window between refills.
    """
    messages.sort()
    times = [t for t, _ in messages]
    topics = [topic for _, topic in messages]

    def open_batches(start_ns):
        for k in range(0, len(times), size):
            yield (times[k:k + size], topics[k:k + size],
                   [(topic, t) for t, topic in messages[k:k + size]])
    frames = cuts + [1_000]

    def played(budgets):
        out, since_refill = [], [0] * 4

        def emit(batch, start, stop):
            for topic, t in batch[2][start:stop]:
                out.append((topic, t))
                since_refill[topic] += 1

        def frame_done(t):
            out.append(('clock', t))
            since_refill[3] += 1
        run = python_run(emit, frame_done, budgets)

        def resumed(batch, index, part, offset):
            done = 0
            while True:
                finished, index = run(batch, index, part[done:], offset)
                done += finished
                if budgets is None:
                    return done, index
                for k, window in enumerate(windows):
                    assert window < 0 or since_refill[k] <= window
                if 0 not in budgets:
                    return done, index
                for k, budget in enumerate(budgets):
                    if budget == 0:
                        budgets[k], since_refill[k] = windows[k], 0
        Cursor(open_batches, 0).play(frames, 0, resumed)
        return out
    assert played(array('q', windows)) == played(None)


def test_cursor_read_error_mid_play_is_raised_after_what_came_before():
    """A read error ends the play after the messages before it; frames_played says where."""
    def open_batches(start_ns):
        yield [0, 10], [0, 0], ['0', '10']
        yield [20], [0], ['20']
        raise OSError('disk gone')

    cursor = Cursor(open_batches, 0)
    out = []
    frames = []
    with pytest.raises(OSError, match='disk gone'):
        cursor.play([5, 15, 25, 35], 0, python_run(_collect(out), frames.append))
    assert out == [0, 10, 20]
    assert frames == [5, 15]
    assert cursor.frames_played == 2
    assert cursor.exhausted


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
