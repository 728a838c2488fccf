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

"""The bag player and the recorder through real DDS: separate processes, a client node here."""

import os
import signal
import time

from bags import MS
from bags import START_NS
from bags import UNKNOWN_TYPE
from bags import wait_process_ended
from bags import write_large_bag
from bags import write_test_bag
from harness import executable
from harness import NS
from harness import ServerProcess
from harness import stamp_ns
from harness import TestClient
from harness import UDP_LOOPBACK_ENV
import pytest
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from sim_clock.node.flow_control import WAIT_TIMEOUT_NS
from sim_clock.srv import Step
from sim_clock.wire.names import RECORDER_NODE_NAME

pytestmark = pytest.mark.process

STEP = 10 * MS
SYNC = {'sync': True, 'time_step': STEP / NS}
END_NS = START_NS + 1000 * MS
#: Longer than the stall wait: the reader counts as stalled.
PAUSE_S = WAIT_TIMEOUT_NS / NS + 0.5


class BagClient(TestClient):
    """A test client that also subscribes to the test bag's topics and records what comes."""

    __test__ = False

    def __init__(self, domain_id: int, pose_topic: str = '/pose'):
        super().__init__(domain_id, name='bag_client')
        from geometry_msgs.msg import PointStamped
        from std_msgs.msg import String
        self.data = []  # (topic, key, stamp_ns or None), in arrival order
        self.matched = set()
        for topic, msg_type, reliability in (
                ('/chatter', String, ReliabilityPolicy.RELIABLE),
                (pose_topic, PointStamped, ReliabilityPolicy.BEST_EFFORT)):
            qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10_000,
                             reliability=reliability)
            self.node.create_subscription(
                msg_type, topic, self._recorder(topic), qos,
                event_callbacks=SubscriptionEventCallbacks(matched=self._matcher(topic)))

    def _recorder(self, topic):
        def callback(msg):
            if topic == '/chatter':
                self.data.append(('/chatter', msg.data, None))
            else:
                self.data.append(('/pose', str(msg.point.x), stamp_ns(msg.header.stamp)))
        return callback

    def _matcher(self, topic):
        def callback(info):
            if info.current_count > 0:
                self.matched.add(topic)
        return callback

    def wait_matched(self, topics) -> None:
        """Wait until a publisher is matched on each of ``topics``, and it matched us."""
        self.spin_until(lambda: set(topics) <= self.matched, f'publishers on {topics}')
        # Our match is not the writer's: a step published before it matched these readers
        # loses its data (a fresh-clone run, beside a second suite). The server learns of
        # this node's readers in the order they were made, and the status client's answer
        # reader comes after them (clients are made on first use, after __init__'s readers):
        # once it is answered, every writer has matched.
        self.status_when_ready()

    def wait_data(self, count: int) -> None:
        """Wait until ``count`` data messages have arrived in all."""
        self.spin_until(lambda: len(self.data) >= count, f'{count} data messages')


@pytest.fixture
def bag_client(domain_id):
    """Return a client that records the test bag's topics."""
    test_client = BagClient(domain_id)
    yield test_client
    test_client.close()


@pytest.fixture
def sqlite_bag(tmp_path):
    """Return (path, records) of a one-second sqlite3 test bag."""
    path = str(tmp_path / 'bag_sqlite3')
    return path, write_test_bag(path, 'sqlite3')


def _start_player(start_server, bag: str, params=None, argv=()):
    return start_server(params, argv=[bag, *argv], executable=executable('bag_player'))


def _by_topic(events):
    topics = {}
    for event in events:
        topics.setdefault(event[0], []).append(event[1])
    return topics


