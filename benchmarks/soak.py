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

Server A free-runs at 1 kHz (time_step 0.001, real_time_factor 1); a reliable subscriber
checks that its frames come without gap or repeat. Server B starts in sync mode, held by a client
that steps it in calls of 10 frames; a second subscriber checks those frames the same way.
Each server runs on a DDS domain of its own (loopback only). Not part of the test suite:

    AMENT_PREFIX_PATH=$PWD/.venv .venv/bin/python benchmarks/soak.py --duration 600
"""

import argparse
import os
import sys
import tempfile
import threading
import time

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rosgraph_msgs.msg import Clock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'test'))

from harness import NS  # noqa: E402
from harness import ServerProcess  # noqa: E402
from harness import stamp_ns  # noqa: E402
from harness import TestClient  # noqa: E402

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


class FrameWatcher:
    """A /clock subscriber in a thread of its own: counts frames, gaps and repeats."""

    def __init__(self, domain_id: int, name: str, step_ns: int):
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10_000,
                         reliability=ReliabilityPolicy.RELIABLE)
        self.node.create_subscription(Clock, '/clock', self._on_clock, qos)
        self.step_ns = step_ns
        self.last = None
        self.frames = 0
        self.missed = 0
        self.backwards = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin)
        self._thread.start()

    def _spin(self) -> None:
        while not self._stop.is_set():
            self.executor.spin_once(timeout_sec=0.1)

    def _on_clock(self, msg) -> None:
        sim = msg.clock.sec * NS + msg.clock.nanosec
        if self.last is not None and sim == self.last:
            return  # idle republishing of the same time, not a new frame
        if self.last is not None:
            if sim < self.last:
                self.backwards += 1
            elif sim - self.last != self.step_ns:
                self.missed += (sim - self.last) // self.step_ns - 1
        self.frames += 1
        self.last = sim

    def close(self) -> None:
        """Stop spinning and shut the node down."""
        self._stop.set()
        self._thread.join()
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


def main() -> int:
    """Run the soak and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--duration', type=float, default=600.0, help='seconds (600)')
    parser.add_argument('--domains', type=int, nargs=2, default=(201, 202),
                        help='DDS domains of the free-run and the stepped server')
    args = parser.parse_args()
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    os.environ.setdefault('AMENT_PREFIX_PATH', sys.prefix)
    log_dir = tempfile.mkdtemp(prefix='sim_clock-soak-')
    free_domain, sync_domain = args.domains
    free = ServerProcess(free_domain, log_dir, {
        'mode': 'simulation', 'sync': False, 'time_step': 0.001, 'real_time_factor': 1.0})
    stepped = ServerProcess(sync_domain, log_dir, {'sync': True, 'time_step': 0.001})
    free_watcher = FrameWatcher(free_domain, 'soak_free_watcher', MS)
    sync_watcher = FrameWatcher(sync_domain, 'soak_sync_watcher', MS)
    status_client = TestClient(free_domain, name='soak_status')
    holder = TestClient(sync_domain, name='soak_holder')
    holder.clocks = _Discard()  # the sync watcher counts the frames
    status_client.clocks = _Discard()
    processes = (('free run 1 kHz', free), ('stepped', stepped))
    try:
        assert holder.sync_mode_cmd('soak', True, 1).result
        status_client.spin_until(lambda: free_watcher.frames > 0, 'the free run')
        start_frame = status_client.status().frame
        start_seen = free_watcher.frames
        start_wall = time.monotonic()
        start_cpu = {p.process.pid: cpu_seconds(p.process.pid) for _, p in processes}
        start_rss = {p.process.pid: rss_kib(p.process.pid) for _, p in processes}
        step_failures = 0
        stepped_frames = 0
        next_report = start_wall + 60
        while time.monotonic() - start_wall < args.duration:
            response = holder.step('soak', 10)
            if response.success:
                stepped_frames += 10
            else:
                step_failures += 1
            time.sleep(0.01)  # pacing: about 1000 stepped frames per second
            if time.monotonic() >= next_report:
                next_report += 60
                print(f'{time.monotonic() - start_wall:4.0f} s: free run frames seen '
                      f'{free_watcher.frames}, missed {free_watcher.missed}; stepped '
                      f'{stepped_frames}, missed {sync_watcher.missed}; RSS '
                      f'{rss_kib(free.process.pid)} / {rss_kib(stepped.process.pid)} KiB',
                      flush=True)
        wall = time.monotonic() - start_wall
        end_frame = status_client.status().frame
        end_cpu = {p.process.pid: cpu_seconds(p.process.pid) for _, p in processes}
        holder.spin_until(lambda: sync_watcher.last == stepped_frames * MS,
                          'the sync watcher to see the last stepped frame')
        print(f'\nsoak of {wall:.0f} s')
        for label, proc in processes:
            pid = proc.process.pid
            cpu = end_cpu[pid] - start_cpu[pid]
            print(f'  {label:14s} RSS {start_rss[pid]} -> {rss_kib(pid)} KiB, '
                  f'CPU {cpu:.1f} s ({100 * cpu / wall:.1f}% of a core)')
        print(f'  free run: {end_frame - start_frame} frames in {wall:.1f} s (wall pace: '
              f'{round(wall * 1000)}); subscriber: {free_watcher.frames - start_seen} distinct '
              f'frames, {free_watcher.missed} missed, {free_watcher.backwards} backwards (whole run)')
        print(f'  stepped: {stepped_frames} frames in {stepped_frames // 10} calls, '
              f'{step_failures} failed; subscriber: {sync_watcher.frames} distinct frames, '
              f'{sync_watcher.missed} missed, {sync_watcher.backwards} backwards')
        ok = (free_watcher.missed == sync_watcher.missed == step_failures == 0
              and free_watcher.backwards == sync_watcher.backwards == 0)
        return 0 if ok else 1
    finally:
        for closing in (free_watcher, sync_watcher, status_client, holder):
            closing.close()
        free.stop()
        stepped.stop()


class _Discard(list):
    """A list that keeps nothing (the TestClients' own /clock records are not needed)."""

    def append(self, item) -> None:
        pass


if __name__ == '__main__':
    sys.exit(main())
