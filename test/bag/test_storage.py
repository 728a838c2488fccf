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

"""Bags read from their data files, metadata.yaml reconciled: each kind rosbag2 leaves."""

import io
import os
import shutil

from bags import as_version
from bags import cdr
from bags import edit_metadata
from bags import MS
from bags import read_metadata
from bags import RELIABLE_QOS
from bags import START_NS
from bags import write_bare_db3
from bags import write_split_bag
from bags import write_string_bag
from bags import write_test_bag
import pytest
from rosbags.interfaces import QosReliability
from rosbags.rosbag2 import Reader
from rosbags.rosbag2 import Writer
from sim_clock.bag.accounting import Account
from sim_clock.bag.info import print_info
from sim_clock.bag.reach import FirstMatches
from sim_clock.bag.reach import Unheard
from sim_clock.bag.reader import Bag
from sim_clock.bag.reader import get_message
from sim_clock.bag.reader import LeftOut
from sim_clock.bag.storage import StoredBag

pytestmark = pytest.mark.fast

STORAGES = ['sqlite3', 'mcap']
#: Two topics, distinct stamps 10 ms apart.
MESSAGES = [(START_NS + k * 10 * MS, '/a' if k % 3 else '/b', f'm{k}') for k in range(30)]


def expected(messages=MESSAGES) -> list:
    """Return (stamp, topic, data) of ``messages`` in time order."""
    return [(stamp, topic, cdr(text)) for stamp, topic, text in sorted(messages)]


def played(path, **options):
    """Open ``path`` as the player does; return (bag, [(stamp, topic, data)]) and close it."""
    bag = Bag(path, **options)
    try:
        return bag, [(t, bag.topics[i].name, bytes(d)) for i, t, d in bag.messages(bag.start_ns)]
    finally:
        bag.close()


def notes(bag) -> str:
    """Return every note of the bag's reconciliation, as one text."""
    return ' | '.join(' | '.join(texts) for _, texts in bag.notes)


def data_file(path) -> str:
    """Return the name of a one-file bag's data file."""
    [name] = read_metadata(path)['relative_file_paths']
    return name


@pytest.fixture(params=STORAGES)
def storage(request):
    """Each storage format in turn."""
    return request.param


def test_a_bag_that_agrees_plays_without_notes(tmp_path, storage):
    """A bag whose metadata.yaml says what its data holds: every message, nothing noted."""
    path = str(tmp_path / 'bag')
    write_string_bag(path, MESSAGES, storage)
    bag, out = played(path)
    assert out == expected()
    assert bag.notes == []
    assert (bag.start_ns, bag.end_ns) == (MESSAGES[0][0], MESSAGES[-1][0])
    assert bag.message_count == bag.playing_count == len(MESSAGES)


def test_qos_that_metadata_and_data_disagree_on(tmp_path, storage):
    """Profiles that differ: rosbags pairs no topic, here all plays with the data's QoS."""
    path = str(tmp_path / 'bag')
    write_string_bag(path, MESSAGES, storage)

    def best_effort(info):
        for entry in info['topics_with_message_count']:
            for profile in entry['topic_metadata']['offered_qos_profiles']:
                profile['reliability'] = 'best_effort'
                profile['depth'] = 1
    edit_metadata(path, best_effort)
    with Reader(path) as reader:  # the kind as rosbags reads it: nothing
        assert list(reader.messages()) == []
    bag, out = played(path)
    assert out == expected()
    assert {topic.offered_qos for topic in bag.topics} == {(RELIABLE_QOS,)}
    assert 'metadata.yaml and the data files record other QoS' in notes(bag)


def test_starting_time_later_than_the_data(tmp_path, storage):
    """A starting_time after the first message (a reindexed bag's): the data's bounds play."""
    path = str(tmp_path / 'bag')
    write_string_bag(path, MESSAGES, storage)
    late = MESSAGES[12][0]
    edit_metadata(path, lambda info: info['starting_time'].update(
        nanoseconds_since_epoch=late))
    with Reader(path) as reader:  # the kind: rosbags starts at metadata's time
        assert reader.start_time == late
    bag, out = played(path)
    assert out == expected()
    assert bag.start_ns == MESSAGES[0][0]
    assert f"metadata.yaml's starting_time is {late} ns" in notes(bag)


