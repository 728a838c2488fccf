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

"""The bag player with ros2 bag play's flags, through real DDS: bags merged, filtered, limited."""

import time

from bags import MS
from bags import START_NS
from bags import write_string_bag
from bags import write_test_bag
from harness import executable
from harness import NS
from harness import ServerProcess
from harness import stamp_ns
from harness import TestClient
import pytest
from rclpy.qos import DurabilityPolicy
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy

pytestmark = pytest.mark.process

STEP = 10 * MS
OFFSET = 30 * MS
UNTIL = START_NS + 150 * MS
#: Bag A (sqlite3): /chatter every 20 ms from the start; the other topics to filter.
BAG_A = [
    *[(START_NS + k * 20 * MS, '/chatter', f'a{k}') for k in range(11)],
    *[(START_NS + 5 * MS + k * 50 * MS, '/other', f'o{k}') for k in range(4)],
    (START_NS + 45 * MS, '/chatter_excluded', 'x'),
    (START_NS + 47 * MS, '/nope', 'n'),
]
#: Bag B (MCAP): /chatter between A's, and one at the stamp of A's a5 (which comes first).
BAG_B = [
    *[(START_NS + 10 * MS + k * 20 * MS, '/chatter', f'b{k}') for k in range(10)],
    (START_NS + 100 * MS, '/chatter', 'b_tie'),
    (START_NS + 55 * MS, '/other_x1', 'ox'),
]


class FlagClient(TestClient):
    """A test client that records String messages of several topics, in arrival order."""

    __test__ = False

    def __init__(self, domain_id: int, topics: dict):
        super().__init__(domain_id, name='flag_client')
        from std_msgs.msg import String
        self.data = {topic: [] for topic in topics}
        #: monotonic time of the first data message
        self.first_data = None
        #: topic -> its subscription
        self.readers = {}
        for topic, reliability in topics.items():
            qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                             reliability=reliability)
            self.readers[topic] = self.node.create_subscription(
                String, topic, self._recorder(topic), qos)

    def _recorder(self, topic):
        def callback(msg):
            self.first_data = self.first_data or time.monotonic()
            self.data[topic].append(msg.data)
        return callback

    def count(self) -> int:
        return sum(map(len, self.data.values()))

    def wait_count(self, count: int, log=lambda: '') -> None:
        """Spin until ``count`` data messages came; else fail saying which came, and ``log()``."""
        try:
            self.spin_until(lambda: self.count() >= count, f'{count} data messages')
        except AssertionError as error:
            raise AssertionError(f'{error}; came: {self.data}\n{log()}') from None


def _expected(records, topic, low_ns, high_ns) -> list:
    """Return the texts on ``topic`` stamped in (low, high], in merged order."""
    return [text for stamp, name, text in records if name == topic and low_ns < stamp <= high_ns]


