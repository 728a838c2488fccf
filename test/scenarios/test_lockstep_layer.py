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
The lockstep layer (doc/lockstep-layer.md): an unchanged rclpy node as a participant.

The node below knows nothing of sim_clock: a ``use_sim_time`` timer of one frame and a
subscription, each of whose callbacks works a while. Run under ``lib/sim_clock/lockstep``
beside a server in sync mode, a step returns only once the node has run every firing due and
taken every message it was sent; the same node without the layer holds nothing. Without a
server the layer changes nothing: the node runs on a /clock the test publishes.
"""

import contextlib
import subprocess
import time

from harness import ChildProcess
from harness import executable
from harness import NS
from harness import ProgramProcess
from harness import SERVICE_QOS
from harness import TIMEOUT
from harness import UDP_LOOPBACK_ENV
import pytest
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sim_clock.core.units import join_ns
from sim_clock.msg import Done
from sim_clock.msg import Round
from sim_clock.srv import Join
from sim_clock.srv import Leave
from sim_clock.srv import Step
from std_msgs.msg import String

pytestmark = pytest.mark.process

MS = 1_000_000
FRAMES = 20
MESSAGES = 5
WORK_S = 0.02  # each callback's work: a step of FRAMES frames takes FRAMES * WORK_S at least
#: How long a node may take to start, join and match: Python, rclpy and discovery on a loaded
#: machine (seen: more than 15 s at a load average of 12 on two cores).
START_S = 60.0
NODE_NAME = '/plain'
QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
#: The server's ~/done and ~/rounds: reliable, volatile, depth 1000.
SERVER_QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)

#: A plain rclpy node, no sim_clock in it: prints each firing (and its end) and each message
#: with its clock. On the executor argv[2] names: ``single`` (rclpy.spin's), ``multi``
#: (a MultiThreadedExecutor), ``multi_reentrant`` (the same, each callback in a reentrant
#: group: rclpy waits on its entity again as soon as it is taken, and two callbacks may run
#: at once: each line is printed whole).
NODE = """
import sys
import threading
import time

import rclpy
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from std_msgs.msg import String

work, kind = float(sys.argv[1]), sys.argv[2]
rclpy.init()
node = rclpy.create_node('plain', parameter_overrides=[Parameter('use_sim_time', value=True)])
group = ReentrantCallbackGroup() if kind == 'multi_reentrant' else None
printing = threading.Lock()


def say(*words):
    with printing:
        print(*words, flush=True)


def tick():
    now = node.get_clock().now().nanoseconds
    say('fired', now)
    time.sleep(work)
    say('ended', now)


def heard(msg):
    say('heard', msg.data, node.get_clock().now().nanoseconds)
    time.sleep(work)


node.create_timer(0.01, tick, callback_group=group)
node.create_subscription(String, '/chatter', heard,
                         QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE),
                         callback_group=group)
print('ready', flush=True)
try:
    rclpy.spin(node, executor=None if kind == 'single' else MultiThreadedExecutor())
except KeyboardInterrupt:
    pass
node.destroy_node()
rclpy.try_shutdown()
"""


def plain_node(body: str, imports: str = '') -> str:
    """
    Return a plain rclpy program, no sim_clock in it, around ``body``.

    Before it: a node named argv[1] with ``use_sim_time``, ``now()`` (its clock, in ns) and
    ``qos`` (reliable, depth 100); after it, ``rclpy.spin`` until Ctrl-C, then a clean end.
    ``imports``: what ``body`` imports besides.
    """
    return f"""
import sys
{imports}
import rclpy
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy

role = sys.argv[1]
rclpy.init()
node = rclpy.create_node(role, parameter_overrides=[Parameter('use_sim_time', value=True)])
qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


def now():
    return node.get_clock().now().nanoseconds


{body}
try:
    rclpy.spin(node)
except KeyboardInterrupt:
    pass
node.destroy_node()
rclpy.try_shutdown()
"""


#: Two plain rclpy nodes, no sim_clock in them: 'talker' publishes its clock on /a at each
#: frame (once its writer has matched a reader: it prints 'matched'); 'listener' prints each
#: message it takes with its own clock.
PAIR = plain_node("""
if role == 'talker':
    publisher = node.create_publisher(String, '/a', qos)
    node.create_timer(0.01, lambda: publisher.publish(String(data=str(now()))))
    while publisher.get_subscription_count() < 1:
        rclpy.spin_once(node, timeout_sec=0.05)
    print('matched', flush=True)
else:
    node.create_subscription(
        String, '/a', lambda msg: print('heard', msg.data, now(), flush=True), qos)
    print('ready', flush=True)
""", imports='from std_msgs.msg import String')


#: Three plain rclpy nodes, no sim_clock in them: 'talker' publishes its clock on /a at each
#: frame, 'relay' answers each message of /a at once on /b with its own clock added, and
#: 'listener' prints each message of /b it takes with its own clock. Each prints 'matched'
#: once its writer has matched a reader (the listener at once).
CHAIN = plain_node("""
publisher = None
if role == 'talker':
    publisher = node.create_publisher(String, '/a', qos)
    node.create_timer(0.01, lambda: publisher.publish(String(data=str(now()))))
