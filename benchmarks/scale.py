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
How cost grows with a stack's size: each figure beside its bare baseline, in one sitting.

Run after scripts/setup.sh, from the repository, with AMENT_PREFIX_PATH=.venv::

    .venv/bin/python benchmarks/scale.py                     # every case at full size
    .venv/bin/python benchmarks/scale.py --quick             # small sizes: a check in seconds
    .venv/bin/python benchmarks/scale.py --only participants --doc doc/performance.md
    .venv/bin/python benchmarks/scale.py --only participants --participants 16 64 \
        --layouts processes                                  # some sizes, one layout
    .venv/bin/python benchmarks/scale.py --only participants --heartbeat-check
                                                             # and without the 1 ms heartbeat

The cases (``--only CASE``), each on a DDS domain of its own (``--domain``), with the
processes of ``benchmarks/performance/roles.py``:

- ``participants``: free run at real_time_factor 0 held by 1, 4, 16 and 64 participants, as
  processes and as nodes in two processes (several nodes on one executor each): frames/s
  against the bare rclpy barrier of the same processes and nodes (the faster executor); with
  ``--heartbeat-check``, free run again with the server on its Fast DDS profile less the
  writers' 1 ms heartbeat (the participants' /clock readers then get no heartbeat a frame);
- ``sim_time_nodes``: 10, 50 and 100 use_sim_time nodes (ten to a process) beside free run at
  real_time_factor 0 and at 1 kHz: the server's frames/s against the server alone, and the
  nodes' CPU, with and without ``max_clock_rate``;
- ``recorder``: a lockstep stack (sync mode, a participant publishing on 10, 100 and 500
  topics every frame) recorded by ``recorder --hold-frames``: frames/s against the same
  stack unrecorded, the recorder's peak memory, and the messages lost (every frame of every
  topic is counted);
- ``bag_player``: bags of 100 MB and 1 GB (written here with rosbags into TMPDIR, deleted
  after) and one of 1,000 topics, played by the bag player in sync mode: peak memory (the
  player and its read-ahead process), messages/s, time to the first message and time of a seek
  to the middle, against rosbags' raw read of the same bag;
- ``server_memory``: the server's resident memory after 10^5 and 10^6 frames of free run
  (1 ms frames at real_time_factor 50) while 16 participants join, hold 20 frames and leave,
  again and again.

