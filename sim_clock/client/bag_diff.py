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
Two recordings compared message by message: :func:`compare` and ``simclock diff A B``.

Read with rosbags, without ROS. Two bags are the same when they hold the same topics with the
same types, and the same messages (stamp and bytes) in the same order, topic by topic and across
topics as a reader reads them (by stamp; at one stamp, in the order written). Storage format,
QoS metadata and file names are not compared (``sha256sum`` compares files). Where they differ,
the first difference is named: a topic or type first, then, of the topics whose messages
differ, the one whose first differing message comes earliest, then the order across topics.
"""

from collections import Counter
from dataclasses import dataclass
import hashlib
import itertools
import os
from typing import Dict
from typing import Iterator
from typing import List
from typing import Optional
from typing import Tuple

import apsw
from rosbags.rosbag2 import Reader
from rosbags.rosbag2 import ReaderError
from sim_clock.wire.names import TIME_STEP_KEY
import yaml

#: Bytes shown each side of the first differing byte.
EXCERPT_BYTES = 8
#: What reading a bag may raise: rosbags' error, the file system's, the sqlite driver's.
READ_ERRORS = (ReaderError, OSError, apsw.Error, yaml.YAMLError, KeyError, ValueError,
               EOFError)


class BagDiffError(Exception):
    """A bag that cannot be read; the message names the bag and the cause."""


@dataclass(frozen=True)
class MessageAt:
    """One message of a bag, where it is: topic, index within the topic, stamp, frame."""

    topic: str
    index: int
    stamp_ns: int
    #: The stamp in /clock steps, where the bag says its step and the stamp is on the grid.
    frame: Optional[int]
    data: bytes

    def describe(self) -> str:
        """Return the message as one phrase."""
        frame = '' if self.frame is None else f', frame {self.frame}'
        return (f'{self.topic} #{self.index} (stamp {self.stamp_ns} ns{frame}, '
                f'{len(self.data)} bytes)')


@dataclass(frozen=True)
class Difference:
    """
    The first difference between bags A and B.

    ``kind``: ``topic`` (in one bag only), ``type`` (another type), ``stamp``, ``bytes``,
    ``order`` (the same messages of a topic from ``index`` on, in another order), ``count``
    (one bag has more messages on the topic) or ``interleave`` (each topic the same, the order
    across topics not). ``a``/``b``: the message of each bag at that place (None: none there).
    ``offset``: the first byte that differs, where both have bytes and they differ.
    """

    kind: str
    topic: str
    detail: str
    a: Optional[MessageAt] = None
    b: Optional[MessageAt] = None
    offset: Optional[int] = None

    def lines(self) -> List[str]:
        """Return the difference as text lines."""
        lines = [f'first difference ({self.kind}): {self.detail}']
        for name, message in (('A', self.a), ('B', self.b)):
            if message is not None:
                lines.append(f'  {name}: {message.describe()}')
        if self.offset is not None:
            lines.append(f'  bytes differ from offset {self.offset}:')
            for name, message in (('A', self.a), ('B', self.b)):
                lines.append(f'    {name} {excerpt(message.data, self.offset)}')
        return lines


@dataclass(frozen=True)
class Comparison:
    """What :func:`compare` found: the message counts and the first difference (None: same)."""

    a: str
    b: str
    messages_a: int
    messages_b: int
    difference: Optional[Difference]

    @property
    def same(self) -> bool:
        """Whether the two recordings are the same."""
        return self.difference is None

    @property
    def empty(self) -> bool:
        """Whether neither recording holds a message: nothing to compare, same or not."""
        return self.messages_a == self.messages_b == 0

    def lines(self) -> List[str]:
        """Return the verdict as text lines."""
        if self.same:
            return [f'same: {self.a} and {self.b} hold the same {self.messages_a} messages']
        return [f'different: {self.a} ({self.messages_a} messages) and {self.b} '
                f'({self.messages_b} messages)'] + self.difference.lines()


def excerpt(data: bytes, offset: int) -> str:
    """Return the bytes around ``offset`` in hex, the byte at ``offset`` in brackets."""
    start = max(offset - EXCERPT_BYTES, 0)
    before = data[start:offset].hex(' ')
    at = data[offset:offset + 1].hex()
    after = data[offset + 1:offset + 1 + EXCERPT_BYTES].hex(' ')
    text = ' '.join(part for part in (before, f'[{at}]' if at else '[end]', after) if part)
    return f'@{start}: {"... " if start else ""}{text}'


def first_differing_byte(a: bytes, b: bytes) -> Optional[int]:
    """Return the first offset where ``a`` and ``b`` differ (a length too), or None."""
    for offset, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return offset
    return None if len(a) == len(b) else min(len(a), len(b))


def _time_step(path: str) -> Optional[int]:
    """Return the /clock step the recorder stored in a bag directory's metadata, or None."""
    metadata = os.path.join(path, 'metadata.yaml')
    if not os.path.isfile(metadata):
        return None  # a single .mcap or .db3 file
    with open(metadata) as text:
        document = yaml.safe_load(text)
    information = document.get('rosbag2_bagfile_information') if isinstance(
        document, dict) else None
    custom = information.get('custom_data') if isinstance(information, dict) else None
    step = custom.get(TIME_STEP_KEY) if isinstance(custom, dict) else None
    return int(step) if step is not None else None