elif role == 'relay':
    publisher = node.create_publisher(String, '/b', qos)
    node.create_subscription(
        String, '/a', lambda msg: publisher.publish(String(data=f'{msg.data}>{now()}')), qos)
else:
    node.create_subscription(
        String, '/b', lambda msg: print('heard', msg.data, now(), flush=True), qos)
while publisher is not None and publisher.get_subscription_count() < 1:
    rclpy.spin_once(node, timeout_sec=0.05)
print('matched', flush=True)
""", imports='from std_msgs.msg import String')


#: Two plain rclpy nodes, no sim_clock in them: 'server' answers /work (std_srvs Trigger)
#: after WORK_S of work with its own clock; 'caller' calls it at each frame and prints, at each
#: answer, the clock it called at, the server's clock and its own clock as it takes the answer.
#: The caller prints 'matched' once the service is there.
CALL = plain_node("""
work = float(sys.argv[2])


def answer(request, response):
    at = now()
    time.sleep(work)
    response.success, response.message = True, str(at)
    return response


def call():
    sent = now()
    future = caller.call_async(Trigger.Request())
    future.add_done_callback(
        lambda done: print('answered', sent, done.result().message, now(), flush=True))


if role == 'server':
    node.create_service(Trigger, '/work', answer)
    print('matched', flush=True)
else:
    caller = node.create_client(Trigger, '/work')
    while not caller.service_is_ready():
        rclpy.spin_once(node, timeout_sec=0.05)
    node.create_timer(0.01, call)
    print('matched', flush=True)
""", imports='import time\nfrom std_srvs.srv import Trigger')


#: A node that takes part through sim_clock's participant helper itself: its timer prints
#: each firing with its clock.
HELPED = """
import rclpy
from rclpy.parameter import Parameter
from sim_clock.client import participant

rclpy.init()
node = rclpy.create_node('helped', parameter_overrides=[Parameter('use_sim_time', value=True)])
node.create_timer(0.01, lambda: print('fired', node.get_clock().now().nanoseconds, flush=True))
print('ready', flush=True)
participant.spin(node)
node.destroy_node()
rclpy.try_shutdown()
"""


#: A plain rclpy node whose timer prints each firing with its clock, and from STUCK_NS on does
#: not come back from its callback (the test kills it there).
STUCK = """
import time

import rclpy
from rclpy.parameter import Parameter

rclpy.init()
node = rclpy.create_node('stuck', parameter_overrides=[Parameter('use_sim_time', value=True)])


def tick():
    now = node.get_clock().now().nanoseconds
    print('fired', now, flush=True)
    if now >= 30_000_000:  # STUCK_NS
        time.sleep(3600)


node.create_timer(0.01, tick)
print('ready', flush=True)
rclpy.spin(node)
"""
STUCK_NS = 30 * MS


def _start_node(domain_id, tmp_path, layer: bool, executor: str = 'single',
                env: dict = None) -> ChildProcess:
    prefix = (executable('lockstep'),) if layer else ()
    child = ChildProcess(domain_id, NODE, str(tmp_path), args=(WORK_S, executor), env=env,
                         prefix=prefix)
    child.expect('ready', timeout=START_S)
    return child


def _chatter(client):
    """Return a /chatter publisher of the test once the node's reader has matched it."""
    publisher = client.node.create_publisher(String, '/chatter', QOS)
    client.spin_until(lambda: publisher.get_subscription_count() >= 1, "the node's reader",
                      timeout=START_S)
    return publisher


def _step_with_messages(client, publisher):
    """Send MESSAGES on /chatter and step FRAMES frames at once; return the step's answer."""
    for k in range(MESSAGES):
        publisher.publish(String(data=f'm{k}'))
    response = client.call(Step, 'step', Step.Request(user_id='', steps=FRAMES), timeout=30.0)
    return response


def _fired_at(client, clock, child, time_ns: int) -> int:
    """
    Publish /clock at ``time_ns`` until the node says it fired; return the time it says.

    Published again, as a server does while time stands: the node's reader (best effort, as
    rclpy's time source makes it) drops what comes before it has matched the test's writer.
    """
    msg = Clock()
    msg.clock.sec, msg.clock.nanosec = divmod(time_ns, NS)
    deadline = time.monotonic() + START_S
    while True:
        clock.publish(msg)
        client.executor.spin_once(timeout_sec=0)
        try:
            return int(child.expect('fired', timeout=0.1))
        except AssertionError:
            if time.monotonic() > deadline:
                raise


def _node_names(client) -> set:
    return {name for name, _ in client.node.get_node_names_and_namespaces()}


def _lines(lines, word):
    return [line.split()[1:] for line in lines if line.startswith(word + ' ')]


