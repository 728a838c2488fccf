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
A rosbag2 bag (sqlite3 or MCAP) opened with rosbags: the topics that play, streamed in batches.

Free of rclpy's node API, as the read-ahead process (:mod:`.read_ahead`) runs it. Memory stays
bounded whatever the bag's size; message data stays serialized bytes throughout.
"""

from dataclasses import dataclass
from dataclasses import field
import os
from typing import Callable
from typing import Dict
from typing import Iterable
from typing import Iterator
from typing import List
from typing import Optional
from typing import Tuple

import apsw
from rosbags.interfaces import Qos
from rosbags.rosbag2 import Reader
from rosbags.rosbag2 import ReaderError
from sim_clock.message_types import get_message
from sim_clock.names import CLOCK_TOPIC

#: A batch holds at most this many messages ...
BATCH_MESSAGES = 1000
#: ... and at most this many bytes of message data (or a single larger message).
BATCH_BYTES = 1 << 20


class BagError(Exception):
    """A bag that cannot be played: missing, damaged or empty. The message says which."""


class BagReadError(Exception):
    """Reading the bag failed while playing: in the read-ahead process, or that process ended."""


#: What reading a damaged bag may raise: rosbags' own error, the file system's, the sqlite
#: driver's (rosbags reads sqlite3 through apsw), and the read-ahead's report of any of them.
#: Anything else is a bug and propagates.
READ_ERRORS = (ReaderError, OSError, apsw.Error, EOFError, BagReadError)

#: A batch of messages in time order, as three lists of one length: the times in ns, the
#: indices in :attr:`Bag.topics` and the serialized data.
Batch = Tuple[List[int], List[int], List[bytes]]


@dataclass(frozen=True)
class BagTopic:
    """A topic that plays: name, type, Python class and the QoS profiles it was recorded with."""

    name: str
    type_name: str
    message_class: object
    offered_qos: Tuple[Qos, ...]
    connection_ids: Tuple[int, ...]
    message_count: int


@dataclass
class Skipped:
    """Topics of the bag that do not play, by reason."""

    clock: List[str] = field(default_factory=list)
    filtered: List[str] = field(default_factory=list)
    #: type name -> (topics, reason); one warning per type.
    unknown_types: Dict[str, Tuple[List[str], str]] = field(default_factory=dict)


class Bag:
    """
    An open bag: the topics that play and a stream of their messages from any time.

    ``topics``: play only these (None: all). Raises :class:`BagError` with a reason when the
    bag is missing, damaged or holds no message at all; the first message is read here, so a
    damaged data file is found before anything else starts.
    """

    def __init__(self, path: str, topics: Optional[Iterable[str]] = None,
                 lookup: Callable[[str], object] = get_message):
        self.path = path
        if not os.path.exists(path):
            raise BagError(f'bag {path!r} does not exist')
        try:
            self._reader = Reader(path)
            self._reader.open()
        except READ_ERRORS as error:
            raise BagError(f'bag {path!r} cannot be read: {error}') from None
        try:
            self._select(topics, lookup)
        except BagError:
            self.close()
            raise

    def _select(self, wanted: Optional[Iterable[str]], lookup: Callable[[str], object]) -> None:
        reader = self._reader
        if reader.message_count == 0:
            raise BagError(f'bag {self.path!r} holds no messages')
        #: The bag's first and last timestamps (all topics), in ns.
        self.start_ns = reader.start_time
        self.end_ns = reader.end_time - 1
        wanted = None if wanted is None else set(wanted)
        self.skipped = Skipped()
        by_topic: Dict[str, list] = {}
        for connection in reader.connections:
            by_topic.setdefault(connection.topic, []).append(connection)
        classes = {}
        self.topics: List[BagTopic] = []
        for name in sorted(by_topic):
            connections = by_topic[name]
            type_names = sorted({c.msgtype for c in connections})
            if name == CLOCK_TOPIC:
                self.skipped.clock.append(name)
                continue
            if wanted is not None and name not in wanted:
                self.skipped.filtered.append(name)
                continue
            if len(type_names) != 1:
                self.skipped.unknown_types.setdefault(
                    ' and '.join(type_names),
                    ([], f'one topic recorded with several types ({type_names})'))[0].append(name)
                continue
            type_name = type_names[0]
            if type_name not in classes:
                try:
                    classes[type_name] = lookup(type_name)
                except LookupError as error:
                    classes[type_name] = None
                    self.skipped.unknown_types[type_name] = ([], str(error))
            if classes[type_name] is None:
                self.skipped.unknown_types[type_name][0].append(name)
                continue
            offered = []
            for connection in connections:
                offered += getattr(connection.ext, 'offered_qos_profiles', None) or []
            self.topics.append(BagTopic(
                name=name, type_name=type_name, message_class=classes[type_name],
                offered_qos=tuple(offered),
                connection_ids=tuple(c.id for c in connections),
                message_count=sum(c.msgcount for c in connections)))
        self.missing_topics = sorted((wanted or set()) - set(by_topic))
        self._connections = [c for c in reader.connections
                             if any(c.id in t.connection_ids for t in self.topics)]
        #: connection id -> index in :attr:`topics`
        self.topic_index = {cid: index for index, topic in enumerate(self.topics)
                            for cid in topic.connection_ids}
        # Read the first message now: a damaged data file fails here, before anything starts.
        if self._connections:
            try:
                next(iter(self.messages(self.start_ns)), None)
            except READ_ERRORS as error:
                raise BagError(f'bag {self.path!r} is damaged: {error}') from None

    @property
    def duration_ns(self) -> int:
        """Return the time from the first to the last message, in ns."""
        return self.end_ns - self.start_ns

    def messages(self, start_ns: int) -> Iterator[tuple]:
        """
        Stream ``(connection, time_ns, data)`` of the topics that play, from ``start_ns`` on.

        In time order, read as they are consumed. Nothing plays: an empty stream.
        """
        if not self._connections:
            return iter(())
        return self._reader.messages(self._connections, start=start_ns)

    def batches(self, start_ns: int, max_messages: int = BATCH_MESSAGES,
                max_bytes: int = BATCH_BYTES) -> Iterator[Batch]:
        """
        Stream the messages of :meth:`messages` from ``start_ns`` on as :data:`Batch` lists.

        A batch ends at ``max_messages`` messages or once it holds ``max_bytes`` of data, so
        memory stays bounded whatever the messages' size. No batch is empty.
        """
        index = self.topic_index
        messages = self.messages(start_ns)
        while True:
            times: List[int] = []
            topics: List[int] = []
            datas: List[bytes] = []
            add_time, add_topic, add_data = times.append, topics.append, datas.append
            size = 0
            for connection, time_ns, data in messages:
                add_time(time_ns)
                add_topic(index[connection.id])
                add_data(data)
                size += len(data)
                if size >= max_bytes or len(datas) >= max_messages:
                    break
            if not datas:
                return
            yield times, topics, datas

    def close(self) -> None:
        """Close the bag's files."""
        if self._reader.is_open:
            self._reader.close()