def test_split_bag_with_starting_time_of_its_last_file(tmp_path, storage):
    """Three files, two overlapping in time; starting_time that of the last: merged by time."""
    path = str(tmp_path / 'split')
    parts = [[(START_NS + k * MS, '/a', f'a{k}') for k in range(0, 40, 2)],
             [(START_NS + k * MS, '/b', f'b{k}') for k in range(1, 40, 2)],
             [(START_NS + k * MS, '/a', f'a{k}') for k in range(40, 60)]]
    everything = write_split_bag(path, parts, storage)
    edit_metadata(path, lambda info: info['starting_time'].update(
        nanoseconds_since_epoch=START_NS + 40 * MS))
    bag, out = played(path)
    assert out == expected(everything)
    assert [t for t, _, _ in out] == sorted(t for t, _, _ in out)
    assert len(bag.stored[0].files) == 3


def test_damaged_duration(tmp_path, storage):
    """A duration of 51 years: the end is the last message's stamp."""
    path = str(tmp_path / 'bag')
    write_string_bag(path, MESSAGES, storage)
    edit_metadata(path, lambda info: info['duration'].update(
        nanoseconds=51 * 365 * 86400 * 10**9))
    bag, out = played(path)
    assert out == expected()
    assert bag.end_ns == MESSAGES[-1][0]
    assert "metadata.yaml's duration is" in notes(bag)


def test_data_files_in_a_subfolder(tmp_path, storage):
    """relative_file_paths naming a subfolder (rosbag2's reindexed bags): found there."""
    path = str(tmp_path / 'bag')
    write_string_bag(path, MESSAGES, storage)
    name = data_file(path)
    os.mkdir(os.path.join(path, 'data'))
    shutil.move(os.path.join(path, name), os.path.join(path, 'data', name))
    edit_metadata(path, lambda info: info.update(relative_file_paths=[f'data/{name}']))
    with pytest.raises(Exception, match='Some database files are missing'):
        Reader(path).open()  # the kind as rosbags reads it
    bag, out = played(path)
    assert out == expected()
    assert bag.notes == []


@pytest.mark.parametrize('version', [1, 3, 4, 8])
def test_metadata_of_older_versions(tmp_path, storage, version):
    """Files named with the bag's folder (before 4), QoS as text (4 to 8): all plays."""
    path = str(tmp_path / 'bag')
    write_string_bag(path, MESSAGES, storage)
    as_version(path, version)
    bag, out = played(path)
    assert out == expected()
    assert bag.notes == []


def test_bag_folder_renamed_after_an_old_version_wrote_it(tmp_path, storage):
    """Before version 4 a path holds the folder's old name: the file is found by its own."""
    path = str(tmp_path / 'bag')
    write_string_bag(path, MESSAGES, storage)
    as_version(path, 3)
    renamed = str(tmp_path / 'renamed')
    os.rename(path, renamed)
    _, out = played(renamed)
    assert out == expected()


def test_empty_bag_plays_an_instant(tmp_path, storage):
    """A bag with topics and no message opens: no message, start and end at one time."""
    path = str(tmp_path / 'empty')
    write_string_bag(path, [], storage)
    with Writer(str(tmp_path / 'empty2'), version=9) as writer:
        writer.add_connection('/x', 'std_msgs/msg/String', msgdef='string data',
                              rihs01='RIHS01_' + '0' * 64)
    for bag_path in (path, str(tmp_path / 'empty2')):
        bag, out = played(bag_path)
        assert out == []
        assert bag.message_count == bag.playing_count == 0
        assert bag.start_ns == bag.end_ns


