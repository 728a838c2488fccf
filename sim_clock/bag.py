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
and streams their messages in time order from any point, in bounded batches: memory does not
grow with the bag. :class:`ReadAhead` reads those batches in a child process, so that reading
the bag and publishing it run on two cores, and hands them out packed (one bytes object of
data and its offsets) for the player's publish loop in C. :class:`Cursor` hands the messages
out frame by frame, each frame up to its bag time, and starts again from any time (seek,
loop, reset).
:class:`RecordingSummary` is the recorder's bookkeeping. Message data stays serialized bytes
throughout.
"""

from array import array
from bisect import bisect_right
from dataclasses import dataclass
from dataclasses import field
import fcntl
import importlib
from itertools import accumulate
import json
import marshal
from multiprocessing.connection import Connection
import os
import subprocess
import sys
from typing import Callable
from typing import Dict
from typing import Iterable
from typing import Iterator
from typing import List
from typing import Optional
from typing import Sequence
from typing import Tuple

import apsw
from rosbags.interfaces import Qos
from rosbags.rosbag2 import Reader
from rosbags.rosbag2 import ReaderError
from rosidl_generator_py.import_type_support_impl import UnsupportedTypeSupport

CLOCK_TOPIC = '/clock'

#: A batch holds at most this many messages ...
BATCH_MESSAGES = 1000
#: ... and at most this many bytes of message data (or a single larger message).
BATCH_BYTES = 1 << 20
#: Capacity asked for the pipe from the read-ahead process: batches read but not yet taken.
READ_AHEAD_PIPE_BYTES = 1 << 20
#: How long a closed read-ahead process may take to end before it is killed, in seconds.
READ_AHEAD_EXIT_TIMEOUT = 2.0


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

#: A batch as :class:`ReadAhead` hands it out, ready for the replay loop in C
#: (:mod:`sim_clock._replay`): the times in ns (an ``array('q')``), the topic indices (an
#: ``array('I')``), the serialized messages one after the other (bytes) and where each starts
#: in them, then the end of the last (an ``array('Q')``, one longer than the others).
PackedBatch = Tuple[array, array, bytes, array]
#: A packed batch without messages.
EMPTY_BATCH: PackedBatch = (array('q'), array('I'), b'', array('Q', [0]))

#: ``run(batch, index, frames, offset_ns) -> (frames_done, index)``, what :meth:`Cursor.play`
#: calls: play ``frames`` in turn, each handing out the messages of ``batch`` from ``index`` on
#: stamped up to ``offset_ns`` plus the frame's time, then finishing the frame; stop at the
#: first frame that uses the batch up, before finishing it (the next batch may hold more of
#: its messages). ``batch`` None: no message is left, every frame finishes. Return the frames
#: finished and the index of the batch's next message. :func:`python_run` is the model; the
#: bag player's is ``sim_clock._replay.play``.
Run = Callable[[Optional[tuple], int, Sequence[int], int], Tuple[int, int]]


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
        self._read_aheads: List[ReadAhead] = []
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

    def read_ahead(self) -> 'ReadAhead':
        """Start a :class:`ReadAhead` of this bag; :meth:`close` ends it too."""
        reader = ReadAhead(self)
        self._read_aheads.append(reader)
        return reader

    def close(self) -> None:
        """End the read-ahead processes and close the bag's files."""
        for reader in getattr(self, '_read_aheads', ()):
            reader.close()
        if self._reader.is_open:
            self._reader.close()


#: What the read-ahead process runs: SIGINT ignored first (a terminal's Ctrl-C goes to the whole
#: process group; the player ends this process), then the player's import path, then the loop.
_READ_AHEAD_CODE = (
    'import signal; signal.signal(signal.SIGINT, signal.SIG_IGN)\n'
    'import json, sys\n'
    'config = json.loads(sys.argv[1])\n'
    'sys.path[:] = config["sys_path"]\n'
    'from sim_clock.bag import read_ahead_main\n'
    'sys.exit(read_ahead_main(config))\n')


class _ParentGone(Exception):
    """The read-ahead's pipes closed: the player closed it, or ended."""


