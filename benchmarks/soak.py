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
Soak: two clock servers for a given time, then RSS, CPU and missed frames.

Server A free-runs at 1 kHz (time_step 0.001, real_time_factor 1); a reliable subscriber in a
process of its own checks that its frames come without gap or repeat. Server B starts in sync
mode, held by a client that steps it in calls of 10 frames about every 10 ms; a second
subscriber process checks those frames the same way. Each server runs on a DDS domain of its
own (loopback only). Not part of the test suite:

    AMENT_PREFIX_PATH=$PWD/.venv .venv/bin/python benchmarks/soak.py --duration 600
"""

import argparse
import json
import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'test'))

from harness import ChildProcess  # noqa: E402
from harness import ServerProcess  # noqa: E402
from harness import TestClient  # noqa: E402
from sim_clock.client.domains import domain_for_run  # noqa: E402
from sim_clock.srv import Step  # noqa: E402

MS = 1_000_000
PAGE = os.sysconf('SC_PAGE_SIZE')
TICKS = os.sysconf('SC_CLK_TCK')


def rss_kib(pid: int) -> int:
    """Return a process's resident set size in KiB."""
    with open(f'/proc/{pid}/status') as status:
        for line in status:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid: int) -> float:
    """Return the user + system CPU time a process used so far, in seconds."""
    with open(f'/proc/{pid}/stat') as stat:
        fields = stat.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


# A /clock subscriber in a process of its own (KEEP_LAST 10000, reliable): counts the distinct
# frames, the frames missing between them and backward steps; prints them as JSON on request.
WATCHER = """
import json
import os
import sys
import threading
from harness import TestClient
step_ns = int(sys.argv[1])
client = TestClient(int(os.environ['ROS_DOMAIN_ID']), name=f'watcher_{os.getpid()}',
                    subscribe_clock=False)
counts = {'frames': 0, 'missed': 0, 'backwards': 0, 'last': None}


def on_clock(msg):
    sim = msg.clock.sec * 1_000_000_000 + msg.clock.nanosec
    last = counts['last']
    if sim == last:
        return
    if last is not None:
        if sim < last:
            counts['backwards'] += 1
        elif sim - last != step_ns:
            counts['missed'] += (sim - last) // step_ns - 1
    counts['frames'] += 1
    counts['last'] = sim


from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
client.node.create_subscription(Clock, '/clock', on_clock, QoSProfile(
    history=HistoryPolicy.KEEP_LAST, depth=10000, reliability=ReliabilityPolicy.RELIABLE))
wanted = threading.Event()


def read_requests():
    for _ in sys.stdin:
        wanted.set()


threading.Thread(target=read_requests, daemon=True).start()
print('ready', flush=True)
while True:
    client.executor.spin_once(timeout_sec=0.1)
    if wanted.is_set():
        wanted.clear()
        print('counts', json.dumps(counts), flush=True)
"""


def ask(watcher: ChildProcess) -> dict:
    """Return a watcher's counts so far."""
    watcher.send('report')
    return json.loads(watcher.expect('counts', timeout=60))


