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
import heapq
import itertools
from operator import itemgetter
import os
import re
from typing import Callable
from typing import Dict
from typing import Iterable
from typing import Iterator
from typing import List
from typing import Optional
from typing import Sequence
from typing import Tuple
from typing import Union

import apsw
from rosbags.interfaces import Qos
from rosbags.rosbag2 import ReaderError
from sim_clock.bag.storage import StorageError
from sim_clock.bag.storage import StoredBag
from sim_clock.bag.storage import zstd
from sim_clock.core.units import MAX_TIME_NS
from sim_clock.wire.message_types import get_message
from sim_clock.wire.names import CLOCK_TOPIC

#: A batch holds at most this many messages ...
BATCH_MESSAGES = 1000
#: ... and at most this many bytes of message data (or a single larger message).
BATCH_BYTES = 1 << 20


class BagError(Exception):
    """A bag that cannot be played: missing or damaged. The message says which."""


class BagReadError(Exception):
    """Reading the bag failed while playing: in the read-ahead process, or that process ended."""


#: What reading a damaged bag may raise: rosbags' own error, the file system's, the sqlite
#: driver's (rosbags reads sqlite3 through apsw), zstd's, the storage's and the read-ahead's
#: report of any of them. Anything else is a bug and propagates.
READ_ERRORS = (ReaderError, OSError, apsw.Error, EOFError, BagReadError, StorageError,
               zstd.ZstdError)

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


@dataclass(frozen=True)
class LeftOut:
    """Messages of the bag that never play, for one reason."""

    count: int
    #: Why, with the topics: ``type std_msgs/msg/X is not installed: /x``.
    reason: str
    #: Whether it is left out by choice: the user's (a topic selection, an offset, a limit)
    #: or the player's (a /clock in the bag: the player publishes its own). ``--strict`` does
    #: not count those.
    chosen: bool


#: How rosbag2 names the topic of a service's recorded events: the service's name and this.
SERVICE_EVENT_SUFFIX = '/_service_event'


@dataclass(frozen=True)
class TopicFilter:
    """
    Which topics play, as ``ros2 bag play`` selects them (rosbag2's ``allow_topic``).

    A topic named in ``exclude_topics`` (a service's events: in ``exclude_services``), or that
    ``exclude_regex`` matches whole, never plays. Otherwise, when ``topics`` (for service
    events: ``services``) or ``regex`` is given, a topic plays if it is named there or
    ``regex`` matches it whole; else every topic plays. Services are given by their event
    topics (``/srv/_service_event``); the lists of topics do not select services, nor the lists
    of services topics. Regular expressions are Python's (rosbag2 uses ECMAScript's).
    """

    topics: Tuple[str, ...] = ()
    services: Tuple[str, ...] = ()
    regex: str = ''
    exclude_topics: Tuple[str, ...] = ()
    exclude_services: Tuple[str, ...] = ()
    exclude_regex: str = ''

    def allows(self, name: str) -> bool:
        """Return whether the topic ``name`` plays."""
        service = name.endswith(SERVICE_EVENT_SUFFIX)
        if name in (self.exclude_services if service else self.exclude_topics):
            return False
        if self.exclude_regex and re.fullmatch(self.exclude_regex, name):
            return False
        named = self.services if service else self.topics
        if not (named or self.regex):
            return True
        return name in named or bool(self.regex and re.fullmatch(self.regex, name))

    @property
    def named(self) -> List[str]:
        """Return the topics asked for by name (a name not in the bag is reported)."""
        return [*self.topics, *self.services]


