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
Performance of the clock server beside bare rclpy written for the same jobs, in one run.

Every figure is measured on the installed ``clock_server`` and on a baseline (``roles.py``),
server and client in separate processes on a domain of their own, ``--repetitions`` times;
the median is quoted with min and max, and the ratio is of the medians. Each figure prints
as a line for people and as one JSON object::

    {"name": ..., "value": ..., "baseline": ..., "ratio": ..., "target": ..., "unit": ...}

Run it (set-up included) with ``scripts/run_benchmarks.sh``; ``--smoke`` is the short run
that CI makes to check that every figure is produced (its numbers mean nothing).
"""

import argparse
from dataclasses import dataclass
import json
import os
import platform
import queue
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from typing import Dict
from typing import List
from typing import Optional

from ament_index_python.packages import get_package_prefix
from roles import shared_memory_files
from sim_clock.client.domains import domain_for_run
from sim_clock.client.domains import DOMAIN_HELP
from sim_clock.node.runtime import answer_late_clients
from sim_clock.node.runtime import SAFE_TRANSPORTS
from sim_clock.node.runtime import TRANSPORTS_VARIABLE
from sim_clock.testing import parameter_arguments

ROLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'roles.py')
TIMEOUT = 60.0
#: The clock_rate_cap case: how many use_sim_time processes, and the cap.
SIM_TIME_NODES = 20
CAP_HZ = 100.0
#: The step latency cases run the server (ours or the bare one) on one core and the client on
#: another, where there are two: where the scheduler put them moved the p50 by up to 30% from
#: one run to the next on this 2-core machine.
_CPUS = sorted(os.sched_getaffinity(0))
SERVER_CPU, CLIENT_CPU = (_CPUS[0], _CPUS[1]) if len(_CPUS) >= 2 else (None, None)
CLK_TCK = os.sysconf('SC_CLK_TCK')
#: The discovery range of the UDP cases. Under LOCALHOST (every other case) rmw_fastrtps installs
#: shared memory whatever FASTDDS_BUILTIN_TRANSPORTS says; beyond it Fast DDS takes the variable,
#: and the executables set it to UDPv4 themselves (sim_clock.node.runtime.avoid_shared_memory).
UDP_RANGE = 'SUBNET'


class SharedMemoryInUse(RuntimeError):
    """A process of a UDP case uses Fast DDS shared memory: its figures would not be UDP's."""


@dataclass(frozen=True)
class Figure:
    """What one figure is and the bar it must clear."""

    name: str
    unit: str
    #: 'ratio<=' / 'ratio>=' compare the ratio to ``bar``; 'value<=' compares the value.
    rule: str
    bar: float
    about: str

    @property
    def target(self) -> str:
        kind, op = self.rule[:-2], self.rule[-2:]
        return f'{kind} {op} {self.bar:g}' + (f' {self.unit}' if kind == 'value' else '')

    def met(self, value: float, ratio: Optional[float]) -> bool:
        measured = ratio if self.rule.startswith('ratio') else value
        if measured is None:
            return False
        return measured <= self.bar if self.rule.endswith('<=') else measured >= self.bar


