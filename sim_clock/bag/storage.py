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
One rosbag2 bag read as rosbag2 reads it: its data files are the truth, metadata.yaml a hint.

The data files (sqlite3 ``.db3``, MCAP ``.mcap``, either compressed whole with zstd as
``.zstd``) are found where rosbag2 looks for them (``relative_file_paths`` of metadata.yaml,
relative to the bag, or to its parent folder before version 4), else in the bag's folder; each
is opened with rosbags' storage reader. Topics, types, counts, QoS and the time bounds come
from the data; metadata.yaml fills in what the data lacks (QoS of old sqlite3 schemas) and is
compared with it: every disagreement is a note (:attr:`StoredBag.notes`), never a message
lost. Messages compressed one by one with zstd are found by their frames' magic number.
Free of rclpy, as the read-ahead process runs it; memory stays bounded (one query or chunk per
file at a time; a file compressed whole is decompressed to a temporary file, in a stream).
"""

from dataclasses import dataclass
from dataclasses import field
import heapq
from operator import itemgetter
import os
from pathlib import Path
import re
import shutil
import tempfile
from typing import Dict
from typing import Iterator
from typing import List
from typing import Optional
from typing import Tuple

from rosbags.interfaces import Connection
from rosbags.interfaces import ConnectionExtRosbag2
from rosbags.interfaces import MessageDefinition
from rosbags.interfaces import MessageDefinitionFormat
from rosbags.interfaces import Qos
from rosbags.rosbag2.metadata import parse_qos
from rosbags.rosbag2.storage_mcap import McapReader
from rosbags.rosbag2.storage_sqlite3 import Sqlite3Reader
import yaml

try:
    from compression import zstd  # Python 3.14 on
except ImportError:
    from backports import zstd  # before: rosbags' own dependency, as rosbags imports it

#: rosbag2's storage ids that rosbags reads, by the suffix of their data files.
STORAGE_SUFFIXES = {'.db3': 'sqlite3', '.mcap': 'mcap'}
#: The suffix of a data file that rosbag2 compressed whole.
ZSTD_SUFFIX = '.zstd'
#: How a zstd frame starts: a message compressed on its own (CDR starts with 00 0x).
ZSTD_MAGIC = b'\x28\xb5\x2f\xfd'
_READERS = {'sqlite3': Sqlite3Reader, 'mcap': McapReader}
#: The QoS fields the player acts on: two profiles equal in these play alike.
_PLAYED_QOS = itemgetter(0, 1, 2, 3, 6)


class StorageError(Exception):
    """A bag whose data cannot be read at all; the message says why."""


@dataclass
class StoredTopic:
    """A topic of the bag as its data files hold it, with what metadata.yaml says of it."""

    name: str
    type_name: str
    serialization_format: str
    #: The QoS profiles it was recorded with: the data's, else metadata.yaml's.
    offered_qos: Tuple[Qos, ...]
    #: Where they come from: 'data', 'metadata.yaml' or '' (neither has any).
    qos_source: str
    #: Messages in the data files.
    message_count: int
    #: Messages metadata.yaml counts for it (None: not listed there).
    metadata_count: Optional[int] = None
    #: (file number, connection id) of its connections in the data files.
    parts: List[Tuple[int, int]] = field(default_factory=list)


@dataclass
class DataFile:
    """A data file of the bag: where it is, where it is read from, and how."""

    #: The file as found (compressed, if it is).
    path: str
    storage_id: str
    #: The file read: ``path``, or its decompressed copy.
    readable: str
    #: Whether each message is a zstd frame of its own.
    message_compression: bool = False
    size: int = 0


def natural_key(name: str) -> list:
    """Return a sort key that orders ``bag_2.db3`` before ``bag_10.db3``."""
    return [int(part) if part.isdigit() else part for part in re.split(r'(\d+)', name)]


def storage_of(name: str) -> Optional[str]:
    """Return the storage id of a data file's name (``.db3``, ``.mcap``, ``.zstd`` too)."""
    if name.endswith(ZSTD_SUFFIX):
        name = name[:-len(ZSTD_SUFFIX)]
    return STORAGE_SUFFIXES.get(os.path.splitext(name)[1])