class Bag:
    """
    Open bags: the topics that play and one stream of their messages, from any time.

    ``path``: a bag, or a list of bags whose messages are merged by time into one timeline (at
    one stamp, the bag given first comes first, and within a bag its own order).
    ``storage_ids``: for each bag, the storage it must be (``sqlite3``, ``mcap``), or None.
    ``topics``: play only these (a list of names, or a :class:`TopicFilter`; None: all).
    ``until_ns``: no message stamped after this bag time plays; the end is there at the latest.
    ``plans``: for each bag, its files as found when it was first opened
    (:meth:`StoredBag.plan`): the read-ahead process opens them again so.

    Each bag is read from its data files (:class:`~sim_clock.bag.storage.StoredBag`): its
    topics, counts and time bounds are the data's; what metadata.yaml disagrees on is in
    :attr:`notes`. Every message of the bags either plays or is counted in :attr:`left_out`
    with its reason. A bag without messages plays: it starts and ends at once.
    Raises :class:`BagError` with a reason when a bag is missing, damaged or of another storage
    than given; the first message of each is read here, so a damaged data file is found
    before anything else starts.
    """

    def __init__(self, path: Union[str, Sequence[str]],
                 topics: Union[None, Iterable[str], TopicFilter] = None,
                 lookup: Callable[[str], object] = get_message, *,
                 storage_ids: Optional[Sequence[Optional[str]]] = None,
                 until_ns: Optional[int] = None, plans: Optional[Sequence[dict]] = None):
        #: The bags, in the order given.
        self.paths = [path] if isinstance(path, str) else list(path)
        #: The bags, for a log line.
        self.path = ' + '.join(self.paths)
        self.storage_ids = list(storage_ids or [None] * len(self.paths))
        self.until_ns = until_ns
        self._readers: List[StoredBag] = []
        try:
            for number, (bag_path, storage_id) in enumerate(zip(self.paths, self.storage_ids)):
                self._readers.append(
                    _open(bag_path, storage_id, None if plans is None else plans[number]))
            if topics is None or isinstance(topics, TopicFilter):
                selection = topics or TopicFilter()
            else:
                names = tuple(topics)
                selection = TopicFilter(topics=names, services=names)
            self._select(selection, lookup)
        except BagError:
            self.close()
            raise

    @property
    def notes(self) -> List[Tuple[str, List[str]]]:
        """Return (bag, notes) of each bag whose metadata.yaml was reconciled with its data."""
        return [(reader.path, reader.notes) for reader in self._readers if reader.notes]

    @property
    def stored(self) -> List[StoredBag]:
        """Return the bags as read from their data files."""
        return list(self._readers)

    def plans(self) -> List[dict]:
        """Return each bag's files as found, to open them again (``plans``)."""
        return [reader.plan() for reader in self._readers]

    def _select(self, selection: TopicFilter, lookup: Callable[[str], object]) -> None:
        readers = self._readers
        #: Messages in the bags' data files, all topics.
        self.message_count = sum(reader.message_count for reader in readers)
        if self.message_count:
            #: The first and last timestamps (all topics, all bags), in ns.
            self.start_ns = min(reader.start_time for reader in readers if reader.message_count)
            self.end_ns = max(reader.end_time - 1 for reader in readers if reader.message_count)
        else:  # nothing to play: an instant, at metadata.yaml's start if it says one
            starts = [_metadata_start(reader) for reader in readers]
            self.start_ns = self.end_ns = min([s for s in starts if s is not None] or [0])
        if self.until_ns is not None:
            self.end_at(self.until_ns)
        self.skipped = Skipped()
        #: Messages that never play, by reason.
        self.left_out: List[LeftOut] = []
        by_topic: Dict[str, list] = {}
        for number, reader in enumerate(readers):
            for connection in reader.connections:
                by_topic.setdefault(connection.topic, []).append((number, connection))
        classes = {}
        self.topics: List[BagTopic] = []
        #: (bag number, connection id) -> index in :attr:`topics`
        self._topic_index: Dict[Tuple[int, int], int] = {}
        left_out: Dict[Tuple[str, bool], List[Tuple[str, int]]] = {}

        def leave_out(reason: str, name: str, connections, chosen: bool = False) -> None:
            left_out.setdefault((reason, chosen), []).append(
                (name, sum(c.msgcount for c in connections)))

        for name in sorted(by_topic):
            connections = [c for _, c in by_topic[name]]
            type_names = sorted({c.msgtype for c in connections})
            formats = sorted({c.ext.serialization_format for c in connections})
            if name == CLOCK_TOPIC:
                self.skipped.clock.append(name)
                leave_out('/clock is not republished (the player publishes /clock)', name,
                          connections, chosen=True)
                continue
            if not selection.allows(name):
                self.skipped.filtered.append(name)
                leave_out('not selected', name, connections, chosen=True)
                continue
            if len(type_names) != 1:
                reason = f'one topic recorded with several types ({type_names})'
                self.skipped.unknown_types.setdefault(
                    ' and '.join(type_names), ([], reason))[0].append(name)
                leave_out(reason, name, connections)
                continue
            type_name = type_names[0]
            if formats != ['cdr']:
                reason = f'serialization format {" and ".join(formats)}, not cdr'
                self.skipped.unknown_types.setdefault(type_name, ([], reason))[0].append(name)
                leave_out(reason, name, connections)
                continue
            if type_name not in classes:
                try:
                    classes[type_name] = lookup(type_name)
                except LookupError as error:
                    classes[type_name] = None
                    self.skipped.unknown_types[type_name] = ([], str(error))
            if classes[type_name] is None:
                self.skipped.unknown_types[type_name][0].append(name)
                leave_out(f'type {type_name} is not installed', name, connections)
                continue
            offered = []
            for connection in connections:
                offered += getattr(connection.ext, 'offered_qos_profiles', None) or []
            for number, connection in by_topic[name]:
                self._topic_index[number, connection.id] = len(self.topics)
            self.topics.append(BagTopic(
                name=name, type_name=type_name, message_class=classes[type_name],
                offered_qos=tuple(offered),
                connection_ids=tuple(c.id for c in connections),
                message_count=sum(c.msgcount for c in connections)))
        for (reason, chosen), counted in left_out.items():
            total = sum(count for _, count in counted)
            if total:
                names = ', '.join(name for name, count in counted if count)
                self.left_out.append(LeftOut(total, f'{reason}: {names}', chosen))
        self.missing_topics = sorted(set(selection.named) - set(by_topic))
        #: For each bag, its connections that play -> their index in :attr:`topics`.
        self._indices = [
            {c.id: self._topic_index[number, c.id] for c in reader.connections
             if (number, c.id) in self._topic_index}
            for number, reader in enumerate(readers)]
        # Read the first message now: a damaged data file fails here, before anything starts.
        for number, reader in enumerate(readers):
            if self._indices[number]:
                try:
                    next(iter(reader.messages(self._indices[number])), None)
                except READ_ERRORS as error:
                    raise BagError(
                        f'bag {self.paths[number]!r} is damaged: {error}') from None

    def count_outside(self, start_ns: int, until_ns: Optional[int]) -> None:
        """
        Count in :attr:`left_out` the messages that play before ``start_ns`` or after ``until_ns``.

        What ``--start-offset`` and a playback limit leave out: read from the data once (the
        messages outside that span only), so the count is exact.
        """
        for reason, first, stop in ((f'before the start offset (bag time {start_ns} ns)', None,
                                     start_ns),
                                    (f'after the end of playback (bag time {until_ns} ns)',
                                     None if until_ns is None else until_ns + 1, None)):
            if (stop is None and first is None) or (stop is not None and stop <= self.start_ns):
                continue
            counts = [0] * len(self.topics)
            for number, reader in enumerate(self._readers):
                if self._indices[number]:
                    for index, _, _ in reader.messages(self._indices[number], first, stop):
                        counts[index] += 1
            if sum(counts):
                names = ', '.join(topic.name for topic, count in zip(self.topics, counts)
                                  if count)
                self.left_out.append(LeftOut(sum(counts), f'{reason}: {names}', True))

    def count_until(self, first_ns: int, lasts: Dict[int, int]) -> Dict[int, int]:
        """
        Return, for each topic index of ``lasts``, its messages from ``first_ns`` to its time.

        Read from the data once, up to the latest of the times (included); a bag time up to
        which each topic's messages are counted, included.
        """
        counts = dict.fromkeys(lasts, 0)
        stop = max(lasts.values(), default=first_ns - 1) + 1
        for number, reader in enumerate(self._readers):
            indices = {connection: index for connection, index in self._indices[number].items()
                       if index in lasts}
            if indices:
                for index, time_ns, _ in reader.messages(indices, first_ns, stop):
                    if time_ns <= lasts[index]:
                        counts[index] += 1
        return counts

    @property
    def playing_count(self) -> int:
        """Return how many messages play in a whole pass: the bag's less those left out."""
        return self.message_count - sum(entry.count for entry in self.left_out)

    def end_at(self, until_ns: int) -> None:
        """Play no message stamped after bag time ``until_ns``: the end is there at the latest."""
        self.until_ns = until_ns
        self.end_ns = min(self.end_ns, until_ns)

    @property
    def duration_ns(self) -> int:
        """Return the time from the first to the last message, in ns."""
        return self.end_ns - self.start_ns

    def messages(self, start_ns: int) -> Iterator[Tuple[int, int, bytes]]:
        """
        Stream ``(topic index, time_ns, data)`` of the topics that play, from ``start_ns`` on.

        In time order (bags merged: at one stamp, the bag given first first), read as they are
        consumed, up to ``until_ns``. The index is that of :attr:`topics`. Nothing plays: an
        empty stream.
        """
        streams = [reader.messages(indices, start_ns)
                   for reader, indices in zip(self._readers, self._indices) if indices]
        if not streams:
            return iter(())
        # heapq.merge is stable: at one time, the stream of the earlier bag first.
        merged = streams[0] if len(streams) == 1 else heapq.merge(
            *streams, key=itemgetter(1))
        if self.until_ns is None:
            return merged
        return itertools.takewhile(lambda message: message[1] <= self.until_ns, merged)

    def batches(self, start_ns: int, max_messages: int = BATCH_MESSAGES,
                max_bytes: int = BATCH_BYTES) -> Iterator[Batch]:
        """
        Stream the messages of :meth:`messages` from ``start_ns`` on as :data:`Batch` lists.

        A batch ends at ``max_messages`` messages or once it holds ``max_bytes`` of data, so
        memory stays bounded whatever the messages' size. No batch is empty.
        """
        messages = self.messages(start_ns)
        while True:
            times: List[int] = []
            topics: List[int] = []
            datas: List[bytes] = []
            add_time, add_topic, add_data = times.append, topics.append, datas.append
            size = 0
            for topic, time_ns, data in messages:
                add_time(time_ns)
                add_topic(topic)
                add_data(data)
                size += len(data)
                if size >= max_bytes or len(datas) >= max_messages:
                    break
            if not datas:
                return
            yield times, topics, datas

    def close(self) -> None:
        """Close the bags' files."""
        for reader in self._readers:
            if reader.is_open:
                reader.close()


def _open(path: str, storage_id: Optional[str], plan: Optional[dict]) -> StoredBag:
    """Open one bag from its data files; check its storage if one is given."""
    if not os.path.exists(path):
        raise BagError(f'bag {path!r} does not exist')
    try:
        stored = StoredBag(path, plan)
    except READ_ERRORS as error:
        text = str(error) if isinstance(error, StorageError) else \
            f'bag {path!r} cannot be read: {error}'
        raise BagError(text) from None
    if storage_id is not None:
        found = sorted({data_file.storage_id for data_file in stored.files})
        if found != [storage_id]:
            stored.close()
            raise BagError(f'bag {path!r} is stored as {" and ".join(found) or "neither"}, '
                           f'not as the {storage_id} given with it')
    return stored


def _metadata_start(reader: StoredBag) -> Optional[int]:
    """Return the starting_time metadata.yaml gives a bag, or None."""
    starting = (reader.metadata or {}).get('starting_time')
    start = starting.get('nanoseconds_since_epoch') if isinstance(starting, dict) else None
    # rosbag2 and rosbags write the largest int64 as the start of a bag without messages.
    return start if isinstance(start, int) and 0 <= start <= MAX_TIME_NS else None