def _step_through(client, records, steps_per_call=(1,)):
    """
    Step to the end of the bag; return [(clock, epoch, messages of that step)].

    After each step returns, the messages stamped up to its time (and no others) must come.
    """
    timeline = []
    previous = None
    seen = 0
    calls = 0
    while previous is None or previous < END_NS:
        steps = steps_per_call[calls % len(steps_per_call)]
        calls += 1
        response = client.step('', steps)
        assert response.success, response.message
        now = stamp_ns(response.clock)
        due = [r for r in records
               if r.time_ns <= now and (previous is None or r.time_ns > previous)]
        client.wait_data(seen + len(due))
        batch = client.data[seen:seen + len(due)]
        seen += len(due)
        # Same messages, and in bag order on each topic (topics interleave freely on arrival).
        assert _by_topic(batch) == _by_topic([(r.topic, r.key) for r in due]), now
        for topic, _, stamp in batch:
            if stamp is not None:
                assert stamp <= now and (previous is None or stamp > previous)
        timeline.append((now, response.epoch, sorted(batch)))
        previous = now
    # Nothing beyond what was due; spin a little for stragglers through the status call.
    client.status()
    assert len(client.data) == seen == len(records)
    return timeline


@pytest.mark.parametrize('storage', ['sqlite3', 'mcap'])
def test_lockstep_replay_releases_exactly_up_to_each_step(
        start_server, bag_client, tmp_path, storage):
    """Each step's data, then its /clock: count, order, time correspondence; no bag /clock."""
    path = str(tmp_path / f'bag_{storage}')
    records = write_test_bag(path, storage)
    server = _start_player(start_server, path, SYNC)
    bag_client.wait_matched(['/chatter', '/pose'])
    # /clock matched too before the first step (the idle republishing of the start time).
    bag_client.wait_for_time(START_NS)
    status = bag_client.status()
    assert (stamp_ns(status.clock), status.epoch, status.sync) == (START_NS, 0, True)
    timeline = _step_through(bag_client, records)
    assert [clock for clock, _, _ in timeline] == [
        START_NS + k * STEP for k in range(1, 101)]
    bag_client.wait_for_time(END_NS)
    assert bag_client.distinct_times() == [START_NS + k * STEP for k in range(101)]
    log = server.log()
    [warning] = [line for line in log.splitlines() if UNKNOWN_TYPE in line
                 and 'skipping' in line]
    assert warning.startswith('[WARN]') and 'not importable' in warning, log
    assert '/clock in the bag is not republished' in log


def test_two_lockstep_replays_are_identical(start_server, bag_client, sqlite_bag):
    """Two replays of one bag, stepped alike, give the same data and clock interleaving."""
    path, records = sqlite_bag
    runs = []
    for _ in range(2):
        server = _start_player(start_server, path, SYNC)
        bag_client.wait_matched(['/chatter', '/pose'])
        bag_client.data.clear()
        bag_client.clocks.clear()
        bag_client.clock_sources.clear()
        runs.append(_step_through(bag_client, records, steps_per_call=(1, 3, 7, 2)))
        assert server.stop() == 0
        bag_client.matched.clear()
    assert runs[0] == runs[1]
    assert len(runs[0]) > 10


