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

"""The recorder's command line as ``ros2 bag record`` users expect, through real processes."""

import os
import signal
import subprocess
import time

from harness import ChildProcess
from harness import executable
from harness import TIMEOUT
import pytest
import rclpy
from sim_clock.bag.recorder_options import is_recorded_by_all

pytestmark = pytest.mark.process

MS = 1_000_000
#: Topics the test publishes; recorders are asked for the first two.
TOPICS = ('/rec_a', '/rec_b', '/rec_c')
#: Ways of naming /rec_a and /rec_b: each recorder must record both, and only them.
FORMS = {
    'one_t_several_topics': ['-t', '/rec_a', '/rec_b'],
    't_twice': ['-t', '/rec_a', '-t', '/rec_b'],
    'positional': ['/rec_a', '/rec_b'],
    'positional_and_t': ['/rec_a', '-t', '/rec_b'],
    'relative_names_twice_each': ['rec_a', '-t', 'rec_b', '/rec_a', '--topics', '/rec_b'],
}


@pytest.fixture
def publishers(client):
    """Return publishers of std_msgs/String on TOPICS, made on the test client's node."""
    from std_msgs.msg import String
    return {topic: client.node.create_publisher(String, topic, 10) for topic in TOPICS}


def _recorded_topics(path: str) -> set:
    from rosbags.rosbag2 import Reader
    with Reader(path) as bag:
        return {connection.topic for connection in bag.connections}


def _start_recorder(start_server, tmp_path, name: str, argv):
    output = str(tmp_path / name)
    return output, start_server(executable=executable('recorder'), argv=[output, *argv])


def test_topics_accumulate_however_given(start_server, client, publishers, tmp_path):
    """Positional topics, ``-t a b`` and ``-t a -t b`` add up; a topic never seen is named."""
    start_server()
    recorders = {name: _start_recorder(start_server, tmp_path, name, argv)
                 for name, argv in FORMS.items()}
    recorders['absent'] = _start_recorder(
        start_server, tmp_path, 'absent', ['/rec_a', '-t', '/rec_b', '/never_published'])

    def all_subscribed():
        return all('recording /rec_a' in recorder.log() and 'recording /rec_b' in recorder.log()
                   for _, recorder in recorders.values())
    client.spin_until(all_subscribed, 'every recorder to subscribe to /rec_a and /rec_b')
    for name, (output, recorder) in recorders.items():
        assert recorder.stop() == 0, recorder.log()
        log = recorder.log()
        assert _recorded_topics(output) == {'/rec_a', '/rec_b'}, (name, log)
        assert '/rec_c' not in log, (name, log)
        if name == 'absent':
            assert 'not recorded (no publisher seen): /never_published' in log, log
        else:
            assert 'no publisher seen' not in log, (name, log)


def _step(client, frames: int) -> None:
    response = client.step(steps=frames)
    assert response.success, response.message


def test_until_records_what_was_published_before_the_clock_that_reached_it(
        start_server, client, publishers, tmp_path):
    """
    --until 0.05: a message published before /clock reached 0.05 s is recorded, one after not.

    The recorder is stopped (SIGSTOP) while /clock reaches 0.05 s and a message follows it:
    both wait in its queue, so it takes the late message before it ends. Recorded, it would
    make a lockstep stack's recordings differ by what it published at the last frame.
    """
    from rosbags.rosbag2 import Reader
    from std_msgs.msg import String
    start_server({'sync': True, 'time_step': 0.01})
    client.wait_for_clock()
    output, recorder = _start_recorder(
        start_server, tmp_path, 'until', ['-t', '/rec_a', '--until', '0.05'])
    client.spin_until(lambda: 'recording /rec_a' in recorder.log()
                      and 'first /clock received' in recorder.log(), 'the recorder')
    client.spin_until(lambda: client.node.count_subscribers('/rec_a') >= 1, 'its subscription')

    _step(client, 4)
    client.spin_until(lambda: 40 * MS in client.times(), '/clock at 0.04 s')
    publishers['/rec_a'].publish(String(data='before'))
    os.kill(recorder.process.pid, signal.SIGSTOP)
    try:
        _step(client, 1)
        client.spin_until(lambda: 50 * MS in client.times(), '/clock at 0.05 s')
        publishers['/rec_a'].publish(String(data='after'))
    finally:
        os.kill(recorder.process.pid, signal.SIGCONT)
    assert recorder.process.wait(TIMEOUT) == 0, recorder.log()
    with Reader(output) as bag:
        recorded = [(stamp, bytes(data)) for _, stamp, data in bag.messages()]
    assert [stamp for stamp, _ in recorded] == [40 * MS], (recorded, recorder.log())
    assert b'before' in recorded[0][1]