@pytest.mark.parametrize('executor', ['single', 'multi', 'multi_reentrant'])
def test_an_unchanged_node_holds_each_frame_until_its_callbacks_ran(
        start_server, client, domain_id, tmp_path, executor):
    """
    Under the layer a step returns once every firing due and every message ran, none late.

    On rclpy's MultiThreadedExecutor each callback runs on a worker of its pool while the
    waiting thread blocks again at once: the step still answers only once the last callback
    has ended (doc/lockstep-layer.md, "Work handed on").
    """
    server = start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01})
    child = _start_node(domain_id, tmp_path, layer=True, executor=executor)
    try:
        client.spin_until(lambda: NODE_NAME in client.status().participants,
                          f'{NODE_NAME} among the participants', timeout=START_S)
        publisher = _chatter(client)
        response = _step_with_messages(client, publisher)
        assert response.success, response.message
        printed = child.printed_by_now()
        fired = [int(t) for t, in _lines(printed, 'fired')]
        assert fired == [k * 10 * MS for k in range(1, FRAMES + 1)], child.output()
        assert [int(t) for t, in _lines(printed, 'ended')] == fired, child.output()
        assert sorted(data for data, _ in _lines(printed, 'heard')) == [
            f'm{k}' for k in range(MESSAGES)], child.output()
        child.stop()
        # None late: nothing ran after the step's answer (a firing of a frame not yet due).
        assert len(_lines(child.output().splitlines(), 'fired')) == FRAMES, child.output()
        assert child.process.returncode == 0, child.output()
        client.spin_until(lambda: f"participant '{NODE_NAME}' left" in server.log(),
                          'the leave at Ctrl-C', timeout=START_S)
    finally:
        child.stop()


def test_the_same_node_without_the_layer_holds_nothing(
        start_server, client, domain_id, tmp_path):
    """Without the layer the step answers while the node is still at its first frames."""
    start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01})
    child = _start_node(domain_id, tmp_path, layer=False)
    try:
        client.status_when_ready()
        publisher = _chatter(client)
        response = _step_with_messages(client, publisher)
        assert response.success, response.message
        printed = child.printed_by_now()
        assert NODE_NAME not in client.status().participants
        # FRAMES firings and MESSAGES messages take (FRAMES + MESSAGES) * WORK_S at least.
        done = len(_lines(printed, 'fired')) + len(_lines(printed, 'heard'))
        assert done < FRAMES + MESSAGES, printed
    finally:
        child.stop()


def test_without_a_server_the_layer_changes_nothing(client, domain_id, tmp_path):
    """No server: the node under the layer fires on each /clock the test publishes."""
    child = _start_node(domain_id, tmp_path, layer=True)
    try:
        clock = client.node.create_publisher(Clock, '/clock', QOS)
        client.spin_until(lambda: clock.get_subscription_count() >= 1, "the node's /clock",
                          timeout=START_S)
        # The layer is in the process and has started its agent, which looks for a server.
        with open(f'/proc/{child.pid}/maps') as maps:
            mapped = maps.read()
        assert 'libsim_clock_lockstep.so' in mapped and 'libsim_clock_lockstep_agent.so' in mapped
        for k in range(1, 6):
            assert _fired_at(client, clock, child, k * 10 * MS) == k * 10 * MS
        # It made no DDS participant of its own (no hidden node of the layer's on the graph),
        # where the node's own is seen (node names come on their own discovery topic, after
        # the endpoints the test's /clock writer matched).
        client.spin_until(lambda: 'plain' in _node_names(client), "the node's name",
                          timeout=START_S)
        names = _node_names(client)
        assert not [name for name in names if name.startswith('_sim_clock_lockstep')], names
        child.stop()
        assert child.process.returncode == 0, child.output()
        assert 'sim_clock lockstep' not in child.output(), child.output()
    finally:
        child.stop()


