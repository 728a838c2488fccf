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
The same bag file twice: a lockstep replay recorded twice, byte for byte, in MCAP and sqlite3.

A bag player in sync mode replays three topics that share every frame, each twice a frame, in
the order /same_c, /same_a, /same_b; a recorder takes them (with their types, so subscribed at
once) into a directory of another name each run. Every file of the two bag directories must
have the same sha256, the frames be written by topic name and each topic in its own order, and
``simclock diff`` find them the same. Then ``simclock diff`` on recordings written here: its
exit codes and what it prints.
"""

import hashlib
import os
import subprocess

from bags import recording
from bags import RELIABLE_QOS
from bags import write_recording
from harness import executable
from harness import NS
from harness import TIMEOUT
import pytest
from rosbags.rosbag2 import Reader
from rosbags.rosbag2 import StoragePlugin
from rosbags.rosbag2 import Writer
from rosbags.typesys import get_typestore
from rosbags.typesys import Stores
from sim_clock.client.bag_diff import compare
from sim_clock.srv import Step
from sim_clock.wire.names import RECORDER_NODE_NAME

pytestmark = pytest.mark.process

MS = 1_000_000
#: The topics in the order the player publishes them within a frame.
TOPICS = ('/same_c', '/same_a', '/same_b')
#: Frames of 10 ms with data; the recording ends at the /clock after the last.
FRAMES = 30
END_NS = (FRAMES + 1) * 10 * MS


def write_input(path: str) -> None:
    """Write the replayed bag: from 10 ms, every 10 ms, each topic twice, in TOPICS order."""
    store = get_typestore(Stores.ROS2_JAZZY)
    string = store.types['std_msgs/msg/String']
    with Writer(path, version=9, storage_plugin=StoragePlugin.SQLITE3) as writer:
        connections = {topic: writer.add_connection(topic, 'std_msgs/msg/String',
                                                    typestore=store,
                                                    offered_qos_profiles=[RELIABLE_QOS])
                       for topic in TOPICS}
        for frame in range(1, FRAMES + 1):
            for topic in TOPICS:
                for copy in range(2):
                    data = store.serialize_cdr(string(data=f'{topic} {frame} {copy}'),
                                               'std_msgs/msg/String')
                    writer.write(connections[topic], frame * 10 * MS, data)


def record(start_server, client, inputs: str, output: str, storage: str) -> None:
    """Replay ``inputs`` in lockstep and record it into ``output``."""
    # The recorder is expected: no frame goes out before its readers have matched the
    # player's writers (a reader that matched a transient local writer late got the first
    # frames after later ones were written, and the file differed).
    player = start_server({'sync': True, 'time_step': 0.01,
                           'expected_participants': [f'/{RECORDER_NODE_NAME}']},
                          argv=[inputs, '--start-at-zero'], executable=executable('bag_player'))
    recorder = start_server(executable=executable('recorder'), argv=[
        output, '-s', storage, '--until', str(END_NS / NS),
        '-t', *(f'{topic}:std_msgs/msg/String' for topic in TOPICS)])
    client.status_when_ready()
    try:
        for _ in range(3):
            response = client.call(Step, 'step', Step.Request(steps=FRAMES // 3 + 1))
            assert response.success, response.message
        assert recorder.process.wait(60) == 0, recorder.log()
    finally:
        player.stop()
    assert 'recorded 180 messages' in recorder.log(), recorder.log()


def file_hashes(path: str) -> dict:
    """Return the sha256 of every file of a bag directory, by name."""
    hashes = {}
    for name in sorted(os.listdir(path)):
        with open(os.path.join(path, name), 'rb') as data:
            hashes[name] = hashlib.sha256(data.read()).hexdigest()
    return hashes


@pytest.mark.slow
@pytest.mark.parametrize('storage, data_file', [
    ('mcap', 'recording.mcap'), ('sqlite3', 'recording.db3')])
def test_two_recordings_of_a_lockstep_replay_are_the_same_files(
        start_server, client, tmp_path, storage, data_file):
    """Every file the same (sha256), frames by topic then each topic's order, compare agrees."""
    inputs = str(tmp_path / 'inputs')
    write_input(inputs)
    outputs = [str(tmp_path / name) for name in ('first', 'second')]
    for output in outputs:
        record(start_server, client, inputs, output, storage)
    first, second = (file_hashes(output) for output in outputs)
    assert set(first) == {'metadata.yaml', data_file}
    assert first == second
    store = get_typestore(Stores.ROS2_JAZZY)
    with Reader(outputs[0]) as bag:
        recorded = [(stamp, connection.topic,
                     store.deserialize_cdr(data, 'std_msgs/msg/String').data)
                    for connection, stamp, data in bag.messages()]
    # /clock 0 is the bag's first stamp (10 ms), whose data comes with the first frame, as
    # does the data of 20 ms; the player publishes a frame's data before its /clock, so the
    # recorder stamps it with the frame before. Each stamp: by topic, then each topic's order.
    published = [(max(frame - 2, 0) * 10 * MS, topic, f'{topic} {frame} {copy}')
                 for frame in range(1, FRAMES + 1) for topic in TOPICS for copy in range(2)]
    assert recorded == sorted(published, key=lambda message: message[:2])
    assert compare(*outputs).same
    assert _simclock(*outputs).returncode == 0


def _simclock(*args) -> subprocess.CompletedProcess:
    return subprocess.run([executable('simclock'), 'diff', *args], capture_output=True,
                          text=True, timeout=TIMEOUT * 2)


def test_simclock_diff_exits_0_1_2_and_says_why(tmp_path):
    """
    The command line: 0 the same, 1 different with the first difference, 2 unreadable.

    Two recordings without a message are 2 too, nothing to compare: never called the same.
    """
    first = write_recording(tmp_path / 'first', recording())
    same = write_recording(tmp_path / 'same', recording(), 'sqlite3')
    changed = recording()
    changed[6] = ('/a', 30 * MS, 'a3.X')
    other = write_recording(tmp_path / 'other', changed)
    result = _simclock(first, same)
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'same:' in result.stdout and '15 messages' in result.stdout
    result = _simclock(first, other)
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'first difference (bytes): /a #4 differs in its bytes' in result.stdout
    assert 'A: /a #4 (stamp 30000000 ns, frame 3, 13 bytes)' in result.stdout
    result = _simclock(first, str(tmp_path / 'absent'))
    assert result.returncode == 2, result.stdout + result.stderr
    assert f'cannot compare: {tmp_path / "absent"}: no such bag' in result.stderr
    empty_a = write_recording(tmp_path / 'empty_a', [])
    empty_b = write_recording(tmp_path / 'empty_b', [])
    result = _simclock(empty_a, empty_b)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f'cannot compare: {empty_a} and {empty_b} hold no message' in result.stderr
    assert result.stdout == ''
    assert 'Traceback' not in result.stderr
    assert os.path.isdir(first)
