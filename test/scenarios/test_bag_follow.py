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
``bag_player --follow-clock`` through real DDS: a stepped clock server, and a plain /clock.

A probe node here takes the bag's topics and /clock with their source timestamps (the
publishers' wall clock, one host's). Each message must have been published once a /clock at
or past its stamp (on the /clock axis) had been: the /clock published last before it, as the
recorder stamps a message, is at or past its stamp. DDS does not order two writers' samples
at a reader, so the /clock taken last before a message, by arrival, may be the one before
the follower's (seen here once in about twenty runs); the source timestamps are in the order
of publication.
"""

from bisect import bisect_right

from bags import MS
from bags import START_NS
from bags import write_test_bag
from harness import executable
from harness import stamp_ns
from harness import TestClient
import pytest
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rosgraph_msgs.msg import Clock

from sim_clock.compat import take_ready
from sim_clock.core.units import split_ns
from sim_clock.msg import Ready
from sim_clock.wire.names import READY_READER_QOS

pytestmark = pytest.mark.process

FOLLOWER = '/bag_player'
DEEP = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10_000,
                  reliability=ReliabilityPolicy.RELIABLE)


class Probe(TestClient):
    """The bag's topics and /clock, each message noted with its source timestamp."""

    __test__ = False

    def __init__(self, domain_id: int):
        super().__init__(domain_id, name='follow_probe', subscribe_clock=False)
        from geometry_msgs.msg import PointStamped
        from std_msgs.msg import String
        #: (source timestamp, /clock time) of every /clock, and the last time taken.
        self.clock_log = []
        self.clock_ns = None
        #: (topic, key, source timestamp), in the order taken.
        self.received = []
        #: The follower's last report on /sim_clock/ready: {topic: readers matched}.
        self.ready = {}
        self.node.create_subscription(Clock, '/clock', self._on_clock, DEEP)
        self._subs = [
            self.node.create_subscription(String, '/chatter', self._taker('/chatter'), DEEP),
            self.node.create_subscription(
                PointStamped, '/pose', self._taker('/pose'),
                QoSProfile(depth=10_000, reliability=ReliabilityPolicy.BEST_EFFORT))]
        self.node.create_subscription(Ready, '/sim_clock/ready', self._on_ready,
                                      READY_READER_QOS)

    def _on_clock(self, msg, info) -> None:
        self.clock_ns = stamp_ns(msg.clock)
        self.clock_log.append((info['source_timestamp'], self.clock_ns))

    def _on_ready(self, msg) -> None:
        if msg.name == FOLLOWER:
            self.ready = dict(zip(msg.publications, msg.readers))

    def _taker(self, topic):
        def callback(msg, info):
            key = msg.data if topic == '/chatter' else str(msg.point.x)
            self.received.append((topic, key, info['source_timestamp']))
        return callback

    def take_now(self) -> None:
        """Take what the data subscriptions hold now, without waiting."""
        for sub in self._subs:
            for item in take_ready(sub):
                sub.callback(*item)

    def wait_received(self, count: int) -> None:
        """Wait until ``count`` messages have come in all."""
        self.spin_until(lambda: len(self.received) >= count, f'{count} bag messages')


class Model:
    """What the follower plays at each /clock (doc/bags.md), stamps placed at ``- offset_ns``."""

    def __init__(self, records, offset_ns: int):
        self._records = records
        self._offset_ns = offset_ns
        self._left = list(records)
        self.previous = None

    def follow(self, clock_ns: int) -> list:
        """Return the records that ``clock_ns`` makes due, in bag order."""
        previous, self.previous = self.previous, clock_ns
        if previous is None or clock_ns == previous:
            return []
        if clock_ns < previous:
            self._left = [r for r in self._records if r.time_ns - self._offset_ns >= clock_ns]
            return []
        due = [r for r in self._left if r.time_ns - self._offset_ns <= clock_ns]
        self._left = self._left[len(due):]
        return due


def _check_clocks(probe, received, records, offset_ns):
    """Each message was published after a /clock at or past its stamp (on the /clock axis)."""
    stamps = {(r.topic, r.key): r.time_ns - offset_ns for r in records}
    clocks = sorted(probe.clock_log)
    sources = [source for source, _ in clocks]
    early = []
    for topic, key, source in received:
        before = bisect_right(sources, source)
        clock_ns = clocks[before - 1][1] if before else None
        if clock_ns is None or clock_ns < stamps[(topic, key)]:
            early.append((topic, key, clock_ns, stamps[(topic, key)]))
    assert not early, ('published before /clock reached their stamps (topic, key, /clock '
                       f'published last before, stamp): {early}')


def _by_topic(items):
    """Return {topic: keys in order} of received items or of records."""
    topics = {}
    for item in items:
        topic, key = (item.topic, item.key) if hasattr(item, 'topic') else item[:2]
        topics.setdefault(topic, []).append(key)
    return topics


@pytest.fixture
def probe(domain_id):
    """Return a probe on the test's domain."""
    client = Probe(domain_id)
    yield client
    client.close()


def _step_pass(probe, model, until_ns, steps=(1, 3, 7, 2, 13, 5)):
    """
    Step unevenly until /clock reaches ``until_ns``; return what came, in the order taken.

    After each step answers, every /chatter message (reliable) due by its time is there
    already, taken without waiting: the follower, a participant, had it acknowledged before
    saying the frame done. /pose is best effort: it is waited for.
    """
    start = len(probe.received)
    expected = []
    calls = 0
    while model.previous < until_ns:
        response = probe.step('', steps[calls % len(steps)])
        calls += 1
        assert response.success, response.message
        now = stamp_ns(response.clock)
        expected += model.follow(now)
        probe.take_now()
        got = probe.received[start:]
        assert _by_topic(got).get('/chatter', []) == _by_topic(expected).get('/chatter', []), now
        probe.wait_received(start + len(expected))
        assert _by_topic(probe.received[start:]) == _by_topic(expected), now
    return probe.received[start:]