def test_seek_reset_and_loop_are_announced_resets(start_server, bag_client, sqlite_bag):
    """~/seek, ~/reset and loop move the bag and time together, each bumping the epoch."""
    from sim_clock.srv import Seek
    path, records = sqlite_bag
    server = _start_player(start_server, path, SYNC)
    bag_client.wait_matched(['/chatter', '/pose'])

    def seek(time_ns):
        sec, nanosec = divmod(time_ns, NS)
        request = Seek.Request()
        request.time.sec, request.time.nanosec = sec, nanosec
        return bag_client.call(Seek, 'seek', request)

    outside = seek(START_NS - 1)
    assert not outside.success and 'outside the bag' in outside.message
    assert outside.epoch == 0 and bag_client.status().epoch == 0

    target = START_NS + 500 * MS
    sought = seek(target)
    assert sought.success and sought.epoch == 1 and stamp_ns(sought.clock) == target
    bag_client.wait_for_time(target)
    response = bag_client.step('', 5)
    assert stamp_ns(response.clock) == target + 5 * STEP and response.epoch == 1
    due = [r for r in records if target <= r.time_ns <= target + 5 * STEP]
    bag_client.wait_data(len(due))
    assert sorted(bag_client.data) == sorted((r.topic, r.key, r.time_ns if r.topic == '/pose'
                                              else None) for r in due)

    assert bag_client.trigger('reset').success
    status = bag_client.status()
    assert (stamp_ns(status.clock), status.epoch) == (START_NS, 2)

    assert bag_client.set_parameter('loop', True).successful
    bag_client.data.clear()
    response = bag_client.step('', 100)
    # The step that reaches the end plays everything, then loops: back to the start.
    assert response.success and response.epoch == 3
    assert stamp_ns(response.clock) == START_NS
    bag_client.wait_data(len(records))
    assert _by_topic(bag_client.data) == _by_topic([(r.topic, r.key) for r in records])
    response = bag_client.step('', 1)
    first = [r for r in records if r.time_ns <= START_NS + STEP]
    bag_client.wait_data(len(records) + len(first))
    assert stamp_ns(response.clock) == START_NS + STEP and response.epoch == 3
    log = server.log()
    assert 'loop: end of the bag reached' in log and '~/seek to' in log


def test_free_run_plays_everything_then_ends(start_server, bag_client, sqlite_bag):
    """Free run plays every message in order, then the player ends with exit code 0."""
    path, records = sqlite_bag
    player = _start_player(start_server, path, {'real_time_factor': 4.0, 'time_step': 0.005,
                                                'paused': True})
    bag_client.wait_matched(['/chatter', '/pose'])
    assert bag_client.trigger('resume').success
    assert player.process.wait(timeout=30) == 0, player.log()
    # It ended once its readers had every message (acknowledged): all are here or on the way.
    bag_client.wait_data(len(records))
    assert _by_topic(bag_client.data) == _by_topic([(r.topic, r.key) for r in records])
    assert 'the player ends' in player.log() and 'not acknowledged' not in player.log()


def test_free_run_plays_everything_then_stays_paused(start_server, bag_client, sqlite_bag):
    """With stay_at_end: free run at twice real time plays everything, then pauses there."""
    path, records = sqlite_bag
    _start_player(start_server, path, {'real_time_factor': 2.0, 'time_step': 0.005,
                                       'paused': True, 'stay_at_end': True})
    bag_client.wait_matched(['/chatter', '/pose'])
    assert bag_client.trigger('resume').success
    bag_client.wait_data(len(records))
    assert _by_topic(bag_client.data) == _by_topic([(r.topic, r.key) for r in records])
    bag_client.spin_until(lambda: bag_client.status().paused, 'the pause at the end')
    assert stamp_ns(bag_client.status().clock) >= END_NS
    assert bag_client.get_parameter('paused') is True


@pytest.mark.parametrize('storage, factor', (('sqlite3', 10.0), ('mcap', 10.0), ('mcap', 0.0)))
def test_free_run_loops_never_publish_a_time_past_the_bag(
        start_server, bag_client, tmp_path, storage, factor):
    """
    Looping in free run, /clock stays within the bag: the frame at its last stamp loops back.

    The bag's last message is stamped at its end, on the frame grid: the frame that plays it
    ends the run of frames a tick publishes (or a batch as fast as possible), and the loop
    comes before any frame after it.
    """
    path = str(tmp_path / f'bag_{storage}')
    records = write_test_bag(path, storage)
    _start_player(start_server, path, {'real_time_factor': factor, 'time_step': 0.02,
                                       'paused': True, 'loop': True})
    bag_client.wait_matched(['/chatter', '/pose'])
    chatter = [r.key for r in records if r.topic == '/chatter']
    assert bag_client.trigger('resume').success
    bag_client.spin_until(lambda: sum(t == '/chatter' for t, _, _ in bag_client.data)
                          >= 5 * len(chatter), 'five passes of /chatter', timeout=30.0)
    assert bag_client.trigger('pause').success
    times = bag_client.times()
    assert max(times) == END_NS and min(times) == START_NS
    assert [t for t in times if t > END_NS] == []