def test_hold_frames_holds_each_frame_until_the_recorder_took_what_came_before(
        start_server, client, publishers, tmp_path):
    """
    --hold-frames: the recorder joins; a frame waits for it, stopped (SIGSTOP), and goes on.

    A message published at 0.01 s is recorded with its frame; the step of 0.02 s answers only
    once the recorder, continued, has taken that /clock and emptied its queues.
    """
    from rosbags.rosbag2 import Reader
    from sim_clock.srv import Step
    from sim_clock.wire.names import RECORDER_NODE_NAME
    from std_msgs.msg import String
    start_server({'sync': True, 'time_step': 0.01})
    client.wait_for_clock()
    output, recorder = _start_recorder(
        start_server, tmp_path, 'held', ['-t', '/rec_a', '--hold-frames', '--until', '0.05'])
    name = f'/{RECORDER_NODE_NAME}'
    client.spin_until(lambda: name in client.status().participants
                      and f"joined /sim_clock as participant '{name}'" in recorder.log(),
                      'the recorder among the participants, and saying so')
    client.spin_until(lambda: client.node.count_subscribers('/rec_a') >= 1, 'its subscription')
    _step(client, 1)
    publishers['/rec_a'].publish(String(data='at 0.01'))
    os.kill(recorder.process.pid, signal.SIGSTOP)
    try:
        future = client.client_for(Step, 'step').call_async(Step.Request(steps=1))
        client.spin_until(lambda: client.status().waiting_for == [name],
                          'the frame of 0.02 s waiting for the stopped recorder')
        assert not future.done()
    finally:
        os.kill(recorder.process.pid, signal.SIGCONT)
    client.spin_until(future.done, 'the step, once the recorder goes on')
    assert future.result().success, future.result().message
    _step(client, 3)
    assert recorder.process.wait(TIMEOUT) == 0, recorder.log()
    with Reader(output) as bag:
        recorded = [(stamp, bytes(data)) for _, stamp, data in bag.messages()]
    assert [stamp for stamp, _ in recorded] == [10 * MS], (recorded, recorder.log())
    assert b'at 0.01' in recorded[0][1]
    client.spin_until(lambda: name not in client.status().participants,
                      'the recorder gone from the participants at its end')


def test_a_full_queue_is_said_once(context, tmp_path, capfd):
    """
    A take that finds a topic's queue full says so, once: older messages may have been lost.

    The recorder node runs in the test's process; a reliable writer with a deeper history
    than the recorder's queue (RECORD_DEPTH) publishes more than it holds, and every message
    is acknowledged (in the recorder's queue, or dropped from it) before the recorder looks.
    """
    from rclpy.duration import Duration
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile
    from rclpy.qos import ReliabilityPolicy
    from sim_clock.bag.recorder import RECORD_DEPTH
    from sim_clock.bag.recorder import Recorder
    from sim_clock.bag.recorder_bag_file import close_bag
    from sim_clock.bag.recorder_bag_file import create_bag
    from std_msgs.msg import String
    output = str(tmp_path / 'full')
    writer = create_bag(output, 'mcap')
    recorder = Recorder(writer, ['/full'], types={'/full': 'std_msgs/msg/String'},
                        context=context)
    node = rclpy.create_node('full_writer', context=context)
    publisher = node.create_publisher(String, '/full', QoSProfile(
        depth=RECORD_DEPTH * 2, reliability=ReliabilityPolicy.RELIABLE))
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(recorder)
    try:
        deadline = time.monotonic() + TIMEOUT
        while publisher.get_subscription_count() < 1:
            assert time.monotonic() < deadline, 'the recorder never matched'
            executor.spin_once(timeout_sec=0.05)
        for k in range(RECORD_DEPTH + 10):
            publisher.publish(String(data=str(k)))
        assert publisher.wait_for_all_acked(Duration(seconds=TIMEOUT))
        for _ in range(2):
            recorder.spin_once(executor)
    finally:
        executor.shutdown()
        recorder.destroy_node()
        node.destroy_node()
        close_bag(writer, output)
    said = [line for line in capfd.readouterr().err.splitlines() if 'waited at once' in line]
    assert len(said) == 1, said
    assert (f'/full: {RECORD_DEPTH} messages waited at once, as many as its queue holds'
            in said[0]), said


