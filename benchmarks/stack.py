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
A stack of three nodes in lockstep, run again and again: identical runs, causality, frames/s.

Run after scripts/setup.sh, from the repository, with AMENT_PREFIX_PATH=.venv and
ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST:

    .venv/bin/python benchmarks/stack.py --runs 20                       # deterministic
    .venv/bin/python benchmarks/stack.py --runs 20 --mode next_frame     # at the next frame
    .venv/bin/python benchmarks/stack.py --runs 5 --no-record            # frames/s alone
    .venv/bin/python benchmarks/stack.py --runs 20 --mode participant    # the helper of old
    .venv/bin/python benchmarks/stack.py --runs 20 --mode plain          # rclpy.spin
    .venv/bin/python benchmarks/stack.py --bare                          # the bare barrier
    .venv/bin/python benchmarks/stack.py --runs 20 --layer rounds        # unchanged nodes
    .venv/bin/python benchmarks/stack.py --runs 20 --layer rounds --c-nodes   # ... in C

Each run starts, in processes of their own, a ``bag_player`` in sync mode (frames of 10 ms),
the three nodes of ``examples/stack_node.py`` (perception, planning, control: a chain, a
fan-in, an event-driven node and a cycle) and a ``recorder`` of their five topics; steps
20 calls of 10 frames; reads the recording and what each node printed it processed. Runs are
compared with the first, topic by topic: every message's bytes and stamp, in order. An
inversion is a message processed at a clock earlier than its publication (or its bag stamp).
Frames/s is the 200 frames over the wall time of the 20 step calls. ``--no-record``: without
the recorder (a process that reads the five topics and writes the bag, on the same two cores),
for the stack's frames/s alone; nothing is compared then. ``--bare``: the same
processes' bare rclpy barrier, a loop that publishes a Clock and waits for one answer from
each of three processes that answer every Clock at once, for as many frames. ``--layer RULE``:
the nodes on ``rclpy.spin`` (``--mode plain``), each under the lockstep layer
(``lib/sim_clock/lockstep``, doc/lockstep-layer.md) with ``SIM_CLOCK_LOCKSTEP_RULE=RULE``.
``--c-nodes``: the same three roles in plain C on rcl (``lib/sim_clock/stack_node_c``,
src/stack_node.c: one ``rcl_wait`` a turn, no executor), unchanged; with ``--layer``, under it.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from typing import Dict
from typing import List

from determinism import executable
from determinism import stop_process
import rclpy
from rosbags.rosbag2 import Reader
from rosbags.rosbag2 import StoragePlugin
from rosbags.rosbag2 import Writer
from rosbags.typesys import get_typestore
from rosbags.typesys import Stores
from sim_clock.client import SimClockClient
from sim_clock.client.domains import DomainIds
from sim_clock.srv import GetStatus
from sim_clock.wire.names import RECORDER_NODE_NAME

HERE = os.path.dirname(os.path.abspath(__file__))
STACK_NODE = os.path.join(os.path.dirname(HERE), 'examples', 'stack_node.py')
MS = 1_000_000
CALLS, FRAMES, STEP_MS = 20, 10, 10
ROLES = ('perception', 'planning', 'control')
TOPICS = ('/stage1', '/stage2', '/ping', '/pong', '/result')
#: The readers of each topic once the recorder is there too (the stack's own, and it).
READERS = {'/stage1': 3, '/stage2': 2, '/ping': 2, '/pong': 2, '/result': 1}
TIMEOUT = 60.0

#: The bare barrier's answering process: each /clock is answered at once on /bare_done.
BARE_WORKER = """
import sys
import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from std_msgs.msg import String
rclpy.init()
node = rclpy.create_node(sys.argv[1])
qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
done = node.create_publisher(String, '/bare_done', qos)
node.create_subscription(Clock, '/bare_clock', lambda msg: done.publish(String(data=sys.argv[1])),
                         qos)
print('ready', flush=True)
try:
    rclpy.spin(node)
except (KeyboardInterrupt, ExternalShutdownException):
    pass
except RuntimeError:  # Ctrl-C shut the context down while the executor made its wait set
    if rclpy.ok():
        raise
"""


def write_inputs(path: str) -> Dict[str, int]:
    """Write the input bag (/chatter every 100 ms for 1 s); return each message's stamp."""
    typestore = get_typestore(Stores.ROS2_JAZZY)
    string = typestore.types['std_msgs/msg/String']
    stamps = {}
    with Writer(path, version=8, storage_plugin=StoragePlugin.MCAP) as writer:
        chatter = writer.add_connection('/chatter', 'std_msgs/msg/String', typestore=typestore)
        for k in range(11):
            key = f'chatter {k}'
            stamps[key] = 100 * MS * k
            writer.write(chatter, stamps[key],
                         typestore.serialize_cdr(string(data=key), 'std_msgs/msg/String'))
    return stamps