def test_real_time_mode_from_zero(start_server, bag_client, sqlite_bag):
    """Real-time mode with --start-at-zero: /clock from 0 at wall pace, all data plays."""
    path, records = sqlite_bag
    player = _start_player(start_server, path, {'mode': 'real_time', 'paused': True},
                           argv=['--start-at-zero'])
    bag_client.wait_matched(['/chatter', '/pose'])
    assert stamp_ns(bag_client.status().clock) == 0
    assert bag_client.trigger('resume').success
    bag_client.wait_data(len(records))
    for topic, _, stamp in bag_client.data:
        assert stamp is None or stamp >= START_NS  # header stamps stay as recorded
    assert player.process.wait(timeout=30) == 0, player.log()
    end_ns = int(player.log().split('end of the bag at ')[1].split(' ns')[0])
    assert 1000 * MS <= end_ns < 2 * NS


def test_topic_filter_and_remap(start_server, domain_id, sqlite_bag):
    """--topics plays only those; a ROS remap renames a played topic."""
    path, records = sqlite_bag
    client = BagClient(domain_id, pose_topic='/robot/pose')
    try:
        _start_player(start_server, path, SYNC,
                      argv=['--topics', '/pose', '--ros-args', '-r', '/pose:=/robot/pose'])
        client.wait_matched(['/robot/pose'])
        poses = [r for r in records if r.topic == '/pose']
        assert client.step('', 101).success
        client.wait_data(len(poses))
        assert [key for _, key, _ in client.data] == [r.key for r in poses]
        assert client.node.count_publishers('/chatter') == 0
        assert client.node.count_publishers('/pose') == 0
    finally:
        client.close()


@pytest.mark.parametrize('damage', ['missing', 'truncated_mcap', 'not_a_bag'])
def test_damaged_or_missing_bag_exits_before_starting(client, tmp_path, domain_id, damage):
    """A bag that cannot play: a clear error, exit code 1, no node, publisher or service."""
    path = str(tmp_path / 'bag')
    if damage == 'truncated_mcap':
        write_test_bag(path, 'mcap')
        [name] = [n for n in os.listdir(path) if n.endswith('.mcap')]
        with open(os.path.join(path, name), 'r+b') as data:
            data.truncate(500)
    elif damage == 'not_a_bag':
        os.mkdir(path)
        with open(os.path.join(path, 'metadata.yaml'), 'w') as metadata:
            metadata.write('hello: world\n')
    player = ServerProcess(domain_id, str(tmp_path), SYNC, argv=[path],
                           executable=executable('bag_player'))
    assert player.process.wait(30) == 1
    log = player.log()
    assert path in log and 'FATAL' in log, log
    assert 'publishing /clock' not in log and 'playing' not in log
    assert not [name for name, _ in client.node.get_service_names_and_types()
                if name.startswith('/sim_clock')]