@pytest.mark.parametrize('storage', ['sqlite3', 'mcap'])
def test_follows_a_stepped_clock_server_as_its_participant(
        start_server, probe, tmp_path, storage):
    """
    A sync-mode server stepped unevenly, reset midway: each pass plays every message once.

    The follower joins the server (named in expected_participants, it says it is ready), so
    each step answers once the data due by its time is acknowledged; it publishes no /clock.
    """
    path = str(tmp_path / f'bag_{storage}')
    records = write_test_bag(path, storage)
    server = start_server({'sync': True, 'time_step': 0.01,
                           'expected_participants': FOLLOWER})
    follower = start_server(argv=[path, '--follow-clock', '--start-at-zero'],
                            executable=executable('bag_player'))
    # The follower's writers have matched this probe's readers (its report on ~/ready), it
    # has the server's time (published while idle), and so has this probe.
    _until(probe, lambda: probe.ready.get('/chatter', 0) >= 1
           and probe.ready.get('/pose', 0) >= 1, 'the follower ready for the probe', follower)
    _until(probe, lambda: 'first /clock: 0 ns' in follower.log(), 'its first /clock', follower)
    # The probe's copy of the report says nothing of the server's: it reads ~/ready with a
    # reader of its own, and says when it has taken the follower as ready.
    _until(probe, lambda: 'every expected participant is ready' in server.log(),
           'the server taking the follower as ready', server)
    probe.spin_until(lambda: probe.clock_ns is not None, 'a /clock')
    status = probe.status()
    assert list(status.participants) == [FOLLOWER], status
    assert not status.expected_missing and not status.other_clock_sources, status

    model = Model(records, START_NS)
    model.follow(0)
    first = _step_pass(probe, model, 550 * MS)
    reached = model.previous
    assert probe.trigger('reset').success
    model.follow(0)
    second = _step_pass(probe, model, 1100 * MS)
    # Pass one up to where it stopped; pass two, from the reset's 0, every message once.
    assert _by_topic(first) == _by_topic(
        [r for r in records if r.time_ns - START_NS <= reached])
    assert _by_topic(second) == _by_topic(records)
    probe.spin_until(lambda: probe.clock_ns == model.previous, 'the last /clock')
    _check_clocks(probe, first + second, records, START_NS)
    assert probe.status().epoch == 1
    _until(probe, lambda: 'end of the bag' in follower.log(), 'the end of the bag', follower)
    log = follower.log()
    assert 'joined as participant' in log and 'best effort' not in log, log
    assert f'went back from {reached} to 0 ns' in log, log
    assert f'end of the bag at /clock {1000 * MS} ns' in log, log
    assert 'Traceback' not in server.log()


def test_follows_a_plain_clock_best_effort(start_server, probe, tmp_path):
    """
    A node that publishes /clock itself (no ~/join): best effort, said in the log.

    The bag's stamps as they are (no --start-at-zero), the follower with use_sim_time: a
    time before the bag, jumps over many messages, a time going back, the end.
    """
    path = str(tmp_path / 'bag_mcap')
    records = write_test_bag(path, 'mcap')
    clock = probe.node.create_publisher(Clock, '/clock', DEEP)
    follower = start_server({'use_sim_time': True}, argv=[path, '--follow-clock'],
                            executable=executable('bag_player'))
    # Best effort is said once the source has shown no ~/join for a while; by then the
    # follower's subscription has matched this writer (its own, and its time source's).
    _until(probe, lambda: 'best effort' in follower.log(), 'the best-effort line', follower)
    _until(probe, lambda: clock.get_subscription_count() >= 3, 'the follower on /clock',
           follower)
    probe.spin_until(lambda: probe.node.count_publishers('/chatter') >= 1, 'the follower')

    model = Model(records, 0)
    expected = []
    for offset in (-50 * MS, 0, 37 * MS, 420 * MS, 421 * MS, 100 * MS, 600 * MS, 1000 * MS,
                   1200 * MS):
        clock_ns = START_NS + offset
        msg = Clock()
        msg.clock.sec, msg.clock.nanosec = split_ns(clock_ns)
        clock.publish(msg)
        expected += model.follow(clock_ns)
        _until(probe, lambda: len(probe.received) >= len(expected),
               f'{len(expected)} messages', follower)
        assert _by_topic(probe.received) == _by_topic(expected), offset
    assert len(expected) > len(records)  # the time going back played some again
    probe.spin_until(lambda: probe.clock_ns == model.previous, 'the last /clock')
    _check_clocks(probe, probe.received, records, 0)
    _until(probe, lambda: 'end of the bag' in follower.log(), 'the end of the bag', follower)
    log = follower.log()
    assert 'following /clock of /follow_probe (reliable)' in log, log
    assert f'went back from {START_NS + 421 * MS} to {START_NS + 100 * MS} ns' in log, log
    assert 'joined as participant' not in log


def _until(probe, condition, what, process):
    """Spin ``probe`` until ``condition()``; on a timeout, show ``process``'s log."""
    try:
        probe.spin_until(condition, what)
    except AssertionError as error:
        raise AssertionError(f'{error}; its log:\n{process.log()}') from None