Every figure prints as a line (its value, its baseline, the ratio, the target if the issue
set one); ``--doc FILE`` writes them as a table between the markers of FILE, and ``--plot``
a PNG of the curves (with matplotlib, where installed).
"""

import argparse
import contextlib
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import List
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
PERFORMANCE = os.path.join(HERE, 'performance')
MS = 1_000_000
MIB = 1024 * 1024
#: A full run's table goes in a document between these two lines.
TABLE_BEGIN = '<!-- the scale benchmark: written by benchmarks/scale.py --doc -->'
TABLE_END = '<!-- end of the scale benchmark -->'
#: The rate cap of the sim_time_nodes case, Hz.
CAP_HZ = 100.0
#: use_sim_time nodes in one process.
NODES_PER_PROCESS = 10
#: Role processes started together; the next ones start once these are ready.
STARTING_AT_ONCE = 8
#: Processes that hold the participants of the "nodes" layout.
NODE_PROCESSES = 2
#: A bag message's payload, bytes (the large bags), and the bag's rate: a message a ms.
MESSAGE_BYTES = 1000
START_NS = 1_700_000_000 * 1_000_000_000
#: The server_memory case's real_time_factor with 1 ms frames: 50,000 frames/s when nobody holds
#: them, so that participants join and leave dozens of times in 10^6 frames.
MEMORY_RTF = 50.0


@dataclass
class Sizes:
    """What each case measures at; ``--quick`` shrinks everything."""

    participants: tuple = (1, 4, 16, 64)
    #: the participants case's layouts: processes of one node, nodes in NODE_PROCESSES processes
    layouts: tuple = ('processes', 'nodes')
    #: the participants case also with the server on its profile less the writers' 1 ms
    #: heartbeat (``--heartbeat-check``): what that heartbeat costs at each count
    heartbeat_check: bool = False
    #: frames measured at a participant count (after 50 of warm-up); other counts: the frames
    #: of the next larger count listed (the fewest past 64)
    barrier_frames: dict = field(default_factory=lambda: {1: 3000, 4: 3000, 16: 1000, 64: 300})
    executors: tuple = ('events', 'single')
    sim_time_nodes: tuple = (10, 50, 100)
    window_s: float = 10.0
    recorder_topics: tuple = (10, 100, 500)
    #: the recorded stack's steps: calls of so many frames
    recorder_calls: int = 20
    recorder_steps: int = 100
    bag_bytes: tuple = (100 * MIB, 1024 * MIB)
    many_topics: int = 1000
    many_topic_messages: int = 100_000
    memory_frames: tuple = (100_000, 1_000_000)
    churn_nodes: int = 16


FULL = Sizes()
QUICK = Sizes(participants=(1, 4), barrier_frames={1: 200, 4: 200}, executors=('events',),
              sim_time_nodes=(10,), window_s=1.0, recorder_topics=(10, 100), recorder_calls=5,
              recorder_steps=20, bag_bytes=(2 * MIB, 8 * MIB), many_topics=1000,
              many_topic_messages=5000, memory_frames=(10_000, 100_000), churn_nodes=4)


@dataclass
class Row:
    """One figure beside its baseline."""

    case: str
    size: str
    figure: str
    unit: str
    value: float
    baseline: Optional[float]
    #: what the baseline is
    against: str
    #: 'ratio>=' / 'ratio<=' with ``bar``, or '' (no target: the figure is shown)
    rule: str = ''
    bar: float = 0.0

    @property
    def ratio(self) -> Optional[float]:
        return self.value / self.baseline if self.baseline else None

    @property
    def target(self) -> str:
        return f'{self.rule[:-2]} {self.rule[-2:]} {self.bar:g}' if self.rule else ''

    @property
    def met(self) -> Optional[bool]:
        if not self.rule or self.ratio is None:
            return None
        return self.ratio >= self.bar if self.rule.endswith('>=') else self.ratio <= self.bar


def line(row: Row) -> str:
    """Return ``row`` as a line: the figure, its baseline, the ratio and the verdict."""
    ratio = 'n/a' if row.ratio is None else f'{row.ratio:.2f}x'
    verdict = '' if row.met is None else (
        f" (target {row.target}: {'met' if row.met else 'NOT met'})")
    number = _performance()._number  # the performance benchmark's figures, written alike
    return (f'{row.case} | {row.size} | {row.figure}: {number(row.value)} {row.unit} beside '
            f'{number(row.baseline)} ({row.against}): {ratio}{verdict}')


def markdown(rows: List[Row]) -> List[str]:
    """Return the rows as a Markdown table."""
    lines = ['| case | size | figure | sim_clock | baseline | ratio | target |',
             '|---|---|---|---|---|---|---|']
    number = _performance()._number
    for row in rows:
        ratio = 'n/a' if row.ratio is None else f'{row.ratio:.2f}'
        target = '' if row.met is None else (
            f"{row.target}: {'met' if row.met else '**not met**'}")
        lines.append(f'| {row.case} | {row.size} | {row.figure} | {number(row.value)} '
                     f'{row.unit} | {number(row.baseline)} ({row.against}) | {ratio} | '
                     f'{target} |')
    return lines


def _performance():
    """Return the performance benchmark's module (its Bench, Process and helpers)."""
    if PERFORMANCE not in sys.path:
        sys.path.insert(0, PERFORMANCE)
    import run
    return run


# -- participants ----------------------------------------------------------------------------


