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

"""Bags written by the tests with rosbags: several topics and types, an unknown one, /clock."""

from dataclasses import dataclass
import os
import select

from rosbags.interfaces import Qos
from rosbags.interfaces import QosDurability
from rosbags.interfaces import QosHistory
from rosbags.interfaces import QosLiveliness
from rosbags.interfaces import QosReliability
from rosbags.interfaces import QosTime
from rosbags.rosbag2 import StoragePlugin
from rosbags.rosbag2 import Writer
from rosbags.typesys import get_typestore
from rosbags.typesys import Stores
from sim_clock.wire.names import TIME_STEP_KEY

MS = 1_000_000
#: The bags' first timestamp: 1000 s and a few ns, so that time is checked to the nanosecond.
START_NS = 1000 * 1_000_000_000 + 7
UNKNOWN_TYPE = 'no_such_pkg/msg/Mystery'

STORAGES = {'sqlite3': StoragePlugin.SQLITE3, 'mcap': StoragePlugin.MCAP}

_ZERO = QosTime(0, 0)
RELIABLE_QOS = Qos(QosHistory.KEEP_LAST, 10, QosReliability.RELIABLE, QosDurability.VOLATILE,
                   _ZERO, _ZERO, QosLiveliness.AUTOMATIC, _ZERO, False)
BEST_EFFORT_QOS = RELIABLE_QOS._replace(reliability=QosReliability.BEST_EFFORT)


@dataclass(frozen=True)
class Record:
    """One message the bag holds, as a subscriber identifies it."""

    time_ns: int
    topic: str
    key: str  # /chatter: the string; /pose: 'x' of the point, as text


def write_test_bag(path: str, storage: str = 'sqlite3', seconds: float = 1.0) -> list:
    """
    Write a bag and return the :class:`Record` of every message that plays, in time order.

    /chatter (std_msgs/String) every 100 ms from the start, /pose (geometry_msgs/PointStamped,
    best effort) every 30 ms from 5 ms on, /mystery of a type nobody has, and a /clock that
    must not be republished. No two messages share a timestamp.
    """
    store = get_typestore(Stores.ROS2_JAZZY)
    string_type = store.types['std_msgs/msg/String']
    point_stamped = store.types['geometry_msgs/msg/PointStamped']
    header_type = store.types['std_msgs/msg/Header']
    time_type = store.types['builtin_interfaces/msg/Time']
    point_type = store.types['geometry_msgs/msg/Point']
    clock_type = store.types['rosgraph_msgs/msg/Clock']
    end_ns = START_NS + round(seconds * 1000) * MS
    records = []
    with Writer(path, version=9, storage_plugin=STORAGES[storage]) as writer:
        chatter = writer.add_connection('/chatter', 'std_msgs/msg/String', typestore=store,
                                        offered_qos_profiles=[RELIABLE_QOS])
        pose = writer.add_connection('/pose', 'geometry_msgs/msg/PointStamped',
                                     typestore=store, offered_qos_profiles=[BEST_EFFORT_QOS])
        mystery = writer.add_connection('/mystery', UNKNOWN_TYPE, msgdef='int32 x',
                                        rihs01='RIHS01_' + '1' * 64)
        clock = writer.add_connection('/clock', 'rosgraph_msgs/msg/Clock', typestore=store)
        messages = []
        for k, t in enumerate(range(START_NS, end_ns + 1, 100 * MS)):
            text = f'chatter {k}'
            data = store.serialize_cdr(string_type(data=text), 'std_msgs/msg/String')
            messages.append((t, chatter, data, Record(t, '/chatter', text)))
        for k, t in enumerate(range(START_NS + 5 * MS, end_ns + 1, 30 * MS)):
            sec, nanosec = divmod(t, 1_000_000_000)
            msg = point_stamped(
                header=header_type(stamp=time_type(sec=sec, nanosec=nanosec), frame_id='map'),
                point=point_type(x=float(k), y=0.0, z=0.0))
            data = store.serialize_cdr(msg, 'geometry_msgs/msg/PointStamped')
            messages.append((t, pose, data, Record(t, '/pose', str(float(k)))))
        for t in range(START_NS + 7 * MS, end_ns + 1, 200 * MS):
            messages.append((t, mystery, b'\x00\x01\x00\x00\x2a\x00\x00\x00', None))
        for t in range(START_NS + 11 * MS, end_ns + 1, 250 * MS):
            data = store.serialize_cdr(
                clock_type(clock=time_type(sec=999_999, nanosec=0)), 'rosgraph_msgs/msg/Clock')
            messages.append((t, clock, data, None))
        messages.sort(key=lambda m: m[0])
        assert len({m[0] for m in messages}) == len(messages), 'timestamps must be distinct'
        for t, connection, data, record in messages:
            writer.write(connection, t, data)
            if record is not None:
                records.append(record)
    return records


