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
Participants across processes, through DDS.

A step waits for them, a late one stops it, a node that leaves the graph is dropped, free run
goes at their pace, real-time mode ignores them.
"""

import contextlib
import time

from harness import ChildProcess
from harness import flood_with_sigints
from harness import SERVICE_QOS
from harness import soak
from harness import stamp_ns
from harness import TestClient
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from sim_clock.client.api import SimClockError
from sim_clock.client.participant import Participant
from sim_clock.msg import Done
from sim_clock.srv import Step

pytestmark = pytest.mark.process

MS = 1_000_000

#: A node under test: a use_sim_time timer of PERIOD s that works WORK s (a slow node), run
#: as a participant by sim_clock.client.participant; at its VANISH-th firing (0: never) it
#: destroys its node without leaving (as a crash that the graph sees). Prints each firing.
#: A line 'leave' on its stdin makes it leave and end.
PARTICIPANT = """
import select, sys, time
import rclpy
from rclpy.parameter import Parameter
from sim_clock.client.participant import Participant
name, period, work, vanish = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
readers = int(sys.argv[5])
rclpy.init()
node = rclpy.create_node(name, parameter_overrides=[Parameter('use_sim_time', value=True)])
fired = []
def tick():
    fired.append(node.get_clock().now().nanoseconds)
    print('fired', fired[-1], flush=True)
    time.sleep(work)  # the work of a slow node under test
node.create_timer(period, tick)
participant = Participant(node, name=name, period_sec=period)
# Joined once the done writer has matched every reader (the server's, and the test's if it
# has one): a done sent before a reader matched would never reach it. Spun by the
# participant's executor: rclpy.spin_once(node) would take the node away from it.
while participant._done.get_subscription_count() < readers:
    participant.executor.spin_once(timeout_sec=0.05)
print('joined', flush=True)
try:
    while rclpy.ok():
        participant.spin_once()
        if vanish and len(fired) >= vanish:
            print('vanishing', flush=True)
            node.destroy_node()
            break
        if select.select([sys.stdin], [], [], 0)[0] and sys.stdin.readline().strip() == 'leave':
            participant.close()
            print('left', flush=True)
            break
    else:
        participant.close()
except KeyboardInterrupt:
    pass
rclpy.try_shutdown()
"""


def _participant(domain_id, tmp_path, name='p', period=0.01, work=0.0, vanish=0, readers=2):
    """Start a participant; ``readers``: the done readers it waits for (the test has one)."""
    child = ChildProcess(domain_id, PARTICIPANT, str(tmp_path),
                         args=(name, period, work, vanish, readers))
    child.expect('joined')
    return child


def _printed(child: ChildProcess) -> str:
    """End the child; return all it printed."""
    child.stop()
    return child.output()


@contextlib.contextmanager
def _explained(client, server, dones, *children):
    """On a failure inside, say what the server, this test's done reader and the children saw."""
    try:
        yield
    except AssertionError as error:
        try:
            status = client.status()
            state = (f'frame {status.frame}, participants {list(status.participants)}, done '
                     f'{[stamp_ns(t) for t in status.participants_done]}, waiting for '
                     f'{list(status.waiting_for)}')
        except AssertionError as no_status:
            state = f'no status: {no_status}'
        report = [f'{error}', f'server: {state}', f'dones here: {list(dones)[:5]} ... '
                  f'{list(dones)[-5:]} ({len(dones)})',
                  f'/clock here: {len(client.clocks)} messages, the last '
                  f'{list(zip(client.times()[-5:], client.clock_sources[-5:]))}',
                  'server log (end):\n' + server.log()[-3000:]]
        report += [f'child {child.pid} printed:\n{_printed(child)[-1500:]}' for child in children]
        raise AssertionError('\n'.join(report)) from None


class _Dones(list):
    """The Done messages on the server's ~/done topic, as (name, time, source ns)."""

    def __init__(self, client: TestClient):
        super().__init__()
        self.client = client
        self.subscription = client.node.create_subscription(
            Done, '/sim_clock/done',
            lambda msg, info: self.append(
                (msg.name, stamp_ns(msg.time), info['source_timestamp'])),
            QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))

    def wait_matched(self, publishers: int = 1) -> None:
        """Wait until this reader has matched the participants' done writers."""
        self.client.spin_until(lambda: self.subscription.get_publisher_count() >= publishers,
                               "the participant's done writer")