def test_recorder_writes_simulated_time(start_server, bag_client, sqlite_bag, tmp_path):
    """The recorder stores a lockstep replay raw, stamped with /clock, and sums it up."""
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import get_typestore
    from rosbags.typesys import Stores
    path, records = sqlite_bag
    output = str(tmp_path / 'recorded')
    # Started together and stepped at once, as a launch file does: the player holds the
    # first frame until the recorder says its readers matched the player's writers (its first
    # reader of the best-effort /pose is reliable, matches nothing, and is made again).
    _start_player(start_server, path,
                  {**SYNC, 'expected_participants': [f'/{RECORDER_NODE_NAME}']})
    recorder = start_server(executable=executable('recorder'), argv=[
        output, '--until', str(END_NS / NS), '-t', '/chatter', '/pose', '/absent'])
    bag_client.wait_matched(['/chatter', '/pose'])
    _step_through(bag_client, records)
    assert recorder.process.wait(30) == 0
    summary = recorder.log()
    assert f'recorded {len(records)} messages into {output}' in summary, summary
    assert 'not recorded (no publisher seen): /absent' in summary

    # Data round trip: the bytes decode to the messages of the bag (DDS may pad the end).
    store = get_typestore(Stores.ROS2_JAZZY)
    times = {(r.topic, r.key): r.time_ns for r in records}
    with Reader(output) as recorded:
        assert recorded.connections[0].ext.offered_qos_profiles
        counts = {}
        for connection, stamp, data in recorded.messages():
            counts[connection.topic] = counts.get(connection.topic, 0) + 1
            msg = store.deserialize_cdr(data, connection.msgtype)
            key = msg.data if connection.topic == '/chatter' else str(msg.point.x)
            # Stamped with the /clock published last before it: the frame before its own,
            # however far behind the recorder runs.
            t = times[(connection.topic, key)]
            assert 0 <= t - stamp <= STEP, (connection.topic, key, stamp, t)
    assert counts == {topic: sum(r.topic == topic for r in records)
                      for topic in ('/chatter', '/pose')}


# -- the read-ahead process ----------------------------------------------------------------------

@pytest.fixture
def large_bag(tmp_path):
    """Return (path, times) of a sqlite3 bag of 20 MB: many times the read-ahead's pipe."""
    path = str(tmp_path / 'large')
    return path, write_large_bag(path, count=2000, size=10_000)


def _children(pid: int) -> list:
    """Return the process ids whose parent is ``pid``."""
    children = []
    for name in os.listdir('/proc'):
        if name.isdigit():
            try:
                with open(f'/proc/{name}/stat') as stat:
                    # The command may hold spaces and parentheses: the ppid follows the last ')'.
                    if int(stat.read().rsplit(')', 1)[1].split()[1]) == pid:
                        children.append(int(name))
            except (OSError, IndexError, ValueError):
                pass  # ended meanwhile
    return children


def _read_ahead_of(player) -> int:
    """Return the process id of the player's read-ahead child."""
    [child] = _children(player.process.pid)
    with open(f'/proc/{child}/cmdline', 'rb') as cmdline:
        assert b'read_ahead_main' in cmdline.read()
    return child


def _seek(client, time_ns):
    from sim_clock.srv import Seek
    request = Seek.Request()
    request.time.sec, request.time.nanosec = divmod(time_ns, NS)
    return client.call(Seek, 'seek', request)


def _chatter_keys(client) -> list:
    return [int(key[:8]) for topic, key, _ in client.data if topic == '/chatter']


def test_lockstep_seek_while_the_bag_is_read_ahead(start_server, bag_client, large_bag):
    """Seeks while the child is far ahead: each step brings exactly the messages due."""
    path, times = large_bag
    _start_player(start_server, path, SYNC)
    bag_client.wait_matched(['/chatter'])
    assert stamp_ns(bag_client.step('', 3).clock) == times[30]
    bag_client.wait_data(31)
    for index, steps in ((1000, 2), (5, 1), (1990, 1)):
        assert _seek(bag_client, times[index]).success
        assert stamp_ns(bag_client.step('', steps).clock) == times[index] + steps * STEP
    due = [*range(31), *range(1000, 1021), *range(5, 16), *range(1990, 2000)]
    bag_client.wait_data(len(due))
    bag_client.status()  # a round trip: stragglers would come before its answer
    assert _chatter_keys(bag_client) == due


