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
A stack as one launch file starts it: every process at once, stepped as soon as the server answers.

The bag player names the stack's nodes and the recorder in ``expected_participants``; the
three nodes of ``examples/stack_node.py`` and the recorder start at the same moment, and the
test steps as soon as ``~/get_status`` answers, waiting for no join and no match itself (as a
launch file and a script beside it do). Every run, under each rule, gives the same bag file,
byte for byte, with the first frame's messages in it and no message processed before it was
published.
"""

import hashlib
import os

from ament_index_python.packages import get_package_prefix
from bags import START_NS
from bags import write_test_bag
from harness import ChildProcess
from harness import executable
from harness import NS
from harness import ProgramProcess
from harness import soak
import pytest
from sim_clock.client.bag_diff import compare
from sim_clock.wire.names import RECORDER_NODE_NAME
from test_stack import FRAMES
from test_stack import MS
from test_stack import NODE
from test_stack import processed
from test_stack import step_until_recorded
from test_stack import STEPS

pytestmark = pytest.mark.process

#: Runs under each rule: 20 in a soak (the figure README.md quotes).
RUNS = soak(2, 20)
ROLES = ('perception', 'planning', 'control')
TOPICS = ('/stage1', '/stage2', '/ping', '/pong', '/result')
EXPECTED = [f'/{role}' for role in ROLES] + [f'/{RECORDER_NODE_NAME}']
#: The lockstep layer's libraries built with AddressSanitizer, where the compiler could.
ASAN = os.path.join(get_package_prefix('sim_clock'), 'lib', 'sim_clock_asan')


def files_digest(path: str) -> str:
    """Return one sha256 over every file of a bag directory, names and bytes."""
    digest = hashlib.sha256()
    for name in sorted(os.listdir(path)):
        digest.update(name.encode() + b'\0')
        with open(os.path.join(path, name), 'rb') as part:
            digest.update(part.read())
    return digest.hexdigest()


def layer_environment(rule: str, asan: bool) -> dict:
    """
    Return what a node under the lockstep layer with ``rule`` adds to its environment.

    ``asan``: the layer built with AddressSanitizer (``ASAN``), preloaded after the
    sanitizer's runtime and libstdc++ (named in its ``preload``), leaks not checked (LeakSanitizer
    ends with an error of its own at the exit of a Python process). Else the ``lockstep``
    launcher preloads the layer.
    """
    env = {'SIM_CLOCK_LOCKSTEP_RULE': rule}
    if asan:
        with open(os.path.join(ASAN, 'preload')) as preload:
            first = preload.read().split()
        env['LD_PRELOAD'] = ':'.join([*first, os.path.join(ASAN, 'libsim_clock_lockstep.so')])
        env['ASAN_OPTIONS'] = 'verify_asan_link_order=0:detect_leaks=0'
    return env


def launched_run(start_server, client, domain_id, tmp_path, bag: str, mode: str, run: int,
                 storage: str, layer: str = '', asan: bool = False, hold: bool = False,
                 in_c: bool = False):
    """
    Start everything at once, step at once; return (digest, path, processed, its log).

    ``layer``: each node unchanged, on ``rclpy.spin`` (``--mode plain``), under the lockstep
    layer with that rule (doc/lockstep-layer.md), not on the participant helper in ``mode``;
    ``asan``: the layer built with AddressSanitizer (:func:`layer_environment`); ``hold``: the
    recorder with ``--hold-frames``, a participant that each frame waits for once it joined;
    ``in_c``: each node the same role in plain C on rcl (``stack_node_c``) under the layer.
    """
    output = str(tmp_path / f'{layer or mode}{"-asan" * asan}{"-c" * in_c}-{run}')
    player = start_server({'sync': True, 'time_step': 0.01,
                           'expected_participants': EXPECTED},
                          argv=[bag, '--start-at-zero'], executable=executable('bag_player'))

    def start(role: str) -> ChildProcess:
        if in_c:
            return ProgramProcess(domain_id, str(tmp_path), [
                executable('lockstep'), executable('stack_node_c'), role],
                layer_environment(layer, asan))
        return ChildProcess(domain_id, NODE, str(tmp_path),
                            args=(role, '--mode', 'plain' if layer else mode),
                            env=layer_environment(layer, asan) if layer else None,
                            prefix=(executable('lockstep'),) if layer and not asan else ())
    nodes = {role: start(role) for role in ROLES}
    recorder = start_server(executable=executable('recorder'), argv=[
        output, '--until', str(STEPS * FRAMES * 10 * MS / NS), '-s', storage,
        *(['--hold-frames'] if hold else []),
        '-t', *(f'{topic}:std_msgs/msg/String' for topic in TOPICS)])
    client.status_when_ready()  # a child left running by a failure here is killed at the end
    step_until_recorded(client, recorder, nodes, player)
    for role, node in nodes.items():
        assert '[ERROR]' not in node.output() and '[WARN]' not in node.output(), node.output()
        # Under the layer: only its notice of the steady timer with which a node waits for
        # its readers (test_stack.py says why).
        said = [line for line in node.output().splitlines() if 'sim_clock lockstep' in line]
        assert all('steady clock fires on wall time' in line for line in said), node.output()
        assert 'AddressSanitizer' not in node.output(), node.output()
    return (files_digest(output), output,
            {role: processed(node) for role, node in nodes.items()}, recorder.log())


@pytest.fixture
def bag(tmp_path):
    """Write a one-second test bag; return its path and its /chatter stamps by text."""
    path = str(tmp_path / 'bag')
    records = write_test_bag(path, 'sqlite3')
    return path, {r.key: r.time_ns for r in records if r.topic == '/chatter'}


@pytest.mark.soak
@pytest.mark.parametrize('mode, storage, layer, asan, hold, in_c', [
    ('deterministic', 'sqlite3', '', False, False, False),
    ('next_frame', 'mcap', '', False, False, False),
    ('deterministic', 'sqlite3', 'rounds', False, False, False),
    ('next_frame', 'mcap', 'next_frame', False, False, False),
    ('deterministic', 'sqlite3', 'rounds', False, True, False),
    ('deterministic', 'sqlite3', 'rounds', False, False, True),
    pytest.param('deterministic', 'sqlite3', 'rounds', True, False, False,
                 marks=pytest.mark.skipif(
                     not os.path.isdir(ASAN),
                     reason='the compiler could not build the layer with AddressSanitizer'))],
    ids=['deterministic', 'next_frame', 'layer_rounds', 'layer_next_frame',
         'layer_rounds_hold_frames', 'layer_rounds_c_nodes', 'layer_rounds_asan'])
def test_a_stack_started_at_once_records_the_same_file_every_run(
        start_server, client, domain_id, tmp_path, bag, mode, storage, layer, asan, hold,
        in_c):
    """
    RUNS runs started as launch starts them: one bag file, the first frame in it, causal.

    ``layer``: the same stack, each node unchanged under the lockstep layer, in rounds or at
    the next frame: named in ``expected_participants`` as the helper's are; ``asan``: with the
    layer built with AddressSanitizer, which reports any bad access of the layer in these
    processes; ``hold``: the recorder with ``--hold-frames``, joining while the stack runs;
    ``in_c``: the stack's nodes in plain C on rcl, unchanged under the layer.
    """
    path, chatter = bag
    digests, first, first_log = set(), None, None
    for run in range(RUNS):
        digest, output, seen, log = launched_run(
            start_server, client, domain_id, tmp_path, path, mode, run, storage, layer, asan,
            hold, in_c)
        digests.add(digest)
        first, first_log = first or output, first_log or log
        assert not hold or 'joined /sim_clock as participant' in log, log
        assert len(digests) == 1, '\n'.join((
            f'run {run} recorded another file than run 0:', *compare(first, output).lines(),
            'the recorder of run 0 said:', first_log, f'the recorder of run {run} said:', log))
        for role, messages in seen.items():
            assert messages, role
            for topic, clock, sent, data in messages:
                stamp = chatter[data] - START_NS if topic == '/chatter' else sent
                assert clock >= stamp, f'{role} took {topic} {data!r} at {clock} ns, before'
        # The first frame: perception took the bag's first message at its stamp's frame.
        topic, _, _, data = seen['perception'][0]
        assert topic == '/chatter' and data == min(chatter, key=chatter.get)
