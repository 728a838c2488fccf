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
Replay throughput against rosbags' raw read rate, and peak memory against bag size.

For a small bag and one ten times larger, in sqlite3 and MCAP, each measured in a fresh
process (so its peak RSS is its own), read and replay in turn, three times by default; the
table gives the median of each figure, the ratio of the median rates with the lowest and
highest ratio of a read and the replay after it, and the last line says whether every ratio of
medians reaches the target, :data:`TARGET_RATIO`:

- ``read``: rosbags iterating every message of the bag (the raw read rate);
- ``replay``: a :class:`sim_clock.bag.player.BagPlayer` in sync mode stepping through the whole
  bag as fast as it can: every message published raw on its topic, and a /clock per 10 ms
  frame (``--time-step-ms``), through the same code a ``~/step`` call runs. The player reads
  the bag ahead in a child process; its peak RSS and CPU time are given apart from the
  player's;
- ``reconciled read``: the player's own read (:class:`sim_clock.bag.reader.Bag`, from the data
  files through rosbags' storage readers) of a copy of the bag whose metadata.yaml disagrees
  with its data (a later starting_time, a duration of 51 years, QoS profiles the data lacks,
  another count), every message streamed as the read-ahead process streams it; its cost is
  the raw read's rate over its own, against :data:`TARGET_COST` (at most 10% more);
- two ceilings, in the player's process after the replay: as many publishes of one of the
  bag's messages with nothing else to do, one at a time through rclpy
  (``Publisher.handle.publish_raw``), and by the player's C loop, a thousand at a time
  (``sim_clock._replay.publish``). The player's peak RSS is taken before them.

Besides the rates (wall clock), the CPU time per message of each process: on a machine shared
with other work the rates vary with the load (printed to stderr before and after the table),
the CPU times much less. Two busy processes need two free cores to overlap: the share of a
CPU that the hypervisor took from this machine during the runs (steal time) is printed too.