class _ServerOfTheTest:
    """
    A clock server's side of the wire, on the test's node, to put its messages in an order.

    ``answer(request, response)`` answers ``/sim_clock/join``; ``/sim_clock/leave`` answers
    yes; what comes on ``/sim_clock/done`` is kept in :attr:`done`. The reader of done (which
    the layer looks for: only a server has it) is made last, once the node's /clock reader has
    matched the test's writer.
    """

    def __init__(self, client, answer):
        node = client.node
        self.clock = node.create_publisher(Clock, '/clock', QOS)
        self.rounds = node.create_publisher(Round, '/sim_clock/rounds', SERVER_QOS)
        client.spin_until(lambda: self.clock.get_subscription_count() >= 1,
                          "the node's /clock", timeout=START_S)
        node.create_service(Join, '/sim_clock/join', answer, qos_profile=SERVICE_QOS)
        node.create_service(Leave, '/sim_clock/leave', lambda _, response: response,
                            qos_profile=SERVICE_QOS)
        self.done = []
        node.create_subscription(Done, '/sim_clock/done', self.done.append, SERVER_QOS)

    def until_fired(self, child, time_ns: int, round_: Round = None) -> int:
        """
        Publish the /clock of ``time_ns`` (after ``round_``) until ``child`` fired; return when.

        Again and again: the node's /clock reader is best effort, as rclpy's time source makes
        it. Fails after START_S.
        """
        msg = Clock()
        msg.clock.sec, msg.clock.nanosec = divmod(time_ns, NS)
        deadline = time.monotonic() + START_S
        while True:
            if round_ is not None:
                self.rounds.publish(round_)
            self.clock.publish(msg)
            try:
                return int(child.expect('fired', timeout=0.1))
            except AssertionError:
                if time.monotonic() > deadline:
                    raise

    def done_at(self, client, time_ns: int, what: str) -> Done:
        """Return the first done for ``time_ns`` once it has come (spinning the test's node)."""
        def said():
            return [msg for msg in self.done if join_ns(msg.time) == time_ns]
        client.spin_until(said, what, timeout=START_S)
        return said()[0]


@pytest.mark.parametrize('rule', ['participant', 'next_frame', 'rounds'])
def test_a_frame_that_comes_before_the_join_is_answered_is_held(
        client, domain_id, tmp_path, rule):
    """
    The first frame after a join may reach the process before the join's answer reaches it.

    The server counts a participant from the first frame it publishes after the join; the
    layer learns of the join only from the answer, which comes on another path. Here a
    server of the test's makes that order certain: it answers the join only once the node
    has fired at that frame. The layer followed the process from the join on, so it says
    the node done for that frame (doc/lockstep-layer.md, "Join").
    """
    child = _start_node(domain_id, tmp_path, layer=True, env={'SIM_CLOCK_LOCKSTEP_RULE': rule})
    try:
        frame = Round(next_frame=True)
        frame.time.nanosec = 10 * MS
        fired = []

        def join(request, response):
            # The frame goes out (after its Round, at the next frame) before the answer.
            fired.append(server.until_fired(
                child, 10 * MS, frame if rule == 'next_frame' else None))
            response.success, response.message = True, 'joined'
            return response

        server = _ServerOfTheTest(client, join)
        said = server.done_at(client, 10 * MS, 'the done for the frame before the answer')
        assert fired == [10 * MS], child.output()
        assert said.name == NODE_NAME and said.rounds == (rule != 'participant'), said
    finally:
        child.stop()


def test_at_the_next_frame_the_time_of_the_join_is_taken_at_once(client, domain_id, tmp_path):
    """
    The /clock of the time a join is answered at is released without a Round.

    A server that has sent no frame yet (or one that came back from 0) sends no Round before
    its next frame: the layer releases that time alone, so the node is at the server's time
    from its join on, as without the layer, and says it done (doc/lockstep-layer.md, "At the
    next frame").
    """
    child = _start_node(domain_id, tmp_path, layer=True,
                        env={'SIM_CLOCK_LOCKSTEP_RULE': 'next_frame'})
    try:
        answered = []

        def join(request, response):
            response.success, response.message = True, 'joined'
            response.clock.nanosec = 50 * MS
            answered.append(request.name)
            return response

        server = _ServerOfTheTest(client, join)
        client.spin_until(lambda: answered, 'the join', timeout=START_S)
        assert server.until_fired(child, 50 * MS) == 50 * MS, child.output()
        said = server.done_at(client, 50 * MS, 'the done for the time of the join')
        assert said.name == NODE_NAME and said.next_frame, said
    finally:
        child.stop()


def test_the_wrapper_says_how_it_is_used():
    """``lockstep --help`` says what it does; with no command it fails, saying so."""
    done = subprocess.run([executable('lockstep'), '--help'], capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert done.returncode == 0 and 'ros2 run --prefix' in done.stdout, done
    bare = subprocess.run([executable('lockstep')], capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert bare.returncode == 2 and 'a command to run is required' in bare.stderr, bare


@contextlib.contextmanager
def _next_frame_pair(client, domain_id, tmp_path):
    """
    Start PAIR's listener and talker under the next-frame rule; step FRAMES; yield the listener.

    A server in sync mode must be there. Both end by Ctrl-C after the block, cleanly.
    """
    env = {'SIM_CLOCK_LOCKSTEP_RULE': 'next_frame'}
    prefix = (executable('lockstep'),)
    listener = ChildProcess(domain_id, PAIR, str(tmp_path), args=('listener',), env=env,
                            prefix=prefix)
    talker = ChildProcess(domain_id, PAIR, str(tmp_path), args=('talker',), env=env,
                          prefix=prefix)
    try:
        listener.expect('ready', timeout=START_S)
        talker.expect('matched', timeout=START_S)
        client.spin_until(lambda: {'/talker', '/listener'} <= set(client.status().participants),
                          'both nodes among the participants', timeout=START_S)
        response = client.call(Step, 'step', Step.Request(user_id='', steps=FRAMES),
                               timeout=30.0)
        assert response.success, response.message
        yield listener
    finally:
        talker.stop()
        listener.stop()
    assert talker.process.returncode == 0 and listener.process.returncode == 0


def test_next_frame_delivers_what_a_frame_published_at_the_next(
        start_server, client, domain_id, tmp_path):
    """
    Under the next-frame rule a message published at t is taken at t + one frame, every time.

    The talker's message reaches the listener within the frame it was sent in; the layer holds
    it in the listener's process until the server's Round of the next frame releases it.
    """
    start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01})
    with _next_frame_pair(client, domain_id, tmp_path) as listener:
        heard = [(int(sent), int(taken)) for sent, taken in
                 _lines(listener.printed_by_now(), 'heard')]
        # Sent at frames 1 .. FRAMES - 1 (the last one's is taken at the frame after the step).
        assert heard == [(k * 10 * MS, (k + 1) * 10 * MS) for k in range(1, FRAMES)], heard