@pytest.mark.parametrize('announced', [1, 2])
def test_until_waits_for_what_the_rounds_announced(
        start_server, client, publishers, tmp_path, announced):
    """
    At --until, the messages a Round announced for the frames before the end are waited for.

    One message published in the frame at 0.04 s and a Round of that frame announcing
    ``announced``: with 1 the recording ends at once; with 2 it waits for the second, which
    never comes, for END_WAIT_NS, and says what it ended without.
    """
    import re

    from rclpy.duration import Duration
    from rosbags.rosbag2 import Reader
    from sim_clock.bag.recorder import END_WAIT_NS
    from sim_clock.msg import Round
    from sim_clock.wire.names import DONE_QOS
    from std_msgs.msg import String
    start_server({'sync': True, 'time_step': 0.01})
    client.wait_for_clock()
    rounds = client.node.create_publisher(Round, '/sim_clock/rounds', DONE_QOS)
    output, recorder = _start_recorder(
        start_server, tmp_path, 'rounds', ['-t', '/rec_a', '--until', '0.05'])
    client.spin_until(lambda: 'recording /rec_a' in recorder.log()
                      and 'first /clock received' in recorder.log(), 'the recorder')
    client.spin_until(lambda: client.node.count_subscribers('/rec_a') >= 1
                      and rounds.get_subscription_count() >= 1, 'its subscriptions')

    _step(client, 4)
    client.spin_until(lambda: 40 * MS in client.times(), '/clock at 0.04 s')
    publishers['/rec_a'].publish(String(data='one'))
    announcement = Round(round=1, topics=['/rec_a'], counts=[announced])
    announcement.time.nanosec = 40 * MS
    rounds.publish(announcement)
    # In the recorder's queue before the /clock of the end (taken there before deciding).
    assert rounds.wait_for_all_acked(Duration(seconds=TIMEOUT)), 'the Round not acknowledged'
    _step(client, 1)
    assert recorder.process.wait(TIMEOUT + END_WAIT_NS / 1e9) == 0, recorder.log()
    with Reader(output) as bag:
        assert [stamp for _, stamp, _ in bag.messages()] == [40 * MS], recorder.log()
    log = recorder.log()
    if announced == 1:
        assert '[WARN]' not in log and 'ending without' not in log, log
    else:
        waited = re.search(r'ending without messages the stack announced on ~/rounds, after '
                           r'waiting ([0-9.]+) s: 1 on /rec_a', log)
        assert waited and float(waited.group(1)) >= END_WAIT_NS / 1e9, log


def test_all_records_every_topic_but_the_clocks_and_the_servers_own(
        start_server, client, publishers, tmp_path):
    """``--all``: every published topic, not /clock nor the server's ``/sim_clock/...``."""
    start_server()
    client.status_when_ready()  # the server's topics are in the graph
    output, recorder = _start_recorder(start_server, tmp_path, 'all', ['--all'])
    client.spin_until(
        lambda: all(f'recording {topic}' in recorder.log() for topic in TOPICS),
        f'the recorder to record {TOPICS}')
    assert recorder.stop() == 0, recorder.log()
    recorded = _recorded_topics(output)
    assert set(TOPICS) <= recorded, recorded
    assert '/clock' not in recorded and not [t for t in recorded if t.startswith('/sim_clock/')]
    assert 'no publisher seen' not in recorder.log()


@pytest.mark.parametrize('topic, type_name, recorded', [
    ('/scan', 'sensor_msgs/msg/LaserScan', True),
    ('/rosout', 'rcl_interfaces/msg/Log', True),
    ('/clock', 'rosgraph_msgs/msg/Clock', False),
    ('/robot1/clock', 'rosgraph_msgs/msg/Clock', False),
    ('/sim_clock/resets', 'sim_clock/msg/Reset', False),
    ('/sim_clock_other/x', 'std_msgs/msg/String', True),
    ('/robot/_hidden', 'std_msgs/msg/String', False),
])
def test_what_all_leaves_out(topic, type_name, recorded):
    """``--all`` leaves out clocks (/clock, views), the server's topics and hidden ones."""
    assert is_recorded_by_all(topic, type_name, '/sim_clock') is recorded