def test_service_events_play_as_topics(tmp_path, storage):
    """A recorded service's events (pkg/srv/Name_Event) play as the topic they are."""
    from rclpy.serialization import serialize_message
    from std_srvs.srv import Trigger
    assert get_message('std_srvs/srv/Trigger_Event') is Trigger.Event
    event = Trigger.Event()
    event.info.event_type = 2
    event.response = [Trigger.Response(success=True, message='done')]
    data = serialize_message(event)
    path = str(tmp_path / 'bag')
    from bags import STORAGES as plugins
    with Writer(path, version=9, storage_plugin=plugins[storage]) as writer:
        connection = writer.add_connection(
            '/trigger/_service_event', 'std_srvs/srv/Trigger_Event', msgdef='int32 x',
            rihs01='RIHS01_' + '2' * 64, offered_qos_profiles=[RELIABLE_QOS])
        for k in range(5):
            writer.write(connection, START_NS + k * MS, data)
    bag, out = played(path)
    assert [topic.type_name for topic in bag.topics] == ['std_srvs/srv/Trigger_Event']
    assert [d for _, _, d in out] == [data] * 5
    assert bag.left_out == []


@pytest.mark.parametrize('name', ['std_srvs/srv/Trigger', 'std_srvs/srv/Trigger_Request',
                                  'std_srvs/srv/NoSuch_Event'])
def test_service_types_that_are_no_topic(name):
    """A service itself is no message type; its request and response messages are."""
    if name.endswith('_Request'):
        from std_srvs.srv import Trigger
        assert get_message(name) is Trigger.Request
    else:
        with pytest.raises(LookupError, match=name):
            get_message(name)


def test_bare_db3_without_qos(tmp_path):
    """A .db3 of the first schema, alone: plays, with no recorded QoS."""
    path = str(tmp_path / 'bare.db3')
    write_bare_db3(path, MESSAGES)
    bag, out = played(path)
    assert out == expected()
    assert all(topic.offered_qos == () for topic in bag.topics)


def test_qos_from_metadata_where_the_data_has_none(tmp_path, storage):
    """Old sqlite3 data without QoS in a bag whose metadata.yaml has them: metadata's QoS."""
    path = str(tmp_path / 'bag')
    best_effort = RELIABLE_QOS._replace(reliability=QosReliability.BEST_EFFORT)
    write_string_bag(path, MESSAGES, 'sqlite3', qos={'/a': best_effort})
    name = data_file(path)
    os.remove(os.path.join(path, name))
    write_bare_db3(os.path.join(path, name), MESSAGES)
    bag, out = played(path)
    assert out == expected()
    qos = {topic.name: topic.offered_qos for topic in bag.topics}
    assert qos == {'/a': (best_effort,), '/b': (RELIABLE_QOS,)}
    assert [topic.qos_source for topic in bag.stored[0].topics] == ['metadata.yaml'] * 2


@pytest.mark.parametrize('mode', ['file', 'message'])
def test_zstd_compression(tmp_path, storage, mode):
    """Compressed by file or by message: every message decompressed, byte for byte."""
    path = str(tmp_path / 'bag')
    write_string_bag(path, MESSAGES, storage, compression=mode)
    bag, out = played(path)
    assert out == expected()
    assert bag.notes == []
    if mode == 'message':  # without metadata.yaml too: zstd frames are known by their magic
        os.remove(os.path.join(path, 'metadata.yaml'))
        bag, out = played(path)
        assert out == expected()
        assert 'compressed one by one' in notes(bag)


def test_decompressed_copies_are_removed(tmp_path):
    """A file compressed whole is decompressed into a temporary folder, removed at close."""
    path = str(tmp_path / 'bag')
    write_string_bag(path, MESSAGES, 'mcap', compression='file')
    stored = StoredBag(path)
    copy = stored.files[0].readable
    assert copy != stored.files[0].path and os.path.exists(copy)
    stored.close()
    assert not os.path.exists(copy)


@pytest.mark.parametrize('damage', ['no_metadata', 'bad_yaml', 'not_a_mapping',
                                    'missing_file_listed'])
