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
The bag read ahead in a child process, so that reading and publishing use two cores.

Batches cross a pipe of bounded capacity packed for the replay loop in C (one bytes object of
data and its offsets, in :mod:`marshal`'s format); memory stays flat.
"""

from array import array
import fcntl
from itertools import accumulate
import json
import marshal
from multiprocessing.connection import Connection
import os
import subprocess
import sys
from typing import Iterator
from typing import Optional
from typing import Tuple

from sim_clock.bag.reader import Bag
from sim_clock.bag.reader import BagError
from sim_clock.bag.reader import BagReadError
from sim_clock.bag.reader import Batch
from sim_clock.bag.reader import READ_ERRORS

#: Capacity asked for the pipe from the read-ahead process: batches read but not yet taken.
READ_AHEAD_PIPE_BYTES = 1 << 20
#: How long a closed read-ahead process may take to end before it is killed, in seconds.
READ_AHEAD_EXIT_TIMEOUT = 2.0

#: A batch as :class:`ReadAhead` hands it out, ready for the replay loop in C
#: (:mod:`sim_clock._replay`): the times in ns (an ``array('q')``), the topic indices (an
#: ``array('I')``), the serialized messages one after the other (bytes) and where each starts
#: in them, then the end of the last (an ``array('Q')``, one longer than the others).
PackedBatch = Tuple[array, array, bytes, array]
#: A packed batch without messages.
EMPTY_BATCH: PackedBatch = (array('q'), array('I'), b'', array('Q', [0]))


#: What the read-ahead process runs: SIGINT ignored first (a terminal's Ctrl-C goes to the whole
#: process group; the player ends this process), then the player's import path, then the loop.
_READ_AHEAD_CODE = (
    'import signal; signal.signal(signal.SIGINT, signal.SIG_IGN)\n'
    'import json, sys\n'
    'config = json.loads(sys.argv[1])\n'
    'sys.path[:] = config["sys_path"]\n'
    'from sim_clock.bag.read_ahead import read_ahead_main\n'
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
                'paths': self._bag.paths, 'storage_ids': self._bag.storage_ids,
                'until_ns': self._bag.until_ns, 'plans': self._bag.plans(),
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
            yield decode_batch(payload)

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


def encode_batch(batch: Batch) -> tuple:
    """Return a batch packed, as :mod:`marshal` encodes it fast: four bytes objects."""
    times, topics, datas = batch
    offsets = array('Q', accumulate(map(len, datas), initial=0))
    return array('q', times).tobytes(), array('I', topics).tobytes(), b''.join(datas), \
        offsets.tobytes()


def decode_batch(encoded: tuple) -> PackedBatch:
    """Return the :data:`PackedBatch` of :func:`encode_batch`."""
    times_bytes, topics_bytes, blob, offsets_bytes = encoded
    times, topics, offsets = array('q'), array('I'), array('Q')
    times.frombytes(times_bytes)
    topics.frombytes(topics_bytes)
    offsets.frombytes(offsets_bytes)
    return times, topics, blob, offsets


def read_ahead_main(config: dict) -> int:
    """
    Run a :class:`ReadAhead`'s child: serve requests for batches until the pipes close.

    A request is ``(generation, start_ns)`` (pickled); the answer is ``(generation, batch)``
    for each batch from that time on (packed by :func:`encode_batch`), then
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
        bag = Bag(config['paths'], list(wanted), lookup, storage_ids=config['storage_ids'],
                  until_ns=config['until_ns'], plans=config['plans'])
        if [[topic.name, topic.type_name] for topic in bag.topics] != config['topics']:
            failure = f'the topics of {bag.path!r} changed since it was opened'
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
                    send(generation, encode_batch(batch))
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