class _Bag:
    """A bag open for reading: its topics and types, its time step, its messages."""

    def __init__(self, path: str):
        self.path = path
        if not os.path.exists(path):
            raise BagDiffError(f'{path}: no such bag (give a rosbag2 directory, or a .mcap or '
                               '.db3 file)')
        self._reader = None
        try:
            reader = Reader(path)
            reader.open()
            self._reader = reader
            self.connections = list(reader.connections)
            self.message_count = reader.message_count
            self.time_step_ns = _time_step(path)
        except READ_ERRORS as error:
            self.close()
            raise BagDiffError(f'{path}: not a readable bag ({error})') from None
        self.types: Dict[str, str] = {}
        for connection in self.connections:
            self.types.setdefault(connection.topic, connection.msgtype)

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def frame(self, stamp_ns: int) -> Optional[int]:
        step = self.time_step_ns
        return stamp_ns // step if step and stamp_ns % step == 0 else None

    def messages(self, topic: Optional[str] = None) -> Iterator[Tuple[str, int, bytes]]:
        """Yield (topic, stamp, bytes) in reading order, of one topic or all."""
        connections = [c for c in self.connections if topic is None or c.topic == topic]
        try:
            for connection, stamp, data in self._reader.messages(connections=connections):
                yield connection.topic, stamp, bytes(data)
        except READ_ERRORS as error:
            raise BagDiffError(f'{self.path}: reading failed ({error})') from None

    def at(self, topic: str, index: int, stamp_ns: int, data: bytes) -> MessageAt:
        return MessageAt(topic, index, stamp_ns, self.frame(stamp_ns), data)


def compare(a: str, b: str) -> Comparison:
    """
    Compare the recordings at paths ``a`` and ``b``; raise :class:`BagDiffError` if unreadable.

    Frames are counted by the step the recorder stored (``sim_clock.time_step_ns``).
    """
    bag_a = _Bag(a)
    try:
        bag_b = _Bag(b)
    except BagDiffError:
        bag_a.close()
        raise
    try:
        difference = _topic_difference(bag_a, bag_b)
        if difference is None:
            found = [d for d in (_topic_messages_difference(bag_a, bag_b, topic)
                                 for topic in sorted(bag_a.types)) if d is not None]
            difference = min(found, key=_when, default=None)
        if difference is None:
            difference = _interleave_difference(bag_a, bag_b)
        return Comparison(a, b, bag_a.message_count, bag_b.message_count, difference)
    finally:
        bag_a.close()
        bag_b.close()