class StoredBag:
    """
    One bag's data files open: topics, counts and time bounds from the data; messages by time.

    ``path``: a bag directory, or one data file. ``plan``: the files as a :class:`StoredBag`
    found them (:meth:`plan`), to open them again without looking at metadata.yaml (the
    read-ahead process). Raises :class:`StorageError` when no data file can be found or read.
    Call :meth:`close` to close the files and remove decompressed copies.
    """

    def __init__(self, path: str, plan: Optional[dict] = None):
        self.path = path
        #: What metadata.yaml and the data files disagree on, or what was missing: one note each.
        self.notes: List[str] = []
        #: Data files in the bag's folder that metadata.yaml does not list (not read).
        self.unlisted: List[str] = []
        self.metadata: Optional[dict] = None
        self.files: List[DataFile] = []
        self._storages: list = []
        self._tmpdir: Optional[str] = None
        self.is_open = True
        try:
            if plan is not None:
                self.files = [DataFile(**entry) for entry in plan['files']]
            else:
                self._find_files()
            self._open_files()
            if plan is None:
                self._detect_message_compression()
            self._collect()
        except BaseException:
            self.close()
            raise

    # -- finding the files -------------------------------------------------------------------

    def _find_files(self) -> None:
        path = self.path
        if not os.path.isdir(path):
            storage_id = storage_of(os.path.basename(path))
            if storage_id is None:
                raise StorageError(f'bag {path!r} is not a rosbag2 data file (.db3 or .mcap)')
            self.files = [DataFile(path, storage_id, path)]
            return
        listed = self._read_metadata()
        found = [os.path.join(path, name) for name in sorted(os.listdir(path), key=natural_key)
                 if storage_of(name) and os.path.isfile(os.path.join(path, name))]
        paths: List[str] = []
        missing: List[str] = []
        for entry in listed:
            candidate = self._resolve(entry)
            if candidate is None:
                missing.append(entry)
            elif candidate not in paths:
                paths.append(candidate)
        if missing:
            self.notes.append(f'metadata.yaml lists data files that are not there: '
                              f'{", ".join(missing)}')
        if not paths:
            if listed and found:
                self.notes.append("the data files in the bag's folder are read instead: "
                                  + ', '.join(os.path.basename(name) for name in found))
            paths = found
        else:
            self.unlisted = [name for name in found
                             if os.path.realpath(name) not in map(os.path.realpath, paths)]
        if not paths:
            what = 'is an empty directory' if not os.listdir(path) else 'holds no data file'
            raise StorageError(f'bag {path!r} {what}: a rosbag2 bag is a directory that holds '
                               'metadata.yaml and its .db3 or .mcap files')
        for name in paths:
            storage_id = storage_of(os.path.basename(name))
            if storage_id is None:
                raise StorageError(f'bag {path!r}: {name!r} is not a .db3 or .mcap file')
            self.files.append(DataFile(name, storage_id, name))

    def _read_metadata(self) -> List[str]:
        """Read metadata.yaml as a hint; return the data files it lists (may be none)."""
        yaml_path = os.path.join(self.path, 'metadata.yaml')
        if not os.path.exists(yaml_path):
            self.notes.append('no metadata.yaml: the bag is read from its data files')
            return []
        try:
            with open(yaml_path, encoding='utf-8') as stream:
                document = yaml.safe_load(stream)
            metadata = document['rosbag2_bagfile_information']
            if not isinstance(metadata, dict):
                raise TypeError('rosbag2_bagfile_information is not a mapping')
        except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError) as error:
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            self.notes.append(f'metadata.yaml cannot be read ({reason}): the bag is read '
                              'from its data files')
            return []
        self.metadata = metadata
        listed = metadata.get('relative_file_paths') or []
        if not isinstance(listed, list):
            self.notes.append("metadata.yaml's relative_file_paths is not a list")
            return []
        return [str(entry) for entry in listed]

    def _resolve(self, entry: str) -> Optional[str]:
        """
        Return where a listed data file is, or None.

        As rosbag2: relative to the bag (version 4 on) or to its parent folder (before, when
        the bag's name was part of each path), absolute as it is; then, as rosbags looks, by
        its name in the bag's folder.
        """
        version = self.metadata.get('version') if self.metadata else None
        base = self.path
        if isinstance(version, int) and version < 4:
            base = os.path.dirname(os.path.abspath(self.path))
        candidates = [entry if os.path.isabs(entry) else os.path.join(base, entry),
                      os.path.join(self.path, entry),
                      os.path.join(self.path, os.path.basename(entry))]
        for candidate in candidates:
            if os.path.isfile(candidate):
                return candidate
        return None

    # -- opening -------------------------------------------------------------------------------

    def _open_files(self) -> None:
        for data_file in self.files:
            if data_file.path.endswith(ZSTD_SUFFIX) and data_file.readable == data_file.path:
                data_file.readable = self._decompressed(data_file.path)
            try:
                data_file.size = os.path.getsize(data_file.path)
            except OSError:
                data_file.size = 0
            storage = _READERS[data_file.storage_id](Path(data_file.readable))
            storage.open()
            self._storages.append(storage)

    def _decompressed(self, path: str) -> str:
        """Decompress a file compressed whole into a temporary folder, in a stream."""
        if self._tmpdir is None:
            self._tmpdir = tempfile.mkdtemp(prefix='sim_clock_bag_')
        target = os.path.join(self._tmpdir, os.path.basename(path)[:-len(ZSTD_SUFFIX)])
        with open(path, 'rb') as compressed, zstd.open(compressed, 'rb') as source, \
                open(target, 'wb') as out:
            shutil.copyfileobj(source, out, 1 << 20)
        return target

    def _detect_message_compression(self) -> None:
        for data_file, storage in zip(self.files, self._storages):
            first = _first_data(storage)
            data_file.message_compression = bool(first) and first[:4] == ZSTD_MAGIC

    def _collect(self) -> None:
        """Make the topics from the data files, then compare them with metadata.yaml's."""
        topics: Dict[Tuple[str, str], StoredTopic] = {}
        self.start_time: Optional[int] = None
        self.end_time: Optional[int] = None
        self.message_count = 0
        for number, storage in enumerate(self._storages):
            meta = storage.metadata
            if meta.message_count:
                self.message_count += meta.message_count
                self.start_time = meta.start_time if self.start_time is None else min(
                    self.start_time, meta.start_time)
                self.end_time = meta.end_time if self.end_time is None else max(
                    self.end_time, meta.end_time)
            for connection in storage.connections:
                key = connection.topic, connection.msgtype
                topic = topics.get(key)
                ext = connection.ext
                if topic is None:
                    topic = topics[key] = StoredTopic(
                        connection.topic, connection.msgtype, ext.serialization_format, (), '',
                        0)
                topic.message_count += connection.msgcount
                topic.parts.append((number, connection.id))
                for qos in ext.offered_qos_profiles or ():
                    if qos not in topic.offered_qos:
                        topic.offered_qos += (qos,)
        for topic in topics.values():
            if topic.offered_qos:
                topic.qos_source = 'data'
        self.topics = sorted(topics.values(), key=lambda topic: (topic.name, topic.type_name))
        if self.metadata is not None:
            self._reconcile(topics)
        compressed = [os.path.basename(f.path) for f in self.files if f.message_compression]
        said = str((self.metadata or {}).get('compression_mode', '')).lower() == 'message'
        if compressed and not said:
            self.notes.append('messages are compressed one by one (zstd), which no '
                              'metadata.yaml says: decompressed')
        #: rosbags' view of each topic, for the reader: one connection per topic and type.
        self.connections = [
            Connection(
                id=number + 1, topic=topic.name, msgtype=topic.type_name,
                msgdef=MessageDefinition(MessageDefinitionFormat.NONE, ''), digest='',
                msgcount=topic.message_count,
                ext=ConnectionExtRosbag2(topic.serialization_format, list(topic.offered_qos)),
                owner=self)
            for number, topic in enumerate(self.topics)]

    def _reconcile(self, topics: Dict[Tuple[str, str], StoredTopic]) -> None:
        metadata, notes = self.metadata, self.notes
        start = _nested(metadata, 'starting_time', 'nanoseconds_since_epoch')
        duration = _nested(metadata, 'duration', 'nanoseconds')
        count = metadata.get('message_count')
        if self.message_count:
            first, last = self.start_time, self.end_time - 1
            if isinstance(start, int) and start != first:
                notes.append(f"metadata.yaml's starting_time is {start} ns, the first message "
                             f'is at {first} ns')
            if isinstance(duration, int) and duration != last - first:
                notes.append(f"metadata.yaml's duration is {duration} ns, the messages span "
                             f'{last - first} ns')
        if isinstance(count, int) and count != self.message_count:
            notes.append(f'metadata.yaml counts {count} messages, the data files hold '
                         f'{self.message_count}')
        listed = metadata.get('topics_with_message_count') or []
        seen = set()
        for entry in listed if isinstance(listed, list) else []:
            try:
                described = entry['topic_metadata']
                key = str(described['name']), str(described['type'])
                listed_count = entry.get('message_count')
            except (KeyError, TypeError):
                continue
            seen.add(key)
            try:
                qos = tuple(parse_qos(described.get('offered_qos_profiles') or []))
            except Exception as error:  # noqa: B902: rosbags' parse raises what YAML gives
                notes.append(f"metadata.yaml's QoS of {key[0]} cannot be read ({error})")
                qos = ()
            topic = topics.get(key)
            if topic is None:
                if listed_count:
                    notes.append(f'metadata.yaml lists {listed_count} messages of {key[0]} '
                                 f'({key[1]}) that the data files do not hold')
                continue
            topic.metadata_count = listed_count if isinstance(listed_count, int) else None
            if topic.metadata_count is not None and topic.metadata_count != \
                    topic.message_count:
                notes.append(f'{key[0]}: metadata.yaml counts {topic.metadata_count} messages, '
                             f'the data files hold {topic.message_count}')
            if not qos:
                continue
            if not topic.offered_qos:
                topic.offered_qos, topic.qos_source = qos, 'metadata.yaml'
            elif set(map(_PLAYED_QOS, qos)) != set(map(_PLAYED_QOS, topic.offered_qos)):
                notes.append(f'{key[0]}: metadata.yaml and the data files record other QoS '
                             "profiles; the data files' are used")
        unlisted = [f'{name} ({type_name})' for name, type_name in sorted(topics)
                    if (name, type_name) not in seen]
        if unlisted:
            notes.append(f'topics in the data files that metadata.yaml does not list: '
                         f'{", ".join(unlisted)}')
        if self.unlisted:
            notes.append('data files that metadata.yaml does not list are not read: '
                         + ', '.join(os.path.basename(name) for name in self.unlisted))

    # -- reading -------------------------------------------------------------------------------

    def plan(self) -> dict:
        """Return the files as found, to open them again (``plan`` of the constructor)."""
        return {'files': [vars(data_file).copy() for data_file in self.files]}

    def connections_of(self, connection_id: int) -> List[Tuple[int, int]]:
        """Return (file number, connection id) of a connection of :attr:`connections`."""
        return self.topics[connection_id - 1].parts

    def messages(self, indices: Dict[int, int], start: Optional[int] = None,
                 stop: Optional[int] = None) -> Iterator[Tuple[int, int, bytes]]:
        """
        Stream ``(index, time_ns, data)`` of the connections given, by time, from ``start``.

        ``indices``: an id of :attr:`connections` -> the index to yield with its messages.
        ``stop``: before this time (exclusive). Several data files are merged by time (at
        one stamp, the earlier file first); messages compressed one by one come decompressed.
        """
        by_file: Dict[int, Dict[int, int]] = {}
        for connection_id, index in indices.items():
            for number, file_connection in self.connections_of(connection_id):
                by_file.setdefault(number, {})[file_connection] = index
        streams = []
        for number in sorted(by_file):
            storage, wanted = self._storages[number], by_file[number]
            connections = [c for c in storage.connections if c.id in wanted]
            streams.append(_stream(storage.messages(connections, start, stop), wanted,
                                   self.files[number].message_compression))
        if not streams:
            return iter(())
        if len(streams) == 1:
            return streams[0]
        return heapq.merge(*streams, key=itemgetter(1))

    def close(self) -> None:
        """Close the data files and remove decompressed copies. Idempotent."""
        self.is_open = False
        storages, self._storages = self._storages, []
        for storage in storages:
            try:
                storage.close()
            except Exception:  # noqa: B902: a file half opened may fail to close; go on
                pass
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None


def _stream(messages, wanted: Dict[int, int], decompress: bool):
    if decompress:
        unpack = zstd.decompress
        for connection, time_ns, data in messages:
            yield wanted[connection.id], time_ns, unpack(data)
    else:
        for connection, time_ns, data in messages:
            yield wanted[connection.id], time_ns, data


def _first_data(storage) -> Optional[bytes]:
    """Return the data of a file's first message (any order), or None."""
    if isinstance(storage, Sqlite3Reader):
        row = storage.dbconn.execute('SELECT data FROM messages LIMIT 1').fetchone()
        return None if row is None else bytes(row[0])
    for _, _, data in storage.messages(storage.connections):
        return bytes(data[:4])
    return None


def _nested(mapping: dict, *keys):
    for key in keys:
        if not isinstance(mapping, dict):
            return None
        mapping = mapping.get(key)
    return mapping