def _dones(client: TestClient) -> _Dones:
    return _Dones(client)


def _step(client, steps, timeout=30.0):
    return client.call(Step, 'step', Step.Request(user_id='', steps=steps), timeout=timeout)


def test_a_step_waits_for_a_slow_participant(start_server, client, domain_id, tmp_path):
    """Each frame goes out only after the participant finished the one before; then the answer."""
    server = start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01})
    dones = _dones(client)
    child = _participant(domain_id, tmp_path, work=0.05)
    try:
        dones.wait_matched()
        started = time.monotonic()
        with _explained(client, server, dones, child):
            response = _step(client, 5)
            assert response.success, response.message
        elapsed = time.monotonic() - started
        assert response.frame == 5 and list(response.late) == []
        assert elapsed >= 5 * 0.05
        # Each reader's messages are taken one callback at a time: wait for both.
        client.spin_until(lambda: any(t == 50 * MS for _, t, _ in dones)
                          and 50 * MS in client.times(), 'the done and /clock of frame 5')
        # Every frame due was finished before the next one was published (source times of
        # the first done of each time: a participant says done again for a republished time).
        done_at = {}
        for _, t, source in dones:
            done_at.setdefault(t, source)
        clock_at = {}
        for (_, t), source in zip(client.clocks, client.clock_sources):
            clock_at.setdefault(t, source)
        for t in range(10 * MS, 50 * MS, 10 * MS):
            assert done_at[t] < clock_at[t + 10 * MS], t
        fired = [int(child.expect('fired')) for _ in range(5)]
        assert fired == [10 * MS, 20 * MS, 30 * MS, 40 * MS, 50 * MS]
        status = client.status()
        assert list(status.participants) == ['p'] and list(status.waiting_for) == []
        assert stamp_ns(status.participants_done[0]) == 50 * MS
        assert status.participants_slowest[0] >= 0.05
    finally:
        child.stop()


def test_a_leave_does_not_release_a_frame_another_participant_has_not_finished(
        start_server, client, domain_id, tmp_path):
    """One participant leaves while a slow one works on frame 1: frame 2 still waits for it."""
    server = start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01})
    dones = _dones(client)
    slow = _participant(domain_id, tmp_path, name='slow', work=1.0)
    quitter = _participant(domain_id, tmp_path, name='quitter')
    try:
        dones.wait_matched(2)
        step = client.node.create_client(Step, '/sim_clock/step', qos_profile=SERVICE_QOS)
        client.spin_until(step.service_is_ready, 'the step service')
        future = step.call_async(Step.Request(user_id='', steps=2))
        with _explained(client, server, dones, slow, quitter):
            assert int(slow.expect('fired')) == 10 * MS  # frame 1 is out; slow works on it
        quitter.send('leave')
        quitter.expect('left')
        client.spin_until(future.done, 'the answer of the step')
        assert future.result().success and future.result().frame == 2
        # Slow's done of frame 1 was sent before frame 2 went out; both may still wait in this
        # client's readers (its executor takes one callback at a time).
        client.spin_until(lambda: ('slow', 10 * MS) in {(n, t) for n, t, _ in dones}
                          and 20 * MS in client.times(), "slow's done of frame 1 and frame 2")
        done_at = {}
        for name, t, source in dones:
            done_at.setdefault((name, t), source)
        clock_at = {}
        for (_, t), source in zip(client.clocks, client.clock_sources):
            clock_at.setdefault(t, source)
        assert done_at[('slow', 10 * MS)] < clock_at[20 * MS]
        # Slow ends without leaving: dropped when its node leaves the graph, a warning where
        # quitter's leave was an info (once the same log line: rclpy raised, the server died).
        slow.stop()
        client.spin_until(lambda: "participant 'slow' dropped" in server.log(),
                          'slow to be dropped')
        assert list(client.status().participants) == []
    finally:
        slow.stop()
        quitter.stop()


