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
A stack of deterministic participants, each in its own process, fed by a bag (doc/frames.md).

The stack of ``examples/stack_node.py``: perception (20 ms timer, takes the bag's /chatter) ->
/stage1 -> planning (answers each at once) -> /stage2; control takes /stage1 and /stage2
(fan-in) and, on a 20 ms timer, publishes /result and /ping, which planning answers at once on
/pong, which control takes (a cycle). Beside them the relay, a deterministic participant written
in C against rcl (src/stack_relay.c), sends each /stage2 message on /relay unchanged. Recorded
twice: each recording holds every message the nodes published before the end, at the clock
they published it at; the same messages, bytes, stamps and order on every topic, /relay
carrying what /stage2 did; and no node processed a message at a clock earlier than its
publication (or, for the bag's data, its stamp). The same stack again with next_frame
participants (without the relay): identical recordings, and every message between participants
taken one frame after it went out.
"""

import os

from bags import START_NS
from bags import write_test_bag
from harness import ChildProcess
from harness import executable
from harness import NS
from harness import ProgramProcess
from harness import ROOT
from harness import TIMEOUT
import pytest
from sim_clock.msg import Ready
from sim_clock.srv import Step
from sim_clock.wire.names import READY_READER_QOS
from sim_clock.wire.names import RECORDER_NODE_NAME

pytestmark = pytest.mark.process

MS = 1_000_000
STEPS, FRAMES = 20, 10
TOPICS = ('/stage1', '/stage2', '/ping', '/pong', '/result', '/relay')
#: The readers of each topic once the recorder and the relay are there too.
READERS = {'/stage1': 3, '/stage2': 3, '/ping': 2, '/pong': 2, '/result': 1, '/relay': 1}

#: The stack's nodes (examples/stack_node.py), run by role.
NODE = open(os.path.join(ROOT, 'examples', 'stack_node.py')).read()


def start_stack(domain_id, tmp_path, roles, mode='deterministic', readers=None,
                layer: str = '', layered=None, in_c=()) -> dict:
    """
    Start each role's node in a process of its own; return them once all have joined.

    ``readers``: each node prints ``matched`` once its writers have matched that many readers.
    ``layer``: the nodes of ``layered`` (None: all) on ``rclpy.spin`` (``--mode plain``), each
    under the lockstep layer with that rule (doc/lockstep-layer.md), which joins for it once
    it spins; the others on the participant helper in ``mode``. ``in_c``: roles of ``layered``
    whose node is the same role in plain C on rcl (src/stack_node.c) under the layer.
    """
    matched = ('--readers', *(f'{topic}={count}' for topic, count in readers.items())
               ) if readers else ()
    under = set(roles if layered is None else layered) if layer else set()
    assert set(in_c) <= under, 'a node in C holds frames only under the layer'
    layer_env = {'SIM_CLOCK_LOCKSTEP_RULE': layer}

    def start(role: str) -> ChildProcess:
        if role in in_c:
            return ProgramProcess(domain_id, str(tmp_path), [
                executable('lockstep'), executable('stack_node_c'), role, *matched], layer_env)
        return ChildProcess(
            domain_id, NODE, str(tmp_path),
            args=(role, '--mode', 'plain' if role in under else mode, *matched),
            env=layer_env if role in under else None,
            prefix=(executable('lockstep'),) if role in under else ())
    nodes = {role: start(role) for role in roles}
    for node in nodes.values():
        node.expect('joined', timeout=60.0)  # Python, rclpy, a join: slow on a loaded machine
    return nodes


def processed(node: ChildProcess) -> list:
    """Return (topic, clock, published at, data) of every message the node processed."""
    lines = [line.split(' ', 4) for line in node.output().splitlines()
             if line.startswith('got ')]
    return [(topic, int(clock), int(sent), data.strip()) for _, topic, clock, sent, data in lines]


def record_run(start_server, client, domain_id, tmp_path, bag, run: int,
               mode: str = 'deterministic', layer: str = '', layered=None, in_c=()):
    """
    Replay the bag in lockstep with the stack; return (recording, what each node processed).

    In rounds (``deterministic``) the C relay takes part too, unless nodes run under the
    lockstep ``layer`` (with that rule: those of ``layered``, None for all, and of them those
    of ``in_c`` in C; see start_stack).
    """
    relay = mode == 'deterministic' and not layer
    topics = TOPICS if relay else TOPICS[:-1]
    readers = READERS if relay else {
        topic: count - (topic == '/stage2') for topic, count in READERS.items() if topic in topics}
    output = str(tmp_path / f'recording{run}')
    player = start_server({'sync': True, 'time_step': 0.01}, argv=[bag, '--start-at-zero'],
                          executable=executable('bag_player'))
    client.status_when_ready()
    roles = ('perception', 'planning', 'control')
    nodes = start_stack(domain_id, tmp_path, roles, mode, readers, layer, layered, in_c)
    if layer:
        under = roles if layered is None else layered
        client.spin_until(lambda: {f'/{role}' for role in under} <= set(
            client.status().participants), 'the nodes joined through the layer', timeout=60.0)
    if relay:
        nodes['relay'] = ProgramProcess(  # the recorder reads /relay
            domain_id, str(tmp_path), [executable('stack_relay'), '--readers', '1'])
        nodes['relay'].expect('joined')
    recorder = start_server(executable=executable('recorder'), argv=[
        output, '--until', str(STEPS * FRAMES * 10 * MS / NS), '-t', *topics])
    client.spin_until(lambda: all(f'recording {topic}' in recorder.log() for topic in topics)
                      and 'first /clock received' in recorder.log(), 'the recorder')
    client.spin_until(lambda: all(client.node.count_subscribers(topic) >= count
                                  for topic, count in readers.items()),
                      'the recorder on every topic')
    for node in nodes.values():  # each writer matched its readers: nothing sent is lost
        node.expect('matched', timeout=60.0)
    wait_for_the_recorders_readers(client, topics)
    step_until_recorded(client, recorder, nodes, player)
    # A reader taken as stalled is skipped from then on: its data may come after its /clock.
    assert 'not acknowledged by every reliable reader' not in player.log(), player.log()
    assert 'without waiting for stalled reliable readers' not in player.log(), player.log()
    assert 'ending without messages the stack announced' not in recorder.log(), recorder.log()
    if relay:  # it left the clock and ended cleanly on SIGINT
        assert nodes['relay'].process.wait(TIMEOUT) == 0, nodes['relay'].output()
        assert 'stack_relay:' not in nodes['relay'].output()  # no error, no round stopped
    for role, node in nodes.items():
        assert '[ERROR]' not in node.output() and '[WARN]' not in node.output(), node.output()
        # Under the layer a node says, once, that it does not hold the steady timer with which
        # stack_node.py waits for its readers to match; nothing else.
        said = [line for line in node.output().splitlines() if 'sim_clock lockstep' in line]
        assert all('steady clock fires on wall time' in line for line in said), node.output()
    recording = read_recording(output)
    recorded_as_published(recording, nodes, recorder.log())
    return recording, {role: processed(node) for role, node in nodes.items()}


def published(node: ChildProcess) -> dict:
    """Return topic -> the clock of each message the node published, in order."""
    sent = {}
    for line in node.output().splitlines():
        if line.startswith('sent '):
            _, topic, clock = line.split()
            sent.setdefault(topic, []).append(int(clock))
    return sent


def recorded_as_published(recording: dict, nodes: dict, recorder_log: str) -> None:
    """
    Check that the recording holds every message the nodes published before --until.

    Each at the clock it was published at, in the order it was published: a message lost on
    its way to the recorder, or a node that stopped publishing, is named here, not only as a
    difference between two runs.
    """
    until = STEPS * FRAMES * 10 * MS
    for role, node in nodes.items():
        for topic, clocks in published(node).items():
            stamps = [stamp for stamp, _ in recording.get(topic, ())]
            wanted = [clock for clock in clocks if clock < until]
            assert stamps == wanted, (
                f'{topic}: {role} published {len(wanted)} messages before --until, at '
                f'{wanted[:3]}..{wanted[-3:]}; the recording has {len(stamps)}, at '
                f'{stamps[:3]}..{stamps[-3:]}\nrecorder:\n{recorder_log}\n{role}:\n'
                + node.output()[-3000:])


def wait_for_the_recorders_readers(client, topics) -> None:
    """
    Wait until the recorder's own report on ~/ready says each reader of ``topics`` has a writer.

    A writer that has matched the recorder's reader (a node's ``matched``) does not mean that
    reader has matched the writer: each side discovers the other apart, and a recorder that has
    not yet found a node's participant drops what that node sends until Fast DDS's next
    announcement (up to 3 s, longer than a run: a Kilted run recorded no /stage2 and no /pong).
    Only the recorder can say its side, and it says it on ~/ready.
    """
    reports = {}
    subscription = client.node.create_subscription(
        Ready, f'{client.server}/ready', lambda msg: reports.__setitem__(msg.name, msg),
        READY_READER_QOS)

    def matched() -> bool:
        report = reports.get(f'/{RECORDER_NODE_NAME}')
        writers = {} if report is None else dict(zip(report.subscriptions, report.writers))
        return all(writers.get(topic, 0) >= 1 for topic in topics)
    try:
        client.spin_until(matched, "the recorder's readers matched by every writer")
    finally:
        client.node.destroy_subscription(subscription)


def step_until_recorded(client, recorder, nodes: dict, player) -> None:
    """Step STEPS calls of FRAMES frames, wait for the recorder's end; stop nodes and player."""
    try:
        for _ in range(STEPS):
            response = client.call(Step, 'step', Step.Request(steps=FRAMES), timeout=60.0)
            assert response.success, response.message
        assert recorder.process.wait(60) == 0, recorder.log()
    finally:
        for node in nodes.values():
            node.stop()
        player.stop()


def read_recording(path: str) -> dict:
    """Return each topic's (stamp, bytes) in recording order, from the bag at ``path``."""
    from rosbags.rosbag2 import Reader
    topics = {}
    with Reader(path) as reader:
        for connection, stamp, data in reader.messages():
            topics.setdefault(connection.topic, []).append((stamp, bytes(data)))
    return topics


@pytest.fixture
def bag(tmp_path):
    """Write a one-second sqlite3 test bag; return its path and its /chatter stamps by key."""
    path = str(tmp_path / 'bag')
    records = write_test_bag(path, 'sqlite3')
    return path, {r.key: r.time_ns for r in records if r.topic == '/chatter'}


def recorded_twice(start_server, client, domain_id, tmp_path, path, topics, *rule):
    """
    Record the stack twice under ``rule`` (record_run's mode, layer, layered).

    Both recordings hold every topic of ``topics``, none empty, byte for byte the same; each
    node processed something. Return the first recording and what each node processed.
    """
    (first, seen), (second, _) = [
        record_run(start_server, client, domain_id, tmp_path, path, run, *rule) for run in (1, 2)]
    assert set(first) == set(topics), first.keys()
    for topic in topics:
        assert first[topic], topic
        assert first[topic] == second[topic], f'{topic} differs between two runs'
    for role, messages in seen.items():
        assert messages, role
    return first, seen


def test_a_stack_of_participants_records_the_same_bag_twice_and_stays_causal(
        start_server, client, domain_id, tmp_path, bag):
    """Chain, fan-in, an event-driven node and a cycle: identical recordings, no inversion."""
    path, chatter = bag
    first, seen = recorded_twice(start_server, client, domain_id, tmp_path, path, TOPICS)
    for role, messages in seen.items():
        for topic, clock, sent, data in messages:
            stamp = chatter[data] - START_NS if topic == '/chatter' else sent
            assert clock >= stamp, f'{role} took {topic} {data!r} at {clock} ns, before {stamp}'
    # The chain within one frame: what perception published at t, planning answered at t.
    stage2 = [(clock, sent) for topic, clock, sent, _ in seen['planning'] if topic == '/stage1']
    assert stage2 and all(clock == sent for clock, sent in stage2)
    # The C relay: /stage2's messages again on /relay, the same bytes at the same stamps (the
    # same frame: two rounds later), each taken in the frame it was published in.
    assert first['/relay'] == first['/stage2']
    assert [data for _, _, _, data in seen['relay']] == [
        data for topic, _, _, data in seen['control'] if topic == '/stage2']
    assert all(clock == sent for _, clock, sent, _ in seen['relay'])


def test_a_stack_taking_messages_at_the_next_frame_records_the_same_bag_twice(
        start_server, client, domain_id, tmp_path, bag):
    """The same stack, next_frame participants: identical recordings, each hop a frame later."""
    path, chatter = bag
    _, seen = recorded_twice(start_server, client, domain_id, tmp_path, path, TOPICS[:-1],
                             'next_frame')
    for role, messages in seen.items():
        for topic, clock, sent, data in messages:
            if topic == '/chatter':  # the bag's data: at the frame of its stamp
                assert clock >= chatter[data] - START_NS, (role, topic, data, clock)
            else:  # what a participant published: exactly one frame later
                assert clock == sent + 10 * MS, (role, topic, data, clock, sent)
    # planning answers /stage1 a frame after perception published it; control takes the
    # answer a frame after that.
    stage2 = [data for topic, _, _, data in seen['control'] if topic == '/stage2']
    assert stage2 and all(data.startswith('planning@') for data in stage2)


@pytest.mark.parametrize('rule,layered,in_c', [
    ('rounds', None, ()), ('next_frame', None, ()), ('rounds', ('planning',), ()),
    ('rounds', None, ('perception', 'planning', 'control')),
    ('next_frame', ('perception', 'planning'), ('perception',))],
    ids=['rounds', 'next_frame', 'rounds_mixed', 'rounds_c_nodes', 'next_frame_c_mixed'])
def test_a_stack_of_unchanged_nodes_under_the_lockstep_layer_records_the_same_bag_twice(
        start_server, client, domain_id, tmp_path, bag, rule, layered, in_c):
    """
    The stack's nodes on rclpy.spin, each under the lockstep layer: as with participant.spin.

    Identical recordings and no inversion; in rounds the chain within one frame, at the next
    frame each hop exactly a frame later. Mixed: planning under the layer, perception and
    control on the participant helper, in rounds together. C nodes: the same roles in plain C
    on rcl (one wait a turn, no executor) under the layer, all of them in rounds; perception
    in C and planning in Python under the layer beside control on the participant helper at
    the next frame.
    """
    path, chatter = bag
    mode = 'next_frame' if rule == 'next_frame' else 'deterministic'
    _, seen = recorded_twice(start_server, client, domain_id, tmp_path, path, TOPICS[:-1], mode,
                             rule, layered, in_c)
    for role, messages in seen.items():
        for topic, clock, sent, data in messages:
            if topic == '/chatter':  # the bag's data: at the frame of its stamp
                assert clock >= chatter[data] - START_NS, (role, topic, data, clock)
            elif rule == 'rounds':  # within the frame it was published in
                assert clock == sent, (role, topic, data, clock, sent)
            else:  # exactly one frame later
                assert clock == sent + 10 * MS, (role, topic, data, clock, sent)


def test_a_cycle_that_never_goes_quiet_stops_the_step_and_names_it(
        start_server, client, domain_id, tmp_path):
    """Two participants that answer each other at once: the step stops, naming them."""
    start_server({'sync': True, 'time_step': 0.01})
    client.status_when_ready()
    nodes = start_stack(domain_id, tmp_path, ('loop_a', 'loop_b'))
    try:
        # Each one's writer and reader in the graph before a round sends on them: a message
        # sent before its reader matched is lost, and its reader would wait for it.
        client.spin_until(lambda: all(
            client.node.count_publishers(topic) and client.node.count_subscribers(topic)
            for topic in ('/loop_a', '/loop_b')), 'the cycle matched')
        response = client.call(Step, 'step', Step.Request(steps=5), timeout=60.0)
        assert not response.success
        assert 'rounds' in response.message and 'loop_a, loop_b' in response.message
        assert '/loop_a, /loop_b' in response.message
        assert sorted(response.late) == ['loop_a', 'loop_b']
        # The clock goes on: the next step starts a new frame.
        assert client.call(Step, 'step', Step.Request(steps=1), timeout=60.0).frame >= 1
    finally:
        for node in nodes.values():
            node.stop()


def test_next_frame_readers_stay_one_frame_behind_their_writers_across_a_reset(
        start_server, client, domain_id, tmp_path):
    """
    A reset after a frame in which a next_frame participant published delivers that message.

    perception publishes /stage1 every 20 ms; planning takes each 10 ms (one frame) after. The
    message of the last frame before a reset was sent: planning takes it at the reset's time,
    and each later one a frame after it went out, as before the reset.
    """
    start_server({'sync': True, 'time_step': 0.01})
    client.status_when_ready()
    nodes = start_stack(domain_id, tmp_path, ('perception', 'planning'), 'next_frame',
                        {'/stage1': 1})
    for node in nodes.values():
        node.expect('matched')
    try:
        for frames in (20, 6):
            response = client.call(Step, 'step', Step.Request(steps=frames), timeout=60.0)
            assert response.success, response.message
            if frames == 20:
                assert client.trigger('reset').success
    finally:
        for node in nodes.values():
            node.stop()
    taken = [(clock, sent) for topic, clock, sent, _ in processed(nodes['planning'])
             if topic == '/stage1']
    before = [(sent + 10 * MS, sent) for sent in range(20 * MS, 200 * MS, 20 * MS)]
    after = [(30 * MS, 20 * MS), (50 * MS, 40 * MS)]
    assert taken == before + [(0, 200 * MS)] + after
