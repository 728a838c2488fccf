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

from harness import executable
from harness import TIMEOUT
import pytest
from sim_clock.bag.record_options import is_recorded_by_all

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


def test_until_records_what_was_published_before_the_clock_that_reached_it(
        start_server, client, publishers, tmp_path):
    """
    --until 0.05: a message published before /clock reached 0.05 s is recorded, one after not.

    The recorder is stopped (SIGSTOP) while /clock reaches 0.05 s and a message follows it:
    both wait in its queue, so it takes the late message before it ends. Recorded, it would
    make a lockstep stack's recordings differ by what it published at the last frame.
    """
    from rosbags.rosbag2 import Reader
    from sim_clock.srv import Step
    from std_msgs.msg import String
    start_server({'sync': True, 'time_step': 0.01})
    client.wait_for_clock()
    output, recorder = _start_recorder(
        start_server, tmp_path, 'until', ['-t', '/rec_a', '--until', '0.05'])
    client.spin_until(lambda: 'recording /rec_a' in recorder.log()
                      and 'first /clock received' in recorder.log(), 'the recorder')
    client.spin_until(lambda: client.node.count_subscribers('/rec_a') >= 1, 'its subscription')

    def step(frames):
        response = client.call(Step, 'step', Step.Request(user_id='', steps=frames))
        assert response.success, response.message
    step(4)
    client.spin_until(lambda: 40 * MS in client.times(), '/clock at 0.04 s')
    publishers['/rec_a'].publish(String(data='before'))
    os.kill(recorder.process.pid, signal.SIGSTOP)
    try:
        step(1)
        client.spin_until(lambda: 50 * MS in client.times(), '/clock at 0.05 s')
        publishers['/rec_a'].publish(String(data='after'))
    finally:
        os.kill(recorder.process.pid, signal.SIGCONT)
    assert recorder.process.wait(TIMEOUT) == 0, recorder.log()
    with Reader(output) as bag:
        recorded = [(stamp, bytes(data)) for _, stamp, data in bag.messages()]
    assert [stamp for stamp, _ in recorded] == [40 * MS], (recorded, recorder.log())
    assert b'before' in recorded[0][1]


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