#: argv after the output -> (exit code, what the error must say)
BAD_ARGUMENTS = {
    'no_topic': ([], 2, 'no topic to record: name topics (TOPIC ..., -t TOPIC ...) or give '
                        '--all'),
    'topics_and_all': (['/a', '--all'], 2, 'give topics or --all, not both'),
    't_without_topic': (['-t'], 2, 'expected at least one argument'),
    'space_in_name': (['-t', '/a b'], 2, "'/a b' is not a valid topic name"),
    'digit_first': (['/1a'], 2, "'/1a' is not a valid topic name"),
    'negative_until': (['/a', '--until', '-1'], 2, '--until must be 0 or more'),
    'until_not_a_number': (['/a', '--until', 'soon'], 2, "invalid float value: 'soon'"),
    'until_infinite': (['/a', '--until', 'inf'], 2, '--until'),
    'unknown_option': (['/a', '--bogus'], 2, 'unrecognized arguments: --bogus'),
    'type_not_installed': (['/a:no_pkg/msg/Nope'], 2,
                           "'/a:no_pkg/msg/Nope': message type 'no_pkg/msg/Nope' is not "
                           'importable'),
    'type_not_a_type_name': (['-t', '/a:String'], 2,
                             "'String' is not a message type name (package/msg/Name, or a "
                             'message of a service or action: package/srv/Name_Event); give '
                             'TOPIC:TYPE with an installed message type'),
    'two_types': (['/a:std_msgs/msg/String', '-t', '/a:std_msgs/msg/Int32'], 2,
                  '/a is given two types, std_msgs/msg/String and std_msgs/msg/Int32'),
    'unknown_storage': (['/a', '-s', 'rosbag'], 2,
                        "argument -s/--storage: invalid choice: 'rosbag' (choose from 'mcap', "
                        "'sqlite3')"),
}


def _run_recorder(argv, domain_id):
    return subprocess.run(
        [executable('recorder'), *argv], env=dict(os.environ, ROS_DOMAIN_ID=str(domain_id)),
        capture_output=True, text=True, timeout=TIMEOUT * 2)


@pytest.mark.parametrize('case', sorted(BAD_ARGUMENTS))
def test_bad_arguments_are_refused_and_create_no_bag(case, domain_id, tmp_path):
    """Each bad command line ends with a usage error naming the fault; no bag is created."""
    argv, code, message = BAD_ARGUMENTS[case]
    output = tmp_path / 'out'
    result = _run_recorder([str(output), *argv], domain_id)
    assert result.returncode == code, result.stdout + result.stderr
    assert message in result.stderr, result.stderr
    assert 'usage: recorder' in result.stderr
    assert 'Traceback' not in result.stderr
    assert not output.exists()


def test_an_existing_output_is_refused_and_left_alone(domain_id, tmp_path):
    """A bag directory that exists already is refused (exit code 1) and stays as it was."""
    output = tmp_path / 'out'
    output.mkdir()
    result = _run_recorder([str(output), '-t', '/a'], domain_id)
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'exists already; give a new directory' in result.stdout + result.stderr
    assert list(output.iterdir()) == []


#: A node that appears after the recorder: a participant publishing its clock on /late from the
#: first frame (a 10 ms simulated-time timer); ``matched`` once its writer has a reader.
LATE_PUBLISHER = """
import time
import rclpy
from rclpy.parameter import Parameter
from sim_clock.client.participant import Participant
from std_msgs.msg import String

rclpy.init()
node = rclpy.create_node(
    'late_publisher', parameter_overrides=[Parameter('use_sim_time', value=True)])
publisher = node.create_publisher(String, '/late', 10)
node.create_timer(
    0.01, lambda: publisher.publish(String(data=str(node.get_clock().now().nanoseconds))))
participant = Participant(node)
deadline = time.monotonic() + 15
while publisher.get_subscription_count() < 1 and time.monotonic() < deadline:
    participant.executor.spin_once(timeout_sec=0.05)
print('matched' if publisher.get_subscription_count() else 'no reader', flush=True)
participant.spin()
"""


def _read_strings(path: str) -> list:
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import get_typestore
    from rosbags.typesys import Stores
    store = get_typestore(Stores.ROS2_JAZZY)
    with Reader(path) as bag:
        return [(stamp, store.deserialize_cdr(data, 'std_msgs/msg/String').data)
                for _, stamp, data in bag.messages()]