def test_metadata_missing_or_wrong(tmp_path, storage, damage):
    """metadata.yaml missing or wrong, data readable: the bag plays, and the note says why."""
    path = str(tmp_path / 'bag')
    write_string_bag(path, MESSAGES, storage)
    metadata = os.path.join(path, 'metadata.yaml')
    if damage == 'no_metadata':
        os.remove(metadata)
    elif damage == 'bad_yaml':
        with open(metadata, 'w') as stream:
            stream.write('rosbag2_bagfile_information: [this is not\n')
    elif damage == 'not_a_mapping':
        with open(metadata, 'w') as stream:
            stream.write('rosbag2_bagfile_information: 3\n')
    else:
        edit_metadata(path, lambda info: info.update(relative_file_paths=['gone.db3']))
    bag, out = played(path)
    assert out == expected()
    text = notes(bag)
    assert {'no_metadata': 'no metadata.yaml', 'bad_yaml': 'metadata.yaml cannot be read',
            'not_a_mapping': 'metadata.yaml cannot be read',
            'missing_file_listed': 'metadata.yaml lists data files that are not there: '
                                   'gone.db3'}[damage] in text


def test_metadata_counts_that_disagree(tmp_path, storage):
    """Counts and topics of metadata.yaml that the data does not hold are noted."""
    path = str(tmp_path / 'bag')
    write_string_bag(path, MESSAGES, storage)

    def edit(info):
        info['message_count'] += 5
        entry = info['topics_with_message_count'][0]
        ghost = {'topic_metadata': dict(entry['topic_metadata'], name='/ghost'),
                 'message_count': 5}
        info['topics_with_message_count'].append(ghost)
    edit_metadata(path, edit)
    bag, out = played(path)
    assert out == expected()
    text = notes(bag)
    assert f'metadata.yaml counts {len(MESSAGES) + 5} messages' in text
    assert 'lists 5 messages of /ghost' in text


def test_every_message_is_played_or_left_out_with_its_reason(tmp_path):
    """The count adds up: what plays and what is left out, each reason with its topics."""
    path = str(tmp_path / 'bag')
    records = write_test_bag(path)
    bag = Bag(path, ['/chatter', '/pose'])
    try:
        assert bag.playing_count == len(records)
        reasons = {entry.reason.split(':')[0]: entry.count for entry in bag.left_out}
        assert reasons == {'/clock is not republished (the player publishes /clock)': 4,
                           'not selected': 5}
        assert bag.message_count == bag.playing_count + sum(reasons.values())
        offset, until = START_NS + 300 * MS, START_NS + 700 * MS
        bag.count_outside(offset, until)
        inside = [r for r in records if offset <= r.time_ns <= until]
        assert bag.playing_count == len(inside)
        before = [e for e in bag.left_out if e.reason.startswith('before the start offset')]
        assert before[0].count == len([r for r in records if r.time_ns < offset])
        assert all(entry.chosen for entry in bag.left_out if 'offset' in entry.reason)
    finally:
        bag.close()
    bag = Bag(path)
    try:
        [types] = [entry for entry in bag.left_out if 'not installed' in entry.reason
                   or 'not importable' in entry.reason or 'Mystery' in entry.reason]
        assert types.count == 5 and '/mystery' in types.reason and not types.chosen
    finally:
        bag.close()


def test_account_of_a_replay():
    """The end line names what played and each reason; short only for what nobody chose."""
    chosen = LeftOut(4, '/clock is not republished (the player publishes /clock): /clock', True)
    missing = LeftOut(5, 'type x/msg/Y is not installed: /y', False)
    whole = Account(in_bag=20, playing=11, played=11, left_out=(chosen,))
    assert not whole.short
    assert whole.line() == ("played 11 of the bag's 20 messages; left out: 4 /clock is not "
                            'republished (the player publishes /clock): /clock')
    assert Account(20, 11, 11, (chosen, missing)).short
    stopped = Account(20, 11, 7, (chosen,))
    assert stopped.short and stopped.not_played == 4
    assert stopped.line().endswith('; 4 not played since the last reset (the player stopped '
                                   'before them, a read error, or a seek past them)')
    assert Account(0, 0, 0, ()).line() == "played 0 of the bag's 0 messages"