def test_read_error_mid_bag_is_logged_and_time_goes_on(start_server, bag_client, large_bag):
    """A damaged page mid-bag: an error naming it, steps answer, a seek plays again."""
    path, times = large_bag
    server = _start_player(start_server, path, SYNC)
    bag_client.wait_matched(['/chatter'])
    # The first step's data: the read-ahead has opened the bag (before any damage) by now.
    assert bag_client.step('', 1).success
    bag_client.wait_data(11)
    [name] = [n for n in os.listdir(path) if n.endswith('.db3')]
    size = os.path.getsize(os.path.join(path, name))
    with open(os.path.join(path, name), 'r+b') as data:
        data.seek(size * 3 // 4)
        data.write(b'\xff' * (size // 8))
    assert _seek(bag_client, times[1500]).success
    response = bag_client.step('', 50)
    assert response.success and stamp_ns(response.clock) == times[1500] + 500 * MS
    bag_client.spin_until(lambda: 'reading the bag failed' in server.log(), 'the error')
    log = server.log()
    assert 'malformed' in log and 'no more data plays until a seek or reset' in log, log
    assert bag_client.step('', 1).success
    assert _seek(bag_client, times[0]).success
    before = len(bag_client.data)
    assert bag_client.step('', 1).success
    bag_client.wait_data(before + 11)
    assert _chatter_keys(bag_client)[before:] == list(range(11))


@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_no_read_ahead_process_outlives_the_player(
        domain_id, tmp_path, bag_client, large_bag, sig):
    """Stopped or killed, the player leaves no child: killed, the child ends by itself."""
    path, _ = large_bag
    # Not the start_server fixture: it expects exit code 0 of every server. Killed, over UDP
    # only (UDP_LOOPBACK_ENV says why).
    server = ServerProcess(domain_id, str(tmp_path), SYNC, argv=[path],
                           executable=executable('bag_player'),
                           env=UDP_LOOPBACK_ENV if sig == signal.SIGKILL else None)
    try:
        bag_client.wait_matched(['/chatter'])
        child = _read_ahead_of(server)
        assert bag_client.step('', 1).success  # the child is ahead now, blocked on its pipe
        assert server.stop(sig) == (-signal.SIGKILL if sig == signal.SIGKILL else 0)
        assert wait_process_ended(child), f'read-ahead process {child} outlived the player'
    finally:
        server.stop(signal.SIGKILL)


def test_a_reader_pausing_during_a_long_step_does_not_end_the_bag_player(
        start_server, domain_id, tmp_path):
    """
    A keep-all /chatter reader pausing past the stall wait, twice, in a 30,000-frame step.

    Taken as stalled, it may lose samples, and Fast DDS 3 may refuse the bag writer's next
    ones (``sim_clock._replay.PublishRefused``), which ended the player before; here it has
    not refused in the runs seen, so the refusal is placed exactly in
    test/node/test_flow_control.py and test_replay_native.py. The step succeeds; what the
    reader gets is in order, none twice; the next step's message comes (a topic left out is so
    only within its step); the player exits 0 (the fixture checks).
    """
    from std_msgs.msg import String
    path = str(tmp_path / 'long')
    write_large_bag(path, count=30_003, size=16)
    _start_player(start_server, path, {'sync': True, 'time_step': 0.001})
    client = TestClient(domain_id, name='pausing_reader')
    keep_all = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
    seen = []

    def take(msg):
        seen.append(int(msg.data[:8]))
        if len(seen) in (3_000, 20_000):
            time.sleep(PAUSE_S)  # the pause under test, inside the reader's callback
    try:
        client.node.create_subscription(String, '/chatter', take, keep_all)
        client.status_when_ready()
        # Message 0 went out at the start, perhaps before this reader matched.
        assert client.step('', 1).success
        client.spin_until(lambda: 1 in seen, "the first step's message")
        response = client.call(Step, 'step', Step.Request(user_id='', steps=30_000),
                               timeout=120.0)
        assert response.success, response.message
        assert stamp_ns(response.clock) == START_NS + 30_001 * MS
        assert client.step('', 1).success
        client.spin_until(lambda: seen[-1] == 30_002, "the next step's message", timeout=120)
    finally:
        client.close()
    # A reader taken as stalled may lose samples (node/flow_control.py); never one twice or
    # out of order.
    assert seen == sorted(set(seen))