def test_what_the_layer_holds_is_let_go_when_the_server_goes(
        start_server, client, domain_id, tmp_path):
    """
    The message of the last frame, held for the next one, is taken once the server has gone.

    No Round will release it: the layer stops following the process and hands it what it
    held, as the process would have taken it without the layer (doc/lockstep-layer.md,
    "Leave").
    """
    server = start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01})
    with _next_frame_pair(client, domain_id, tmp_path) as listener:
        last = FRAMES * 10 * MS
        assert [int(sent) for sent, _ in _lines(listener.printed_by_now(), 'heard')] == [
            k * 10 * MS for k in range(1, FRAMES)], listener.output()
        assert server.stop() == 0, server.log()
        assert [int(t) for t in listener.expect('heard', timeout=START_S).split()] == [
            last, last], listener.output()


def test_a_server_that_comes_back_is_joined_again_and_holds_from_its_first_frame(
        start_server, client, domain_id, tmp_path):
    """
    After its server went, a pair under the layer joins the next one and holds to its rule.

    The new server names both in ``expected_participants``: it sends no frame before each
    has joined it and said Ready again. The layer keeps no Ready said to the first server
    for the next one: one kept had the new server step before the talker had joined, and
    the listener took each message a frame off from then on (doc/lockstep-layer.md,
    "Ready"). Time starts at 0 again: each node's clock goes back, and the talker's timer
    fires at the first frame.
    """
    server = start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01})
    with _next_frame_pair(client, domain_id, tmp_path) as listener:
        listener.printed_by_now()  # the first server's frames
        assert server.stop() == 0, server.log()
        listener.expect('heard', timeout=START_S)  # its last frame's, handed over
        start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01,
                      'expected_participants': ['/talker', '/listener'],
                      'participant_timeout': START_S})
        # Stepped at once: the step waits until both have joined again and said Ready.
        response = client.call(Step, 'step', Step.Request(user_id='', steps=FRAMES),
                               timeout=START_S + 30.0)
        assert response.success, response.message
        heard = [(int(sent), int(taken)) for sent, taken in
                 _lines(listener.printed_by_now(), 'heard')]
        assert heard == [(k * 10 * MS, (k + 1) * 10 * MS) for k in range(1, FRAMES)], (
            listener.output())


def test_rounds_carry_a_chain_through_within_its_frame(
        start_server, client, domain_id, tmp_path):
    """
    In rounds a message published at t goes down a chain of two hops and is taken at t.

    The talker's message of each frame is held in its process until round 1, the relay's
    answer until round 2: the listener takes it at the same clock, and the step returns only
    once it has, every frame.
    """
    start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01})
    env = {'SIM_CLOCK_LOCKSTEP_RULE': 'rounds'}
    nodes = {role: ChildProcess(domain_id, CHAIN, str(tmp_path), args=(role,), env=env,
                                prefix=(executable('lockstep'),))
             for role in ('listener', 'relay', 'talker')}
    try:
        for node in nodes.values():
            node.expect('matched', timeout=START_S)
        client.spin_until(
            lambda: {'/talker', '/relay', '/listener'} <= set(client.status().participants),
            'the three nodes among the participants', timeout=START_S)
        response = client.call(Step, 'step', Step.Request(user_id='', steps=FRAMES),
                               timeout=30.0)
        assert response.success, response.message
        heard = [(data, int(taken)) for data, taken in
                 _lines(nodes['listener'].printed_by_now(), 'heard')]
        assert heard == [(f'{k * 10 * MS}>{k * 10 * MS}', k * 10 * MS)
                         for k in range(1, FRAMES + 1)], heard
    finally:
        for node in nodes.values():
            node.stop()
    for role, node in nodes.items():
        assert node.process.returncode == 0, node.output()
        assert 'sim_clock lockstep' not in node.output(), node.output()