def write_large_bag(path: str, storage: str = 'sqlite3', count: int = 2000,
                    size: int = 10_000) -> list:
    """
    Write ``count`` std_msgs/String of ``size`` characters on /chatter, 1 kHz; return the times.

    Large enough that the read-ahead is far ahead of a slow consumer, and that damaging the
    end of the data file leaves its start readable.
    """
    store = get_typestore(Stores.ROS2_JAZZY)
    string_type = store.types['std_msgs/msg/String']
    times = [START_NS + k * MS for k in range(count)]
    with Writer(path, version=9, storage_plugin=STORAGES[storage]) as writer:
        chatter = writer.add_connection('/chatter', 'std_msgs/msg/String', typestore=store,
                                        offered_qos_profiles=[RELIABLE_QOS])
        for k, t in enumerate(times):
            text = f'{k:08d}'.ljust(size, 'x')
            writer.write(chatter, t, store.serialize_cdr(string_type(data=text),
                                                         'std_msgs/msg/String'))
    return times


def write_string_bag(path: str, messages, storage: str = 'sqlite3', *, compression: str = '',
                     qos: dict = None) -> None:
    """
    Write ``messages``, (stamp, topic, text) of std_msgs/String, recorded reliable.

    ``compression``: '', 'file' or 'message' (zstd, as rosbag2 compresses). ``qos``: topic ->
    the profile it is recorded with, instead of :data:`RELIABLE_QOS`.
    """
    from rosbags.rosbag2 import CompressionFormat
    from rosbags.rosbag2 import CompressionMode
    store = get_typestore(Stores.ROS2_JAZZY)
    string_type = store.types['std_msgs/msg/String']
    writer = Writer(path, version=9, storage_plugin=STORAGES[storage])
    if compression:
        writer.set_compression(CompressionMode[compression.upper()], CompressionFormat.ZSTD)
    with writer:
        connections = {}
        for stamp, topic, text in sorted(messages, key=lambda m: m[0]):
            if topic not in connections:
                connections[topic] = writer.add_connection(
                    topic, 'std_msgs/msg/String', typestore=store,
                    offered_qos_profiles=[(qos or {}).get(topic, RELIABLE_QOS)])
            writer.write(connections[topic], stamp,
                         store.serialize_cdr(string_type(data=text), 'std_msgs/msg/String'))


def wait_process_ended(pid: int, timeout: float = 15.0) -> bool:
    """Wait (event-driven, through a pidfd) until process ``pid`` has ended; return whether."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(timeout * 1000))
    finally:
        os.close(fd)


def batch_stream(times, sizes=(3,)):
    """Open batches of ``times`` (data: the time as text) cut by ``sizes`` in turn (0: empty)."""
    def open_batches(start_ns):
        left = [t for t in times if t >= start_ns]
        k = 0
        while left:
            size = sizes[k % len(sizes)]
            k += 1
            batch, left = left[:size], left[size:]
            yield batch, [0] * len(batch), [str(t) for t in batch]
    return open_batches


def recording() -> list:
    """Return (topic, stamp, text) of a recording: frames 1 to 5, /a twice and /b once each."""
    messages = []
    for frame in range(1, 6):
        stamp = frame * 10 * MS
        messages += [('/a', stamp, f'a{frame}.0'), ('/a', stamp, f'a{frame}.1'),
                     ('/b', stamp, f'b{frame}')]
    return messages


def cdr(text: str) -> bytes:
    """Return a std_msgs/String holding ``text``, serialized."""
    store = get_typestore(Stores.ROS2_JAZZY)
    string = store.types['std_msgs/msg/String']
    return bytes(store.serialize_cdr(string(data=text), 'std_msgs/msg/String'))


def write_recording(path, messages, storage: str = 'mcap', time_step_ns=10 * MS) -> str:
    """
    Write a recording as the recorder does; return the path.

    ``messages``: (topic, stamp, text or bytes) of std_msgs/String, written in this order; the
    /clock step goes into the metadata unless None.
    """
    store = get_typestore(Stores.ROS2_JAZZY)
    path = str(path)
    with Writer(path, version=9, storage_plugin=STORAGES[storage]) as writer:
        if time_step_ns is not None:
            writer.set_custom_data(TIME_STEP_KEY, str(time_step_ns))
        connections = {}
        for topic, stamp, data in messages:
            if topic not in connections:
                connections[topic] = writer.add_connection(topic, 'std_msgs/msg/String',
                                                           typestore=store)
            writer.write(connections[topic], stamp,
                         cdr(data) if isinstance(data, str) else data)
    return path


def batch_datas(batch) -> list:
    """Return the messages of a packed batch, one bytes object each."""
    _, _, blob, offsets = batch
    return [blob[a:b] for a, b in zip(offsets, offsets[1:])]


def flatten_batches(batches):
    """Return [(time, topic index, data)] of batches (packed or not), checking each."""
    out = []
    for batch in batches:
        if len(batch) == 4:
            assert len(batch[3]) == len(batch[0]) + 1 and batch[3][-1] == len(batch[2])
            batch = (batch[0].tolist(), batch[1].tolist(), batch_datas(batch))
        times, topics, datas = batch
        assert len(times) == len(topics) == len(datas) > 0
        out += zip(times, topics, datas)
    return out


def bag_messages(bag, start_ns) -> list:
    """Return [(time, topic index, data)] of ``bag``'s messages from ``start_ns`` on."""
    return [(t, i, d) for i, t, d in bag.messages(start_ns)]