def _spread(count: int, processes: int) -> List[int]:
    """Return how many of ``count`` nodes each of ``processes`` processes holds."""
    return [count // processes + (k < count % processes) for k in range(processes)]


def _frames_at(frames: dict, count: int) -> int:
    """Return the frames measured at ``count`` participants: those of the next count listed."""
    listed = sorted(frames)
    return frames[next((listed_count for listed_count in listed if listed_count >= count),
                       listed[-1])]


def _started(bench, argvs: List[list], timeout: float) -> list:
    """
    Start a role for each of ``argvs``, :data:`STARTING_AT_ONCE` at a time; return them ready.

    Dozens of processes that start at once on two cores each take over a minute of CPU to
    import rclpy and discover the others: at 64 some waited past their timeout for the
    server's join service. A batch starts once the one before is ready.
    """
    roles = []
    for first in range(0, len(argvs), STARTING_AT_ONCE):
        batch = [bench.role(*argv) for argv in argvs[first:first + STARTING_AT_ONCE]]
        for role in batch:
            role.expect('ready', timeout)
        roles += batch
    return roles


def participants(bench, sizes: Sizes) -> List[Row]:
    """Free run held by participants, as processes and as nodes, against the bare barrier."""
    run = _performance()
    rows = []
    layouts = []
    if 'processes' in sizes.layouts:
        layouts += [('processes', count, [1] * count) for count in sizes.participants]
    if 'nodes' in sizes.layouts:
        layouts += [(f'nodes in {NODE_PROCESSES} processes', count,
                     _spread(count, NODE_PROCESSES)) for count in sizes.participants
                    if count > NODE_PROCESSES]
    with _without_heartbeat(sizes.heartbeat_check) as quiet:
        for layout, count, spread in layouts:
            timeout = run.TIMEOUT * (1 + count // 4)
            # A role's own wait for its frames counts from its ready, before the last batch starts.
            frames = ['--frames', _frames_at(sizes.barrier_frames, count), '--warmup', 50,
                      '--timeout', timeout * 10]
            ours_fps = _held_free_run(bench, spread, frames, timeout)
            quiet_fps = _held_free_run(bench, spread, frames, timeout, quiet) if quiet else None
            bare = {}
            for executor in sizes.executors:
                barrier = bench.role('bare-barrier', '--executor', executor,
                                     '--subscribers', count, *frames)
                _started(bench, [('participant', '--server', 'bare', '--nodes', nodes, *frames)
                                 for nodes in spread], timeout)
                barrier.expect('ready', timeout)
                bare[executor] = barrier.result(timeout * 10)['fps']
                bench.stop_all()
            rows.append(Row('participants', f'{count} as {layout}', 'free run held by them',
                            'frames/s', ours_fps,
                            max(bare.values()), 'bare rclpy barrier, the faster executor',
                            'ratio>=', 0.9))
            print('    ' + line(rows[-1]), flush=True)
            if quiet_fps is not None:
                rows.append(Row('participants', f'{count} as {layout}',
                                'free run held by them, the server without the 1 ms heartbeat',
                                'frames/s', quiet_fps, max(bare.values()),
                                'bare rclpy barrier, the faster executor'))
                print('    ' + line(rows[-1]), flush=True)
    return rows


def _held_free_run(bench, spread: List[int], frames: list, timeout: float,
                   server_env: Optional[dict] = None) -> float:
    """Return the frames/s of free run at factor 0 held by participant processes of ``spread``."""
    bench.server(real_time_factor=0.0, time_step=0.001, paused=True, env=server_env)
    ours = _started(bench, [('participant', '--nodes', nodes, *frames) for nodes in spread],
                    timeout)
    bench.role('call-trigger', '--name', 'resume').result(timeout)
    fps = min(role.result(timeout * 10)['fps'] for role in ours)
    bench.stop_all()
    return fps


@contextlib.contextmanager
def _without_heartbeat(wanted: bool):
    """
    Within: the environment items that give the server its Fast DDS profile less the heartbeat.

    The executables' profile asks every writer's readers for acknowledgements every 1 ms while
    a sample is unacknowledged (doc/design.md, "Acknowledged steps"); written without that
    element into TMPDIR (removed after), the writers keep Fast DDS's default period (3 s), all
    else the same. None unless ``wanted``.
    """
    if not wanted:
        yield None
        return
    from xml.etree import ElementTree
    from sim_clock.process.fastdds_profiles import fast_dds_major
    from sim_clock.process.fastdds_profiles import PROFILE_FILES
    from sim_clock.process.fastdds_profiles import PROFILES_VARIABLES
    major = fast_dds_major()
    namespace = 'http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles'
    ElementTree.register_namespace('', namespace)
    tree = ElementTree.parse(PROFILE_FILES[major])
    for writer in tree.iter(f'{{{namespace}}}data_writer'):
        for times in writer.findall(f'{{{namespace}}}times'):
            writer.remove(times)
    handle, path = tempfile.mkstemp(prefix='sim_clock_scale_', suffix='_profile.xml')
    os.close(handle)
    try:
        tree.write(path, xml_declaration=True, encoding='UTF-8')
        yield {PROFILES_VARIABLES[major]: path}
    finally:
        os.remove(path)


# -- use_sim_time nodes ------------------------------------------------------------------------


def _free_run(bench, rtf: float, cap: float, nodes: list, window_s: float) -> tuple:
    """Return the server's frames/s and the nodes' CPU (% of a core) over one window."""
    run = _performance()
    server = bench.server(real_time_factor=rtf, time_step=0.001, max_clock_rate=cap)
    # Until the server's /clock writer has matched the nodes' readers (discovery), its frames
    # cost them nothing: the window starts after a wall-time warm-up, not a frame count.
    time.sleep(window_s / 2)
    probe = bench.role('status', '--marks', 1, '--window', window_s)
    probe.expect('mark', run.TIMEOUT * 2)
    cpu0, wall0 = sum(node.cpu_seconds() for node in nodes), time.monotonic()
    fps = probe.result(run.TIMEOUT + window_s * 2)['fps']
    cpu = (sum(node.cpu_seconds() for node in nodes) - cpu0) / (
        time.monotonic() - wall0) * 100
    for process in (probe, server):
        process.stop()
        bench.processes.remove(process)
    return fps, cpu


def sim_time_nodes(bench, sizes: Sizes) -> List[Row]:
    """use_sim_time nodes beside free run at rtf 0 and at 1 kHz, with and without the cap."""
    rows = []
    paces = ((0.0, 'rtf 0'), (1.0, '1 kHz'))
    alone = {rtf: _free_run(bench, rtf, 0.0, [], sizes.window_s)[0] for rtf, _ in paces}
    bench.stop_all()
    for count in sizes.sim_time_nodes:
        nodes = [bench.role('sim-time-node', '--nodes', per)
                 for per in _spread(count, -(-count // NODES_PER_PROCESS))]
        for node in nodes:
            node.expect('ready', 120)
        for rtf, pace in paces:
            free_fps, free_cpu = _free_run(bench, rtf, 0.0, nodes, sizes.window_s)
            capped_fps, capped_cpu = _free_run(bench, rtf, CAP_HZ, nodes, sizes.window_s)
            size = f'{count} nodes, free run at {pace}'
            rows += [
                Row('sim_time_nodes', size, 'server frames/s, no cap', 'frames/s', free_fps,
                    alone[rtf], 'the server alone'),
                Row('sim_time_nodes', size, f'server frames/s, max_clock_rate {CAP_HZ:g} Hz',
                    'frames/s', capped_fps, alone[rtf], 'the server alone',
                    *(('ratio>=', 0.5) if rtf == 0.0 else ())),
                Row('sim_time_nodes', size, f"nodes' CPU, max_clock_rate {CAP_HZ:g} Hz",
                    '% of a core', capped_cpu, free_cpu, 'the same nodes, no cap'),
            ]
            for row in rows[-3:]:
                print('    ' + line(row), flush=True)
        bench.stop_all()
    return rows


# -- the recorder ----------------------------------------------------------------------------


def _recorded_stamps(path: str) -> dict:
    """Return each topic's recorded stamps (ns) of the bag at ``path``."""
    from rosbags.rosbag2 import Reader
    stamps = {}
    with Reader(path) as reader:
        for connection, stamp, _ in reader.messages():
            stamps.setdefault(connection.topic, []).append(stamp)
    return stamps


def _wait_for_log(path: str, text: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(path) as log:
            if text in log.read():
                return
        time.sleep(0.05)
    raise RuntimeError(f'no {text!r} in {path} within {timeout} s')


def _stack(bench, topics: int, sizes: Sizes, workdir: Optional[str]) -> dict:
    """
    Step a stack that publishes on ``topics`` topics, recorded into ``workdir`` if given.

    Returns the frames/s (to the recorder's end, when recorded), and with a recorder its peak
    RSS (MiB) and the messages it lost.
    """
    run = _performance()
    frames = sizes.recorder_calls * sizes.recorder_steps
    bench.server(sync=True, time_step=0.001)
    recorder = None
    if workdir is not None:
        output, log_path = os.path.join(workdir, f'recorded_{topics}'), os.path.join(
            workdir, f'recorder_{topics}.log')
        executable = os.path.join(os.path.dirname(bench.server_executable), 'recorder')
        # Its own log: the line of the first /clock says it stamps from there on.
        with open(log_path, 'w') as log:
            recorder = run.Process(
                [executable, output, '--until', str(frames * MS / 1e9), '--hold-frames', '-t',
                 *(f'/scale/t{k}:std_msgs/msg/String' for k in range(topics))],
                bench.env, log)
        bench.processes.append(recorder)
        _wait_for_log(log_path, 'first /clock received', run.TIMEOUT)
        # A participant (--hold-frames): every frame waits for it, so nothing is lost.
        _wait_for_log(log_path, 'joined ', run.TIMEOUT)
    stack = bench.role('participant', '--topics', topics, '--readers', int(recorder is not None),
                       '--frames', frames, '--warmup', sizes.recorder_steps)
    stack.expect('ready', run.TIMEOUT * 2)
    probe = bench.role('step-throughput', '--calls', sizes.recorder_calls, '--steps',
                       sizes.recorder_steps)
    probe.expect('ready', run.TIMEOUT)
    start = time.monotonic()
    stepped = probe.result(run.TIMEOUT * 10)
    measured = {'fps': stepped['fps']}
    if recorder is not None:
        # Its peak RSS from the kernel as it is reaped: the recorder ends at --until.
        deadline = time.monotonic() + run.TIMEOUT * 5
        while True:
            pid, status, usage = os.wait4(recorder.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f'the recorder of {topics} topics did not end at --until')
            time.sleep(0.01)
        elapsed = time.monotonic() - start
        recorder.popen.returncode = os.waitstatus_to_exitcode(status)
        stamps = _recorded_stamps(output)
        # Frames 1 to frames - 1 come before --until: each topic has one message of each.
        due = frames - 1
        got = [len([s for s in stamps.get(f'/scale/t{k}', []) if 0 < s < frames * MS])
               for k in range(topics)]
        measured.update(fps=frames / elapsed, rss_mib=usage.ru_maxrss / 1024,
                        lost=sum(max(0, due - n) for n in got), recorded=sum(got))
    bench.stop_all()
    return measured


def recorder(bench, sizes: Sizes) -> List[Row]:
    """Record a lockstep stack: frames/s against the stack alone, memory, messages lost."""
    rows = []
    with tempfile.TemporaryDirectory(prefix='sim_clock_scale_') as workdir:
        first = None
        for topics in sizes.recorder_topics:
            alone = _stack(bench, topics, sizes, None)
            recorded = _stack(bench, topics, sizes, workdir)
            shutil.rmtree(os.path.join(workdir, f'recorded_{topics}'))
            first = first or recorded
            size = f'{topics} topics'
            rows += [
                Row('recorder', size, 'frames/s, recorded', 'frames/s', recorded['fps'],
                    alone['fps'], 'the same stack, not recorded'),
                Row('recorder', size, 'frames/s, recorded', 'frames/s', recorded['fps'],
                    first['fps'], f'recorded, {sizes.recorder_topics[0]} topics',
                    'ratio>=', 0.8),
                Row('recorder', size, "recorder's peak RSS", 'MiB', recorded['rss_mib'],
                    first['rss_mib'], f'{sizes.recorder_topics[0]} topics'),
                Row('recorder', size, 'messages lost', 'messages', recorded['lost'],
                    recorded['recorded'] + recorded['lost'], 'messages due'),
            ]
            for row in rows[-4:]:
                print('    ' + line(row), flush=True)
    return rows


# -- the bag player --------------------------------------------------------------------------


def write_bag(path: str, megabytes: float, topics: int, messages: int = 0) -> int:
    """
    Write a bag of std_msgs/String with rosbags; return its message count.

    ``megabytes``: messages of :data:`MESSAGE_BYTES` until the bag holds that much; else
    ``messages`` messages of 100 bytes. A message a millisecond, the topics in turn.
    """
    from rosbags.rosbag2 import StoragePlugin
    from rosbags.rosbag2 import Writer
    from rosbags.typesys import get_typestore
    from rosbags.typesys import Stores
    store = get_typestore(Stores.ROS2_JAZZY)
    string = store.types['std_msgs/msg/String']
    size = MESSAGE_BYTES if megabytes else 100
    count = int(megabytes * MIB) // size if megabytes else messages
    data = store.serialize_cdr(string(data='x' * size), 'std_msgs/msg/String')
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        connections = [writer.add_connection(f'/bag/t{k}', 'std_msgs/msg/String',
                                             typestore=store) for k in range(topics)]
        for k in range(count):
            writer.write(connections[k % topics], START_NS + k * MS, data)
    return count


def _peak_rss_mib(pid='self') -> float:
    with open(f'/proc/{pid}/status') as status:
        for text in status:
            if text.startswith('VmHWM:'):
                return int(text.split()[1]) / 1024
    return 0.0


def child_read(path: str) -> dict:
    """Read the bag with rosbags: messages/s, time to the first message and to the middle."""
    from rosbags.rosbag2 import Reader
    start = time.perf_counter()
    with Reader(path) as reader:
        count, first_s = 0, None
        for _ in reader.messages():
            if first_s is None:
                first_s = time.perf_counter() - start
                first = time.perf_counter()
            count += 1
        # The rate from the first message on, as the player's: opening is the time to it.
        elapsed = time.perf_counter() - first
        middle = reader.start_time + (reader.end_time - reader.start_time) // 2
        seek = time.perf_counter()
        next(iter(reader.messages(start=middle)))
        seek_s = time.perf_counter() - seek
    return {'count': count, 'rate': (count - 1) / elapsed, 'first_s': first_s, 'seek_s': seek_s,
            'rss_mib': _peak_rss_mib()}


def child_play(path: str) -> dict:
    """
    Play the bag with the bag player, in sync mode, frame by frame as ``~/step`` would.

    Messages/s of the whole bag; time from opening the bag to the end of the first frame that
    published a message; time of a seek to the middle and its first message out; the peak RSS
    of the player and of its read-ahead process, summed. DDS discovery is off: nothing leaves
    the process.
    """
    import rclpy
    from rclpy.parameter import Parameter
    from sim_clock.bag.player import BagPlayer
    from sim_clock.bag.reader import Bag
    from sim_clock.node.engine import StepRequest
    rclpy.init()
    start = time.perf_counter()
    bag = Bag(path)
    player = BagPlayer(bag, show_progress=False, parameter_overrides=[
        Parameter('sync', value=True), Parameter('time_step', value=0.01)])
    node = player.node

    def out() -> int:
        return player.frames.progress.report().messages_out

    def step(steps: int) -> None:
        outcomes = []
        node.engine.steps.step(StepRequest(user_id='', steps=steps, reply=outcomes.append))
        [outcome] = outcomes  # nothing to wait for: answered before it returns
        assert outcome.success, outcome.message

    try:
        while not out():
            step(1)
        first_s = time.perf_counter() - start
        first = out()
        frames = bag.duration_ns // (10 * MS) + 1
        played = time.perf_counter()
        while not player.frames.cursor.exhausted:
            step(min(frames, 100_000))
        count = out()
        rate = (count - first) / (time.perf_counter() - played)
        seek = time.perf_counter()
        outcome = player.seek(node.clock_ns(player.frames.end_ns // 2))
        assert outcome.success, outcome.message
        while not out():
            step(1)
        seek_s = time.perf_counter() - seek
        rss = _peak_rss_mib() + _peak_rss_mib(player.reader.pid)
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
        bag.close()
    return {'count': count, 'rate': rate, 'first_s': first_s, 'seek_s': seek_s, 'rss_mib': rss}


def _child(kind: str, path: str) -> dict:
    env = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE='OFF')
    output = subprocess.run([sys.executable, __file__, '--child', kind, path], env=env,
                            check=True, capture_output=True, text=True).stdout
    return json.loads(output.splitlines()[-1])


def bag_player(bench, sizes: Sizes) -> List[Row]:
    """Play large bags and a bag of many topics, against rosbags' raw read of each."""
    rows = []
    bags = [(f'{megabytes / MIB:g} MiB bag, 2 topics', megabytes / MIB, 2, 0)
            for megabytes in sizes.bag_bytes]
    bags.append((f'{sizes.many_topics:,} topics, {sizes.many_topic_messages:,} messages', 0,
                 sizes.many_topics, sizes.many_topic_messages))
    smallest = None
    with tempfile.TemporaryDirectory(prefix='sim_clock_scale_') as workdir:
        for size, megabytes, topics, messages in bags:
            path = os.path.join(workdir, 'bag')
            written = write_bag(path, megabytes, topics, messages)
            try:
                read = _child('read', path)
                played = _child('play', path)
            finally:
                shutil.rmtree(path)
            assert read['count'] == played['count'] == written, (read, played, written)
            smallest = smallest or played
            rows += [
                Row('bag_player', size, 'messages/s', 'messages/s', played['rate'],
                    read['rate'], "rosbags' raw read", 'ratio>=', 0.5),
                Row('bag_player', size, 'peak RSS, player and read-ahead', 'MiB',
                    played['rss_mib'], read['rss_mib'], "rosbags' raw read"),
                Row('bag_player', size, 'time to the first message', 's', played['first_s'],
                    read['first_s'], "rosbags' raw read"),
                Row('bag_player', size, 'seek to the middle, to its first message', 's',
                    played['seek_s'], read['seek_s'], "rosbags' raw read from the middle"),
            ]
            if megabytes and smallest is not played:
                rows.append(Row('bag_player', size, 'peak RSS, player and read-ahead', 'MiB',
                                played['rss_mib'], smallest['rss_mib'],
                                f'the {sizes.bag_bytes[0] / MIB:g} MiB bag', 'ratio<=', 2.0))
            for row in rows[-5 if megabytes and smallest is not played else -4:]:
                print('    ' + line(row), flush=True)
    return rows


# -- the server's memory ---------------------------------------------------------------------


def server_memory(bench, sizes: Sizes) -> List[Row]:
    """Measure the server's RSS at two frame counts while participants join and leave."""
    run = _performance()
    first, last = sizes.memory_frames
    # Paced at MEMORY_RTF: as fast as possible, 10^6 frames went by in about a second, within
    # two or three joins and leaves.
    server = bench.server(real_time_factor=MEMORY_RTF, time_step=0.001)
    churn = bench.role('churn', '--nodes', sizes.churn_nodes, '--frames', 20,
                       '--duration', 0.02)
    churn.expect('ready', run.TIMEOUT)
    probe = bench.role('status', '--marks', first, last)
    probe.expect('mark', run.TIMEOUT * 5)
    rss_first = server.memory_kib('VmRSS') / 1024
    probe.expect('mark', run.TIMEOUT * 30)
    rss_last = server.memory_kib('VmRSS') / 1024
    cycles = 0
    while not churn.lines.empty():
        text = churn.lines.get()
        if text and text.startswith('cycle '):
            cycles = int(text.split()[1])
    bench.stop_all()
    rows = [Row('server_memory', f'{sizes.churn_nodes} participants joining and leaving '
                f'({cycles} times)', f'RSS after {last:,} frames', 'MiB', rss_last, rss_first,
                f'after {first:,} frames', 'ratio<=', 1.05)]
    print('    ' + line(rows[-1]), flush=True)
    return rows


CASES = [participants, sim_time_nodes, recorder, bag_player, server_memory]
CHILDREN = {'read': child_read, 'play': child_play}


# -- the report ------------------------------------------------------------------------------


def write_doc(path: str, rows: List[Row], heading: str) -> None:
    """Put the table of ``rows`` under ``heading`` between the markers of ``path``."""
    _performance().put_between(path, TABLE_BEGIN, TABLE_END,
                               '\n'.join([heading, '', *markdown(rows)]))


def plot(path: str, rows: List[Row]) -> bool:
    """Draw the curves of frames/s against size into a PNG; False if matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use('Agg')
        from matplotlib import pyplot
    except ImportError:
        return False
    figure, axes = pyplot.subplots(1, 2, figsize=(11, 4))
    for layout in sorted({row.size.split(' ', 2)[2] for row in rows
                          if row.case == 'participants'}):
        picked = [row for row in rows
                  if row.case == 'participants' and row.size.split(' ', 2)[2] == layout]
        counts = [int(row.size.split()[0]) for row in picked]
        axes[0].plot(counts, [row.value for row in picked], 'o-', label=f'sim_clock, {layout}')
        axes[0].plot(counts, [row.baseline for row in picked], 's--', label=f'bare, {layout}')
    axes[0].set(xscale='log', yscale='log', xlabel='participants', ylabel='frames/s',
                title='Free run held by participants')
    counts = sorted({int(row.size.split()[0]) for row in rows if row.case == 'participants'})
    axes[0].set_xticks(counts, [str(count) for count in counts])
    axes[0].minorticks_off()
    axes[0].legend(fontsize=7)
    for figure_name, style in (('server frames/s, no cap', 'o-'),
                               (f'server frames/s, max_clock_rate {CAP_HZ:g} Hz', 's-')):
        picked = [row for row in rows if row.case == 'sim_time_nodes'
                  and row.figure == figure_name and 'rtf 0' in row.size]
        if picked:
            axes[1].plot([int(row.size.split()[0]) for row in picked],
                         [row.value for row in picked], style, label=figure_name)
            axes[1].axhline(picked[0].baseline, linestyle=':', color='grey')
    axes[1].set(yscale='log', xlabel='use_sim_time nodes', ylabel='frames/s',
                title='Free run at rtf 0 beside use_sim_time nodes (dotted: alone)')
    axes[1].legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    return True


def parse_arguments(argv) -> argparse.Namespace:
    from sim_clock.client.domains import DOMAIN_HELP
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--quick', action='store_true',
                        help='small sizes: checks in seconds that every figure is produced')
    parser.add_argument('--only', nargs='+', choices=[case.__name__ for case in CASES],
                        metavar='CASE', help='run only these cases: ' + ', '.join(
                            case.__name__ for case in CASES))
    parser.add_argument('--domain', type=int, help=DOMAIN_HELP)
    parser.add_argument('--participants', nargs='+', type=int, metavar='COUNT',
                        help='the participants case at these counts only (default: 1 4 16 64; '
                             'with --quick: 1 4)')
    parser.add_argument('--layouts', nargs='+', choices=Sizes.layouts, metavar='LAYOUT',
                        help='the participants case in these layouts only: processes (one '
                             f'node each), nodes (in {NODE_PROCESSES} processes)')
    parser.add_argument('--heartbeat-check', action='store_true',
                        help='participants: also run free run with the server on its Fast DDS '
                             'profile less the 1 ms heartbeat of its writers')
    parser.add_argument('--doc', metavar='FILE',
                        help='also put the table, dated, with the machine and the load, in FILE '
                             'between its markers (doc/performance.md)')
    parser.add_argument('--plot', metavar='PNG',
                        help='also draw the curves into this PNG (needs matplotlib)')
    parser.add_argument('--log', metavar='FILE',
                        help='where the processes write stderr (default: a temporary file)')
    parser.add_argument('--child', nargs=2, metavar=('KIND', 'BAG'), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_arguments(sys.argv[1:] if argv is None else argv)
    if args.child:
        kind, path = args.child
        print(json.dumps(CHILDREN[kind](path)), flush=True)
        return 0
    from sim_clock.client.domains import domain_for_run
    run = _performance()
    sizes = QUICK if args.quick else FULL
    if args.participants:
        sizes = replace(sizes, participants=tuple(args.participants))
    if args.layouts:
        sizes = replace(sizes, layouts=tuple(args.layouts))
    if args.heartbeat_check:
        sizes = replace(sizes, heartbeat_check=True)
    load_start = os.getloadavg()[0]
    domain_id = domain_for_run(args.domain)
    log_path = args.log or os.path.join(
        os.environ.get('TMPDIR', '/tmp'), f'sim_clock_scale_{os.getpid()}.log')
    cases = [case for case in CASES if not args.only or case.__name__ in args.only]
    print(f'machine: {run.machine()}')
    print(f"domain {domain_id}, {'quick' if args.quick else 'full'} sizes, load average "
          f'{load_start:.2f}, log {log_path}', flush=True)
    bench = run.Bench(domain_id, log_path)
    rows, failed = [], []
    try:
        for case in cases:
            started = time.monotonic()
            print(f'{case.__name__}:', flush=True)
            try:
                rows += case(bench, sizes)
            except (RuntimeError, TimeoutError) as error:
                # A case that fails leaves the others' figures standing: said, and in the doc.
                failed.append(case.__name__)
                print(f'  {case.__name__} FAILED: {error} (log {log_path})', flush=True)
                bench.stop_all(check=False)
            print(f'  ({time.monotonic() - started:.0f} s; load average '
                  f'{os.getloadavg()[0]:.2f})', flush=True)
    finally:
        bench.close()
    for row in rows:
        print(line(row))
    load_end = os.getloadavg()[0]
    if args.plot and not plot(args.plot, rows):
        print('no plot: matplotlib is not installed', flush=True)
    if args.doc:
        sized = ('quick sizes (--quick): figures of a check, not of the scale' if args.quick
                 else 'full sizes')
        measured = [case.__name__ for case in cases if case.__name__ not in failed]
        write_doc(args.doc, rows, (
            f"{time.strftime('%Y-%m-%d')}, commit {run.commit()}, {sized}, cases "
            f"{', '.join(measured)}"
            + (f" (failed, no figures: {', '.join(failed)})" if failed else '')
            + f', on {run.machine()}; load average {load_start:.2f} at the start, '
            f'{load_end:.2f} at the end:'))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