@pytest.mark.parametrize('rule', ['participant', 'rounds'])
def test_a_service_call_within_a_frame_is_answered_in_that_frame(
        start_server, client, domain_id, tmp_path, rule):
    """
    A call sent at frame t is answered, and its answer taken, at t, before the step returns.

    The server's handler works WORK_S: the caller's process is idle while the answer is to
    come, and the layer holds its done until the answer is taken (doc/lockstep-layer.md,
    "Services").
    """
    start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01})
    env = {'SIM_CLOCK_LOCKSTEP_RULE': rule}
    nodes = {role: ChildProcess(domain_id, CALL, str(tmp_path), args=(role, WORK_S), env=env,
                                prefix=(executable('lockstep'),))
             for role in ('server', 'caller')}
    try:
        for node in nodes.values():
            node.expect('matched', timeout=START_S)
        client.spin_until(
            lambda: {'/server', '/caller'} <= set(client.status().participants),
            'both nodes among the participants', timeout=START_S)
        response = client.call(Step, 'step', Step.Request(user_id='', steps=FRAMES),
                               timeout=30.0)
        assert response.success, response.message
        answered = [tuple(int(t) for t in line) for line in
                    _lines(nodes['caller'].printed_by_now(), 'answered')]
        frames = [k * 10 * MS for k in range(1, FRAMES + 1)]
        assert [(sent, taken) for sent, _, taken in answered] == [
            (t, t) for t in frames], nodes['caller'].output()
        # The server took the /clock of the frame before the request (or, at once with it,
        # after it): never a later one.
        assert all(at <= sent for sent, at, _ in answered), answered
    finally:
        for node in nodes.values():
            node.stop()
    for node in nodes.values():
        assert node.process.returncode == 0, node.output()
        assert 'sim_clock lockstep' not in node.output(), node.output()


def test_a_node_on_participant_spin_under_the_layer_joins_once(
        start_server, client, domain_id, tmp_path):
    """The layer says once that the process takes part on its own, and stays out of its way."""
    server = start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01})
    child = ChildProcess(domain_id, HELPED, str(tmp_path), prefix=(executable('lockstep'),))
    try:
        child.expect('ready', timeout=START_S)
        client.spin_until(lambda: '/helped' in client.status().participants,
                          '/helped among the participants', timeout=START_S)
        response = client.call(Step, 'step', Step.Request(user_id='', steps=5), timeout=30.0)
        assert response.success, response.message
        fired = [int(t) for t, in _lines(child.printed_by_now(), 'fired')]
        assert fired == [k * 10 * MS for k in range(1, 6)], child.output()
    finally:
        child.stop()
    assert child.process.returncode == 0, child.output()
    assert child.output().count('sim_clock lockstep') == 1, child.output()
    assert 'takes part on its own' in child.output()
    assert server.log().count("participant '/helped' joined") == 1, server.log()
    client.spin_until(lambda: "participant '/helped' left" in server.log(), 'the leave',
                      timeout=START_S)


def test_an_unchanged_c_node_holds_each_frame_until_its_timer_ran(
        start_server, client, domain_id, tmp_path):
    """A plain rcl node in C under the layer: each firing ran at its frame when a step answers."""
    server = start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01})
    argv = [executable('lockstep'), executable('plain_rcl_node'),
            '--work-ms', str(round(WORK_S * 1000))]
    child = ProgramProcess(domain_id, str(tmp_path), argv)
    try:
        child.expect('ready', timeout=START_S)
        client.spin_until(lambda: '/plain_c' in client.status().participants,
                          '/plain_c among the participants', timeout=START_S)
        response = client.call(Step, 'step', Step.Request(user_id='', steps=FRAMES),
                               timeout=30.0)
        assert response.success, response.message
        fired = [int(t) for t, in _lines(child.printed_by_now(), 'fired')]
        assert fired == [k * 10 * MS for k in range(1, FRAMES + 1)], child.output()
    finally:
        child.stop()
    assert child.process.returncode == 0, child.output()
    client.spin_until(lambda: "participant '/plain_c' left" in server.log(), 'the leave',
                      timeout=START_S)


def test_an_expected_node_under_the_layer_says_it_is_ready(
        start_server, client, domain_id, tmp_path):
    """Named in expected_participants, the node holds the first frame only until it is ready."""
    start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01,
                  'expected_participants': [NODE_NAME], 'participant_timeout': START_S})
    client.status_when_ready()
    child = _start_node(domain_id, tmp_path, layer=True)
    try:
        # Stepped at once: the step waits until the node has joined and said Ready.
        response = client.call(Step, 'step', Step.Request(user_id='', steps=5),
                               timeout=START_S + 30.0)
        assert response.success, response.message
        fired = [int(t) for t, in _lines(child.printed_by_now(), 'fired')]
        assert fired == [k * 10 * MS for k in range(1, 6)], child.output()
        assert list(client.status().expected_missing) == []
    finally:
        child.stop()


