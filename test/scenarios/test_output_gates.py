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
Output gates through DDS, with a node that knows nothing of sim_clock in a process of its own.

Steps wait for its output at the gated frames, also when the node starts with the server or
after a step is asked; a silent node stops a step naming its topic within the gate's timeout,
and a gate that no node publishes stops it saying so; a gate set at run time holds the next
gated frame, bad values are refused, and free run goes on past a late gate.
"""

import contextlib
import time

from harness import ChildProcess
from harness import SERVICE_QOS
from harness import soak
from harness import stamp_ns
import pytest
from sim_clock.msg import FrameEvent as FrameEventMsg
from sim_clock.srv import GetFrameEvents
from sim_clock.srv import Step

pytestmark = pytest.mark.process

MS = 1_000_000
SECOND = 1_000 * MS

#: A plain rclpy node with use_sim_time: a timer of 50 ms of simulated time publishes
#: std_msgs/String on /cmd, at most LIMIT times (0: always); prints its clock per publish, just
#: before it (a node stopped right after its last publish has printed it: a step answered on
#: that output can be followed by the stop at once). 'ready' once its publisher has a
#: subscriber (the clock server's gate).
NODE = """
import sys
import rclpy
from rclpy.parameter import Parameter
from std_msgs.msg import String
limit = int(sys.argv[1])
rclpy.init()
node = rclpy.create_node('controller', parameter_overrides=[Parameter('use_sim_time', value=True)])
publisher = node.create_publisher(String, '/cmd', 10)
sent = []
def tick():
    if limit and len(sent) >= limit:
        return
    now = node.get_clock().now().nanoseconds
    sent.append(now)
    print('published', now, flush=True)
    publisher.publish(String(data=str(now)))
node.create_timer(0.05, tick)
while publisher.get_subscription_count() < 1:
    rclpy.spin_once(node, timeout_sec=0.05)
print('ready', flush=True)
try:
    rclpy.spin(node)
except KeyboardInterrupt:
    pass
rclpy.try_shutdown()
"""


def _node(domain_id, tmp_path, limit=0):
    child = ChildProcess(domain_id, NODE, str(tmp_path), args=(limit,))
    child.expect('ready')
    return child


def _published(child):
    """End the node; return the clock of each of its publishes, in order."""
    child.stop()
    return [int(line.split()[1]) for line in child.output().splitlines()
            if line.startswith('published ')]


@contextlib.contextmanager
def _explained(server, *children):
    """On a failure inside, show the server's log and what the children printed."""
    try:
        yield
    except AssertionError as error:
        report = [str(error), 'server log (end):\n' + server.log()[-3000:]]
        report += [f'child printed:\n{child.output()[-1500:]}' for child in children]
        raise AssertionError('\n'.join(report)) from None


def _gate_waits(client, topic, after=0):
    """Return the server's GATE events for ``topic`` after the sequence number ``after``."""
    response = client.call(GetFrameEvents, 'get_frame_events', GetFrameEvents.Request(after=after))
    return [e for e in response.events if e.kind == FrameEventMsg.GATE and e.name == topic]


def _wait_subscribed(client, topic='/cmd'):
    client.spin_until(lambda: client.node.count_subscribers(topic) >= 1,
                      f'the server subscribing {topic}')


def test_steps_wait_for_the_output_at_every_gated_frame(start_server, client, domain_id,
                                                        tmp_path):
    """10 steps of 100 frames of 10 ms: the node publishes at each of its 200 due times."""
    server = start_server({'sync': True, 'time_step': 0.01, 'output_gates': '/cmd@0.05'})
    client.status_when_ready()
    node = _node(domain_id, tmp_path)
    with _explained(server, node):
        for call in range(10):
            response = client.step(steps=100)
            assert response.success, response.message
            assert response.frame == 100 * (call + 1)
        status = client.status()
        assert list(status.output_gates) == ['/cmd@0.05']
        assert [stamp_ns(t) for t in status.output_gates_satisfied] == [10_000 * MS]
        assert status.output_gates_slowest[0] > 0 and not status.output_gates_waiting
        published = _published(node)
        assert published == [50 * MS * k for k in range(1, 201)]