FIGURES = [
    Figure('step_latency_p50', 'us', 'ratio<=', 1.15,
           'one-frame ~/step until response and new /clock are in, p50'),
    Figure('step_latency_p99', 'us', 'ratio<=', 1.5,
           'one-frame ~/step until response and new /clock are in, p99'),
    Figure('step_latency_events_p50', 'us', 'ratio<=', 1.2,
           'step_latency_p50 with the client on the EventsExecutor (bare: the same executor)'),
    Figure('step_latency_single_p50', 'us', 'ratio<=', 1.1,
           'step_latency_p50 with the client on the SingleThreadedExecutor'),
    Figure('step_1000_throughput', 'frames/s', 'ratio>=', 0.7,
           'step(1000) calls back to back'),
    Figure('free_run_throughput', 'frames/s', 'ratio>=', 0.7,
           'free run at real_time_factor 0'),
    Figure('free_run_status_p99', 'us', 'value<=', 5000.0,
           '~/get_status at 100 Hz during free run (baseline: idle server), p99'),
    Figure('pacing_error_rtf1', '%', 'value<=', 0.2,
           '|simulated / (rtf x wall) - 1| over the run, 1 ms step, rtf 1'),
    Figure('pacing_error_rtf2', '%', 'value<=', 0.2,
           '|simulated / (rtf x wall) - 1| over the run, 1 ms step, rtf 2'),
    Figure('pacing_error_rtf10', '%', 'value<=', 1.0,
           '|simulated / (rtf x wall) - 1| over the run, 1 ms step, rtf 10'),
    Figure('pacing_growth_rtf1', 'pp', 'value<=', 0.01,
           'error over the run minus error over its first quarter, rtf 1'),
    Figure('pacing_growth_rtf2', 'pp', 'value<=', 0.01,
           'error over the run minus error over its first quarter, rtf 2'),
    Figure('pacing_growth_rtf10', 'pp', 'value<=', 0.01,
           'error over the run minus error over its first quarter, rtf 10'),
    Figure('publish_cpu_100hz', '% of a core', 'ratio<=', 1.2,
           'server CPU in real_time mode, publish_rate 100 Hz'),
    Figure('publish_cpu_1khz', '% of a core', 'ratio<=', 1.2,
           'server CPU in real_time mode, publish_rate 1000 Hz'),
    Figure('rss_growth', 'MiB', 'value<=', 5.0,
           'RSS growth over 10^6 free-run frames (after 10^5 to warm up)'),
    Figure('step_latency_udp_p50', 'us', 'ratio<=', 1.15,
           'step_latency_p50 with every process on UDPv4 only (what the executables choose)'),
    Figure('step_latency_udp_p99', 'us', 'ratio<=', 1.5,
           'step_latency_p99 with every process on UDPv4 only'),
    Figure('step_latency_udp_events_p50', 'us', 'ratio<=', 1.2,
           'step_latency_events_p50 with every process on UDPv4 only'),
    Figure('step_latency_udp_single_p50', 'us', 'ratio<=', 1.1,
           'step_latency_single_p50 with every process on UDPv4 only'),
    Figure('acked_step_p50', 'us', 'ratio<=', 1.5,
           'one-frame ~/step with ack_timeout 5 s and one reliable /clock reader whose process '
           "loads sim_clock's Fast DDS profile, p50 (baseline: the same with ack_timeout 0)"),
    Figure('acked_step_udp_p50', 'us', 'ratio<=', 1.5,
           'acked_step_p50 with every process on UDPv4 only'),
    Figure('acked_step_depth1_p50', 'us', 'ratio<=', 1.5,
           'acked_step_p50 with the /clock history at 1 sample '
           '(qos_overrides./clock.publisher.depth:=1; baseline: the published step at the default '
           'depth)'),
    Figure('participants_1_fps', 'frames/s', 'ratio>=', 0.9,
           'free run at rtf 0 with 1 participant that says done at once '
           '(baseline: a bare rclpy barrier: publish a Clock, wait for the dones)'),
    Figure('participants_4_fps', 'frames/s', 'ratio>=', 0.9,
           'the same with 4 participants, each in its own process'),
    Figure('sim_time_nodes_cpu_capped', '% of a core', 'ratio<=', 0.5,
           f'{SIM_TIME_NODES} use_sim_time rclpy processes (a 10 ms timer each), their CPU '
           f'summed, during free run at rtf 0 under max_clock_rate {CAP_HZ:g} Hz '
           '(baseline: the same without a cap)'),
    Figure('free_run_throughput_capped', 'frames/s', 'ratio>=', 0.9,
           f'free run at rtf 0 beside those processes, under max_clock_rate {CAP_HZ:g} Hz '
           '(baseline: the same without a cap)'),
]
FIGURES += [
    Figure('frame_events_step_p50', 'us', 'ratio<=', 1.05,
           'step_latency_p50 (client on the single-threaded executor) with the frame timeline '
           'on, its default (baseline: the same with frame_events:=0)'),
    Figure('frame_events_step_1000', 'frames/s', 'ratio>=', 0.95,
           'step_1000_throughput with the frame timeline on (baseline: frame_events:=0)'),
    Figure('frame_events_free_run', 'frames/s', 'ratio>=', 0.95,
           'free_run_throughput with the frame timeline on (baseline: frame_events:=0)'),
    Figure('frame_events_participants_1', 'frames/s', 'ratio>=', 0.95,
           'participants_1_fps with the frame timeline on (baseline: frame_events:=0)'),
]
BY_NAME = {figure.name: figure for figure in FIGURES}


@dataclass
class Settings:
    """How long and how often; the smoke run shrinks everything."""

    repetitions: int
    latency_calls: int
    throughput_calls: int
    frames: int
    pacing_s: float
    cpu_s: float
    barrier_frames: int
    sim_time_nodes: int = SIM_TIME_NODES


FULL = Settings(repetitions=3, latency_calls=2000, throughput_calls=20, frames=1_000_000,
                pacing_s=10.0, cpu_s=10.0, barrier_frames=3000)
SMOKE = Settings(repetitions=1, latency_calls=50, throughput_calls=2, frames=20_000,
                 pacing_s=0.5, cpu_s=0.5, barrier_frames=200, sim_time_nodes=2)


