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

"""sim_clock._replay: the C publish loops, through real rcl publishers and DDS subscribers."""

from array import array
import functools
from itertools import accumulate
import time

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rclpy.serialization import serialize_message
from rosgraph_msgs.msg import Clock
from sim_clock import _replay
from sim_clock.bag.cursor import Cursor
from sim_clock.bag.read_ahead import decode_batch
from sim_clock.bag.read_ahead import encode_batch
from sim_clock.bag.replay import native_run
from sim_clock.bag.replay import python_run
from sim_clock.core.units import MAX_TIME_NS
from sim_clock.core.units import NS_PER_SEC
from sim_clock.node.publishing import clock_publisher
from sim_clock.node.server import ClockServer
from std_msgs.msg import String

pytestmark = pytest.mark.process

QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
TIMEOUT = 10.0


class Pair:
    """Two publishers and, in another node of the same context, raw subscribers to both."""

    def __init__(self, domain_id: int):
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = rclpy.create_node('replay_publisher', context=self.context)
        self.listener = rclpy.create_node('replay_listener', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.listener)
        self.publishers = [self.node.create_publisher(String, name, QOS) for name in ('/a', '/b')]
        self.pointers = array('Q', [p.handle.pointer for p in self.publishers])
        self.received = []  # (topic, raw bytes), in arrival order
        for name in ('/a', '/b'):
            self.listener.create_subscription(
                String, name, lambda data, name=name: self.received.append((name, data)), QOS,
                raw=True)
        self.spin_until(lambda: all(p.get_subscription_count() == 1 for p in self.publishers),
                        'the subscriptions to match')

    def spin_until(self, condition, what: str) -> None:
        deadline = time.monotonic() + TIMEOUT
        while not condition():
            assert time.monotonic() < deadline, f'timed out waiting for {what}'
            self.executor.spin_once(timeout_sec=0.05)

    def close(self) -> None:
        self.executor.shutdown()
        self.listener.destroy_node()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


@pytest.fixture
def pair(domain_id):
    pair = Pair(domain_id)
    yield pair
    pair.close()


def _pack(datas):
    return b''.join(datas), array('Q', accumulate(map(len, datas), initial=0))


def _messages(count):
    return [serialize_message(String(data=f'message {k}' + 'x' * k)) for k in range(count)]


def test_publish_sends_the_run_of_messages_each_on_its_topic(pair):
    """Messages start to stop go out, byte for byte, each on its topic, in order."""
    datas = _messages(7)
    topics = array('I', [0, 1, 1, 0, 1, 0, 0])
    blob, offsets = _pack(datas)
    assert _replay.publish(pair.pointers, topics, blob, offsets, 1, 6) is None
    expected = [('/a' if topics[k] == 0 else '/b', datas[k]) for k in range(1, 6)]
    pair.spin_until(lambda: len(pair.received) >= len(expected), 'five messages')
    for name in ('/a', '/b'):
        assert [d for n, d in pair.received if n == name] == [
            d for n, d in expected if n == name]
    # An empty run publishes nothing.
    _replay.publish(pair.pointers, topics, blob, offsets, 3, 3)
    _replay.publish(pair.pointers, array('I', [0]), datas[6], array('Q', [0, len(datas[6])]),
                    0, 1)
    pair.spin_until(lambda: len(pair.received) == 6, 'the last message')
    assert pair.received[-1] == ('/a', datas[6])


def _bad_calls(pointers, datas):
    blob, offsets = _pack(datas)
    topics = array('I', [0, 1, 0])
    shuffled = array('Q', offsets)
    shuffled[1], shuffled[2] = shuffled[2], shuffled[1]
    return [
        ((pointers, topics, blob, offsets, 0), TypeError, 'takes 6 arguments'),
        ((pointers, topics, blob, offsets[:-1], 0, 3), ValueError, '3 topics need 4 offsets'),
        ((pointers, topics, blob, offsets, 2, 1), ValueError, 'not within 0 to 3'),
        ((pointers, topics, blob, offsets, -1, 2), ValueError, 'not within 0 to 3'),
        ((pointers, topics, blob, offsets, 0, 4), ValueError, 'not within 0 to 3'),
        ((pointers, array('I', [0, 2, 0]), blob, offsets, 0, 3), ValueError, 'topic 2 of 2'),
        ((pointers, topics, blob[:-1], offsets, 0, 3), ValueError, 'message 2'),
        ((pointers, topics, blob, shuffled, 0, 3), ValueError, 'message 1'),
        ((pointers, [0, 1, 0], blob, offsets, 0, 3), TypeError, 'topics must support'),
        ((pointers, topics, blob, offsets, 0, '3'), TypeError, ''),
    ]