def test_a_node_killed_mid_frame_is_named_and_the_next_step_goes_on(
        start_server, client, domain_id, tmp_path):
    """
    Killed (SIGKILL) while the server waits for its done: the step names it; then it is dropped.

    The node is stuck in its callback of frame 3 when it is killed, so no done of that frame
    ever comes: the step answers at ``participant_timeout`` naming it. Once its process has
    left the graph (the end of its lease) the server drops it, and the next step runs without
    it. (UDP only: a process killed while it receives over Fast DDS shared memory can freeze
    its peers, test_faults.py says why.)
    """
    server = start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01,
                           'participant_timeout': 3.0})
    child = ChildProcess(domain_id, STUCK, str(tmp_path), env=UDP_LOOPBACK_ENV,
                         prefix=(executable('lockstep'),))
    try:
        child.expect('ready', timeout=START_S)
        client.spin_until(lambda: '/stuck' in client.status().participants,
                          '/stuck among the participants', timeout=START_S)
        step = client.node.create_client(Step, '/sim_clock/step', qos_profile=SERVICE_QOS)
        client.spin_until(step.service_is_ready, 'the step service')
        future = step.call_async(Step.Request(user_id='', steps=5))
        fired = [int(child.expect('fired', timeout=START_S)) for _ in range(3)]
        assert fired == [10 * MS, 20 * MS, STUCK_NS], child.output()
        child.kill()  # in its callback of frame 3: the server waits for its done
        client.spin_until(future.done, 'the answer of the step', timeout=START_S)
        response = future.result()
        assert not response.success and response.frame == 3, response
        assert list(response.late) == ['/stuck'] and '/stuck' in response.message, response
        client.spin_until(lambda: "participant '/stuck' dropped" in server.log(),
                          '/stuck dropped once its process left the graph', timeout=START_S)
        response = client.call(Step, 'step', Step.Request(user_id='', steps=5), timeout=30.0)
        assert response.success and response.frame == 8, response
        assert list(client.status().participants) == []
    finally:
        child.kill()


#: Plain rclpy nodes, no sim_clock in them, each at a limit of the layer (argv[1]): a
#: ``use_sim_time`` timer of one frame prints each firing (``fired NAME T``) and its end
#: (``ended NAME T``) with its clock, and
#: - ``steady``: a timer of 20 ms on the steady clock prints ``steady T`` with the node's clock;
#: - ``thread``: a thread of its own publishes the node's clock on /side every 10 ms of wall
#:   time, outside the executor;
#: - ``events``: the node spins on rclpy's EventsExecutor (spin_once: its spin busy-loops);
#: - ``executors``: two nodes, ``left`` and ``right``, each on a SingleThreadedExecutor of its
#:   own on a thread of its own.
LIMITS = """
import sys
import threading
import time

import rclpy
from rclpy.clock import Clock
from rclpy.clock import ClockType
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from std_msgs.msg import String

kind = sys.argv[1]
rclpy.init()
printing = threading.Lock()


def say(*words):
    with printing:
        print(*words, flush=True)


def make(name):
    node = rclpy.create_node(name, parameter_overrides=[Parameter('use_sim_time', value=True)])

    def tick():
        now = node.get_clock().now().nanoseconds
        say('fired', name, now)
        time.sleep(0.02)
        say('ended', name, now)
    node.create_timer(0.01, tick)
    return node


if kind == 'executors':
    nodes = [make('left'), make('right')]
else:
    nodes = [make('plain')]
node = nodes[0]
if kind == 'steady':
    node.create_timer(0.02, lambda: say('steady', node.get_clock().now().nanoseconds),
                      clock=Clock(clock_type=ClockType.STEADY_TIME))
if kind == 'thread':
    side = node.create_publisher(String, '/side',
                                 QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
    stop = threading.Event()

    def publish():
        while not stop.wait(0.01):
            side.publish(String(data=str(node.get_clock().now().nanoseconds)))
    threading.Thread(target=publish, daemon=True).start()
say('ready')
try:
    if kind == 'events':
        from rclpy.experimental import EventsExecutor
        executor = EventsExecutor()
        executor.add_node(node)
        while rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
    elif kind == 'executors':
        executors = [SingleThreadedExecutor() for _ in nodes]
        for executor, each in zip(executors, nodes):
            executor.add_node(each)
        threads = [threading.Thread(target=executor.spin, daemon=True)
                   for executor in executors]
        for thread in threads:
            thread.start()
        threads[0].join()
    else:
        rclpy.spin(node)
except KeyboardInterrupt:
    pass
rclpy.try_shutdown()
"""


def _limit(start_server, domain_id, tmp_path, kind: str):
    """Start the LIMITS node(s) of ``kind`` under the layer beside a server in sync mode."""
    start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01})
    child = ChildProcess(domain_id, LIMITS, str(tmp_path), args=(kind,),
                         prefix=(executable('lockstep'),))
    child.expect('ready', timeout=START_S)
    return child