class Process:
    """A child process whose stdout lines arrive on a queue."""

    def __init__(self, argv: List[str], env: dict, log, udp: bool = False,
                 cpu: Optional[int] = None):
        self.argv = argv
        #: a process of a UDP case: it must not use shared memory
        self.udp = udp
        # Pinned before exec: every thread the process makes later stays on that core.
        pin = None if cpu is None else (lambda: os.sched_setaffinity(0, {cpu}))
        self.popen = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=log, text=True, preexec_fn=pin)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.popen.stdout:
            self.lines.put(line.rstrip('\n'))
        self.lines.put(None)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def expect(self, prefix: str, timeout: float = TIMEOUT) -> str:
        """Return the next line starting with ``prefix``; fail after ``timeout`` or at exit."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise RuntimeError(f'{self.name}: no {prefix!r} within {timeout} s') from None
            if line is None:
                raise RuntimeError(
                    f'{self.name}: exited ({self.popen.wait()}) before {prefix!r}')
            if line.startswith(prefix):
                return line

    def result(self, timeout: float = TIMEOUT) -> dict:
        """Return the role's result; in a UDP case, fail if it used shared memory."""
        figures = json.loads(self.expect('result', timeout).split(' ', 1)[1])
        if self.udp and figures.get('shared_memory'):
            raise SharedMemoryInUse(_offence(self, figures['shared_memory']))
        return figures

    def shared_memory(self) -> List[str]:
        """Return the Fast DDS shared-memory files the process maps or holds open now."""
        return shared_memory_files(self.pid) if self.popen.poll() is None else []

    @property
    def name(self) -> str:
        return os.path.basename(self.argv[0]) + (
            f' {self.argv[2]}' if self.argv[0] == sys.executable else '')

    def cpu_seconds(self) -> float:
        with open(f'/proc/{self.pid}/stat') as stat:
            fields = stat.read().rsplit(')', 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def memory_kib(self, key: str) -> int:
        with open(f'/proc/{self.pid}/status') as status:
            for line in status:
                if line.startswith(key + ':'):
                    return int(line.split()[1])
        raise RuntimeError(f'no {key} for {self.name}')

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGINT)
            try:
                self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