def _when(difference: Difference) -> tuple:
    stamps = [m.stamp_ns for m in (difference.a, difference.b) if m is not None]
    return min(stamps), difference.topic


def _topic_difference(bag_a: _Bag, bag_b: _Bag) -> Optional[Difference]:
    for topic in sorted(set(bag_a.types) | set(bag_b.types)):
        type_a, type_b = bag_a.types.get(topic), bag_b.types.get(topic)
        if type_a is None or type_b is None:
            only, bag, other = ('A', bag_a, 'B') if type_b is None else ('B', bag_b, 'A')
            first = next(bag.messages(topic), None)
            message = first and bag.at(topic, 0, first[1], first[2])
            detail = (f'topic {topic} ({bag.types[topic]}) is in {only} only: {other} has no '
                      'such topic')
            return Difference('topic', topic, detail, *(
                (message, None) if only == 'A' else (None, message)))
        if type_a != type_b:
            return Difference('type', topic, f'{topic} is {type_a} in A, {type_b} in B')
    return None


def _digest(stamp: int, data: bytes) -> tuple:
    return stamp, hashlib.sha256(data).digest()


def _topic_messages_difference(bag_a: _Bag, bag_b: _Bag, topic: str) -> Optional[Difference]:
    """Return the first difference of one topic's messages, or None."""
    rest_a, rest_b = bag_a.messages(topic), bag_b.messages(topic)
    for index, (one, two) in enumerate(itertools.zip_longest(rest_a, rest_b)):
        if one == two:
            continue
        message_a = one and bag_a.at(topic, index, one[1], one[2])
        message_b = two and bag_b.at(topic, index, two[1], two[2])
        if one is None or two is None:
            more, fewer = ('A', 'B') if two is None else ('B', 'A')
            total = index + 1 + sum(1 for _ in (rest_a if two is None else rest_b))
            return Difference('count', topic, f'{more} has {total} messages on {topic}, {fewer} '
                                              f'{index}: #{index} is in {more} only',
                              message_a, message_b)
        # Either the same messages from here on in another order, or a message that differs.
        remaining_a = [_digest(*one[1:])] + [_digest(s, d) for _, s, d in rest_a]
        remaining_b = [_digest(*two[1:])] + [_digest(s, d) for _, s, d in rest_b]
        offset = first_differing_byte(one[2], two[2])
        if Counter(remaining_a) == Counter(remaining_b):
            where = index + remaining_b.index(remaining_a[0])
            return Difference('order', topic, f'{topic} holds the same messages from #{index} on '
                                              f'in another order: A #{index} is B #{where}',
                              message_a, message_b, offset)
        if one[1] != two[1]:
            return Difference('stamp', topic, f'{topic} #{index} is stamped {one[1]} ns in A, '
                                              f'{two[1]} ns in B', message_a, message_b, offset)
        return Difference('bytes', topic, f'{topic} #{index} differs in its bytes',
                          message_a, message_b, offset)
    return None


def _interleave_difference(bag_a: _Bag, bag_b: _Bag) -> Optional[Difference]:
    """Return where the order across topics first differs, each topic being the same."""
    indices = {bag: Counter() for bag in ('A', 'B')}
    for one, two in zip(bag_a.messages(), bag_b.messages()):
        index_a, index_b = indices['A'][one[0]], indices['B'][two[0]]
        indices['A'][one[0]] += 1
        indices['B'][two[0]] += 1
        if one[0] != two[0]:
            return Difference(
                'interleave', one[0], f'each topic holds the same messages, but at stamp '
                f'{one[1]} ns A has {one[0]} where B has {two[0]}',
                bag_a.at(one[0], index_a, one[1], one[2]),
                bag_b.at(two[0], index_b, two[1], two[2]))
    return None
