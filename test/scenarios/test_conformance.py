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
The wire protocol as an outsider implements it (doc/frames.md), against the participant helper.

``test/conformance_participant.py`` is a participant written from doc/frames.md, msg/ and srv/
alone, in plain rclpy. The stack of ``test_stack.py`` (perception, planning, control, fed by a
bag, recorded) runs once with every node on the helper, then once with each role in turn played
by the conformance participant, under each rule; the server waits for the three by
``expected_participants``, so each must say it is ready on ``~/ready``. Every run must record
the same messages, stamps and order on every topic as the helper's, every node must process the
same messages at the same clock, and the conformance participant must leave when stopped.
"""

import ast
import os

from bags import RELIABLE_QOS
from bags import START_NS
from harness import ChildProcess
from harness import executable
from harness import NS
from harness import TEST_DIR
import pytest
from rosbags.rosbag2 import Writer
from rosbags.typesys import get_typestore
from rosbags.typesys import Stores
from sim_clock.process.fastdds_profiles import fast_dds_major
from sim_clock.process.fastdds_profiles import PROFILE_FILES
from sim_clock.process.fastdds_profiles import PROFILES_VARIABLES
from sim_clock.wire.names import RECORDER_NODE_NAME
from test_stack import FRAMES
from test_stack import MS
from test_stack import NODE
from test_stack import processed
from test_stack import read_recording
from test_stack import READERS as STACK_READERS
from test_stack import step_until_recorded
from test_stack import STEPS

pytestmark = pytest.mark.process

SCRIPT = os.path.join(TEST_DIR, 'conformance_participant.py')
CONFORMANCE = open(SCRIPT).read()
ROLES = ('perception', 'planning', 'control')
#: The nodes the server waits for before the first frame, the recorder among them: a writer
#: that has matched the recorder's reader does not mean that reader has matched the writer
#: (each side discovers the other apart; a recorder that has not yet found a node's
#: participant drops what that node sends, until Fast DDS's next announcement, up to 3 s),
#: and only the recorder's own report on ~/ready says its side (doc/frames.md).
EXPECTED = [f'/{role}' for role in ROLES] + [f'/{RECORDER_NODE_NAME}']
#: The stack's topics (without test_stack.py's C relay), and their readers with the recorder.
TOPICS = ('/stage1', '/stage2', '/ping', '/pong', '/result')
READERS = {topic: count - (topic == '/stage2') for topic, count in STACK_READERS.items()
           if topic in TOPICS}
#: The test bag: a burst of three /chatter every 50 ms, for a second; a burst's texts in the
#: order they are sent, and in the order of their serialized bytes.
BURSTS, BURST_PERIOD_NS = 20, 50 * MS
BURST, BURST_BY_BYTES = ('aa', 'b', 'a'), ('a', 'b', 'aa')
#: What the conformance participant may import of sim_clock: the generated interfaces.
INTERFACES = ('sim_clock.msg', 'sim_clock.srv')


def profile_environment() -> dict:
    """Return the variable that loads sim_clock's Fast DDS profile here, as frames.md says."""
    major = fast_dds_major()
    return {PROFILES_VARIABLES[major]: PROFILE_FILES[major]}


def record_run(start_server, client, domain_id, tmp_path, bag, run: int, mode: str,
               conformance: tuple = ()):
    """
    Replay the bag in lockstep with the stack; return (recording, what each node processed).

    ``conformance``: the roles played by the conformance participant, the others by
    examples/stack_node.py on the helper. The server expects the three roles and the recorder.
    """
    output = output_path(tmp_path, run)
    player = start_server({'sync': True, 'time_step': 0.01,
                           'expected_participants': ','.join(EXPECTED)},
                          argv=[bag, '--start-at-zero'], executable=executable('bag_player'))
    client.status_when_ready()
    matched = ('--readers', *(f'{topic}={count}' for topic, count in READERS.items()))
    nodes = {}
    for role in ROLES:
        outsider = role in conformance
        nodes[role] = ChildProcess(domain_id, CONFORMANCE if outsider else NODE, str(tmp_path),
                                   args=(role, '--mode', mode, *matched),
                                   env=profile_environment() if outsider else None)
    for node in nodes.values():
        node.expect('joined')
    recorder = start_server(executable=executable('recorder'), argv=[
        output, '--until', str(STEPS * FRAMES * 10 * MS / NS), '-t', *TOPICS])
    client.spin_until(lambda: all(f'recording {topic}' in recorder.log() for topic in TOPICS)
                      and 'first /clock received' in recorder.log(), 'the recorder')
    for node in nodes.values():
        node.expect('matched')
    step_until_recorded(client, recorder, nodes, player)
    log = player.log()
    assert 'every expected participant is ready: ' + ', '.join(EXPECTED) in log, log
    # A reader taken as stalled is skipped from then on: its data may come after its /clock.
    assert 'not acknowledged by every reliable reader' not in log, log
    assert 'without waiting for stalled reliable readers' not in log, log
    for role, node in nodes.items():
        printed = node.output()
        assert '[ERROR]' not in printed and '[WARN]' not in printed, printed
        assert 'Traceback' not in printed, printed
        if role in conformance:  # stopped by SIGINT: it left the clock and ended cleanly
            assert node.process.returncode == 0, printed
            assert f"participant '{role}' left" in log, log
    return read_recording(output), {
        role: processed(node) for role, node in nodes.items()}