def test_a_topic_given_with_its_type_is_subscribed_at_once_and_misses_no_frame(
        start_server, client, domain_id, tmp_path):
    """
    A topic given with its type: subscribed before any publisher, no frame of a later one lost.

    ``-t /late:std_msgs/msg/String``: a node that appears later and publishes from the first
    frame on has every message recorded. The node is stepped as soon as its writer has a
    reader, which the recorder's subscription gives it at discovery: no wait for the recorder
    to see the publisher first.
    """
    from sim_clock.srv import Step
    start_server({'sync': True, 'time_step': 0.01})
    client.status_when_ready()
    output, recorder = _start_recorder(
        start_server, tmp_path, 'typed', ['-t', '/late:std_msgs/msg/String', '--until', '0.2'])
    client.spin_until(lambda: 'first /clock received' in recorder.log()
                      and client.node.count_subscribers('/late') == 1, 'its subscription')
    assert client.node.count_publishers('/late') == 0
    assert ('recording /late (std_msgs/msg/String), subscribed before any publisher'
            in recorder.log())
    publisher = ChildProcess(domain_id, LATE_PUBLISHER, str(tmp_path))
    try:
        publisher.expect('matched')
        for _ in range(2):
            response = client.call(Step, 'step', Step.Request(steps=10))
            assert response.success, response.message
        assert recorder.process.wait(TIMEOUT) == 0, recorder.log()
    finally:
        publisher.stop()
    # Each frame's message, stamped with its frame; the one of 0.2 s came after the end.
    assert _read_strings(output) == [(t, str(t)) for t in range(10 * MS, 200 * MS, 10 * MS)]
    assert 'no publisher seen' not in recorder.log()


def test_a_topic_whose_type_a_subscriber_shows_is_subscribed_before_its_publisher(
        start_server, client, tmp_path):
    """No type given, no publisher, but a subscriber of /known: its type is known, subscribed."""
    from std_msgs.msg import String
    start_server()
    client.node.create_subscription(String, '/known', lambda msg: None, 10)
    output, recorder = _start_recorder(start_server, tmp_path, 'known', ['/known'])
    client.spin_until(lambda: 'recording /known (std_msgs/msg/String), subscribed before any '
                              'publisher' in recorder.log(), 'the recorder to subscribe')
    assert client.node.count_publishers('/known') == 0
    assert client.node.count_subscribers('/known') == 2
    assert recorder.stop() == 0, recorder.log()
    assert _recorded_topics(output) == {'/known'}


def test_an_early_subscription_follows_a_best_effort_publisher(start_server, client, tmp_path):
    """
    An early subscription made again best effort for a best-effort publisher: it is recorded.

    Subscribed reliable before any publisher; the first one is best effort: subscribed again
    (nothing had come), and what it publishes is recorded, its offer in the bag.
    """
    from rclpy.qos import QoSProfile
    from rclpy.qos import ReliabilityPolicy
    from rosbags.interfaces import QosReliability
    from rosbags.rosbag2 import Reader
    from sim_clock.srv import Step
    from std_msgs.msg import String
    start_server({'sync': True, 'time_step': 0.01})
    client.status_when_ready()
    output, recorder = _start_recorder(start_server, tmp_path, 'best_effort',
                                       ['-t', '/sensor:std_msgs/msg/String'])
    client.spin_until(lambda: 'first /clock received' in recorder.log()
                      and 'subscribed before any publisher' in recorder.log(), 'the recorder')
    publisher = client.node.create_publisher(
        String, '/sensor', QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT))
    client.spin_until(lambda: '/sensor: subscribed again as its publishers offer (best effort, '
                              'volatile)' in recorder.log(), 'the recorder to follow the offer')
    client.spin_until(lambda: publisher.get_subscription_count() == 1, 'the new subscription')
    publisher.publish(String(data='seen'))
    response = client.call(Step, 'step', Step.Request(steps=2))
    assert response.success, response.message
    client.spin_until(lambda: 20 * MS in client.times(), '/clock at 0.02 s')
    assert recorder.stop() == 0, recorder.log()
    assert _read_strings(output) == [(0, 'seen')]
    with Reader(output) as bag:
        [connection] = bag.connections
    assert [qos.reliability for qos in connection.ext.offered_qos_profiles] == [
        QosReliability.BEST_EFFORT]


def test_a_publisher_of_another_type_than_given_is_named(start_server, client, tmp_path):
    """``-t /mismatch:std_msgs/msg/Int32`` and a String publisher: a warning says what to do."""
    from std_msgs.msg import String
    start_server()
    output, recorder = _start_recorder(start_server, tmp_path, 'mismatch',
                                       ['-t', '/mismatch:std_msgs/msg/Int32'])
    client.spin_until(lambda: 'subscribed before any publisher' in recorder.log(), 'the recorder')
    client.node.create_publisher(String, '/mismatch', 10)
    client.spin_until(
        lambda: '/mismatch: recorded as std_msgs/msg/Int32, but a publisher offers '
                'std_msgs/msg/String' in recorder.log(), 'the warning')
    assert recorder.stop() == 0, recorder.log()