def run_once(workdir: str, domain: int, mode: str, record: bool = True,
             layer: str = '', c_nodes: bool = False) -> dict:
    """Play, step and record once; return the recording, the inversions and the frames/s."""
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
    node_env = dict(env, SIM_CLOCK_LOCKSTEP_RULE=layer) if layer else env
    prefix = [executable('lockstep')] if layer else []
    inputs, output = os.path.join(workdir, 'inputs'), os.path.join(workdir, 'recorded')
    stamps = write_inputs(inputs)
    log_path = os.path.join(workdir, 'log.txt')
    logs = open(log_path, 'a')
    # The player holds the first frame until each node (and the recorder) says its writers and
    # readers matched, the player's among them: a bag message sent before its reader matched
    # would be lost (doc/frames.md, "Joining and leaving"). Nodes on rclpy.spin say nothing.
    expected = [] if mode == 'plain' and not layer else [
        *(f'/{role}' for role in ROLES), *([f'/{RECORDER_NODE_NAME}'] if record else [])]
    processes = [subprocess.Popen(
        [executable('bag_player'), inputs, '--start-at-zero', '--no-progress', '--ros-args',
         '-p', 'sync:=true', '-p', f'time_step:={STEP_MS / 1000}',
         *(['-p', f'expected_participants:=[{",".join(expected)}]'] if expected else [])],
        env=env, stdout=logs, stderr=subprocess.STDOUT)]
    outputs = {role: os.path.join(workdir, f'{role}.txt') for role in ROLES}
    for role in ROLES:
        command = [executable('stack_node_c'), role] if c_nodes else [
            sys.executable, STACK_NODE, role, '--mode', mode]
        processes.append(subprocess.Popen(
            [*prefix, *command, '--readers',
             *(f'{topic}={count - (not record)}' for topic, count in READERS.items())],
            env=node_env,
            stdout=open(outputs[role], 'w'), stderr=subprocess.STDOUT))
    recorder = None
    if record:
        recorder = subprocess.Popen(
            [executable('recorder'), output, '-t', *TOPICS,
             '--until', str(CALLS * FRAMES * STEP_MS * MS / 1e9)],
            env=env, stdout=logs, stderr=subprocess.STDOUT)
        processes.append(recorder)
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain)
    node = rclpy.create_node('stack_probe', context=context)
    client = SimClockClient(node, timeout_sec=TIMEOUT)
    try:
        _ready(client, node, mode if not layer else 'layer', log_path, outputs, record)
        start = time.perf_counter()
        for _ in range(CALLS):
            client.step(FRAMES)
        elapsed = time.perf_counter() - start
        if recorder is not None:
            recorder.wait(TIMEOUT)
    finally:
        client.close()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        # The nodes first: a participant leaves through the player, which must still answer.
        for process in reversed(processes):
            stop_process(process)
        logs.close()
    return {'recording': _read(output) if record else None,
            'inversions': _inversions(outputs, stamps),
            'fps': CALLS * FRAMES / elapsed}


def _ready(client, node, mode: str, log_path: str, outputs: dict, record: bool) -> None:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        status = client._call(GetStatus, 'get_status', GetStatus.Request())
        joined = mode == 'plain' or len(status.participants) == len(ROLES)
        # Joined, and every writer matched its readers: a message sent before is lost.
        started = all('matched' in open(path).read() for path in outputs.values())
        with open(log_path) as log:
            text = log.read()
        recording = not record or 'first /clock received' in text and all(
            f'recording {topic}' in text for topic in TOPICS)
        if joined and started and recording and all(
                node.count_subscribers(topic) >= count - (not record)
                for topic, count in READERS.items()):
            return
        time.sleep(0.05)
    raise TimeoutError('the stack or the recorder did not come up')


def _read(path: str) -> Dict[str, List[tuple]]:
    topics = {}
    with Reader(path) as reader:
        for connection, stamp, data in reader.messages():
            topics.setdefault(connection.topic, []).append((stamp, bytes(data)))
    return topics


def _differences(first: Dict[str, List[tuple]], other: Dict[str, List[tuple]]) -> str:
    """Say, topic by topic, where ``other`` first departs from ``first`` (stamp, bytes)."""
    said = []
    for topic in sorted(set(first) | set(other)):
        ours, theirs = first.get(topic, []), other.get(topic, [])
        if ours == theirs:
            continue
        at = next((k for k, (a, b) in enumerate(zip(ours, theirs)) if a != b),
                  min(len(ours), len(theirs)))
        said.append(f'{topic}: {len(ours)} and {len(theirs)} messages, first apart at #{at} '
                    f'({ours[at] if at < len(ours) else None} / '
                    f'{theirs[at] if at < len(theirs) else None})')
    return '; '.join(said)