def main() -> int:
    """Run the soak and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--duration', type=float, default=600.0, help='seconds (600)')
    parser.add_argument('--domains', type=int, nargs=2, default=(None, None),
                        help='DDS domains of the free-run and the stepped server (default: two '
                        'that no ROS graph of this host is on); refused if a graph is on one')
    args = parser.parse_args()
    # SIGTERM ends the soak as Ctrl-C does: the servers and watchers are stopped on the way out.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    os.environ.setdefault('AMENT_PREFIX_PATH', sys.prefix)
    log_dir = tempfile.mkdtemp(prefix='sim_clock-soak-')
    free_domain, sync_domain = (domain_for_run(given) for given in args.domains)
    free = ServerProcess(free_domain, log_dir, {
        'mode': 'simulation', 'sync': False, 'time_step': 0.001, 'real_time_factor': 1.0})
    stepped = ServerProcess(sync_domain, log_dir, {'sync': True, 'time_step': 0.001})
    free_watcher = ChildProcess(free_domain, WATCHER, log_dir, args=(MS,))
    sync_watcher = ChildProcess(sync_domain, WATCHER, log_dir, args=(MS,))
    # Neither client subscribes to /clock: the watchers count the frames.
    status_client = TestClient(free_domain, name='soak_status', subscribe_clock=False)
    holder = TestClient(sync_domain, name='soak_holder', subscribe_clock=False)
    processes = (('free run 1 kHz', free), ('stepped', stepped))
    try:
        for watcher in (free_watcher, sync_watcher):
            watcher.expect('ready', timeout=60)
        assert holder.sync_mode_cmd('soak', True, 1).result
        status_client.spin_until(lambda: ask(free_watcher)['frames'] > 0, 'the free run')
        start_frame = status_client.status().frame
        start_seen = ask(free_watcher)['frames']
        start_wall = time.monotonic()
        start_cpu = {p.process.pid: cpu_seconds(p.process.pid) for _, p in processes}
        start_rss = {p.process.pid: rss_kib(p.process.pid) for _, p in processes}
        step_failures = 0
        stepped_frames = 0
        step_latencies = []
        next_report = start_wall + 60
        while time.monotonic() - start_wall < args.duration:
            sent = time.monotonic_ns()
            response = holder.call(Step, 'step', Step.Request(user_id='soak', steps=10),
                                   timeout=60)
            step_latencies.append(time.monotonic_ns() - sent)
            if response.success:
                stepped_frames += 10
            else:
                step_failures += 1
            time.sleep(0.01)  # pacing: about 1000 stepped frames per second
            if time.monotonic() >= next_report:
                next_report += 60
                free_counts, sync_counts = ask(free_watcher), ask(sync_watcher)
                print(f'{time.monotonic() - start_wall:4.0f} s: free run frames seen '
                      f'{free_counts["frames"]}, missed {free_counts["missed"]}; stepped '
                      f'{stepped_frames}, missed {sync_counts["missed"]}; RSS '
                      f'{rss_kib(free.process.pid)} / {rss_kib(stepped.process.pid)} KiB',
                      flush=True)
        wall = time.monotonic() - start_wall
        end_frame = status_client.status().frame
        end_cpu = {p.process.pid: cpu_seconds(p.process.pid) for _, p in processes}
        holder.spin_until(lambda: ask(sync_watcher)['last'] == stepped_frames * MS,
                          'the sync watcher to see the last stepped frame')
        free_counts, sync_counts = ask(free_watcher), ask(sync_watcher)
        print(f'\nsoak of {wall:.0f} s')
        for label, proc in processes:
            pid = proc.process.pid
            cpu = end_cpu[pid] - start_cpu[pid]
            print(f'  {label:14s} RSS {start_rss[pid]} -> {rss_kib(pid)} KiB, '
                  f'CPU {cpu:.1f} s ({100 * cpu / wall:.1f}% of a core)')
        print(f'  free run: {end_frame - start_frame} frames in {wall:.1f} s (wall pace '
              f'{round(wall * 1000)}); subscriber: {free_counts["frames"] - start_seen} '
              f'distinct frames, {free_counts["missed"]} missed, '
              f'{free_counts["backwards"]} backwards (whole run)')
        step_latencies.sort()
        print(f'  stepped: {stepped_frames} frames in {len(step_latencies)} calls, '
              f'{step_failures} failed, latency p50 '
              f'{step_latencies[len(step_latencies) // 2] / MS:.2f} ms, p99 '
              f'{step_latencies[int(len(step_latencies) * 0.99)] / MS:.2f} ms, max '
              f'{step_latencies[-1] / MS:.2f} ms; subscriber: {sync_counts["frames"]} '
              f'distinct frames, {sync_counts["missed"]} missed, '
              f'{sync_counts["backwards"]} backwards')
        ok = (free_counts['missed'] == sync_counts['missed'] == step_failures == 0
              and free_counts['backwards'] == sync_counts['backwards'] == 0)
        return 0 if ok else 1
    finally:
        for watcher in (free_watcher, sync_watcher):
            watcher.stop()
        for closing in (status_client, holder):
            closing.close()
        free.stop()
        stepped.stop()


if __name__ == '__main__':
    sys.exit(main())