The player publishes with DDS discovery off (``ROS_AUTOMATIC_DISCOVERY_RANGE=OFF``): nothing
leaves the process, nobody subscribes, and no DDS domain is shared with anyone. With
``--acknowledged``, the replay of each bag is measured again with a reader: an rclpy process
on loopback (a DDS domain of its own) that subscribes to every topic reliably and keeps all,
so that flow control (``sim_clock.node.flow_control``) holds each writer to what the reader has
acknowledged; the rate is every message published *and* received, against the replay without
a reader. Run with the installed package:
``AMENT_PREFIX_PATH=.venv .venv/bin/python benchmarks/replay.py``.
"""

import argparse
import os
import resource
from statistics import median
import subprocess
import sys
import tempfile
import time

MS = 1_000_000
#: The replay rate asked for, as a fraction of rosbags' raw read rate of the same bag.
TARGET_RATIO = 0.5
#: The cost asked for of reading a bag whose metadata disagrees with its data, against rosbags'
#: raw read of the bag as written (whose metadata agrees): the rate of that over this one.
TARGET_COST = 1.10
START_NS = 1_700_000_000 * 1_000_000_000


def write_bag(path: str, storage: str, messages: int) -> None:
    """Write ``messages`` std_msgs/String of ~100 bytes on two topics, 1 kHz in all."""
    from rosbags.rosbag2 import StoragePlugin
    from rosbags.rosbag2 import Writer
    from rosbags.typesys import get_typestore
    from rosbags.typesys import Stores
    store = get_typestore(Stores.ROS2_JAZZY)
    string = store.types['std_msgs/msg/String']
    plugin = {'sqlite3': StoragePlugin.SQLITE3, 'mcap': StoragePlugin.MCAP}[storage]
    with Writer(path, version=9, storage_plugin=plugin) as writer:
        topics = [writer.add_connection(name, 'std_msgs/msg/String', typestore=store)
                  for name in ('/a', '/b')]
        for k in range(messages):
            data = store.serialize_cdr(string(data=f'{k:08d}' + 'x' * 88), 'std_msgs/msg/String')
            writer.write(topics[k % 2], START_NS + k * MS, data)


def disagreeing_copy(path: str) -> str:
    """
    Return a copy of the bag whose metadata.yaml disagrees with its data, as seen in the field.

    A starting_time half way through (a reindexed bag's: the first stamp of its last file), a
    duration of 51 years, a best-effort QoS profile the data does not record, a count of
    messages one too high.
    """
    import shutil
    import yaml
    copy = path + '_disagreeing'
    shutil.copytree(path, copy)
    metadata = os.path.join(copy, 'metadata.yaml')
    with open(metadata) as stream:
        document = yaml.safe_load(stream)
    info = document['rosbag2_bagfile_information']
    info['starting_time']['nanoseconds_since_epoch'] += info['duration']['nanoseconds'] // 2
    info['duration']['nanoseconds'] = 51 * 365 * 86400 * 1_000_000_000
    info['message_count'] += 1
    profile = {'history': 'keep_last', 'depth': 1, 'reliability': 'best_effort',
               'durability': 'volatile', 'deadline': {'sec': 0, 'nsec': 0},
               'lifespan': {'sec': 0, 'nsec': 0}, 'liveliness': 'automatic',
               'liveliness_lease_duration': {'sec': 0, 'nsec': 0},
               'avoid_ros_namespace_conventions': False}
    for entry in info['topics_with_message_count']:
        entry['topic_metadata']['offered_qos_profiles'] = [profile]
    with open(metadata, 'w') as stream:
        yaml.safe_dump(document, stream, sort_keys=False)
    return copy


def child_reconciled(path: str) -> None:
    """Print the rate of the player's own read of a bag that disagrees with its metadata."""
    from sim_clock.bag.reader import Bag
    bag = Bag(path)
    try:
        assert bag.notes, 'the copy was meant to disagree with its metadata'
        start = time.perf_counter()
        cpu = time.process_time()
        count = 0
        for _ in bag.messages(bag.start_ns):
            count += 1
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu
    finally:
        bag.close()
    print(f'{count} {elapsed} {_peak_rss_mib()} {cpu}')


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _process_cpu_s(pid: int) -> float:
    """Return the CPU time (user + system) that process ``pid`` has used so far, in seconds."""
    with open(f'/proc/{pid}/stat') as stat:
        fields = stat.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def _process_peak_rss_mib(pid: int) -> float:
    with open(f'/proc/{pid}/status') as status:
        for line in status:
            if line.startswith('VmHWM:'):
                return int(line.split()[1]) / 1024
    return 0.0


def child_read(path: str) -> None:
    """Print the raw read rate of rosbags over the bag, its CPU time and the peak RSS."""
    from rosbags.rosbag2 import Reader
    with Reader(path) as reader:
        start = time.perf_counter()
        cpu = time.process_time()
        count = 0
        for _ in reader.messages():
            count += 1
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu
    print(f'{count} {elapsed} {_peak_rss_mib()} {cpu}')


def _step_through(node, bag, step_ms: int) -> None:
    """Step the player's node through the whole bag, as ``~/step`` calls would."""
    from sim_clock.node.engine import StepRequest
    frames = bag.duration_ns // (step_ms * MS) + 1
    while frames > 0:
        steps = min(frames, 100_000)
        outcomes = []
        node.engine.steps.step(StepRequest(user_id='', steps=steps, reply=outcomes.append))
        # Nothing to wait for (no participant, no ack_timeout): answered before it returns.
        [outcome] = outcomes
        assert outcome.success, outcome.message
        frames -= steps


def child_replay(path: str, step_ms: int) -> None:
    """Print the replay rate of the bag player over the bag and this process's peak RSS."""
    import rclpy
    from rclpy.parameter import Parameter
    from sim_clock.bag.player import BagPlayer
    from sim_clock.bag.reader import Bag
    rclpy.init()
    bag = Bag(path)
    player = BagPlayer(bag, parameter_overrides=[
        Parameter('sync', value=True), Parameter('time_step', value=step_ms / 1000)])
    node = player.node
    try:
        count = sum(topic.message_count for topic in bag.topics)
        reader = player.reader.pid
        start = time.perf_counter()
        cpu, reader_cpu = time.process_time(), _process_cpu_s(reader)
        _step_through(node, bag, step_ms)
        elapsed = time.perf_counter() - start
        cpu, reader_cpu = time.process_time() - cpu, _process_cpu_s(reader) - reader_cpu
        reader_rss = _process_peak_rss_mib(reader)
        replay_rss = _peak_rss_mib()  # before the ceilings, which are not the player's
        assert player.frames.cursor.exhausted
        # Two ceilings: as many publishes with nothing else to do, one message at a time
        # through rclpy (publish_raw), and in C by the player's loop in one run.
        from array import array
        from sim_clock import _replay
        from std_msgs.msg import String
        publisher = node.create_publisher(String, '/ceiling', 100)
        publish = publisher.handle.publish_raw
        data = next(iter(bag.messages(bag.start_ns)))[2]
        start = time.perf_counter()
        for _ in range(count):
            publish(data)
        rclpy_s = time.perf_counter() - start
        pointers = array('Q', [publisher.handle.pointer])
        run = 1000  # a batch's worth at a time, as the player publishes
        topics = array('I', bytes(4 * run))
        offsets = array('Q', range(0, (run + 1) * len(data), len(data)))
        blob = data * run
        start = time.perf_counter()
        for first in range(0, count, run):
            _replay.publish(pointers, topics, blob, offsets, 0, min(run, count - first))
        c_s = time.perf_counter() - start
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
        bag.close()
    print(f'{count} {elapsed} {replay_rss} {cpu} {rclpy_s} {c_s} {reader_cpu} {reader_rss}')


#: The reader of ``--acknowledged``: keeps every message of /a and /b, says when it has them.
READER = """
import sys
import rclpy
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String
rclpy.init()
node = rclpy.create_node('keep_all_reader')
keep_all = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
got = [0]
def count(data):
    got[0] += 1
subscriptions = [node.create_subscription(String, name, count, keep_all, raw=True)
                 for name in ('/a', '/b')]
while not all(s.get_publisher_count() for s in subscriptions):
    rclpy.spin_once(node, timeout_sec=0.1)
print('ready', flush=True)
while got[0] < int(sys.argv[1]):
    rclpy.spin_once(node, timeout_sec=10.0)
print('done', got[0], flush=True)
"""


def child_acknowledged(path: str, step_ms: int) -> None:
    """
    Print the replay rate of the bag to a reader that keeps every message (flow control).

    Both processes load sim_clock's Fast DDS profile, as the executables do: acknowledgements
    asked for every 1 ms and given at once (Fast DDS's defaults: 3 s and 5 ms).
    """
    import rclpy
    from rclpy.parameter import Parameter
    from sim_clock.bag.player import BagPlayer
    from sim_clock.bag.reader import Bag
    from sim_clock.node.runtime import answer_late_clients
    answer_late_clients()  # into os.environ, which the reader inherits
    rclpy.init()
    bag = Bag(path)
    player = BagPlayer(bag, parameter_overrides=[
        Parameter('sync', value=True), Parameter('time_step', value=step_ms / 1000)])
    node = player.node
    count = sum(topic.message_count for topic in bag.topics)
    reader = subprocess.Popen([sys.executable, '-c', READER, str(count)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout.readline().strip() == 'ready'
        start = time.perf_counter()
        _step_through(node, bag, step_ms)
        published_s = time.perf_counter() - start
        done = reader.stdout.readline().split()
        received_s = time.perf_counter() - start
        assert done == ['done', str(count)], done
    finally:
        reader.kill()
        node.destroy_node()
        rclpy.try_shutdown()
        bag.close()
    print(f'{count} {published_s} {received_s}')


def child_bare_acknowledged(path: str) -> None:
    """
    Print the bare floor of :func:`child_acknowledged`: the same reader fed by rclpy alone.

    The bag's messages, read beforehand, published raw on KEEP_ALL reliable writers (a publish
    blocks while the reader's history is full: DDS's own backpressure), until the reader has
    every one. Same Fast DDS profile.
    """
    import rclpy
    from rclpy.qos import HistoryPolicy
    from rclpy.qos import QoSProfile
    from rclpy.qos import ReliabilityPolicy
    from rosbags.rosbag2 import Reader
    from sim_clock.node.runtime import answer_late_clients
    from std_msgs.msg import String
    answer_late_clients()
    with Reader(path) as bag:
        messages = [(connection.topic, data) for connection, _, data in bag.messages()]
    rclpy.init()
    node = rclpy.create_node('bare_replay')
    keep_all = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
    publish = {name: node.create_publisher(String, name, keep_all).handle.publish_raw
               for name in ('/a', '/b')}
    reader = subprocess.Popen([sys.executable, '-c', READER, str(len(messages))],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout.readline().strip() == 'ready'
        start = time.perf_counter()
        for topic, data in messages:
            publish[topic](data)
        published_s = time.perf_counter() - start
        done = reader.stdout.readline().split()
        received_s = time.perf_counter() - start
        assert done == ['done', str(len(messages))], done
    finally:
        reader.kill()
        node.destroy_node()
        rclpy.try_shutdown()
    print(f'{len(messages)} {published_s} {received_s}')


def _run_child(kind: str, path: str, step_ms: int) -> tuple:
    from sim_clock.client.domains import domain_for_run
    env = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE='OFF')
    if kind in ('acknowledged', 'bare-acknowledged'):
        env.update(ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST',
                   ROS_DOMAIN_ID=str(domain_for_run()))
    out = subprocess.run(
        [sys.executable, __file__, f'--child-{kind}', path, '--time-step-ms', str(step_ms)],
        env=env, check=True, capture_output=True, text=True).stdout
    count, *figures = out.splitlines()[-1].split()
    return (int(count), *map(float, figures))


def _load() -> str:
    return 'load average: ' + ', '.join(f'{load:.2f}' for load in os.getloadavg())


def _steal_s() -> float:
    """Return the CPU time stolen from this machine by its hypervisor so far, in seconds."""
    with open('/proc/stat') as stat:
        fields = stat.readline().split()
    return int(fields[8]) / os.sysconf('SC_CLK_TCK') if len(fields) > 8 else 0.0


def _measure(path: str, size: int, repetitions: int, step_ms: int,
             acknowledged: bool = False) -> dict:
    """Read and replay the bag ``repetitions`` times, in turn; return the figures' lists."""
    runs = []
    for _ in range(repetitions):
        figures = {}
        if acknowledged:
            played, published_s, received_s = _run_child('acknowledged', path, step_ms)
            assert played == size, (played, size)
            bare, _, bare_s = _run_child('bare-acknowledged', path, step_ms)
            figures = {'acked': played / received_s, 'bare_acked': bare / bare_s}
        count, read_s, read_rss, read_cpu = _run_child('read', path, step_ms)
        reconciled, reconciled_s, _, _ = _run_child('reconciled', path + '_disagreeing',
                                                    step_ms)
        assert reconciled == size, (reconciled, size)
        (played, replay_s, replay_rss, replay_cpu, rclpy_s, c_s, reader_cpu,
         reader_rss) = _run_child('replay', path, step_ms)
        assert count == played == size, (count, played, size)
        runs.append({
            'read': count / read_s, 'replay': played / replay_s,
            'reconciled': reconciled / reconciled_s,
            'ratio': (played / replay_s) / (count / read_s),
            'rclpy': played / rclpy_s, 'c': played / c_s,
            'read_rss': read_rss, 'replay_rss': replay_rss, 'reader_rss': reader_rss,
            'read_cpu': read_cpu / count * 1e6, 'player_cpu': replay_cpu / played * 1e6,
            'reader_cpu': reader_cpu / played * 1e6, **figures})
    return {key: [run[key] for run in runs] for key in runs[0]}


def main() -> int:
    """Write the bags, measure each in fresh processes, print a table and the verdict."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--messages', type=int, default=20_000,
                        help='messages in the small bag; the large one has ten times more')
    parser.add_argument('--storage', nargs='+', default=['sqlite3', 'mcap'])
    parser.add_argument('--repetitions', type=int, default=3,
                        help='read and replay each bag this many times, in turn (default 3); '
                             'the table gives medians, and the ratio of the median rates')
    parser.add_argument('--time-step-ms', type=int, default=10,
                        help='the frame of the replay in ms (default 10: ten messages a frame)')
    parser.add_argument('--acknowledged', action='store_true',
                        help='also replay each bag to a reader that keeps every message')
    parser.add_argument('--child-read', metavar='BAG', help=argparse.SUPPRESS)
    parser.add_argument('--child-reconciled', metavar='BAG', help=argparse.SUPPRESS)
    parser.add_argument('--child-acknowledged', metavar='BAG', help=argparse.SUPPRESS)
    parser.add_argument('--child-bare-acknowledged', metavar='BAG', help=argparse.SUPPRESS)
    parser.add_argument('--child-replay', metavar='BAG', help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child_read:
        child_read(options.child_read)
        return 0
    if options.child_reconciled:
        child_reconciled(options.child_reconciled)
        return 0
    if options.child_replay:
        child_replay(options.child_replay, options.time_step_ms)
        return 0
    if options.child_acknowledged:
        child_acknowledged(options.child_acknowledged, options.time_step_ms)
        return 0
    if options.child_bare_acknowledged:
        child_bare_acknowledged(options.child_bare_acknowledged)
        return 0

    print(_load(), file=sys.stderr)
    steal, start = _steal_s(), time.monotonic()
    print(f'{"bag":>12} {"messages":>9} {"raw read msg/s":>15} {"replay msg/s":>13} '
          f'{"ratio":>6} {"min":>5} {"max":>5} {"rclpy publish msg/s":>20} '
          f'{"C publish msg/s":>16} '
          f'{"read RSS MiB":>13} {"replay RSS MiB":>15} {"read-ahead RSS MiB":>19} '
          f'{"read CPU us/msg":>16} {"player CPU us/msg":>18} {"read-ahead CPU us/msg":>22} '
          f'{"reconciled read msg/s":>22} {"cost":>5}')
    lowest, costliest, acked = None, None, []
    with tempfile.TemporaryDirectory() as folder:
        for storage in options.storage:
            for size in (options.messages, 10 * options.messages):
                path = os.path.join(folder, f'{storage}_{size}')
                write_bag(path, storage, size)
                disagreeing_copy(path)
                runs = _measure(path, size, options.repetitions, options.time_step_ms,
                                options.acknowledged)
                m = {key: median(values) for key, values in runs.items()}
                ratio = m['replay'] / m['read']
                lowest = ratio if lowest is None else min(lowest, ratio)
                cost = m['read'] / m['reconciled']
                costliest = cost if costliest is None else max(costliest, cost)
                print(f'{storage + " x" + str(size // options.messages):>12} {size:>9} '
                      f'{m["read"]:>15,.0f} {m["replay"]:>13,.0f} {ratio:>6.2f} '
                      f'{min(runs["ratio"]):>5.2f} {max(runs["ratio"]):>5.2f} '
                      f'{m["rclpy"]:>20,.0f} {m["c"]:>16,.0f} {max(runs["read_rss"]):>13.1f} '
                      f'{max(runs["replay_rss"]):>15.1f} {max(runs["reader_rss"]):>19.1f} '
                      f'{m["read_cpu"]:>16.2f} {m["player_cpu"]:>18.2f} '
                      f'{m["reader_cpu"]:>22.2f} {m["reconciled"]:>22,.0f} {cost:>5.2f}',
                      flush=True)
                if options.acknowledged:
                    acked.append(f'{storage + " x" + str(size // options.messages):>12} '
                                 f'{size:>9} {m["replay"]:>13,.0f} {m["acked"]:>17,.0f} '
                                 f'{m["bare_acked"]:>22,.0f} '
                                 f'{m["acked"] / m["bare_acked"]:>6.2f}')
    if acked:
        print(f'replay to a reader that keeps every message (flow control; rate to the last '
              f'message received), beside rclpy alone feeding the same reader:\n'
              f'{"bag":>12} {"messages":>9} {"replay msg/s":>13} {"to reader msg/s":>17} '
              f'{"bare to reader msg/s":>22} {"ratio":>6}')
        print('\n'.join(acked))
    print(_load(), file=sys.stderr)
    print(f'steal time: {(_steal_s() - steal) / (time.monotonic() - start):.0%} of a CPU '
          'over the runs', file=sys.stderr)
    verdict = 'met' if lowest >= TARGET_RATIO else 'NOT met'
    print(f'target: replay at least {TARGET_RATIO} of the raw read rate for every bag: '
          f'{verdict} (lowest ratio of median rates {lowest:.2f}; RSS columns are the '
          f'highest of {options.repetitions} runs)')
    verdict = 'met' if costliest <= TARGET_COST else 'NOT met'
    print(f'target: a bag whose metadata disagrees with its data read at a cost of at most '
          f'{TARGET_COST} of the raw read of the bag as written: {verdict} (highest cost of '
          f'median rates {costliest:.2f})')
    return 0


if __name__ == '__main__':
    sys.exit(main())