def test_flags_merge_filter_offset_until_loop_and_parameters(
        start_server, domain_id, tmp_path):
    """
    One sync-mode player with most of ros2 bag play's flags, stepped frame by frame.

    -i twice (sqlite3 and MCAP) merged by time, the bag given first first at one stamp;
    --start-offset; --playback-until-nsec; -e, --topics, --exclude-topics, -x; -m;
    --qos-profile-overrides-path; -l, -r, -p, --clock HZ as parameters (over --ros-args -p);
    harmless flags accepted; -p expected_participants:= (an empty value).
    """
    bag_a, bag_b = str(tmp_path / 'a'), str(tmp_path / 'b')
    write_string_bag(bag_a, BAG_A, 'sqlite3')
    write_string_bag(bag_b, BAG_B, 'mcap')
    # Merged: by stamp, at one stamp bag A first.
    merged = sorted([(r, 0) for r in BAG_A] + [(r, 1) for r in BAG_B],
                    key=lambda item: (item[0][0], item[1]))
    records = [record for record, _ in merged]
    overrides = tmp_path / 'qos.yaml'
    overrides.write_text('/other:\n  history: keep_last\n  depth: 7\n'
                         '  reliability: best_effort\n  durability: volatile\n')
    client = FlagClient(domain_id, {'/talk': ReliabilityPolicy.RELIABLE,
                                    '/other': ReliabilityPolicy.BEST_EFFORT})
    try:
        player = start_server(
            {'sync': True, 'time_step': STEP / NS, 'real_time_factor': 3.0},
            executable=executable('bag_player'), argv=[
                '-i', bag_a, 'sqlite3', '-i', bag_b, 'mcap', '--start-offset', '0.03',
                '--playback-until-nsec', str(UNTIL), '-e', '/ch.*', '--topics', '/other',
                '--exclude-topics', '/chatter_excluded', '-x', '/other_x.*',
                '-m', '/chatter:=/talk', '--qos-profile-overrides-path', str(overrides),
                '-l', '--rate', '2', '-p', '--clock', '25', '--disable-keyboard-controls',
                '--read-ahead-queue-size', '10', '--disable-loan-message',
                '--ros-args', '-p', 'expected_participants:='])
        client.status_when_ready()
        node = client.node
        client.spin_until(lambda: node.count_publishers('/talk') and
                          node.count_publishers('/other'), 'the bag topics')
        assert [node.count_publishers(topic) for topic in (
            '/chatter', '/chatter_excluded', '/other_x1', '/nope')] == [0, 0, 0, 0]
        [other] = node.get_publishers_info_by_topic('/other')
        assert other.qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT
        assert other.qos_profile.durability == DurabilityPolicy.VOLATILE
        [talk] = node.get_publishers_info_by_topic('/talk')
        assert talk.qos_profile.reliability == ReliabilityPolicy.RELIABLE  # as recorded
        # Flags set parameters, over --ros-args -p; the empty value is the empty string.
        assert [client.get_parameter(name) for name in (
            'real_time_factor', 'loop', 'paused', 'publish_rate', 'max_clock_rate',
            'expected_participants')] == [2.0, True, True, 25.0, 25.0, '']
        start = START_NS + OFFSET
        status = client.status()
        assert (stamp_ns(status.clock), status.epoch) == (start, 0)
        # Frame by frame: each step brings exactly the messages of its frame, merged in order.
        previous, epoch, seen, steps = start - 1, 0, 0, 0
        while epoch == 0:
            steps += 1
            response = client.step('', 1)
            assert response.success, response.message
            now, epoch = stamp_ns(response.clock), response.epoch
            high = min(now, UNTIL) if epoch == 0 else UNTIL
            due = {topic: _expected(records, bag_topic, previous, high)
                   for topic, bag_topic in (('/talk', '/chatter'), ('/other', '/other'))}
            seen += sum(map(len, due.values()))
            client.wait_count(seen)
            for topic, texts in due.items():
                got = client.data[topic]
                assert got[len(got) - len(texts):] == texts, now
            previous = now
        # -l: the step that reached the end (the 12th) looped back to the offset, not to the
        # bag's start.
        assert stamp_ns(response.clock) == start and steps == (UNTIL - start) // STEP
        client.status()  # a round trip: stragglers would come before its answer
        assert client.data['/talk'] == _expected(records, '/chatter', start - 1, UNTIL)
        assert client.data['/other'] == _expected(records, '/other', start - 1, UNTIL)
        assert 'a5' in client.data['/talk'] and client.data['/talk'].index('b_tie') == \
            client.data['/talk'].index('a5') + 1
        # b7 is stamped at --playback-until-nsec (which plays), a8 after it.
        assert client.data['/talk'][-2:] == ['a7', 'b7'] and 'a8' not in client.data['/talk']
        # Looped: the first frame after the offset plays again.
        assert client.step('', 1).success
        client.wait_count(seen + len(_expected(records, '/chatter', start - 1, start + STEP)))
        assert 'overriding the QoS profile of /other' in player.log()
        # The flags that do nothing here are said so, once.
        log = player.log()
        assert log.count('accepted without effect here: --disable-loan-message') == 1, log
        assert '--read-ahead-queue-size (the bag is read ahead' in log
    finally:
        client.close()


