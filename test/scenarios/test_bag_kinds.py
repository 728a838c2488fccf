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
The bag player over each kind of bag that rosbag2 leaves, through real DDS.

Free run at real_time_factor 0 to a reliable KEEP_ALL reader of every topic: every message
arrives, byte for byte, in order; the player ends by itself with exit code 0 and says what it
reconciled and what it left out.
"""

import os
import shutil

from bags import cdr
from bags import edit_metadata
from bags import MS
from bags import read_metadata
from bags import START_NS
from bags import write_split_bag
from bags import write_string_bag
from bags import write_test_bag
from harness import executable
from harness import ServerProcess
from harness import TestClient
import pytest
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rosbags.rosbag2 import Writer
from sim_clock.srv import GetProgress

pytestmark = pytest.mark.process

HOUR_NS = 3600 * 10**9
#: Two topics, distinct stamps 1 ms apart.
MESSAGES = [(START_NS + k * MS, '/a' if k % 3 else '/b', f'm{k}') for k in range(300)]
KEEP_ALL = QoSProfile(history=HistoryPolicy.KEEP_ALL, depth=1,
                      reliability=ReliabilityPolicy.RELIABLE)


def _qos_mismatch(path, storage):
    write_string_bag(path, MESSAGES, storage)

    def edit(info):
        for entry in info['topics_with_message_count']:
            for profile in entry['topic_metadata']['offered_qos_profiles']:
                profile['depth'] = 1
    edit_metadata(path, edit)
    return MESSAGES, 'record other QoS profiles'


def _late_start(path, storage):
    write_string_bag(path, MESSAGES, storage)
    edit_metadata(path, lambda info: info['starting_time'].update(
        nanoseconds_since_epoch=MESSAGES[200][0]))
    return MESSAGES, "metadata.yaml's starting_time is"


def _split(path, storage):
    parts = [MESSAGES[:100], MESSAGES[100:250], MESSAGES[250:]]
    write_split_bag(path, parts, storage)
    edit_metadata(path, lambda info: info['starting_time'].update(
        nanoseconds_since_epoch=MESSAGES[250][0]))
    return MESSAGES, "metadata.yaml's starting_time is"


def _subfolder(path, storage):
    write_string_bag(path, MESSAGES, storage, compression='file')
    [name] = read_metadata(path)['relative_file_paths']
    os.mkdir(os.path.join(path, 'data'))
    shutil.move(os.path.join(path, name), os.path.join(path, 'data', name))
    edit_metadata(path, lambda info: info.update(relative_file_paths=[f'data/{name}']))
    return MESSAGES, None


def _damaged_duration(path, storage):
    write_string_bag(path, MESSAGES, storage, compression='message')
    edit_metadata(path, lambda info: info['duration'].update(
        nanoseconds=51 * 365 * 86400 * 10**9))
    return MESSAGES, "metadata.yaml's duration is"


def _gap_of_hours(path, storage):
    messages = MESSAGES[:150] + [(stamp + 5 * HOUR_NS, topic, text)
                                 for stamp, topic, text in MESSAGES[150:]]
    write_string_bag(path, messages, storage)
    return messages, None


KINDS = {'qos_mismatch': _qos_mismatch, 'late_start': _late_start, 'split': _split,
         'subfolder_zstd_file': _subfolder, 'damaged_duration_zstd_message': _damaged_duration,
         'gap_of_hours': _gap_of_hours}


class RawReader(TestClient):
    """A client with a reliable KEEP_ALL raw reader of each topic, recording what comes."""

    __test__ = False

    def __init__(self, domain_id: int, topics: dict):
        super().__init__(domain_id, name='kinds_reader')
        self.data = {topic: [] for topic in topics}
        self.matched = set()
        for topic, message_type in topics.items():
            self.node.create_subscription(
                message_type, topic, self.data[topic].append, KEEP_ALL, raw=True,
                event_callbacks=SubscriptionEventCallbacks(matched=self._matcher(topic)))

    def _matcher(self, topic):
        def callback(info):
            if info.current_count > 0:
                self.matched.add(topic)
        return callback

    def count(self) -> int:
        """Return the messages received on every topic."""
        return sum(map(len, self.data.values()))


def as_sent(data: bytes) -> bytes:
    """Return serialized data as a reader receives it: DDS pads it to a multiple of 4 bytes."""
    return bytes(data) + b'\0' * (-len(data) % 4)


def _player(domain_id, tmp_path, bag, params=None, argv=()):
    return ServerProcess(domain_id, str(tmp_path), params, argv=[bag, '--no-progress', *argv],
                         executable=executable('bag_player'))


def _wait_exit(player, timeout: float = 60.0) -> int:
    try:
        return player.process.wait(timeout)
    finally:
        player.stop()


@pytest.mark.parametrize('storage', ['sqlite3', 'mcap'])
@pytest.mark.parametrize('kind', sorted(KINDS))
def test_every_kind_plays_every_message(domain_id, tmp_path, storage, kind):
    """Free run as fast as possible: each message once, byte for byte, in order; exit 0."""
    from std_msgs.msg import String
    path = str(tmp_path / 'bag')
    messages, note = KINDS[kind](path, storage)
    reader = RawReader(domain_id, {'/a': String, '/b': String})
    player = _player(domain_id, tmp_path, path, {'real_time_factor': 0.0, 'paused': True},
                     ['--strict'])
    try:
        reader.spin_until(lambda: reader.matched == {'/a', '/b'}, "the player's writers")
        reader.status_when_ready()  # answered: the writers have matched these readers too
        assert reader.trigger('resume').success
        assert _wait_exit(player) == 0, player.log()
        reader.spin_until(lambda: reader.count() >= len(messages), 'every message')
        for topic in ('/a', '/b'):
            assert reader.data[topic] == [as_sent(cdr(text)) for _, name, text
                                          in sorted(messages) if name == topic], topic
        log = player.log()
        assert f"played {len(messages)} of the bag's {len(messages)} messages" in log, log
        if note is None:
            assert 'metadata.yaml disagrees' not in log, log
        else:
            assert log.count('metadata.yaml disagrees') == 1 and note in log, log
        assert 'Traceback' not in log
    finally:
        reader.close()


def test_empty_bag_plays_and_ends(domain_id, tmp_path):
    """A bag without messages starts and ends at once, exit code 0, as ros2 bag play."""
    path = str(tmp_path / 'empty')
    with Writer(path, version=9) as writer:
        writer.add_connection('/x', 'std_msgs/msg/String', msgdef='string data',
                              rihs01='RIHS01_' + '0' * 64)
    player = _player(domain_id, tmp_path, path, {'real_time_factor': 0.0}, ['--strict'])
    assert _wait_exit(player) == 0, player.log()
    assert "played 0 of the bag's 0 messages" in player.log()


def test_service_events_play_as_topics(domain_id, tmp_path):
    """Recorded service events reach a reader of their _service_event topic."""
    from rclpy.serialization import serialize_message
    from std_srvs.srv import Trigger
    datas = []
    for k in range(20):
        event = Trigger.Event()
        event.info.event_type, event.info.sequence_number = 2, k
        event.response = [Trigger.Response(success=True, message=f'answer {k}')]
        datas.append(serialize_message(event))
    path = str(tmp_path / 'events')
    with Writer(path, version=9) as writer:
        connection = writer.add_connection(
            '/trigger/_service_event', 'std_srvs/srv/Trigger_Event', msgdef='int32 x',
            rihs01='RIHS01_' + '2' * 64)
        for k, data in enumerate(datas):
            writer.write(connection, START_NS + k * MS, data)
    reader = RawReader(domain_id, {'/trigger/_service_event': Trigger.Event})
    player = _player(domain_id, tmp_path, path, {'real_time_factor': 0.0, 'paused': True})
    try:
        reader.spin_until(lambda: reader.matched, "the player's writer")
        reader.status_when_ready()
        assert reader.trigger('resume').success
        assert _wait_exit(player) == 0, player.log()
        reader.spin_until(lambda: reader.count() >= len(datas), 'every event')
        assert reader.data['/trigger/_service_event'] == list(map(as_sent, datas))
    finally:
        reader.close()


def test_left_out_messages_are_counted_everywhere(domain_id, tmp_path):
    """
    A type not installed and a /clock: in the start line, ~/get_progress and the end line.

    Under --strict the type that is not installed makes the exit code 3; the /clock, which
    the player replaces by its own, does not.
    """
    path = str(tmp_path / 'bag')
    records = write_test_bag(path)
    client = TestClient(domain_id)
    player = _player(domain_id, tmp_path, path, {'sync': True}, ['--strict'])
    try:
        client.status_when_ready()
        response = client.call(GetProgress, 'get_progress', GetProgress.Request())
        total = len(records) + 4 + 5  # /clock and /mystery
        assert (response.messages_in_bag, response.messages_left_out) == (total, 9)
        assert response.left_out.splitlines() == [
            '4 /clock is not republished (the player publishes /clock): /clock',
            '5 type no_such_pkg/msg/Mystery is not installed: /mystery']
        assert response.messages_total == len(records)
        assert client.step('', 101).success
        response = client.call(GetProgress, 'get_progress', GetProgress.Request())
        assert response.messages_out == len(records)
        assert player.stop() == 3, player.log()
        log = player.log()
        assert f'2 topics, {len(records)} messages of {total} (4 /clock' in log, log
        assert (f"played {len(records)} of the bag's {total} messages; left out: 4 /clock is "
                'not republished') in log, log
    finally:
        client.close()
        player.stop()


def test_a_burst_at_factor_0_reaches_a_keep_all_reader_whole(domain_id, tmp_path):
    """
    3,000 messages on one topic as fast as possible: none overwritten before acknowledged.

    The writer keeps 100 samples; without its readers' acknowledgements holding it, a Python
    reader falls behind and the history overwrites what it has not taken.
    """
    from std_msgs.msg import String
    path = str(tmp_path / 'burst')
    messages = [(START_NS + k * 100_000, '/a', f'burst {k}') for k in range(3000)]
    write_string_bag(path, messages)
    reader = RawReader(domain_id, {'/a': String})
    player = _player(domain_id, tmp_path, path, {'real_time_factor': 0.0, 'paused': True})
    try:
        reader.spin_until(lambda: reader.matched == {'/a'}, "the player's writer")
        reader.status_when_ready()
        assert reader.trigger('resume').success
        reader.spin_until(lambda: reader.count() >= len(messages), 'every message', 60.0)
        assert _wait_exit(player) == 0, player.log()
        assert reader.data['/a'] == [as_sent(cdr(text)) for _, _, text in messages]
        assert 'no reader' not in player.log() and 'up to' not in player.log()
    finally:
        reader.close()


def test_messages_that_reach_no_reader_are_said(domain_id, tmp_path):
    """No reader at all: the end line is a warning that counts them and says why."""
    path = str(tmp_path / 'bag')
    # Topics of this test only: a reader of /a left by another test of this process on a
    # domain given out again would match.
    write_string_bag(path, [(stamp, f'/unread{topic}', text) for stamp, topic, text in MESSAGES])
    player = _player(domain_id, tmp_path, path, {'real_time_factor': 0.0})
    assert _wait_exit(player) == 0, player.log()
    [line] = [line for line in player.log().splitlines() if 'played ' in line]
    assert line.startswith('[WARN]'), line
    assert (f"played {len(MESSAGES)} of the bag's {len(MESSAGES)} messages; {len(MESSAGES)} "
            'went out while no reader of their topic had matched: /unread/a 200, /unread/b 100 '
            '(DDS discovery') in line, line
