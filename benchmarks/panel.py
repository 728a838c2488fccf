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
What ``simclock panel`` costs a lockstep run, and how soon a page sees a change.

Run after scripts/setup.sh, from the repository, with AMENT_PREFIX_PATH=.venv:
.venv/bin/python benchmarks/panel.py

A clock server (sync mode, frames of 1 ms) and a ``simclock panel`` run in processes of their
own. A page is a WebSocket client of the panel in this process, taking every update as a
browser's page does (a thread of its own).

- **Step p50, two pages beside none:** ``--calls`` steps of one frame by a client holding sync
  mode, with no page open, then with two; the pair ``--repeat`` times in turn, the medians of
  each side's p50 compared (target: at most 2% apart).
- **From a change to its sight:** with one page open, a step of one frame every 100 ms (the
  panel sends at most 20 ticks a second, so each change goes out as soon as it is seen); from
  the step's answer (the time is out on /clock) to the page receiving that time, p50 and p99
  over ``--samples`` steps. Both sides read this host's steady clock.
- **Updates while time moves:** the ticks a page receives a second in free run at 1x
  (target: at least 10).
"""

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time

import aiohttp
from ament_index_python.packages import get_package_prefix
from determinism import stop_process
import rclpy
from sim_clock.client import SimClockClient
from sim_clock.client.domains import domain_for_run
from sim_clock.client.domains import DOMAIN_HELP
from sim_clock.client.lockstep_harness import parameter_arguments


class Page(threading.Thread):
    """A page of the panel: a WebSocket taking every update; each tick's arrival kept."""

    def __init__(self, ws_url: str):
        super().__init__(daemon=True)
        self._url = ws_url
        #: clock_ns -> steady ns when a tick with that time first arrived
        self.seen = {}
        self._arrived = threading.Condition()
        self.ready = threading.Event()
        self._closing = None
        self._loop = asyncio.new_event_loop()

    def run(self) -> None:
        self._loop.run_until_complete(self._take())

    async def _take(self) -> None:
        self._closing = asyncio.Event()
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(self._url) as ws:
                self.ready.set()
                stop = asyncio.ensure_future(self._closing.wait())
                while True:
                    receive = asyncio.ensure_future(ws.receive())
                    done, _ = await asyncio.wait({receive, stop},
                                                 return_when=asyncio.FIRST_COMPLETED)
                    if stop in done:
                        receive.cancel()
                        return
                    message = receive.result()
                    if message.type != aiohttp.WSMsgType.TEXT:
                        return
                    update = json.loads(message.data)
                    if update['kind'] == 'tick':
                        with self._arrived:
                            self.seen.setdefault(int(update['clock_ns']), time.monotonic_ns())
                            self._arrived.notify_all()

    def ticks(self) -> int:
        """Return how many ticks of distinct times have arrived."""
        with self._arrived:
            return len(self.seen)

    def wait_for(self, clock_ns: int, timeout: float) -> int:
        """Return when a tick of ``clock_ns`` arrived (steady ns); fail after ``timeout`` s."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: clock_ns in self.seen, timeout):
                raise SystemExit(f'the page did not see {clock_ns} ns within {timeout} s')
            return self.seen[clock_ns]

    def close(self) -> None:
        """Close the page."""
        self._loop.call_soon_threadsafe(lambda: self._closing.set())
        self.join(timeout=10)


def open_pages(url: str, count: int) -> list:
    """Open ``count`` pages of the panel at ``url``; return them once each is connected."""
    ws_url = url.replace('http://', 'ws://').split('?')[0].rstrip('/') + '/ws'
    pages = [Page(ws_url) for _ in range(count)]
    for page in pages:
        page.start()
        if not page.ready.wait(30):
            raise SystemExit('a page did not connect to the panel within 30 s')
    return pages


def step_p50(clock: SimClockClient, calls: int) -> float:
    """Return the p50 of ``calls`` steps of one frame, in us (after 10% of warm-up)."""
    for _ in range(max(10, calls // 10)):
        clock.step(1)
    took = []
    for _ in range(calls):
        started = time.perf_counter_ns()
        clock.step(1)
        took.append(time.perf_counter_ns() - started)
    return statistics.median(took) / 1000


def change_to_sight(clock: SimClockClient, page: Page, samples: int) -> list:
    """Return the ms from each step's answer to the page seeing its time, one step per 100 ms."""
    delays = []
    for _ in range(samples):
        result = clock.step(1)
        answered = time.monotonic_ns()
        delays.append((page.wait_for(result.time_ns, 10.0) - answered) / 1e6)
        time.sleep(0.1)  # the spacing of the changes: each goes out as a tick of its own
    return delays


def percentile(values, percent: int) -> float:
    """Return the value at ``percent`` of the sorted values (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, -(-len(ordered) * percent // 100) - 1))]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--calls', type=int, default=2000, help='steps per p50 (2000)')
    parser.add_argument('--repeat', type=int, default=5, help='pairs of runs (5)')
    parser.add_argument('--samples', type=int, default=200, help='changes timed (200)')
    parser.add_argument('--domain', type=int, help=DOMAIN_HELP)
    args = parser.parse_args(argv)
    domain = domain_for_run(args.domain)
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
    lib = os.path.join(get_package_prefix('sim_clock'), 'lib', 'sim_clock')
    server = subprocess.Popen(
        [os.path.join(lib, 'clock_server'), '--ros-args',
         *parameter_arguments({'sync': True, 'time_step': 0.001}), '--log-level', 'warn'],
        env=env)
    panel = subprocess.Popen(
        [os.path.join(lib, 'simclock'), 'panel', '--port', '0', '--timeout', '30'], env=env,
        stdout=subprocess.PIPE, text=True)
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain)
    clock = SimClockClient(context=context, timeout_sec=30.0)
    pages = []
    try:
        said = panel.stdout.readline()
        found = re.search(r'http://\S+', said)
        if found is None:
            raise SystemExit(f'the panel said no URL: {said!r}')
        url = found.group(0)
        clock.acquire()
        none, two = [], []
        for _ in range(args.repeat):
            none.append(step_p50(clock, args.calls))
            pages = open_pages(url, 2)
            two.append(step_p50(clock, args.calls))
            for page in pages:
                page.close()
            pages = []
        without, beside = statistics.median(none), statistics.median(two)
        apart = abs(beside - without) / without * 100
        print(f'step p50, no page open: {without:.0f} us (runs: '
              f'{", ".join(f"{v:.0f}" for v in none)})')
        print(f'step p50, two pages open: {beside:.0f} us (runs: '
              f'{", ".join(f"{v:.0f}" for v in two)})')
        print(f'apart: {apart:.1f}% (target <= 2%: {"met" if apart <= 2 else "NOT met"})')
        pages = open_pages(url, 1)
        delays = change_to_sight(clock, pages[0], args.samples)
        print(f'from a step answered to its time on the page: p50 {percentile(delays, 50):.1f} '
              f'ms, p99 {percentile(delays, 99):.1f} ms ({len(delays)} changes)')
        clock.release()
        clock.set_sync(False)  # free run at 1x: how many updates a page gets while time moves
        before = pages[0].ticks()
        time.sleep(2.0)  # the span the updates are counted over
        counted = pages[0].ticks() - before
        print(f'updates a page received while time moved at 1x: {counted / 2.0:.1f} a second')
        return 0
    finally:
        for page in pages:
            page.close()
        clock.close()
        rclpy.try_shutdown(context=context)
        stop_process(panel)
        stop_process(server)


if __name__ == '__main__':
    sys.exit(main())