def test_positional_bag_delay_duration_and_rate_in_free_run(start_server, domain_id, tmp_path):
    """
    BAG -s mcap with --delay, --playback-duration, -r and --start-at-zero, in free run.

    Nothing plays before the delay (the player is paused meanwhile); then every message up to
    the duration plays, in order, and the player ends at the end.

    What plays reaches the readers matched by then, as with ros2 bag play: the delay is how
    long the player gives them. DDS does not say how long a match takes: a process that joins
    another's domain is sometimes discovered only at that one's next periodic announcement,
    every 3 s in Fast DDS (doc/bags.md, "The delay and discovery"). So the delay here is
    5 s, and the test checks that the client's reader matched the player's writer before it
    ended, which is what the rest assumes.
    """
    bag_b = str(tmp_path / 'b')
    write_string_bag(bag_b, BAG_B, 'mcap')
    client = FlagClient(domain_id, {'/chatter': ReliabilityPolicy.RELIABLE})
    delay = 5.0
    try:
        spawned = time.monotonic()
        player = start_server({}, executable=executable('bag_player'), argv=[
            bag_b, '-s', 'mcap', '--delay', str(delay), '--playback-duration', '0.1',
            '-r', '5', '--start-at-zero', '--no-progress'])
        reader = client.readers['/chatter']
        client.spin_until(lambda: reader.get_publisher_count() > 0,
                          "the player's writer of /chatter")
        matched = time.monotonic() - spawned
        assert matched < delay, (
            f"the client's reader matched the player's writer {matched:.3f} s after the "
            f'player was started, past the {delay} s delay:\n{player.log()}')
        client.status_when_ready()
        assert client.get_parameter('real_time_factor') == 5.0
        held = client.status()
        if time.monotonic() - spawned < delay:
            assert held.paused and stamp_ns(held.clock) == 0
        start = START_NS + 10 * MS
        texts = _expected(sorted(BAG_B), '/chatter', start - 1, start + 100 * MS)
        client.wait_count(len(texts), player.log)
        assert client.first_data - spawned >= delay
        assert player.process.wait(timeout=30) == 0, player.log()  # the end of the bag
        assert client.data['/chatter'] == texts == [
            'b0', 'b1', 'b2', 'b3', 'b4', 'b_tie', 'b5']
        end_ns = int(player.log().split('end of the bag at ')[1].split(' ns')[0])
        assert 100 * MS <= end_ns < 200 * MS
        # The delay's timer is on a clock of its own: no warning of rclpy's EventsExecutor.
        assert 'timers associated with this clock' not in player.log()
    finally:
        client.close()


def test_the_delay_holds_each_loop_too(start_server, client, tmp_path):
    """
    -l with --delay in free run: each loop's reset is held for the delay, as the start is.

    After the reset to the start, time stands still for the delay before the new pass plays
    (ros2 bag play waits before each pass). Measured by the player's own send times (each
    /clock's source timestamp): from the reset's /clock at 0 to the first later time, at least
    the delay.
    """
    path = str(tmp_path / 'bag')
    write_test_bag(path, 'sqlite3')
    delay_ns = 1 * NS
    player = start_server({}, executable=executable('bag_player'), argv=[
        path, '-l', '--delay', '1', '-r', '10', '--start-at-zero', '--no-progress'])

    def loop_played_on():
        """Return (reset index, first later index) once the second pass moved, else None."""
        times = client.times()
        for reset in range(1, len(times)):
            if times[reset] == 0 and times[reset - 1] > 0:
                later = next((k for k in range(reset, len(times)) if times[k] > 0), None)
                return None if later is None else (reset, later)
        return None
    client.spin_until(lambda: loop_played_on() is not None, 'the second pass to play', 30)
    reset, later = loop_played_on()
    held_ns = client.clock_sources[later] - client.clock_sources[reset]
    assert held_ns >= delay_ns, (held_ns, player.log())
    assert 'delay: the loop plays in 1.000000000 s' in player.log(), player.log()