class Bench:
    """Start servers, baselines and probes on one domain; stop them all after each case."""

    def __init__(self, domain_id: int, log_path: str):
        self.env = dict(os.environ, ROS_DOMAIN_ID=str(domain_id),
                        ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
        #: UDP cases: the processes started from now on run on UDPv4 alone (see ``start``)
        self.udp = False
        self.log = open(log_path, 'w')
        self.server_executable = os.path.join(
            get_package_prefix('sim_clock'), 'lib', 'sim_clock', 'clock_server')
        self.processes: List[Process] = []

    def start(self, argv: List[str], chooses_transport: bool = False,
              cpu: Optional[int] = None, env: Optional[dict] = None) -> Process:
        """
        Start a process on the bench's domain (on core ``cpu`` alone, if given).

        In a UDP case, with discovery beyond localhost and ``FASTDDS_BUILTIN_TRANSPORTS=UDPv4``;
        a process that ``chooses_transport`` (our executables) gets no variable and picks
        UDPv4 itself, as it does by default on a network. ``env``: items of this process
        alone, over the bench's environment.
        """
        env = dict(self.env, **env) if env else self.env
        if self.udp:
            env = dict(env, ROS_AUTOMATIC_DISCOVERY_RANGE=UDP_RANGE)
            env.pop(TRANSPORTS_VARIABLE, None)
            if not chooses_transport:
                env[TRANSPORTS_VARIABLE] = SAFE_TRANSPORTS
        process = Process(argv, env, self.log, udp=self.udp, cpu=cpu)
        self.processes.append(process)
        return process

    def server(self, cpu: Optional[int] = None, env: Optional[dict] = None,
               **parameters) -> Process:
        """
        Start the clock server; it is up when a probe finds its services or /clock.

        ``env``: environment items of this process alone (over the bench's).
        """
        return self.start([self.server_executable, '--ros-args', '--log-level', 'warn']
                          + parameter_arguments(parameters), chooses_transport=True, cpu=cpu,
                          env=env)

    def role(self, role: str, *args, cpu: Optional[int] = None) -> Process:
        return self.start([sys.executable, ROLES, role, *map(str, args)], cpu=cpu)

    def ready(self, *processes: Process) -> None:
        for process in processes:
            process.expect('ready')

    def stop_all(self, check: bool = True) -> None:
        """Stop every process; first, in a UDP case, check that none uses shared memory."""
        offences = [_offence(process, files) for process in self.processes
                    if check and process.udp for files in [process.shared_memory()] if files]
        for process in reversed(self.processes):
            process.stop()
        self.processes = []
        if offences:
            raise SharedMemoryInUse('; '.join(offences))

    def close(self) -> None:
        self.stop_all(check=False)
        self.log.close()


def _offence(process: Process, files: List[str]) -> str:
    return (f'{process.name} (pid {process.pid}) of a UDP case uses Fast DDS shared memory '
            f"({', '.join(files[:3])}{' ...' if len(files) > 3 else ''}): its figures would "
            'not be UDP figures')


# -- cases: each runs once and returns {figure name: (value, baseline)} ----------------------


def step_latency(bench: Bench, settings: Settings) -> Dict[str, tuple]:
    """
    Our server and the bare one, each with the client on either executor; best of each.

    Each executor's p50 is a figure too, against the bare server on that executor. The bare
    server runs on the same executor as its client, so the floor is the fastest
    executor rclpy offers on both sides. Server and client each on a core of their own
    (``SERVER_CPU``, ``CLIENT_CPU``).
    """
    calls = ['--calls', settings.latency_calls, '--warmup', max(10, settings.latency_calls // 10)]
    best, figures = {}, {}
    for executor in ('single', 'events'):
        bench.server(sync=True, time_step=0.001, cpu=SERVER_CPU)
        ours = bench.role('step-latency', '--executor', executor, '--server', '/sim_clock',
                          *calls, cpu=CLIENT_CPU).result(TIMEOUT * 5)
        bench.stop_all()
        bench.ready(bench.role('bare-step-server', '--executor', executor, cpu=SERVER_CPU))
        bare = bench.role('step-latency', '--executor', executor, '--server', 'bare',
                          *calls, cpu=CLIENT_CPU).result(TIMEOUT * 5)
        bench.stop_all()
        for side, measured in (('ours', ours), ('bare', bare)):
            print(f'    step latency, {side}, client on {executor}: '
                  f"p50 {measured['p50_us']:.0f} us, p99 {measured['p99_us']:.0f} us",
                  flush=True)
            for key in ('p50_us', 'p99_us'):
                best[side, key] = min(best.get((side, key), float('inf')), measured[key])
        figures[f'step_latency_{executor}_p50'] = (ours['p50_us'], bare['p50_us'])
    return {'step_latency_p50': (best['ours', 'p50_us'], best['bare', 'p50_us']),
            'step_latency_p99': (best['ours', 'p99_us'], best['bare', 'p99_us']), **figures}


def throughput(bench: Bench, settings: Settings) -> Dict[str, tuple]:
    """step(1000), free run with get_status polled, and its RSS; the bare publish loop."""
    warmup = settings.frames // 10
    listener = bench.role('listener')
    bench.ready(listener)
    bench.server(sync=True, time_step=0.001)
    stepped = bench.role('step-throughput', '--calls', settings.throughput_calls,
                         '--steps', 1000).result(TIMEOUT * 5)
    # The same server idle (sync on, nobody stepping): the get_status baseline.
    idle = bench.role('status', '--calls', max(100, settings.latency_calls // 4)).result(
        TIMEOUT * 5)
    bench.stop_all()

    listener = bench.role('listener')
    bench.ready(listener)
    server = bench.server(real_time_factor=0.0, time_step=0.001)
    probe = bench.role('status', '--marks', warmup, warmup + settings.frames)
    probe.expect('mark', TIMEOUT)
    rss_start = server.memory_kib('VmRSS')
    probe.expect('mark', TIMEOUT * 10)
    rss_end = server.memory_kib('VmRSS')
    free = probe.result()
    bench.stop_all()

    listener = bench.role('listener')
    bench.ready(listener)
    loop = bench.role('bare-publish-loop', '--frames', warmup + settings.frames,
                      '--subscribers', 1).result(TIMEOUT * 10)
    bench.stop_all()
    return {
        'step_1000_throughput': (stepped['fps'], loop['fps']),
        'free_run_throughput': (free['fps'], loop['fps']),
        'free_run_status_p99': (free['p99_us'], idle['p99_us']),
        'rss_growth': ((rss_end - rss_start) / 1024,
                       (loop['rss_end_kib'] - loop['rss_start_kib']) / 1024),
    }


def pacing(bench: Bench, settings: Settings) -> Dict[str, tuple]:
    figures = {}
    for rtf in (1, 2, 10):
        errors = []
        for start in (
                lambda: bench.server(real_time_factor=float(rtf), time_step=0.001),
                lambda: bench.ready(bench.role(
                    'bare-paced-publisher', '--real-time-factor', rtf))):
            start()
            errors.append(bench.role(
                'pacing', '--real-time-factor', rtf, '--duration', settings.pacing_s,
            ).result(settings.pacing_s * 3 + TIMEOUT))
            bench.stop_all()
        ours, bare = errors
        figures[f'pacing_error_rtf{rtf}'] = (
            abs(ours['error']) * 100, abs(bare['error']) * 100)
        figures[f'pacing_growth_rtf{rtf}'] = (
            (abs(ours['error']) - abs(ours['error_quarter'])) * 100,
            (abs(bare['error']) - abs(bare['error_quarter'])) * 100)
    return figures


def publishing_cpu(bench: Bench, settings: Settings) -> Dict[str, tuple]:
    figures = {}
    for rate, name in ((100, 'publish_cpu_100hz'), (1000, 'publish_cpu_1khz')):
        shares = []
        for start in (
                lambda: bench.server(mode='real_time', publish_rate=float(rate)),
                lambda: bench.role('bare-timer-publisher', '--rate', rate)):
            listener = bench.role('listener')
            bench.ready(listener)
            publisher = start()
            # Running and matched once a pacing probe sees /clock flow; then a quiet window.
            bench.role('pacing', '--duration', 0.2).result(TIMEOUT)
            shares.append(_cpu_share(publisher, settings.cpu_s))
            bench.stop_all()
        figures[name] = tuple(shares)
    return figures


def _cpu_share(process: Process, seconds: float) -> float:
    """Percent of a core that ``process`` uses over ``seconds`` of wall time."""
    cpu0, wall0 = process.cpu_seconds(), time.monotonic()
    time.sleep(seconds)  # the measurement window itself, not a wait for an event
    return (process.cpu_seconds() - cpu0) / (time.monotonic() - wall0) * 100


def participants(bench: Bench, settings: Settings) -> Dict[str, tuple]:
    """
    Free run held by 1 and 4 participants; the bare barrier with as many, on either executor.

    The baseline is the faster bare barrier. The server waits for participants on a
    SingleThreadedExecutor (it awaits coroutine steps; doc/design.md, "Executors").
    """
    figures = {}
    frames = ['--frames', settings.barrier_frames, '--warmup', 50]
    for count in (1, 4):
        bench.server(real_time_factor=0.0, time_step=0.001, paused=True)
        ours = [bench.role('participant', *frames) for _ in range(count)]
        bench.ready(*ours)
        bench.role('call-trigger', '--name', 'resume').result(TIMEOUT)
        ours_fps = min(role.result(TIMEOUT * 10)['fps'] for role in ours)
        bench.stop_all()
        bare = {}
        for executor in ('events', 'single'):
            barrier = bench.role('bare-barrier', '--executor', executor,
                                 '--subscribers', count, *frames)
            bench.ready(*[bench.role('participant', '--server', 'bare', *frames)
                          for _ in range(count)])
            bench.ready(barrier)
            bare[executor] = barrier.result(TIMEOUT * 10)['fps']
            bench.stop_all()
        print(f'    {count} participant(s): {ours_fps:.0f} frames/s; bare barrier '
              f"{bare['events']:.0f} on the events executor, {bare['single']:.0f} on the "
              'single-threaded one', flush=True)
        figures[f'participants_{count}_fps'] = (ours_fps, max(bare.values()))
    return figures


def step_latency_udp(bench: Bench, settings: Settings) -> Dict[str, tuple]:
    """
    step_latency over UDPv4 alone, as the executables run by default (doc: Transports).

    Every process is checked: one that maps or holds Fast DDS shared memory fails the case.
    """
    bench.udp = True
    try:
        figures = step_latency(bench, settings)
    finally:
        bench.udp = False
    return {name.replace('step_latency', 'step_latency_udp'): value
            for name, value in figures.items()}


def acked_step(bench: Bench, settings: Settings) -> Dict[str, tuple]:
    """
    One-frame steps acknowledged by a reliable /clock reader, against unacknowledged.

    The reader's process loads the executables' Fast DDS profile (readers acknowledge at once);
    the same with Fast DDS's default reader (acknowledgements 5 ms after a heartbeat) is
    printed beside it. The UDP figure runs as ``step_latency_udp`` does, checked the same way.
    ``acked_step_depth1_p50``: the server's /clock history at one sample, where Fast DDS sends
    a heartbeat with every sample (doc/design.md, "/clock QoS").
    """
    calls = ['--calls', settings.latency_calls, '--warmup', max(10, settings.latency_calls // 10)]
    figures = {}
    shared = bench.env
    profiled = dict(shared)
    answer_late_clients(profiled)
    depth1 = {'qos_overrides./clock.publisher.depth': 1}
    for name, udp in (('acked_step_p50', False), ('acked_step_udp_p50', True)):
        p50 = {}
        cases = [('published', 0.0, profiled, {}), ('acknowledged', 5.0, profiled, {}),
                 ('default reader', 5.0, shared, {})]
        if not udp:
            cases.append(('depth 1', 5.0, profiled, depth1))
        for case, ack_timeout, reader_env, extra in cases:
            bench.env, bench.udp = reader_env, udp
            try:
                bench.server(sync=True, time_step=0.001, ack_timeout=ack_timeout,
                             cpu=SERVER_CPU, **extra)
                p50[case] = bench.role(
                    'step-latency', '--executor', 'events', '--server', '/sim_clock',
                    *calls, cpu=CLIENT_CPU).result(TIMEOUT * 5)['p50_us']
                bench.stop_all()
            finally:
                bench.env, bench.udp = shared, False
        print(f"    {name}: {p50['acknowledged']:.0f} us acknowledged, "
              f"{p50['published']:.0f} us not; {p50['default reader']:.0f} us acknowledged by "
              "a reader with Fast DDS's defaults", flush=True)
        figures[name] = (p50['acknowledged'], p50['published'])
        if 'depth 1' in p50:
            print(f"    acked_step_depth1_p50: {p50['depth 1']:.0f} us acknowledged with a "
                  '/clock history of 1', flush=True)
            figures['acked_step_depth1_p50'] = (p50['depth 1'], p50['published'])
    return figures


#: The slowest free run the clock rate cap's warm-up waits for, uncapped (frames/s).
SLOWEST_UNCAPPED_FPS = 500


def clock_rate_cap(bench: Bench, settings: Settings) -> Dict[str, tuple]:
    """
    Many use_sim_time processes beside free run at rtf 0, without and with max_clock_rate.

    Their CPU, summed, and the server's frame rate, both over the same window of ``cpu_s``
    wall seconds from the status probe's mark (``frames`` / 10 frames into the run).
    """
    nodes = [bench.role('sim-time-node') for _ in range(settings.sim_time_nodes)]
    bench.ready(*nodes)
    warmup = settings.frames // 10
    measured = {}
    for cap in (0.0, CAP_HZ):
        server = bench.server(real_time_factor=0.0, time_step=0.001, max_clock_rate=cap)
        probe = bench.role('status', '--marks', warmup, '--window', settings.cpu_s)
        # Uncapped, the nodes hold the server to a few thousand frames a second (the reason
        # for the cap), fewer on a busy machine: the warm-up takes what it takes.
        probe.expect('mark', max(TIMEOUT, warmup / SLOWEST_UNCAPPED_FPS))
        cpu0, wall0 = sum(node.cpu_seconds() for node in nodes), time.monotonic()
        fps = probe.result(TIMEOUT + settings.cpu_s)['fps']
        cpu = (sum(node.cpu_seconds() for node in nodes) - cpu0) / (
            time.monotonic() - wall0) * 100
        measured[cap] = (cpu, fps)
        for process in (probe, server):
            process.stop()
            bench.processes.remove(process)
        print(f'    {len(nodes)} use_sim_time processes, max_clock_rate {cap:g}: '
              f'{cpu:.0f}% of a core in all; free run {measured[cap][1]:.0f} frames/s',
              flush=True)
    bench.stop_all()
    (cpu_free, fps_free), (cpu_capped, fps_capped) = measured[0.0], measured[CAP_HZ]
    return {'sim_time_nodes_cpu_capped': (cpu_capped, cpu_free),
            'free_run_throughput_capped': (fps_capped, fps_free)}


def frame_events(bench: Bench, settings: Settings) -> Dict[str, tuple]:
    """
    Measure the frame timeline's cost: step, free-run and participant figures, on and off.

    On is its default length (10000 events); off is ``frame_events:=0``. Each pair runs back
    to back, on and off in turn, so that both see the same machine.
    """
    measured = {}
    calls = ['--calls', settings.latency_calls, '--warmup', max(10, settings.latency_calls // 10)]
    frames = ['--frames', settings.barrier_frames, '--warmup', 50]
    warmup = settings.frames // 10
    for length in (10_000, 0):
        bench.server(sync=True, time_step=0.001, frame_events=length, cpu=SERVER_CPU)
        latency = bench.role('step-latency', '--executor', 'single', '--server', '/sim_clock',
                             *calls, cpu=CLIENT_CPU).result(TIMEOUT * 5)
        bench.stop_all()
        bench.ready(bench.role('listener'))
        bench.server(sync=True, time_step=0.001, frame_events=length)
        stepped = bench.role('step-throughput', '--calls', settings.throughput_calls,
                             '--steps', 1000).result(TIMEOUT * 5)
        bench.stop_all()
        bench.ready(bench.role('listener'))
        bench.server(real_time_factor=0.0, time_step=0.001, frame_events=length)
        probe = bench.role('status', '--marks', warmup, warmup + settings.frames)
        probe.expect('mark', TIMEOUT)
        probe.expect('mark', TIMEOUT * 10)
        free = probe.result()
        bench.stop_all()
        bench.server(real_time_factor=0.0, time_step=0.001, paused=True, frame_events=length)
        participant = bench.role('participant', *frames)
        bench.ready(participant)
        bench.role('call-trigger', '--name', 'resume').result(TIMEOUT)
        held = participant.result(TIMEOUT * 10)['fps']
        bench.stop_all()
        measured[length] = (latency['p50_us'], stepped['fps'], free['fps'], held)
        print(f'    frame_events {length}: step p50 {latency["p50_us"]:.0f} us, step(1000) '
              f'{stepped["fps"]:.0f} frames/s, free run {free["fps"]:.0f} frames/s, 1 '
              f'participant {held:.0f} frames/s', flush=True)
    on, off = measured[10_000], measured[0]
    return {'frame_events_step_p50': (on[0], off[0]),
            'frame_events_step_1000': (on[1], off[1]),
            'frame_events_free_run': (on[2], off[2]),
            'frame_events_participants_1': (on[3], off[3])}


CASES = [step_latency, throughput, pacing, publishing_cpu, participants, step_latency_udp,
         acked_step, clock_rate_cap, frame_events]


# -- summary ---------------------------------------------------------------------------------


def summarize(runs: List[Dict[str, tuple]]) -> List[dict]:
    """Median, min and max over the repetitions, ratio of the medians, and the verdict."""
    rows = []
    for figure in FIGURES:
        values = [run[figure.name][0] for run in runs if figure.name in run]
        baselines = [run[figure.name][1] for run in runs if figure.name in run]
        if not values:
            continue
        value, baseline = statistics.median(values), statistics.median(baselines)
        ratio = value / baseline if baseline else None
        rows.append({
            'name': figure.name, 'value': value, 'baseline': baseline, 'ratio': ratio,
            'target': figure.target, 'unit': figure.unit, 'met': figure.met(value, ratio),
            'min': min(values), 'max': max(values),
            'baseline_min': min(baselines), 'baseline_max': max(baselines),
            'repetitions': len(values), 'about': figure.about,
        })
    return rows


def human(row: dict) -> str:
    ratio = 'n/a' if row['ratio'] is None else f"{row['ratio']:.2f}x"
    verdict = 'met' if row['met'] else 'NOT MET'
    return (f"{row['name']:22} {row['value']:12.4g} {row['unit']:12} "
            f"[{row['min']:.4g} .. {row['max']:.4g}]  baseline {row['baseline']:.4g} "
            f"[{row['baseline_min']:.4g} .. {row['baseline_max']:.4g}]  ratio {ratio}  "
            f"target {row['target']}: {verdict}")


def _number(value: Optional[float]) -> str:
    if value is None:
        return 'n/a'
    size = abs(value)
    if size >= 1000:
        return f'{value:,.0f}'
    if size >= 100:
        return f'{value:.0f}'
    if size >= 1 or size == 0:
        return f'{value:.2f}'
    return f'{value:.2g}'


def markdown(rows: List[dict]) -> List[str]:
    """Return the results as the rows of a Markdown table (the README's)."""
    lines = ['| figure | unit | sim_clock, median (min to max) | baseline, median (min to max) '
             '| ratio | target | met |', '|---|---|---|---|---|---|---|']
    for row in rows:
        ratio = 'n/a' if row['ratio'] is None else f"{row['ratio']:.2f}"
        lines.append(
            f"| `{row['name']}` | {row['unit']} | {_number(row['value'])} "
            f"({_number(row['min'])} to {_number(row['max'])}) | {_number(row['baseline'])} "
            f"({_number(row['baseline_min'])} to {_number(row['baseline_max'])}) | {ratio} "
            f"| {row['target']} | {'yes' if row['met'] else '**no**'} |")
    return lines


#: A full run's table goes in a document between these two lines, in place of the last one's.
TABLE_BEGIN = '<!-- the latest full run: written by scripts/run_benchmarks.sh -->'
TABLE_END = '<!-- end of the latest full run -->'


def commit() -> str:
    """Return the commit measured (short hash), with ' and changes' if the tree differs."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        head = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=root, text=True,
                              capture_output=True, check=True).stdout.strip()
        changed = subprocess.run(['git', 'status', '--porcelain', '--untracked-files=no'],
                                 cwd=root, text=True, capture_output=True,
                                 check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return 'unknown (not a git checkout)'
    return head + (' and changes not committed' if changed else '')


def write_doc(path: str, rows: List[dict], heading: str) -> None:
    """
    Put the table of ``rows`` under ``heading`` between the markers of the document ``path``.

    What was there (the last full run's) is replaced; the rest of the document is kept. A
    document without both markers is refused, unchanged.
    """
    put_between(path, TABLE_BEGIN, TABLE_END, '\n'.join([heading, '', *markdown(rows)]))


def put_between(path: str, begin: str, end: str, table: str) -> None:
    """Put ``table`` between the lines ``begin`` and ``end`` of ``path``; refuse without them."""
    with open(path) as document:
        text = document.read()
    if begin not in text or end not in text.split(begin, 1)[1]:
        raise SystemExit(f'{path} has no place for the table: the lines {begin!r} and '
                         f'{end!r} are missing')
    before, rest = text.split(begin, 1)
    after = rest.split(end, 1)[1]
    with open(path, 'w') as document:
        document.write(f'{before}{begin}\n{table}\n{end}{after}')


def machine() -> str:
    model = ''
    try:
        with open('/proc/cpuinfo') as cpuinfo:
            model = next(line.split(':', 1)[1].strip() for line in cpuinfo
                         if line.startswith('model name'))
    except (OSError, StopIteration):
        pass
    from importlib.metadata import distributions
    # The wheel of the ROS distribution's rclpy: ros-jazzy-rclpy, ros-kilted-rclpy, ...
    rclpy = ', '.join(sorted(
        f'{dist.metadata["Name"]} {dist.version}' for dist in distributions()
        if re.fullmatch(r'ros-[a-z]+-rclpy', dist.metadata['Name'] or ''))) or 'unknown'
    return (f'{os.cpu_count()} CPUs ({model}), Linux {platform.release()}, '
            f'Python {platform.python_version()}, {rclpy}, '
            f"RMW {os.environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp (default)')}")


def parse_arguments(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--smoke', action='store_true',
                        help='a short run that checks every figure is produced')
    parser.add_argument('--repetitions', type=int, help='runs of every case (default 3)')
    parser.add_argument('--domain', type=int,
                        help=DOMAIN_HELP)
    parser.add_argument('--only', nargs='+', choices=[case.__name__ for case in CASES],
                        help='run only these cases')
    parser.add_argument('--json', metavar='FILE', help='also write the JSON objects to FILE')
    parser.add_argument('--markdown', metavar='FILE',
                        help="also write the results as a Markdown table (the README's) to FILE")
    parser.add_argument('--doc', metavar='FILE',
                        help='also put the table, with the date, machine and commit, in FILE '
                             'between its markers (scripts/run_benchmarks.sh: '
                             'doc/performance.md, after a full run)')
    parser.add_argument('--from-json', metavar='FILE',
                        help='print the results of an earlier run (its --json file); run nothing')
    parser.add_argument('--log', metavar='FILE', default=None,
                        help='where the processes write stderr (default: a temporary file)')
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_arguments(sys.argv[1:] if argv is None else argv)
    if args.from_json and args.doc:
        raise SystemExit("--doc puts a run's own table, dated by it: not with --from-json")
    if args.from_json:
        with open(args.from_json) as earlier:
            report([json.loads(line) for line in earlier], args)
        return 0
    # How busy the machine was when the run began (1 minute's average of runnable tasks).
    args.load = os.getloadavg()[0]
    settings = SMOKE if args.smoke else FULL
    if args.repetitions:
        settings = Settings(**dict(settings.__dict__, repetitions=args.repetitions))
    domain_id = domain_for_run(args.domain)
    log_path = args.log or os.path.join(
        os.environ.get('TMPDIR', '/tmp'), f'sim_clock_benchmark_{os.getpid()}.log')
    cases = [case for case in CASES if not args.only or case.__name__ in args.only]
    print(f'machine: {machine()}')
    print(f'domain {domain_id}, {settings.repetitions} repetition(s), log {log_path}',
          flush=True)
    bench = Bench(domain_id, log_path)
    runs = []
    try:
        for repetition in range(settings.repetitions):
            run = {}
            for case in cases:
                started = time.monotonic()
                run.update(case(bench, settings))
                print(f'  run {repetition + 1}: {case.__name__} '
                      f'({time.monotonic() - started:.0f} s)', flush=True)
            runs.append(run)
    except SharedMemoryInUse as error:
        print(f'error: {error}', file=sys.stderr, flush=True)
        return 2
    finally:
        bench.close()
    report(summarize(runs), args)
    return 0


def report(rows: List[dict], args: argparse.Namespace) -> None:
    """Print every figure as a line and as JSON; write the files asked for."""
    for row in rows:
        print(human(row))
    for row in rows:
        print(json.dumps(row))
    if args.json:
        with open(args.json, 'w') as output:
            for row in rows:
                output.write(json.dumps(row) + '\n')
    if args.markdown:
        with open(args.markdown, 'w') as output:
            output.write('\n'.join(markdown(rows)) + '\n')
    if args.doc:
        repetitions = args.repetitions or FULL.repetitions
        write_doc(args.doc, rows, (
            f'{time.strftime("%Y-%m-%d")}, commit {commit()}, {repetitions} repetitions of '
            f'every case, on {machine()}; load average {args.load:.2f} at the start:'))


if __name__ == '__main__':
    sys.exit(main())