def test_a_late_participant_stops_the_step_and_is_named(
        start_server, client, domain_id, tmp_path):
    """Beyond participant_timeout the step answers success false at the frame reached."""
    server = start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01,
                           'participant_timeout': 0.3})
    dones = _dones(client)
    child = _participant(domain_id, tmp_path, name='slow', work=1.0)
    try:
        dones.wait_matched()
        response = _step(client, 3)
        assert not response.success
        assert list(response.late) == ['slow'] and response.frame == 1
        assert 'late participants: slow' in response.message
        # Once it has finished frame 1, the next step goes on: frame 2 is out (and, as slow
        # as every frame, late again).
        with _explained(client, server, dones, child):
            client.spin_until(lambda: any(t == 10 * MS for _, t, _ in dones),
                              'its done of frame 1')
        response = _step(client, 1)
        assert response.frame == 2 and list(response.late) == ['slow']
    finally:
        child.stop()


def test_a_participant_whose_node_leaves_the_graph_is_dropped(
        start_server, client, domain_id, tmp_path):
    """A node gone without leaving: dropped with a warning, and the step goes on."""
    server = start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01})
    child = _participant(domain_id, tmp_path, name='gone', vanish=2, readers=1)
    try:
        response = _step(client, 5)
        assert response.success, response.message
        assert response.frame == 5
        child.expect('vanishing')
        assert list(client.status().participants) == []
        assert "participant 'gone' dropped" in server.log()
    finally:
        child.stop()


def test_free_run_goes_at_the_participants_pace(start_server, client, domain_id, tmp_path):
    """As fast as possible, yet no frame passes a participant that has not finished."""
    server = start_server({'mode': 'simulation', 'real_time_factor': 0.0,
                           'time_step': 0.001, 'paused': True})
    dones = _dones(client)
    child = _participant(domain_id, tmp_path, period=0.001, work=0.01)
    try:
        assert client.trigger('resume').success
        with _explained(client, server, dones, child):
            # Frames 1 to 20: the participant also says done for time 0 when it takes that
            # time's republish while paused, which is no frame of the free run.
            client.spin_until(lambda: len({t for _, t, _ in dones if t > 0}) >= 20,
                              '20 frames finished by the participant')
        assert client.trigger('pause').success
        status = client.status()
        # Without the participant this free run makes tens of thousands of frames a second;
        # with it, at most one frame is out that it has not finished (as the server counts).
        last_finished = stamp_ns(status.participants_done[0]) // MS
        assert 20 <= status.frame <= last_finished + 1
    finally:
        child.stop()


def test_real_time_mode_ignores_participants(start_server, client, domain_id, tmp_path):
    """A participant that never finishes does not hold real time."""
    start_server({'mode': 'real_time'})
    child = _participant(domain_id, tmp_path, name='stuck', period=0.001, work=30.0,
                         readers=1)
    try:
        first = client.wait_for_clock(lambda t: t > 0)
        client.wait_for_clock(lambda t: t > first + 200 * MS, timeout=10.0)
    finally:
        child.stop()


#: Participants that join and leave at once, each from a new process's context.
QUICK_LEAVES = soak(4, 200)


@pytest.mark.soak
def test_a_participant_that_leaves_right_after_joining_is_heard(
        start_server, client, domain_id):
    """
    QUICK_LEAVES times: join from a new context, close at once: the server hears the leave.

    Right after a join, the new context's graph may not list the server's node yet (each
    process's discovery info comes after the endpoints it names): the leave's own client,
    matched by the join, says whether the server is there.
    """
    server = start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01})
    client.status()
    for run in range(QUICK_LEAVES):
        context = rclpy.Context()
        rclpy.init(context=context, domain_id=domain_id)
        try:
            node = rclpy.create_node(f'quick_{run}', context=context)
            Participant(node, name=f'quick_{run}').close()
            # Asked before the node goes: a participant left without a leave is still listed.
            assert list(client.status().participants) == [], (run, server.log())
            node.destroy_node()
        finally:
            rclpy.try_shutdown(context=context)


def test_a_node_taken_from_the_participant_is_an_error(start_server, client, domain_id):
    """rclpy.spin_once(node) takes the node from the participant: said, not a silent stall."""
    server = start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01})
    client.status()
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain_id)
    try:
        node = rclpy.create_node('taken', context=context,
                                 parameter_overrides=[Parameter('use_sim_time', value=True)])
        participant = Participant(node, name='taken')
        participant.spin_once(timeout_sec=0.01)  # in its executor: fine
        executor = SingleThreadedExecutor(context=context)
        rclpy.spin_once(node, executor=executor, timeout_sec=0.01)
        with pytest.raises(SimClockError, match='taken out of the participant'):
            participant.spin_once(timeout_sec=0.01)
        participant.executor.add_node(node)  # given back, it goes on and leaves
        participant.spin_once(timeout_sec=0.01)
        participant.close()
        assert list(client.status().participants) == [], server.log()
    finally:
        rclpy.try_shutdown(context=context)