def test_a_silent_node_stops_the_step_naming_its_topic(start_server, client, domain_id,
                                                       tmp_path):
    """The node publishes 3 times: the 4th gated frame stops the step within the timeout."""
    server = start_server({'sync': True, 'time_step': 0.01, 'output_gates': '/cmd@0.05:1.0'})
    client.status_when_ready()
    node = _node(domain_id, tmp_path, limit=3)
    with _explained(server, node):
        response = client.step(steps=100)
        assert not response.success
        assert 'output on /cmd (no message after its /clock' in response.message
        assert 'no node publishes' not in response.message
        assert list(response.late) == ['/cmd']
        assert response.frame == 20, response.message   # 200 ms: the 4th gated frame
        # The server's own record: three outputs came, the fourth was waited for the gate's
        # timeout, not more (the client's wall time would also count discovering ~/step).
        gate = _gate_waits(client, '/cmd')
        assert [(e.sim_ns, e.success) for e in gate] == [
            (50 * MS, True), (100 * MS, True), (150 * MS, True), (200 * MS, False)], gate
        assert SECOND <= gate[-1].end_ns - gate[-1].start_ns < 2 * SECOND, gate
        assert list(client.status().output_gates_waiting) == ['/cmd']
        # The next step waits for it again, for a whole timeout; without the gate it goes on.
        assert client.set_parameter('output_gates', '').successful
        response = client.step(steps=10)
        assert response.success and response.frame == 30, response.message
        assert _published(node) == [50 * MS, 100 * MS, 150 * MS]


#: Runs of the node started together with the server (20 in a soak), and what each steps.
TOGETHER_RUNS = soak(3, 20)
TOGETHER_STEPS = 3
TOGETHER_FRAMES = 10


@pytest.mark.soak
@pytest.mark.parametrize('run', range(TOGETHER_RUNS))
def test_a_node_started_with_the_server_gives_every_output(run, start_server, client,
                                                           domain_id, tmp_path):
    """
    Started together, stepped one second after the node starts, without waiting for matches.

    3 steps of 10 frames of 10 ms: outputs at 50, 100, ..., 300 ms, none lost. The first gated
    frame is held until the gate's reader has matched the node's writer and the margin for the
    writer's side has passed.
    """
    server = start_server({'sync': True, 'time_step': 0.01, 'output_gates': '/cmd@0.05'})
    node = ChildProcess(domain_id, NODE, str(tmp_path), args=(0,))
    started = time.monotonic()
    with _explained(server, node):
        client.status_when_ready()
        client.spin_until(lambda: time.monotonic() >= started + 1.0,
                          'one second after the node started')
        for call in range(TOGETHER_STEPS):
            response = client.step(steps=TOGETHER_FRAMES)
            assert response.success, response.message
            assert response.frame == TOGETHER_FRAMES * (call + 1)
        due = TOGETHER_STEPS * TOGETHER_FRAMES // 5
        assert _published(node) == [50 * MS * k for k in range(1, due + 1)]


def test_a_step_asked_before_the_node_starts_holds_the_gated_frame(
        start_server, client, domain_id, tmp_path):
    """The frames before the gated one go; it waits for the node's writer, then its output."""
    server = start_server({'sync': True, 'time_step': 0.01, 'output_gates': '/cmd@0.05'})
    client.status_when_ready()
    step = client.node.create_client(Step, '/sim_clock/step', qos_profile=SERVICE_QOS)
    client.spin_until(step.service_is_ready, 'the step service')
    future = step.call_async(Step.Request(steps=10))
    with _explained(server):
        client.wait_for_time(40 * MS)
        status = client.status()
        assert not future.done() and status.frame == 4
        assert list(status.output_gates_waiting) == ['/cmd']
    node = ChildProcess(domain_id, NODE, str(tmp_path), args=(0,))
    with _explained(server, node):
        client.spin_until(future.done, 'the step to end', timeout=30.0)
        response = future.result()
        assert response.success, response.message
        assert response.frame == 10
        assert _published(node) == [50 * MS, 100 * MS]


def test_a_gate_nobody_publishes_stops_the_step_saying_so(start_server, client):
    """No node publishes /nobody: the gated frame is held, then the answer says so."""
    server = start_server({'sync': True, 'time_step': 0.01,
                           'output_gates': '/nobody@0.05:1.0'})
    client.status_when_ready()
    with _explained(server):
        response = client.step(steps=100)
        assert not response.success
        assert 'frame 5 is held: no node publishes /nobody' in response.message, \
            response.message
        assert list(response.late) == ['/nobody']
        assert response.frame == 4, response.message    # the frames before the gated one went
        assert list(client.status().output_gates_waiting) == ['/nobody']
        # The server's own record: it held frame 5 for the gate's timeout, not more. (The
        # client's wall time would also count the discovery of ~/step, which is not the hold.)
        gate = _gate_waits(client, '/nobody')
        assert [(e.sim_ns, e.success) for e in gate] == [(50 * MS, False)], gate
        assert SECOND <= gate[0].end_ns - gate[0].start_ns < 2 * SECOND, gate
        # The next step holds it again, for a whole timeout; without the gate it goes.
        response = client.step(steps=1)
        assert not response.success and response.frame == 4, response.message
        gate = _gate_waits(client, '/nobody', after=gate[0].sequence)
        assert [(e.sim_ns, e.success) for e in gate] == [(50 * MS, False)], gate
        assert gate[0].end_ns - gate[0].start_ns >= SECOND, gate
        assert client.set_parameter('output_gates', '').successful
        response = client.step(steps=10)
        assert response.success and response.frame == 14, response.message