def test_bad_flags_end_before_any_ros_entity(domain_id, tmp_path):
    """A bad value: exit 2 naming the flag; a start past the end: exit 1; no node either way."""
    bag_b = str(tmp_path / 'b')
    write_string_bag(bag_b, BAG_B, 'mcap')
    for argv, code, says in (
            (['--rate', '0'], 2, '-r/--rate (the real_time_factor parameter): a number'),
            (['--clock-topics-all'], 2, '--clock-topics-all is not supported'),
            (['-i', bag_b, 'sqlite3'], 1, 'not as the sqlite3 given with it'),
            (['--start-offset', '5'], 1, '--start-offset 5.000000000 s starts after the end')):
        player = ServerProcess(domain_id, str(tmp_path), argv=[
            *([] if argv[0] == '-i' else [bag_b]), *argv], executable=executable('bag_player'))
        assert player.process.wait(30) == code, player.log()
        log = player.log()
        assert says in log and 'Traceback' not in log, log
        assert 'publishing /clock' not in log


def test_pause_resume_and_sync_at_twice_the_pace_add_no_timer(start_server, client, tmp_path):
    """
    A bag player at -r 2: pauses, resumes and a sync on/off each give its tick a new period.

    Its log holds none of rclpy's EventsExecutor warning that a clock has many timers: the tick
    timer is changed in place, not made again and added to the executor at each change.
    """
    path = str(tmp_path / 'bag')
    write_test_bag(path, 'sqlite3')
    player = start_server({}, executable=executable('bag_player'),
                          argv=[path, '--loop', '-r', '2', '--no-progress'])
    client.status_when_ready()
    for _ in range(3):
        assert client.trigger('pause').success
        assert client.trigger('resume').success
    assert client.set_sync(True).success and client.set_sync(False).success
    assert client.status().real_time_factor == 2.0 and not client.status().paused
    assert 'timers associated with this clock' not in player.log()


def test_clock_hz_thins_clock_while_playing_and_every_message_goes_out(
        start_server, domain_id, tmp_path):
    """
    --clock 100 in free run at 2000 frames a second: /clock on a grid of 20 ms, all the data.

    ``--clock HZ`` sets ``max_clock_rate`` as well as ``publish_rate``: while playing, only the
    frames of the grid (every 20th frame of 1 ms at -r 2) publish /clock, each at its exact
    time, and each frame still publishes its messages, stamped off the grid, in order. The
    player starts paused (-p) so that the reader matches first, and ends at the end.
    """
    path = str(tmp_path / 'bag')
    records = [(START_NS + k * 7 * MS, '/chatter', f'm{k}') for k in range(100)]
    write_string_bag(path, records)
    client = FlagClient(domain_id, {'/chatter': ReliabilityPolicy.RELIABLE})
    try:
        player = start_server({'time_step': 0.001}, executable=executable('bag_player'), argv=[
            path, '--clock', '100', '-r', '2', '-p', '--start-at-zero', '--no-progress'])
        reader = client.readers['/chatter']
        client.spin_until(lambda: reader.get_publisher_count() > 0,
                          "the player's writer of /chatter")
        status = client.status_when_ready()
        assert (status.max_clock_rate, status.clock_stride) == (100.0, 20), status
        client.wait_for_clock(lambda t: True, 'the paused /clock')
        assert client.trigger('resume').success
        client.wait_count(len(records), player.log)
        assert player.process.wait(timeout=30) == 0, player.log()  # the end of the bag
        assert client.data['/chatter'] == [text for _, _, text in records]
        grid = 20 * MS
        times = client.distinct_times()
        off_grid = [t for t in times if t % grid]
        assert not off_grid, (off_grid[:5], player.log())
        # Paced, every grid frame goes out, up to the bag's last stamp (693 ms).
        assert times == list(range(0, 680 * MS + 1, grid)), (times, player.log())
    finally:
        client.close()