def test_info_says_what_the_bag_holds_and_what_would_play(tmp_path):
    """As ros2 bag info, from the data; then the disagreements, what plays and what not."""
    path = str(tmp_path / 'bag')
    write_test_bag(path, 'mcap')
    edit_metadata(path, lambda info: info['starting_time'].update(
        nanoseconds_since_epoch=START_NS + 500 * MS))
    out = io.StringIO()
    assert print_info([path], out=out) == 0
    text = out.getvalue()
    for line in ('Storage id:          mcap', 'Messages:            54',
                 'Duration:            1.000000000 s', 'Compression:         none',
                 f'Start:               Jan 01 1970 00:16:40.000000007 UTC ({START_NS} ns)',
                 'Topic information:   Topic: /chatter | Type: std_msgs/msg/String | Count: 11 '
                 '| Serialization Format: cdr',
                 '                         QoS: reliable, volatile, keep_last 10 (from data)',
                 'metadata.yaml and the data files disagree (the data is played):',
                 f"  metadata.yaml's starting_time is {START_NS + 500 * MS} ns, the first "
                 f'message is at {START_NS} ns',
                 f'  2 topics, 45 of 54 messages, bag time {START_NS} to {START_NS + 1000 * MS} '
                 'ns',
                 '    5 type no_such_pkg/msg/Mystery is not installed: /mystery'):
        assert line in text.splitlines(), (line, text)


def test_info_of_a_bag_that_cannot_be_read(tmp_path, capsys):
    """One line on stderr and exit code 1."""
    assert print_info([str(tmp_path / 'nothing')]) == 1
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'does not exist' in err


def test_first_matches_count_what_went_out_before_a_reader():
    """Per topic: from the start to the bag time its first reader was seen; none if before."""
    matches = FirstMatches(['/a', '/b', '/c', '/d'], 100)
    matches.matched(0, 100)  # before the first frame: nothing lost
    matches.matched(1, 250)
    matches.matched(1, 900)  # only the first counts
    asked = []

    def count(first, lasts):
        asked.append((first, dict(lasts)))
        return {index: last - first for index, last in lasts.items()}
    unheard = matches.unheard(400, [True, True, True, False], count)
    assert asked == [(100, {1: 250, 2: 400, 3: 400})]
    assert unheard == [Unheard('/b', 150, True), Unheard('/c', 300, True),
                       Unheard('/d', 300, False)]
    assert FirstMatches(['/a'], 100).unheard(100, [False], count) == []


def test_count_until_reads_each_topic_up_to_its_time(tmp_path, storage):
    """The messages of each topic asked for, from a time to its own time, from the data."""
    path = str(tmp_path / 'bag')
    write_string_bag(path, MESSAGES, storage)
    bag = Bag(path)
    try:
        a, b = [t.name for t in bag.topics].index('/a'), [t.name for t in bag.topics].index('/b')
        first, mid = MESSAGES[2][0], MESSAGES[20][0]
        counts = bag.count_until(first, {a: mid, b: MESSAGES[-1][0]})
        assert counts == {a: sum(1 for t, n, _ in MESSAGES if n == '/a' and first <= t <= mid),
                          b: sum(1 for t, n, _ in MESSAGES if n == '/b' and t >= first)}
    finally:
        bag.close()


def test_account_names_what_reached_no_reader():
    """Messages out before a reader matched: 'up to' their count, and the way to avoid it."""
    late = Account(10, 10, 10, (), (Unheard('/a', 4, True), Unheard('/b', 6, False)))
    assert late.lost == 4 and not late.reached_nobody and not late.short
    line = late.line()
    assert ('; up to 4 went out before the player saw a reader of their topic match, and that '
            'reader may not have got them: /a 4; 6 went out while no reader of their topic had '
            'matched: /b 6 (DDS discovery') in line and '--delay SEC' in line
    nobody = Account(10, 10, 10, (), (Unheard('/a', 4, False), Unheard('/b', 6, False)))
    assert nobody.reached_nobody and nobody.lost == 0 and '--delay SEC' in nobody.line()
    some = Account(10, 10, 10, (), (Unheard('/b', 6, False),))
    assert not some.reached_nobody and 'DDS discovery' not in some.line()