def _step(client, frames: int):
    response = client.call(Step, 'step', Step.Request(user_id='', steps=frames), timeout=30.0)
    assert response.success, response.message
    return response


def _warnings(child) -> list:
    return [line for line in child.output().splitlines() if line.startswith('sim_clock lockstep')]


def _fired(printed, name='plain', word='fired') -> list:
    return [int(t) for who, t in _lines(printed, word) if who == name]


def _both_executors_hold_each_frame(client, child) -> None:
    """Once /left and /right have joined, step: each one's timer fired and ended at each frame."""
    client.spin_until(lambda: {'/left', '/right'} <= set(client.status().participants),
                      'both nodes among the participants', timeout=START_S)
    _step(client, FRAMES)
    printed = child.printed_by_now()
    frames = [k * 10 * MS for k in range(1, FRAMES + 1)]
    for name in ('left', 'right'):
        assert _fired(printed, name) == frames, printed
        assert _fired(printed, name, 'ended') == frames, printed


def test_nodes_waiting_before_the_server_came_are_followed_once_it_has(
        start_server, client, domain_id, tmp_path):
    """
    Two executors on two threads, blocked in their waits before any server is there.

    Until the layer sees the server it makes no participant and forwards every wait as it
    is; once it sees it, each thread's next wait is followed (the server's time, sent again
    while it stands, wakes them): both hold each frame from the first.
    """
    child = ChildProcess(domain_id, LIMITS, str(tmp_path), args=('executors',),
                         prefix=(executable('lockstep'),),
                         env={'SIM_CLOCK_LOCKSTEP_LOG': '1'})
    try:
        child.expect('ready', timeout=START_S)
        start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01})
        _both_executors_hold_each_frame(client, child)
        assert 'the server is on the graph: the participant starts' in child.output()
    finally:
        child.stop()


def test_limit_a_steady_timer_fires_between_frames(start_server, client, domain_id, tmp_path):
    """
    A timer on the steady clock is not held to the frames: it fires on while time stands.

    The step still answers once every firing of the use_sim_time timer has ended; the layer
    says once on stderr that it cannot hold the steady timer.
    """
    child = _limit(start_server, domain_id, tmp_path, 'steady')
    try:
        client.spin_until(lambda: '/plain' in client.status().participants,
                          '/plain among the participants', timeout=START_S)
        _step(client, 5)
        printed = child.printed_by_now()
        frames = [k * 10 * MS for k in range(1, 6)]
        assert _fired(printed) == frames and _fired(printed, word='ended') == frames, printed
        # Time stands at the last frame; the steady timer fires on, at that clock.
        for _ in range(3):
            assert int(child.expect('steady', timeout=START_S)) == 50 * MS
    finally:
        child.stop()
    warnings = _warnings(child)
    assert len(warnings) == 1 and 'steady clock fires on wall time' in warnings[0], warnings


def test_limit_a_thread_that_publishes_outside_the_executor_is_not_waited_for(
        start_server, client, domain_id, tmp_path):
    """
    A thread that publishes outside the executor holds no frame: it goes on between steps.

    The layer says once on stderr, naming the topic, that it cannot tell that thread's frame.
    """
    child = _limit(start_server, domain_id, tmp_path, 'thread')
    heard = []
    client.node.create_subscription(String, '/side', lambda msg: heard.append(int(msg.data)),
                                    QOS)
    try:
        client.spin_until(lambda: '/plain' in client.status().participants,
                          '/plain among the participants', timeout=START_S)
        _step(client, 5)
        printed = child.printed_by_now()
        frames = [k * 10 * MS for k in range(1, 6)]
        assert _fired(printed) == frames and _fired(printed, word='ended') == frames, printed
        client.spin_until(lambda: heard.count(50 * MS) >= 3,
                          'the thread publishing on while time stands', timeout=START_S)
    finally:
        child.stop()
    warnings = _warnings(child)
    assert len(warnings) == 1 and 'publishes on /side' in warnings[0], warnings


def test_limit_an_events_executor_takes_no_part(start_server, client, domain_id, tmp_path):
    """
    The EventsExecutor of rclpy waits on event callbacks, never in rmw_wait: its node never joins.

    The layer says so once on stderr; the steps do not wait for the node.
    """
    child = _limit(start_server, domain_id, tmp_path, 'events')
    try:
        assert 'EventsExecutor' in child.expect('sim_clock lockstep', timeout=START_S)
        client.status_when_ready()
        _step(client, 5)
        assert '/plain' not in client.status().participants
    finally:
        child.stop()
    assert len(_warnings(child)) == 1, child.output()


def test_limit_two_executors_on_two_threads_are_both_followed(
        start_server, client, domain_id, tmp_path):
    """Two nodes, each on an executor of its own on a thread of its own: both hold each frame."""
    child = _limit(start_server, domain_id, tmp_path, 'executors')
    try:
        _both_executors_hold_each_frame(client, child)
    finally:
        child.stop()
    assert _warnings(child) == [], child.output()