def test_publish_refuses_bad_arguments_and_publishes_nothing(pair):
    """Every bad argument is named; not one message of the run goes out."""
    datas = _messages(3)
    for args, error, text in _bad_calls(pair.pointers, datas):
        with pytest.raises(error, match=text):
            _replay.publish(*args)
    # Then a good call on each topic: on each (a reliable writer, in order) only it arrives,
    # so none of the bad calls published.
    marker = serialize_message(String(data='after the refusals'))
    blob, offsets = _pack([marker, marker])
    _replay.publish(pair.pointers, array('I', [1, 0]), blob, offsets, 0, 2)
    pair.spin_until(lambda: len(pair.received) >= 2, 'the messages after the refusals')
    assert sorted(pair.received) == [('/a', marker), ('/b', marker)]


def test_clock_publisher_in_c_sends_what_rclpy_serializes(domain_id):
    """Every /clock from the C path is byte for byte rclpy's serialization, offset added."""
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain_id)
    try:
        node = rclpy.create_node('clock_c', context=context)
        publisher = node.create_publisher(Clock, '/clock', QOS)
        received = []
        node.create_subscription(Clock, '/clock', received.append, QOS, raw=True)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        deadline = time.monotonic() + TIMEOUT
        while publisher.get_subscription_count() < 1:
            assert time.monotonic() < deadline, 'timed out waiting for the subscription'
            executor.spin_once(timeout_sec=0.05)
        offset = 1_700_000_000 * NS_PER_SEC
        publish = clock_publisher(publisher, offset)
        assert isinstance(publish, functools.partial)  # the C function, not the fallback
        times = [0, 1, NS_PER_SEC - 1, NS_PER_SEC, MAX_TIME_NS - offset]
        for time_ns in times:
            publish(time_ns)
        with pytest.raises(ValueError, match='is not a time of Clock'):
            publish(MAX_TIME_NS - offset + NS_PER_SEC)
        with pytest.raises(ValueError, match='is not a time of Clock'):
            publish(-offset - 1)
        while len(received) < len(times):
            assert time.monotonic() < deadline, f'timed out: {len(received)} of {len(times)}'
            executor.spin_once(timeout_sec=0.05)
        expected = []
        for time_ns in times:
            msg = Clock()
            msg.clock.sec, msg.clock.nanosec = divmod(time_ns + offset, NS_PER_SEC)
            expected.append(serialize_message(msg))
        assert received == expected
        executor.shutdown()
    finally:
        rclpy.try_shutdown(context=context)


def test_destroyed_server_refuses_to_publish(domain_id):
    """Once the node is destroyed, a publish raises instead of using the freed publisher."""
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain_id)
    try:
        server = ClockServer(context=context)
        server.engine.frames.sink.publish_time(0)
        server.destroy_node()
        with pytest.raises(RuntimeError, match='the node is destroyed'):
            server.engine.frames.sink.publish_time(1)
    finally:
        rclpy.try_shutdown(context=context)


def _packed(times, topics, datas, size):
    """Return the batches of ``size`` messages of these lists, packed as the read-ahead does."""
    return [decode_batch(encode_batch((times[k:k + size], topics[k:k + size],
                                       datas[k:k + size])))
            for k in range(0, len(times), size)]


PLAYS = [
    # (message times, batch size, frames, bag offset, clock offset)
    ([0, 10, 20, 20, 35], 2, range(0, 50, 10), 0, 0),
    ([0, 10, 20, 20, 35], 1, range(-10, 40, 5), 0, 1_000),
    ([5, 6, 7, 8, 9, 10, 30], 3, range(0, 100, 10), 0, 0),
    ([100, 110, 120], 2, range(0, 30, 10), 100, 5 * NS_PER_SEC),
    ([0, 1, 2, 3], 4, range(0, 1), 0, 0),
    ([50], 1, range(0, 10, 10), 0, 0),
    ([], 1, range(0, 30, 10), 0, 0),
]