class ReadAhead:
    """
    A child process that reads a bag's batches ahead while this process publishes them.

    :meth:`batches` is :meth:`Bag.batches` for a :class:`Cursor`, read in the child: from the
    time asked, batch after batch, into a pipe of bounded capacity, blocking while the pipe is
    full, so memory stays flat. Each call starts a new generation: batches of earlier ones still
    in the pipe are dropped here, and the child, which looks for a new request after each batch,
    starts again at once. A read error in the child raises :class:`BagReadError` with its
    message here, and so does the child's unexpected end (a new child starts at the next call).

    The child ends when :meth:`close` closes its pipes (killed if it takes longer than
    :data:`READ_AHEAD_EXIT_TIMEOUT`), and by itself if this process dies: its request pipe
    reaches end of file, or its batch pipe breaks. It ignores SIGINT.
    """

    def __init__(self, bag: Bag):
        self._bag = bag
        self._generation = 0
        self._process: Optional[subprocess.Popen] = None
        self._requests: Optional[Connection] = None
        self._data: Optional[Connection] = None
        self._closed = False
        self._start()

    @property
    def pid(self) -> Optional[int]:
        """Return the process id of the child, or None when none runs."""
        return None if self._process is None else self._process.pid

    def _start(self) -> None:
        requests_read, requests_write = os.pipe()
        data_read, data_write = os.pipe()
        try:
            try:
                fcntl.fcntl(data_write, fcntl.F_SETPIPE_SZ, READ_AHEAD_PIPE_BYTES)
            except OSError:
                pass  # above the system's limit: the pipe keeps its default capacity
            config = {
                'sys_path': [entry for entry in sys.path if isinstance(entry, str)],
                'path': self._bag.path,
                'topics': [[topic.name, topic.type_name] for topic in self._bag.topics],
                'requests': requests_read, 'data': data_write}
            self._process = subprocess.Popen(
                [sys.executable, '-c', _READ_AHEAD_CODE, json.dumps(config)],
                pass_fds=(requests_read, data_write), stdin=subprocess.DEVNULL)
        except BaseException:
            os.close(requests_write)
            os.close(data_read)
            raise
        finally:
            # The child's ends: this process must not hold them, or the child would not see
            # end of file or a broken pipe when this process dies.
            os.close(requests_read)
            os.close(data_write)
        self._requests = Connection(requests_write, readable=False)
        self._data = Connection(data_read, writable=False)

    def batches(self, start_ns: int) -> Iterator[PackedBatch]:
        """Stream the batches of :meth:`Bag.batches` from ``start_ns`` on, read in the child."""
        if self._closed:
            raise BagReadError(f'the read-ahead of {self._bag.path!r} is closed')
        self._generation += 1
        if not self._bag.topics or start_ns > self._bag.end_ns:
            return iter(())
        if self._process is None:
            self._start()
        try:
            self._requests.send((self._generation, start_ns))
        except OSError:
            raise BagReadError(self._ended()) from None
        return self._receive(self._generation)

    def _receive(self, generation: int) -> Iterator[PackedBatch]:
        while generation == self._generation:
            try:
                received, payload = marshal.loads(self._data.recv_bytes())
            except (EOFError, OSError):
                raise BagReadError(self._ended()) from None
            if received != generation:
                continue  # what the child read before the latest request
            if payload is None:
                return
            if isinstance(payload, str):
                raise BagReadError(payload)
            yield _decode_batch(payload)

    def _ended(self) -> str:
        """Close the pipes of a child that ended unexpectedly; return what to report."""
        process = self._process
        self._stop()
        return (f'the read-ahead process of {self._bag.path!r} ended unexpectedly '
                f'(exit code {process.returncode})')

    def _stop(self) -> None:
        process, self._process = self._process, None
        for connection in (self._requests, self._data):
            if connection is not None:
                connection.close()
        self._requests = self._data = None
        if process is not None:
            try:
                process.wait(READ_AHEAD_EXIT_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def close(self) -> None:
        """End the child: close its pipes and wait for it (or kill it). Idempotent."""
        self._closed = True
        self._stop()


def _encode_batch(batch: Batch) -> tuple:
    """Return a batch packed, as :mod:`marshal` encodes it fast: four bytes objects."""
    times, topics, datas = batch
    offsets = array('Q', accumulate(map(len, datas), initial=0))
    return array('q', times).tobytes(), array('I', topics).tobytes(), b''.join(datas), \
        offsets.tobytes()


def _decode_batch(encoded: tuple) -> PackedBatch:
    """Return the :data:`PackedBatch` of :func:`_encode_batch`."""
    times_bytes, topics_bytes, blob, offsets_bytes = encoded
    times, topics, offsets = array('q'), array('I'), array('Q')
    times.frombytes(times_bytes)
    topics.frombytes(topics_bytes)
    offsets.frombytes(offsets_bytes)
    return times, topics, blob, offsets


def unpack(batch: PackedBatch) -> Batch:
    """Return a packed batch as a :data:`Batch` (times, topic indices, list of data)."""
    times, topics, blob, offsets = batch
    return times.tolist(), topics.tolist(), [blob[a:b] for a, b in zip(offsets, offsets[1:])]


def read_ahead_main(config: dict) -> int:
    """
    Run a :class:`ReadAhead`'s child: serve requests for batches until the pipes close.

    A request is ``(generation, start_ns)`` (pickled); the answer is ``(generation, batch)``
    for each batch from that time on (packed by :func:`_encode_batch`), then
    ``(generation, None)`` at the end, or ``(generation, text)`` if reading fails, each in
    :mod:`marshal`'s format (parent and child run one interpreter). A newer request ends the
    answer to the one before.
    """
    requests = Connection(config['requests'], writable=False)
    data = Connection(config['data'], readable=False)
    wanted = dict(config['topics'])

    def lookup(type_name: str):
        if type_name not in wanted.values():
            raise LookupError(f'{type_name!r} does not play')
        return type_name

    def receive():
        try:
            return requests.recv()
        except (EOFError, OSError):
            raise _ParentGone from None

    def send(generation, payload):
        try:
            data.send_bytes(marshal.dumps((generation, payload)))
        except OSError:
            raise _ParentGone from None

    failure = None
    try:
        bag = Bag(config['path'], list(wanted), lookup)
        if [[topic.name, topic.type_name] for topic in bag.topics] != config['topics']:
            failure = f'the topics of {config["path"]!r} changed since it was opened'
    except BagError as error:
        failure = str(error)
    try:
        request = receive()
        while True:
            generation, start_ns = request
            request = None
            try:
                if failure is not None:
                    raise BagReadError(failure)
                for batch in bag.batches(start_ns):
                    send(generation, _encode_batch(batch))
                    while requests.poll():
                        request = receive()  # only the latest counts
                    if request is not None:
                        break
                else:
                    send(generation, None)
            except READ_ERRORS as error:
                send(generation, f'{type(error).__name__}: {error}')
            if request is None:
                request = receive()
    except _ParentGone:
        return 0


class Cursor:
    """
    Messages handed out in time order, frame by frame, from a restartable stream of batches.

    ``open_batches(start_ns)`` returns an iterator of batches whose times run in order from
    ``start_ns`` on, batch after batch. A batch is a tuple whose first item is the list of its
    messages' times in ns (a :data:`Batch` or a :data:`PackedBatch`); the cursor hands out runs
    of a batch's messages by their indices. Each message is handed out once between two
    :meth:`seek` calls.
    """

    def __init__(self, open_batches: Callable[[int], Iterator[tuple]], start_ns: int):
        self._open_batches = open_batches
        #: Frames done by the last :meth:`play`.
        self.frames_played = 0
        self.seek(start_ns)

    def seek(self, start_ns: int) -> None:
        """Start again from ``start_ns``: the next message handed out is the first at or after."""
        self._batch = None
        self._batches = iter(self._open_batches(start_ns))
        self._next_batch()

    def _next_batch(self) -> None:
        self._batch = None
        self._index = 0
        for batch in self._batches:
            if batch[0]:
                self._batch = batch
                return

    @property
    def exhausted(self) -> bool:
        """Whether every message has been handed out."""
        return self._batch is None

    @property
    def next_time_ns(self) -> Optional[int]:
        """Return the time of the next message, or None."""
        return None if self._batch is None else self._batch[0][self._index]

    def play(self, frames: Sequence[int], offset_ns: int, run: Run) -> None:
        """
        Play ``frames`` in turn, each up to ``offset_ns`` plus its time, by ``run`` (:data:`Run`).

        ``run`` is given each batch in turn from where the last play stopped, and None once no
        message is left. What the stream of batches raises (a read error) propagates once the
        messages before it are out, with the frame unfinished; :attr:`frames_played` counts
        the frames finished before it (all of them otherwise). The cursor is then exhausted
        until a :meth:`seek`.
        """
        done = 0
        try:
            while True:
                batch = self._batch
                finished, self._index = run(batch, self._index, frames[done:], offset_ns)
                done += finished
                if batch is None or done == len(frames):
                    return
                self._next_batch()  # the batch is used up within the frame
        finally:
            self.frames_played = done


def python_run(emit: Callable[[tuple, int, int], object],
               frame_done: Callable[[int], object]) -> Run:
    """
    Return the :data:`Run` that hands out messages by ``emit(batch, start, stop)``.

    For each frame, the messages ``start`` to ``stop`` (excluded) of the batch due by then, if
    any, in one call; then ``frame_done(t)`` with the frame's time. The model of
    ``sim_clock._replay.play``, and a run for batches of any kind whose first item is the
    times.
    """
    def run(batch, index, frames, offset_ns):
        times = () if batch is None else batch[0]
        size = len(times)
        for finished, t in enumerate(frames):
            up_to_ns = offset_ns + t
            if index < size and times[index] <= up_to_ns:
                stop = (size if times[-1] <= up_to_ns
                        else bisect_right(times, up_to_ns, index + 1, size))
                emit(batch, index, stop)
                index = stop
            if index == size and batch is not None:
                return finished, index
            frame_done(t)
        return len(frames), index
    return run


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