def _inversions(outputs: dict, stamps: Dict[str, int]) -> int:
    count = 0
    for path in outputs.values():
        for line in open(path):
            if line.startswith('got '):
                _, topic, clock, sent, data = line.split(' ', 4)
                stamp = stamps.get(data.strip(), -1) if topic == '/chatter' else int(sent)
                count += int(clock) < stamp
    return count


def bare(frames: int, domain: int) -> float:
    """Return the frames/s of the bare barrier over ``frames`` frames."""
    from rclpy.qos import QoSProfile
    from rclpy.qos import ReliabilityPolicy
    from rosgraph_msgs.msg import Clock
    from std_msgs.msg import String
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
    workers = [subprocess.Popen([sys.executable, '-c', BARE_WORKER, f'worker{k}'], env=env,
                                stdout=subprocess.PIPE) for k in range(len(ROLES))]
    for worker in workers:
        worker.stdout.readline()
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain)
    node = rclpy.create_node('bare_barrier', context=context)
    qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
    clock = node.create_publisher(Clock, '/bare_clock', qos)
    answers = []
    node.create_subscription(String, '/bare_done', answers.append, qos)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(node)
    try:
        deadline = time.monotonic() + TIMEOUT
        while (clock.get_subscription_count() < len(workers)
               or node.count_publishers('/bare_done') < len(workers)):
            if time.monotonic() > deadline:
                raise TimeoutError('the bare workers did not match')
            executor.spin_once(timeout_sec=0.05)
        start = time.perf_counter()
        msg = Clock()
        for frame in range(1, frames + 1):
            msg.clock.nanosec = frame * STEP_MS * MS % 1_000_000_000
            msg.clock.sec = frame * STEP_MS * MS // 1_000_000_000
            answers.clear()
            clock.publish(msg)
            while len(answers) < len(workers):
                executor.spin_once(timeout_sec=1.0)
        return frames / (time.perf_counter() - start)
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        for worker in workers:
            stop_process(worker)


def main() -> int:
    """Run and print identical runs, inversions and frames/s (or the bare barrier's)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    parser.add_argument('--runs', type=int, default=20)
    parser.add_argument('--mode', choices=('deterministic', 'next_frame', 'participant', 'plain'),
                        default='deterministic')
    parser.add_argument('--no-record', action='store_true',
                        help='without the recorder: frames/s alone, nothing compared')
    parser.add_argument('--bare', action='store_true',
                        help='the bare rclpy barrier of the same processes, for frames/s')
    parser.add_argument('--layer', choices=('participant', 'rounds', 'next_frame'), default='',
                        help='the nodes on rclpy.spin under the lockstep layer, with this rule')
    parser.add_argument('--c-nodes', action='store_true',
                        help='the nodes in plain C on rcl (stack_node_c), unchanged')
    options = parser.parse_args()
    if options.layer or options.c_nodes:
        options.mode = 'plain'
    domains = DomainIds()
    if options.bare:
        rates = [bare(CALLS * FRAMES, domains.take()) for _ in range(options.runs)]
        print(f'bare barrier, {len(ROLES)} processes: frames/s median '
              f'{sorted(rates)[len(rates) // 2]:.0f} (min {min(rates):.0f}, max '
              f'{max(rates):.0f}) over {len(rates)} runs of {CALLS * FRAMES} frames')
        return 0
    first, identical, inversions, rates = None, 0, [], []
    with tempfile.TemporaryDirectory() as workdir:
        for index in range(options.runs):
            run_dir = os.path.join(workdir, f'run{index}')
            os.makedirs(run_dir)
            result = run_once(run_dir, domains.take(), options.mode, not options.no_record,
                              options.layer, options.c_nodes)
            first = first if first is not None else result['recording']
            identical += result['recording'] == first
            if result['recording'] != first:
                differences = _differences(first, result['recording'])
                print(f'run {index} differs from run 0: {differences}')
            inversions.append(result['inversions'])
            rates.append(result['fps'])
    nodes = 'C nodes' if options.c_nodes else 'rclpy nodes'
    name = (f'{nodes}, {options.layer} under the lockstep layer' if options.layer
            else f'{nodes}, {options.mode}')
    if options.no_record:
        print(f'{name}, without the recorder: frames/s median '
              f'{sorted(rates)[len(rates) // 2]:.0f} (min {min(rates):.0f}, max '
              f'{max(rates):.0f}) over {options.runs} runs; runs with an inversion: '
              f'{sum(1 for n in inversions if n)}')
        return 0
    print(f'{name}: {identical} of {options.runs} recordings identical to the first '
          f'(every topic: bytes, stamps, order); runs with an inversion: '
          f'{sum(1 for n in inversions if n)} (inversions per run: {inversions}); frames/s '
          f'median {sorted(rates)[len(rates) // 2]:.0f} (min {min(rates):.0f}, max '
          f'{max(rates):.0f})')
    return 0


if __name__ == '__main__':
    sys.exit(main())