def test_a_gate_set_at_run_time_holds_the_next_gated_frame(start_server, client, domain_id,
                                                           tmp_path):
    """Added, changed and removed while the server runs; each takes effect at the next frame."""
    server = start_server({'sync': True, 'time_step': 0.01})
    client.status_when_ready()
    node = ChildProcess(domain_id, NODE, str(tmp_path), args=(0,))
    with _explained(server, node):
        assert client.get_parameter('output_gates') == ''
        result = client.set_parameter('output_gates', ['/cmd@0.05'])
        assert result.successful, result.reason
        node.expect('ready')
        _wait_subscribed(client)
        response = client.step(steps=5)
        assert response.success, response.message
        status = client.status()
        assert [stamp_ns(t) for t in status.output_gates_satisfied] == [50 * MS]
        assert client.set_parameter('output_gates', '/cmd@0.1').successful
        assert client.step(steps=5).success   # 100 ms: gated by the new period
        assert client.step(steps=5).success   # 150 ms: not gated any more
        status = client.status()
        assert list(status.output_gates) == ['/cmd@0.1']
        assert [stamp_ns(t) for t in status.output_gates_satisfied] == [100 * MS]
        assert client.set_parameter('output_gates', []).successful
        assert list(client.status().output_gates) == []
        assert 50 * MS in _published(node)


def test_bad_values_are_refused_and_change_nothing(start_server, client):
    """A bad topic, a period off the time_step grid, a negative timeout: refused, named."""
    server = start_server({'sync': True, 'time_step': 0.01, 'output_gates': '/cmd@0.05'})
    client.status_when_ready()
    with _explained(server):
        for value, says in ((['cmd'], 'not an absolute topic name'),
                            ('/cmd@0.015', 'not a multiple of time_step'),
                            ('/cmd:-1', 'must not be negative'),
                            (['/a', '/a'], 'more than once')):
            result = client.set_parameter('output_gates', value)
            assert not result.successful and says in result.reason, (value, result.reason)
            assert client.get_parameter('output_gates') == '/cmd@0.05'
        result = client.set_parameter('time_step', 0.03)
        assert not result.successful and 'not a multiple of time_step' in result.reason
        assert client.status().time_step_ns == 10 * MS
        assert list(client.status().output_gates) == ['/cmd@0.05']


def test_free_run_logs_a_late_gate_and_goes_on(start_server, client):
    """Free run with a gate nobody publishes: each gated frame is held its timeout, then goes."""
    server = start_server({'time_step': 0.01, 'real_time_factor': 0.0,
                           'output_gates': '/nobody@0.05:0.2'})
    client.status_when_ready()
    with _explained(server):
        client.wait_for_clock(lambda t: t >= 150 * MS, 'free run past three gated frames',
                              timeout=10.0)
        client.spin_until(lambda: 'no node publishes /nobody' in server.log(),
                          'the gate without a writer in the log')
        assert client.call(Step, 'step', Step.Request(steps=1)).success is False  # free run


def test_simclock_status_lists_the_gates():
    """Each gate with its last release and slowest wait, then what the frame waits for."""
    from sim_clock.client.api import Status
    from sim_clock.client.cli_format import format_status
    common = {'mode': 'simulation', 'sync': True, 'paused': False, 'frame': 5,
              'time_ns': 50 * MS, 'epoch': 0, 'owner': '', 'real_time_factor': 1.0,
              'time_step_ns': 10 * MS, 'publish_rate': 100.0}
    assert 'output gates' not in format_status(Status(**common))
    lines = format_status(Status(
        **common, output_gates=('/cmd@0.05', '/odom:2'), output_gates_satisfied_ns=(50 * MS, 0),
        output_gates_slowest=(0.0021, 0.0), output_gates_waiting=('/odom',))).splitlines()
    assert lines[-4:] == [
        'output gates: 2',
        '  /cmd@0.05  released up to 0.050000000 s, slowest wait 0.002 s',
        '  /odom:2    released up to (no frame yet), slowest wait 0.000 s',
        'gates wait for: /odom']
