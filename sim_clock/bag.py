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
Bags on ``rosbags``, free of any rclpy import: what a replay plays, and when.

:class:`Bag` opens a rosbag2 directory (sqlite3 or MCAP) or a single ``.db3``/``.mcap`` file,
decides which topics play (a topic filter, never ``/clock``, only importable message types)
and streams their messages in time order from any point: memory does not grow with the bag.
:class:`Cursor` hands the messages out up to a given bag time, one batch per frame, and starts
again from any time (seek, loop, reset). :class:`RecordingSummary` is the recorder's
bookkeeping. Message data stays serialized bytes throughout.
"""

from dataclasses import dataclass
from dataclasses import field
import importlib
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
from rosidl_generator_py.import_type_support_impl import UnsupportedTypeSupport

CLOCK_TOPIC = '/clock'

#: What reading a damaged bag may raise: rosbags' own error, the file system's, and the sqlite
#: driver's (rosbags reads sqlite3 through apsw). Anything else is a bug and propagates.
READ_ERRORS = (ReaderError, OSError, apsw.Error, EOFError)


class BagError(Exception):
    """A bag that cannot be played: missing, damaged or empty. The message says which."""


def get_message(type_name: str):
    """
    Return the Python class of a ROS message type such as ``std_msgs/msg/String``.

    The lookup of ``rosidl_runtime_py.utilities.get_message`` (not on PyPI), with the type
    support loaded too, so that a class that imports but cannot be published is refused here.
    Raise :class:`LookupError` naming the type when it is not available.
    """
    parts = type_name.split('/')
    if len(parts) == 2:
        parts = [parts[0], 'msg', parts[1]]
    if len(parts) != 3 or not all(parts) or parts[1] != 'msg':
        raise LookupError(f'{type_name!r} is not a message type name (package/msg/Name)')
    package, _, name = parts
    try:
        module = importlib.import_module(f'{package}.msg')
        message_class = getattr(module, name)
    except (ImportError, AttributeError) as error:
        raise LookupError(f'message type {type_name!r} is not importable ({error})') from None
    # rclpy loads the type support when a publisher is created; failing then would be too late.
    metaclass = type(message_class)
    importer = getattr(metaclass, '__import_type_support__', None)
    if importer is None:
        raise LookupError(f'{type_name!r} is not a ROS message class')
    try:
        importer()
    except (ImportError, UnsupportedTypeSupport) as error:
        raise LookupError(f'type support of {type_name!r} failed to load ({error})') from None
    if getattr(metaclass, '_TYPE_SUPPORT', None) is None:
        raise LookupError(f'type support of {type_name!r} is missing')
    return message_class


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

    def close(self) -> None:
        """Close the bag's files."""
        if self._reader.is_open:
            self._reader.close()


class Cursor:
    """
    Messages handed out in time order up to a given time, from a restartable stream.

    ``open_stream(start_ns)`` returns an iterator of tuples whose item 1 is the time in ns
    (rosbags' ``(connection, time_ns, data)``), in time order, from ``start_ns`` on.
    Each message is handed out once between two :meth:`seek` calls.
    """

    def __init__(self, open_stream: Callable[[int], Iterator[tuple]], start_ns: int):
        self._open_stream = open_stream
        self.seek(start_ns)

    def seek(self, start_ns: int) -> None:
        """Start again from ``start_ns``: the next message handed out is the first at or after."""
        self._stream = iter(self._open_stream(start_ns))
        self._pending = next(self._stream, None)
        self.position_ns = start_ns

    @property
    def exhausted(self) -> bool:
        """Whether every message has been handed out."""
        return self._pending is None

    @property
    def next_time_ns(self) -> Optional[int]:
        """Return the time of the next message, or None."""
        return None if self._pending is None else self._pending[1]

    def release(self, up_to_ns: int, emit: Callable[[tuple], None]) -> int:
        """Call ``emit(message)`` for every message stamped up to ``up_to_ns``; return how many."""
        pending = self._pending
        if pending is None or pending[1] > up_to_ns:
            return 0
        emit(pending)
        count = 1
        for message in self._stream:
            if message[1] > up_to_ns:
                self._pending = message
                return count
            emit(message)
            count += 1
        self._pending = None
        return count


@dataclass
class TopicCount:
    """Messages recorded on one topic, with the first and last timestamps."""

    type_name: str
    count: int = 0
    first_ns: Optional[int] = None
    last_ns: Optional[int] = None


class RecordingSummary:
    """What a recording holds: messages per topic, the time span, and what was left out."""

    def __init__(self):
        self.topics: Dict[str, TopicCount] = {}
        self.before_clock = 0
        self.time_jumps_back = 0
        self._last_clock_ns: Optional[int] = None

    def clock(self, time_ns: int) -> None:
        """Note a /clock value; count the times it went back (a reset, seek or loop)."""
        if self._last_clock_ns is not None and time_ns < self._last_clock_ns:
            self.time_jumps_back += 1
        self._last_clock_ns = time_ns

    def add_topic(self, topic: str, type_name: str) -> None:
        """Note that a topic is recorded (it is listed even if no message comes)."""
        self.topics.setdefault(topic, TopicCount(type_name))

    def message(self, topic: str, time_ns: int) -> None:
        """Note a message written at ``time_ns``."""
        entry = self.topics[topic]
        entry.count += 1
        if entry.first_ns is None or time_ns < entry.first_ns:
            entry.first_ns = time_ns
        if entry.last_ns is None or time_ns > entry.last_ns:
            entry.last_ns = time_ns

    @property
    def total(self) -> int:
        """Return the messages recorded, all topics."""
        return sum(entry.count for entry in self.topics.values())

    def span(self) -> Optional[Tuple[int, int]]:
        """Return (first, last) simulated time of the messages recorded, or None."""
        firsts = [e.first_ns for e in self.topics.values() if e.first_ns is not None]
        lasts = [e.last_ns for e in self.topics.values() if e.last_ns is not None]
        return (min(firsts), max(lasts)) if firsts else None

    def lines(self, path: str) -> List[str]:
        """Return the summary as text lines."""
        lines = [f'recorded {self.total} messages into {path}']
        span = self.span()
        if span:
            lines.append(
                f'simulated time span: {_seconds(span[0])} s to {_seconds(span[1])} s '
                f'({_seconds(span[1] - span[0])} s)')
        width = max((len(name) for name in self.topics), default=0)
        for name in sorted(self.topics):
            entry = self.topics[name]
            lines.append(f'  {name:<{width}}  {entry.count:>9}  {entry.type_name}')
        if self.before_clock:
            lines.append(f'{self.before_clock} messages came before any /clock and were not '
                         'recorded')
        if self.time_jumps_back:
            lines.append(f'simulated time went back {self.time_jumps_back} times (resets): '
                         'the bag holds several passes')
        return lines


def _seconds(time_ns: int) -> str:
    sec, nsec = divmod(time_ns, 1_000_000_000)
    return f'{sec}.{nsec:09d}'
