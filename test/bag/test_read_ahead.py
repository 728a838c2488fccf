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

"""The bag's read-ahead: a child process that reads the bag ahead of the player."""

import os
import signal

from bags import bag_messages
from bags import batch_datas
from bags import flatten_batches
from bags import wait_process_ended
from bags import write_large_bag
from bags import write_test_bag
import pytest
from sim_clock.bag.cursor import Cursor
from sim_clock.bag.read_ahead import ReadAhead
from sim_clock.bag.reader import Bag
from sim_clock.bag.reader import BagReadError
from sim_clock.bag.replay import python_run

pytestmark = pytest.mark.process


@pytest.fixture(params=['sqlite3', 'mcap'])
def test_bag(request, tmp_path):
    """Return (path, records) of a test bag in each storage format."""
    path = str(tmp_path / f'bag_{request.param}')
    return path, write_test_bag(path, request.param)


def _ignore(*args):
    pass


@pytest.fixture
def large_bag(tmp_path):
    """Return (path, times) of a sqlite3 bag of 20 MB: many times the read-ahead's pipe."""
    path = str(tmp_path / 'large')
    return path, write_large_bag(path, count=2000, size=10_000)


def test_read_ahead_streams_what_the_bag_streams(test_bag):
    """The child process's batches are the bag's own, from any time; close ends the child."""
    path, records = test_bag
    bag = Bag(path)
    reader = ReadAhead(bag)
    try:
        for start in (bag.start_ns, records[len(records) // 2].time_ns, records[-1].time_ns,
                      bag.start_ns):
            assert flatten_batches(reader.batches(start)) == bag_messages(bag, start)
        assert list(reader.batches(bag.end_ns + 1)) == []
        pid = reader.pid
        assert pid is not None
    finally:
        reader.close()
        bag.close()
    assert reader.pid is None and wait_process_ended(pid)
    with pytest.raises(BagReadError, match='closed'):
        reader.batches(bag.start_ns)


def test_read_ahead_seek_while_the_child_is_ahead(large_bag):
    """A new request drops what the child read for the one before: only the new time's data."""
    path, times = large_bag
    bag = Bag(path)
    reader = ReadAhead(bag)
    try:
        old = reader.batches(bag.start_ns)
        first = next(old)
        assert first[0][0] == times[0]
        # The child now fills the pipe and blocks; requests jump back and forth meanwhile.
        for index in (1500, 10, 1999, 700):
            batches = reader.batches(times[index])
            first = next(batches)
            assert first[0][0] == times[index]
        assert next(old, None) is None  # superseded
        assert [t for t, _, _ in flatten_batches([first, *batches])] == times[700:]
        # A cursor over the read-ahead: seeks and releases hand out exactly what is due.
        cursor = Cursor(reader.batches, times[0])
        out = []

        def emit(batch, start, stop):
            out.extend(int(data[8:16]) for data in batch_datas(batch)[start:stop])
        cursor.play([times[1234]], 0, python_run(emit, _ignore))
        assert len(out) == 1235
        cursor.seek(times[100])
        cursor.play([times[101]], 0, python_run(emit, _ignore))
        assert len(out) == 1237
        cursor.seek(times[1990])
        cursor.play([times[-1] + 1], 0, python_run(emit, _ignore))
        assert cursor.exhausted
        assert out == list(range(1235)) + [100, 101] + list(range(1990, 2000))
    finally:
        reader.close()
        bag.close()


def _damage(path: str, suffix: str, start: float, length: float) -> None:
    [name] = [n for n in os.listdir(path) if n.endswith(suffix)]
    size = os.path.getsize(os.path.join(path, name))
    with open(os.path.join(path, name), 'r+b') as data:
        data.seek(int(size * start))
        data.write(b'\xff' * int(size * length))


def test_read_ahead_reports_a_read_error_and_goes_on(large_bag):
    """A damaged page in the middle: BagReadError naming the cause, then other reads work."""
    path, times = large_bag
    bag = Bag(path)
    reader = ReadAhead(bag)
    try:
        assert next(reader.batches(times[0]))[0][0] == times[0]
        _damage(path, '.db3', 0.75, 0.125)
        read = []
        with pytest.raises(BagReadError, match='malformed'):
            for batch in reader.batches(times[1000]):
                read += batch[0]
        assert read == times[1000:1000 + len(read)] and len(read) < 1000
        assert [t for t, _, _ in flatten_batches(reader.batches(times[1990]))] == times[1990:]
    finally:
        reader.close()
        bag.close()


def test_read_ahead_child_death_is_an_error_then_a_new_child(large_bag):
    """A child that dies mid-stream raises BagReadError, not a hang; the next read restarts."""
    path, times = large_bag
    bag = Bag(path)
    reader = ReadAhead(bag)
    try:
        batches = reader.batches(times[0])
        next(batches)
        pid = reader.pid
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(BagReadError, match=r'ended unexpectedly \(exit code -9\)'):
            for _ in batches:
                pass
        assert reader.pid is None
        assert [t for t, _, _ in flatten_batches(reader.batches(times[1500]))] == times[1500:]
        assert reader.pid not in (None, pid)
    finally:
        reader.close()
        bag.close()