def output_path(tmp_path, run: int) -> str:
    """Return where run ``run`` records."""
    return str(tmp_path / f'recording{run}')


@pytest.fixture
def bag(tmp_path) -> str:
    """
    Write a bag of /chatter in bursts of three, each burst within one frame; return its path.

    A burst's three messages reach perception at round 0 of one frame: taken whole before it
    delivers (the frame's /clock or Round may be taken first), and delivered in the order of
    their bytes, which is neither the order they were sent in nor that of their text: CDR puts
    a string's length first ('a', 'b', 'aa').
    """
    path = str(tmp_path / 'bag')
    store = get_typestore(Stores.ROS2_JAZZY)
    string_type = store.types['std_msgs/msg/String']
    with Writer(path, version=9) as writer:
        chatter = writer.add_connection('/chatter', 'std_msgs/msg/String', typestore=store,
                                        offered_qos_profiles=[RELIABLE_QOS])

        def write(time_ns: int, text: str) -> None:
            data = store.serialize_cdr(string_type(data=text), 'std_msgs/msg/String')
            writer.write(chatter, time_ns, data)
        # Where the bag starts (time 0 with --start-at-zero): each burst is 1 to 3 ms after
        # a multiple of 10 ms from there, so within one frame.
        write(START_NS, 'chatter start')
        for burst in range(BURSTS):
            for offset, suffix in enumerate(BURST, start=1):
                time_ns = START_NS + burst * BURST_PERIOD_NS + offset * MS
                write(time_ns, f'chatter {burst} {suffix}')
    return path


def test_the_conformance_participant_imports_only_the_interfaces_of_sim_clock():
    """Written against the protocol alone: no import of the helper, the node or the bags."""
    with open(SCRIPT) as source:
        tree = ast.parse(source.read())
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            modules.add(node.module)
            modules.update(f'{node.module}.{alias.name}' for alias in node.names)
    ours = {name for name in modules if name == 'sim_clock' or name.startswith('sim_clock.')}
    assert ours and all(any(name == interfaces or name.startswith(interfaces + '.')
                            for interfaces in INTERFACES) for name in ours), sorted(ours)


@pytest.mark.parametrize('mode', ['deterministic', 'next_frame'])
def test_a_participant_written_from_the_protocol_runs_as_the_helper_does(
        start_server, client, domain_id, tmp_path, bag, mode):
    """Each role played from the protocol alone: the helper's recording, the same processing."""
    reference, seen = record_run(start_server, client, domain_id, tmp_path, bag, 0, mode)
    assert set(reference) == set(TOPICS), reference.keys()
    assert all(reference[topic] for topic in TOPICS), reference
    assert all(seen[role] for role in ROLES), seen
    # The helper delivers each burst whole, in the order of the bytes.
    bursts = {}
    for topic, clock, _, data in seen['perception']:
        if topic == '/chatter' and data != 'chatter start':
            bursts.setdefault(data.split()[1], []).append((clock, data.split()[2]))
    assert len(bursts) == BURSTS, bursts
    for burst, taken in bursts.items():
        assert len({clock for clock, _ in taken}) == 1, (burst, taken)
        assert tuple(suffix for _, suffix in taken) == BURST_BY_BYTES, (burst, taken)
    for run, role in enumerate(ROLES, start=1):
        recording, processed_by = record_run(start_server, client, domain_id, tmp_path, bag, run,
                                             mode, conformance=(role,))
        for topic in TOPICS:
            assert recording.get(topic) == reference[topic], (
                f"{role} played from the protocol: {topic} differs from the helper's recording: "
                + first_difference(recording.get(topic, []), reference[topic]))
        for other in ROLES:
            assert processed_by[other] == seen[other], (
                f'{role} played from the protocol: {other} processed other messages, or at '
                'another clock, than with the helper: '
                + first_difference(processed_by[other], seen[other]))


def first_difference(items: list, expected: list) -> str:
    """Say where ``items`` first differs from ``expected``: the index and both items."""
    for index, (item, wanted) in enumerate(zip(items, expected)):
        if item != wanted:
            return f'at {index} of {len(expected)}: {item!r}, where the helper gave {wanted!r}'
    return f'{len(items)} items, where the helper gave {len(expected)}'