# -- bags as other writers leave them ------------------------------------------------------------

def read_metadata(path) -> dict:
    """Return the ``rosbag2_bagfile_information`` of a bag's metadata.yaml."""
    import yaml
    with open(os.path.join(path, 'metadata.yaml')) as stream:
        return yaml.safe_load(stream)['rosbag2_bagfile_information']


def write_metadata(path, info: dict) -> None:
    """Write ``info`` as the bag's metadata.yaml."""
    import yaml
    with open(os.path.join(path, 'metadata.yaml'), 'w') as stream:
        yaml.safe_dump({'rosbag2_bagfile_information': info}, stream, sort_keys=False)


def edit_metadata(path, edit) -> dict:
    """Change a bag's metadata.yaml in place: ``edit(info)`` changes the dict; return it."""
    info = read_metadata(path)
    edit(info)
    write_metadata(path, info)
    return info


def as_version(path, version: int) -> None:
    """
    Rewrite a bag's metadata.yaml as rosbag2 wrote that version.

    Before 4: no QoS, each file named with the bag's folder in front (relative to the folder
    around the bag); 4 to 8: QoS profiles as one YAML text; 9: as rosbags writes it.
    """
    import yaml
    folder = os.path.basename(os.path.normpath(path))

    def edit(info):
        info['version'] = version
        for key in ('files', 'custom_data', 'ros_distro') if version < 5 else ():
            info.pop(key, None)
        for entry in info['topics_with_message_count']:
            described = entry['topic_metadata']
            described.pop('type_description_hash', None)
            profiles = described.pop('offered_qos_profiles', [])
            if 4 <= version < 9:
                described['offered_qos_profiles'] = yaml.safe_dump(profiles) if profiles else ''
        if version < 4:
            info['relative_file_paths'] = [f'{folder}/{name}'
                                           for name in info['relative_file_paths']]
    edit_metadata(path, edit)


def write_split_bag(path, parts, storage: str = 'sqlite3') -> list:
    """
    Write a bag split into one data file per item of ``parts`` (lists of (stamp, topic, text)).

    Each file is written by rosbags as its own bag, then moved into ``path``; metadata.yaml
    lists them in order. Return every (stamp, topic, text), in the order of the parts.
    """
    import shutil
    os.makedirs(path)
    names, topics, everything = [], {}, []
    suffix = '.db3' if storage == 'sqlite3' else '.mcap'
    for number, messages in enumerate(parts):
        part = f'{path}_part{number}'
        write_string_bag(part, messages, storage)
        info = read_metadata(part)
        name = f'{os.path.basename(path)}_{number}{suffix}'
        [data] = info['relative_file_paths']
        shutil.move(os.path.join(part, data), os.path.join(path, name))
        shutil.rmtree(part)
        names.append(name)
        for entry in info['topics_with_message_count']:
            key = entry['topic_metadata']['name']
            if key in topics:
                topics[key]['message_count'] += entry['message_count']
            else:
                topics[key] = entry
        everything += sorted(messages, key=lambda m: m[0])
        if number == 0:
            merged = info
    stamps = [stamp for stamp, _, _ in everything]
    merged.update(relative_file_paths=names, message_count=len(everything),
                  topics_with_message_count=list(topics.values()))
    merged['starting_time'] = {'nanoseconds_since_epoch': min(stamps)}
    merged['duration'] = {'nanoseconds': max(stamps) - min(stamps)}
    merged.pop('files', None)
    write_metadata(path, merged)
    return everything


def write_bare_db3(path, messages, qos: str = None, schema_table: bool = False) -> None:
    """
    Write a sqlite3 data file as the first rosbag2 versions did, with Python's sqlite3.

    ``messages``: (stamp, topic, text) of std_msgs/String. No ``offered_qos_profiles`` column
    unless ``qos`` gives its text (for every topic).
    """
    import sqlite3
    connection = sqlite3.connect(path)
    qos_column = ', offered_qos_profiles TEXT NOT NULL' if qos is not None else ''
    connection.execute('CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT NOT NULL, '
                       f'type TEXT NOT NULL, serialization_format TEXT NOT NULL{qos_column})')
    connection.execute('CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id INTEGER NOT '
                       'NULL, timestamp INTEGER NOT NULL, data BLOB NOT NULL)')
    connection.execute('CREATE INDEX timestamp_idx ON messages (timestamp ASC)')
    ids = {}
    for stamp, topic, text in messages:
        if topic not in ids:
            ids[topic] = len(ids) + 1
            row = [ids[topic], topic, 'std_msgs/msg/String', 'cdr']
            if qos is not None:
                row.append(qos)
            connection.execute(f'INSERT INTO topics VALUES ({",".join("?" * len(row))})', row)
        connection.execute('INSERT INTO messages(topic_id, timestamp, data) VALUES (?, ?, ?)',
                           (ids[topic], stamp, cdr(text)))
    connection.commit()
    connection.close()