def test_a_participant_in_a_with_block_leaves_at_its_end(start_server, client, domain_id):
    """``with Participant(node)``: joined inside the block, left at its end, also on an error."""
    server = start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01})
    client.status()
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain_id)
    try:
        node = rclpy.create_node('scoped', context=context)
        with Participant(node, name='scoped', timeout_sec=10.0) as participant:
            assert participant.name == 'scoped'
            assert list(client.status().participants) == ['scoped'], server.log()
        assert list(client.status().participants) == [], server.log()
        with pytest.raises(RuntimeError, match='inside'):
            with Participant(node, name='scoped'):
                raise RuntimeError('inside')
        assert list(client.status().participants) == [], server.log()
    finally:
        rclpy.try_shutdown(context=context)


#: A node as launch_ros starts one: its name remapped by the process's --ros-args, spun by
#: participant.spin until a signal. Prints 'ended' and whether rclpy is still up at the end.
LAUNCHED_PARTICIPANT = """
import sys
import rclpy
from rclpy.parameter import Parameter
from sim_clock.client import participant
rclpy.init(args=sys.argv)
node = rclpy.create_node('unremapped', parameter_overrides=[Parameter('use_sim_time', value=True)])
participant.spin(node, period_sec=0.01)
print('ended, rclpy ok:', rclpy.ok(), flush=True)
node.destroy_node()
rclpy.try_shutdown()
"""


@pytest.mark.parametrize('signals', [
    ('SIGINT', 'SIGINT'),  # a terminal's Ctrl-C under ros2 launch, and launch's own
    ('SIGTERM',),
    # SIGINT, then one every 5 ms until it ends: one lands wherever it is on its way out
    # (the leave, the script's last lines, the interpreter's exit). Each one interrupts a
    # wait of rclpy's or Fast DDS's: without pause, the exit took 25 s.
    ('SIGINT', 'flood'),
])
def test_a_launched_participant_is_one_node_and_leaves_on_a_signal(
        start_server, client, domain_id, tmp_path, signals):
    """Under ``-r __node:=worker`` a participant is one node /worker; a signal: it leaves."""
    import signal
    server = start_server({'mode': 'simulation', 'sync': True, 'time_step': 0.01})
    child = ChildProcess(domain_id, LAUNCHED_PARTICIPANT, str(tmp_path),
                         args=('--ros-args', '-r', '__node:=worker'))
    try:
        client.spin_until(lambda: list(client.status().participants) == ['/worker'],
                          'the participant /worker to join')
        nodes = client.node.get_node_names_and_namespaces
        # The client's private node is in the graph too: the graph has the whole process.
        client.spin_until(
            lambda: any(name.startswith('worker_sim_clock_client') for name, _ in nodes()),
            "the participant's client node in the graph")
        assert nodes().count(('worker', '/')) == 1, nodes()
        assert not [name for name, _ in nodes() if name.startswith('unremapped')], nodes()
        # A step waits for the participant's done, which it sends only once it spins: the
        # signals then reach its handlers, not the default ones of a process still joining.
        assert client.step('', 1).success
        for number, name in enumerate(signals):
            if name == 'flood':
                flood_with_sigints(child.process, pause=0.005)
                continue
            if number:
                time.sleep(0.002)  # launch's SIGINT a few ms after the terminal's
            child.process.send_signal(getattr(signal, name))
        assert child.finish() == 0, child.output()
    finally:
        child.stop()
    assert 'ended, rclpy ok: False' in child.output(), child.output()
    assert 'Traceback' not in child.output(), child.output()
    try:
        client.spin_until(lambda: "participant '/worker' left" in server.log(),
                          'the server to log the leave')
    except AssertionError as error:  # what each side said, to find why the leave never came
        raise AssertionError(f'{error}\nparticipant:\n{child.output()}\nserver:\n'
                             f'{server.log()}') from None
    assert 'dropped' not in server.log(), server.log()
    assert list(client.status().participants) == []
