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
Byte-identical runs: a bag replayed in sync mode, a node under test, the recorder; run again.

Run after scripts/setup.sh, from the repository, with AMENT_PREFIX_PATH=.venv and
ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST:

    .venv/bin/python benchmarks/determinism.py --runs 20            # the node as participant
    .venv/bin/python benchmarks/determinism.py --runs 20 --without  # the same, without

Each run starts, in processes of their own, a ``bag_player`` in sync mode on a bag of two
topics (``/a`` every 10 ms, ``/b`` every 33 ms), ``examples/fusion_node.py`` (fuses them on a
50 ms simulated-time timer into ``/fused``) and a ``recorder`` of ``/fused``; then steps the
same steps (20 calls of 10 frames of 10 ms, and one frame more, which ends the recording) and
reads the recorded bag. The runs are compared with the first: every message's topic, bytes
and timestamp, in order.
"""

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from typing import List
from typing import Tuple

from ament_index_python.packages import get_package_prefix
import rclpy
from rosbags.rosbag2 import Reader
from rosbags.rosbag2 import StoragePlugin
from rosbags.rosbag2 import Writer
from rosbags.typesys import get_typestore
from rosbags.typesys import Stores
from sim_clock.client import SimClockClient
from sim_clock.client.domains import DomainIds
from sim_clock.srv import GetStatus

HERE = os.path.dirname(os.path.abspath(__file__))
FUSION_NODE = os.path.join(os.path.dirname(HERE), 'examples', 'fusion_node.py')
MS = 1_000_000
#: The steps of every run: CALLS steps of FRAMES frames of 10 ms (2 s), then one frame.
CALLS, FRAMES, STEP_MS = 20, 10, 10
END_NS = CALLS * FRAMES * STEP_MS * MS
#: Results in a complete run: one per 50 ms.
RESULTS = END_NS // (50 * MS)
TIMEOUT = 30.0

Message = Tuple[str, int, bytes]


def write_inputs(path: str) -> None:
    """Write the input bag: /a every 10 ms (from 3 ms), /b every 33 ms (from 7 ms), 2.5 s."""
    typestore = get_typestore(Stores.ROS2_JAZZY)
    float64 = typestore.types['std_msgs/msg/Float64']
    with Writer(path, version=8, storage_plugin=StoragePlugin.MCAP) as writer:
        topics = {name: writer.add_connection(name, 'std_msgs/msg/Float64', typestore=typestore)
                  for name in ('/a', '/b')}
        messages = [(3 * MS + 10 * MS * i, '/a', 0.5 * i) for i in range(250)]
        messages += [(7 * MS + 33 * MS * i, '/b', 1.0 / (i + 1)) for i in range(76)]
        for stamp, topic, value in sorted(messages):
            writer.write(topics[topic], stamp,
                         typestore.serialize_cdr(float64(data=value), 'std_msgs/msg/Float64'))


def executable(name: str) -> str:
    """Return the path of one of the package's executables."""
    return os.path.join(get_package_prefix('sim_clock'), 'lib', 'sim_clock', name)


def read_bag(path: str) -> List[Message]:
    """Return every message of a bag: topic, timestamp, bytes, in the bag's order."""
    with Reader(path) as reader:
        return [(connection.topic, stamp, bytes(data))
                for connection, stamp, data in reader.messages()]


def stop_process(process: subprocess.Popen) -> None:
    """End ``process`` as Ctrl-C does; SIGKILL it if it has not ended 10 s later."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run_once(workdir: str, domain: int, participant: bool) -> List[Message]:
    """Play, step and record once in ``workdir``; return the recorded messages."""
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
    inputs, output = os.path.join(workdir, 'inputs'), os.path.join(workdir, 'fused')
    if not os.path.exists(inputs):
        write_inputs(inputs)
    logs = open(os.path.join(workdir, 'log.txt'), 'a')
    processes = [subprocess.Popen(
        [executable('bag_player'), inputs, '--start-at-zero', '--ros-args',
         '-p', 'sync:=true', '-p', f'time_step:={STEP_MS / 1000}'],
        env=env, stdout=logs, stderr=subprocess.STDOUT)]
    processes.append(subprocess.Popen(
        [sys.executable, FUSION_NODE, *(['--participant'] if participant else [])],
        env=env, stdout=logs, stderr=subprocess.STDOUT))
    recorder = subprocess.Popen(
        [executable('recorder'), output, '-t', '/fused',
         '--until', str((END_NS + STEP_MS * MS) / 1e9)],
        env=env, stdout=logs, stderr=subprocess.STDOUT)
    processes.append(recorder)
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain)
    node = rclpy.create_node('determinism_probe', context=context)
    client = SimClockClient(node, timeout_sec=TIMEOUT)
    try:
        _ready(client, node, participant, os.path.join(workdir, 'log.txt'))
        for _ in range(CALLS):
            client.step(FRAMES)
        client.step(1)
        recorder.wait(TIMEOUT)
        return read_bag(output)
    finally:
        client.close()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        # The node first: a participant leaves through the player, which must still answer.
        for process in reversed(processes):
            stop_process(process)
        logs.close()


def _ready(client: SimClockClient, node, participant: bool, log_path: str) -> None:
    """Wait until the node under test has joined (or exists) and the recorder stamps."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        status = client._call(GetStatus, 'get_status', GetStatus.Request())
        joined = 'fusion' in ' '.join(status.participants)
        with open(log_path) as log:
            stamping = 'first /clock received' in log.read()
        if ((joined or not participant) and node.count_publishers('/fused')
                and node.count_subscribers('/fused') and stamping):
            return
        time.sleep(0.05)
    raise TimeoutError('the node under test or the recorder did not come up')


def compare(runs: int, participant: bool, workdir: str, domains: DomainIds) -> dict:
    """Run ``runs`` times; return how many recordings match the first, and their sizes."""
    first, matched, sizes = None, 0, []
    for index in range(runs):
        run_dir = os.path.join(workdir, f'run{index}')
        os.makedirs(run_dir)
        messages = run_once(run_dir, domains.take(), participant)
        sizes.append(len(messages))
        if first is None:
            first = messages
        matched += messages == first
    return {'runs': runs, 'identical_to_first': matched, 'messages': sizes,
            'complete': sum(size == RESULTS for size in sizes)}


def main() -> int:
    """Run and print how many recordings are byte-identical to the first."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    parser.add_argument('--runs', type=int, default=20)
    parser.add_argument('--without', action='store_true',
                        help='the node under test is not a participant')
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        result = compare(options.runs, not options.without, workdir, DomainIds())
    who = 'without the participant' if options.without else 'with the participant'
    print(f'{who}: {result["identical_to_first"]} of {result["runs"]} recordings identical to '
          f'the first; {result["complete"]} of {result["runs"]} hold all {RESULTS} results; '
          f'messages per run: {result["messages"]}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