# Under the /clock rate cap: every 2nd or 3rd frame's /clock, the last left out.
CAPPED = [PLAYS[0] + (2,), PLAYS[1] + (3,), PLAYS[2] + (3,), PLAYS[4] + (2,), PLAYS[6] + (2,)]


@pytest.mark.parametrize('times, size, frames, bag_offset, clock_offset, clock_every',
                         [play + (None,) for play in PLAYS] + CAPPED)
def test_play_in_c_is_the_model(pair, times, size, frames, bag_offset, clock_offset,
                                clock_every):
    """
    C play and the Python model put out the same messages and /clock in the same order.

    With clock times (the /clock rate cap: every 2nd or 3rd frame, the last left out), only
    those frames' /clock go out, and every message all the same.
    """
    datas = _messages(len(times))
    topics = [0] * len(times)
    clock_times = None if clock_every is None else [
        t for k, t in enumerate(frames[:-1]) if k % clock_every == 0]
    # Data and /clock on one writer, so that the order received is the order published.
    run = native_run(pair.pointers[:1], pair.pointers[0], clock_offset)
    cursor = Cursor(lambda start: iter(_packed(times, topics, datas, size)), 0)
    cursor.play(frames[:len(frames) // 2], bag_offset, run, clock_times)
    cursor.play(frames[len(frames) // 2:], bag_offset, run, clock_times)
    assert cursor.frames_played == len(frames) - len(frames) // 2
    expected = []

    def clock(t):
        msg = Clock()
        msg.clock.sec, msg.clock.nanosec = divmod(t + clock_offset, NS_PER_SEC)
        expected.append(serialize_message(msg))
    model = Cursor(lambda start: iter([(times, topics, datas)] if times else []), 0)
    model.play(frames, bag_offset, python_run(
        lambda batch, start, stop: expected.extend(batch[2][start:stop]), clock), clock_times)
    clocks = len(frames) if clock_times is None else len(clock_times)
    assert len(expected) == clocks + sum(t <= frames[-1] + bag_offset for t in times)
    pair.spin_until(lambda: len(pair.received) >= len(expected), f'{len(expected)} messages')
    assert [data for _, data in pair.received] == expected
    # Both count what they handed out alike (the progress's messages out).
    assert cursor.handed_out == model.handed_out == sum(
        t <= frames[-1] + bag_offset for t in times)


BUDGETED = [
    # (message times, topics, batch size, frames, budgets of /a, /b and /clock)
    ([0, 0, 0, 0, 0, 10, 10, 20], [0, 0, 0, 0, 0, 1, 0, 1], 3, range(0, 40, 10), [2, 1, 1]),
    ([0, 10, 20, 30], [0, 1, 0, 1], 4, range(0, 100, 5), [-1, 1, 3]),
    ([5] * 9, [1] * 9, 2, range(0, 20, 10), [-1, 2, -1]),
    ([], [], 1, range(0, 30, 10), [1, 1, 2]),
]


@pytest.mark.parametrize('times, topics, size, frames, budgets', BUDGETED)
def test_play_in_c_spends_budgets_as_the_model(pair, times, topics, size, frames, budgets):
    """
    With budgets, C play stops where the model stops, spends the same, and resumes alike.

    Refilled each time a budget is spent, both put out what play without budgets does.
    """
    datas = _messages(len(times))
    c_budgets = array('q', budgets)
    stops = []

    def resumed(run, spent):
        """Play to the end: refill every spent budget where ``run`` stopped on one."""
        def play(batch, index, part, offset):
            done = 0
            while True:
                finished, index = run(batch, index, part[done:], offset)
                stops.append((finished, index, list(spent)))
                done += finished
                if 0 not in spent:
                    return done, index
                for k, budget in enumerate(spent):
                    spent[k] = budgets[k] if budget == 0 else budget
        return play

    def model(spent):
        """Return what the model puts out, and where it stops, with ``spent`` as budgets."""
        out = []
        unpacked = [(times[k:k + size], topics[k:k + size], datas[k:k + size])
                    for k in range(0, len(times), size)]
        run = python_run(lambda batch, start, stop: out.extend(batch[2][start:stop]),
                         lambda t: out.append(_clock_bytes(t)), spent)
        Cursor(lambda start: iter(unpacked), 0).play(
            frames, 0, run if spent is None else resumed(run, spent))
        return out
    # /a, /b and /clock on /a's writer: the order received is the order published.
    native = native_run(array('Q', [pair.pointers[0]] * 2), pair.pointers[0], 0, c_budgets)
    Cursor(lambda start: iter(_packed(times, topics, datas, size)), 0).play(
        frames, 0, resumed(native, c_budgets))
    c_stops, stops[:] = list(stops), []
    expected = model(array('q', budgets))
    assert c_stops == stops
    assert any(0 in spent for _, _, spent in stops)  # a budget did stop the play
    assert expected == model(None)
    pair.spin_until(lambda: len(pair.received) >= len(expected), f'{len(expected)} messages')
    assert [data for _, data in pair.received] == expected


def _clock_bytes(time_ns):
    msg = Clock()
    msg.clock.sec, msg.clock.nanosec = divmod(time_ns, NS_PER_SEC)
    return serialize_message(msg)


def test_play_refuses_bad_arguments(pair):
    """Bad frames, clock times, indices or times out of order are named; nothing goes out."""
    (times, topics, blob, offsets), = _packed([0, 10], [0, 0], _messages(2), 2)
    good = [pair.pointers, topics, blob, offsets, times, 0, 0, 10, 3, 0, pair.pointers[0], 0,
            False, None, None]

    def call(position=None, value=None):
        args = list(good)
        if position is not None:
            args[position] = value
        return _replay.play(*args)
    unordered = array('q', [10, 0])
    for position, value, error, text in [
            (8, -1, ValueError, 'not all times of Clock'),
            (7, 0, ValueError, 'not all times of Clock'),
            (6, -1, ValueError, 'not all times of Clock'),
            (10, 0, ValueError, 'clock publisher is null'),
            (11, MAX_TIME_NS, ValueError, 'not all times of Clock'),
            (5, 3, ValueError, 'not within 0 to 2'),
            (4, unordered, ValueError, 'a time before the one before it'),
            (4, array('q', [0]), ValueError, '2 topics need 2 times'),
            (0, array('Q', [0]), ValueError, 'message 0 has topic 0 of 1'),
            (5, '0', TypeError, 'integer'),
            (9, 1.5, TypeError, 'integer'),
            (10, -1, OverflowError, ''),
            (13, array('q', [5, 5]), ValueError, '2 publishers and /clock need 3 budgets'),
            (13, bytes(24), TypeError, 'budgets must be None or a writable buffer'),
            (14, array('q', [10, 10]), ValueError, r'clock time 1 \(10 ns\) is not after'),
            (14, bytes(3), TypeError, 'clock_times must be None or a buffer of int64'),
            (14, [0, 10], TypeError, 'clock_times must be None or a buffer of int64'),
    ]:
        with pytest.raises(error, match=text):
            call(position, value)
    with pytest.raises(TypeError, match='takes 15 arguments'):
        _replay.play(*good[:14])
    assert call() == (1, 2)  # the batch is used up by the second frame, before its /clock
    pair.spin_until(lambda: len(pair.received) >= 3, 'the good call')
    assert len(pair.received) == 3  # the two messages and one /clock: the bad calls sent none


@pytest.fixture
def dead(domain_id):
    """Yield the rcl address of a publisher whose context is shut down: rcl refuses it all."""
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain_id)
    node = rclpy.create_node('replay_dead', context=context)
    publisher = node.create_publisher(String, '/dead', QOS)
    if hasattr(context, 'untrack_node'):
        context.untrack_node(node)  # rclpy 9 destroys tracked nodes with their context
    context.shutdown()
    assert publisher.handle.pointer  # still there: rcl refuses its publish
    yield publisher.handle.pointer
    node.destroy_node()


REFUSALS = [
    # (the dead one: a topic index or the clock, budgets of /a, /b, dead and /clock, where)
    (2, [5, 5, 5, 5], (2, 1, 2), [3, 5, 5, 4]),
    ('clock', [5, 5, 5, 5], (-1, 0, 1), [4, 5, 5, 5]),
    (2, None, (2, 1, 2), None),
    (2, [-1, -1, -1, 3], (2, 1, 2), [-1, -1, -1, 2]),
]


@pytest.mark.parametrize('dead_one, budgets, where, left', REFUSALS)
def test_a_refused_publish_in_c_tells_where_as_the_model(pair, dead, dead_one, budgets, where,
                                                         left):
    """
    A publish rcl refuses: C play raises PublishRefused (which, done, index) as the model does.

    The refused message is not published, nor anything after it, and its budget is not spent.
    """
    times, topics = array('q', [0, 10, 10, 20]), array('I', [0, 0, 2, 0])
    datas = _messages(4)
    blob, offsets = _pack(datas)
    pointers = array('Q', [*pair.pointers, dead])
    clock = dead if dead_one == 'clock' else pair.pointers[0]
    outcomes = []
    for play, spent in _c_and_model(pointers, clock, blob, offsets, budgets):
        with pytest.raises(_replay.PublishRefused, match='context is invalid') as raised:
            play((times, topics, blob, offsets), 0, range(0, 30, 10), 0)
        error = raised.value
        outcomes.append(((error.which, error.done, error.index),
                         None if spent is None else spent.tolist()))
    assert outcomes == [(where, left)] * 2
    # What went out before the refusal, on /a (twice: C, then the model).
    before = [datas[0], _clock_bytes(0), datas[1]] if dead_one == 2 else [datas[0]]
    pair.spin_until(lambda: len(pair.received) >= 2 * len(before), 'what preceded')
    assert [data for _, data in pair.received] == before * 2


def _c_and_model(pointers, clock, blob, offsets, budgets):
    """Yield (run, its budgets) of C play, then of the model, each with a copy of ``budgets``."""
    for native in (True, False):
        spent = None if budgets is None else array('q', budgets)
        if native:
            yield native_run(pointers, clock, 0, spent), spent
            continue

        def emit(batch, start, stop):
            _replay.publish(pointers, batch[1], blob, offsets, start, stop)
        yield python_run(emit, functools.partial(_replay.publish_clock, clock, 0), spent), spent


@pytest.mark.parametrize('drop', [[2], [-1], [1, 2, -1]], ids=['topic', 'clock', 'all'])
def test_a_dropped_writer_is_played_without_publishing_in_c_as_in_the_model(pair, dead, drop):
    """A DROPPED budget: its messages (or /clock) count as played, none goes out, nor raises."""
    times, topics = array('q', [0, 10, 10, 20, 20]), array('I', [0, 2, 0, 1, 2])
    datas = _messages(5)
    blob, offsets = _pack(datas)
    # Each writer dropped is dead; topic 2 goes out on /a when it is not dropped.
    pointers = array('Q', [*pair.pointers, dead if 2 in drop else pair.pointers[0]])
    clock = dead if -1 in drop else pair.pointers[0]
    budgets = array('q', [4, -1, 3, 2])
    for which in drop:
        budgets[which] = _replay.DROPPED
    left = []
    for play, spent in _c_and_model(pointers, clock, blob, offsets, budgets):
        # The batch is used up by the frame at 20: play stops before its /clock.
        assert play((times, topics, blob, offsets), 0, range(0, 30, 10), 0) == (2, 5)
        left.append(spent.tolist())
    assert left[0] == left[1]
    expected = []
    for t in range(0, 30, 10):
        expected += [(('/a', '/b', '/a')[topics[k]], datas[k]) for k in range(5)
                     if t - 10 < times[k] <= t and topics[k] not in drop]
        if -1 not in drop and t < 20:
            expected.append(('/a', _clock_bytes(t)))
    expected *= 2
    pair.spin_until(lambda: len(pair.received) >= len(expected), f'{len(expected)} messages')
    for name in ('/a', '/b'):
        assert [d for n, d in pair.received if n == name] == [
            d for n, d in expected if n == name]
