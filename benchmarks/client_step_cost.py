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
Per-call cost of SimClockClient.step() over many calls: it must stay flat.

rclpy's spin_until_future_complete grows slower with every call in Jazzy (rclpy#1374); the
client does not use it. This prints the median cost per call of the first and the last 1000
calls (and the ratio), for the client and, as the baseline, a bare rclpy client waiting with
spin_until_future_complete.

    .venv/bin/python benchmarks/client_step_cost.py --calls 10000
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

from ament_index_python.packages import get_package_prefix
import rclpy
from rclpy.executors import SingleThreadedExecutor
from sim_clock.client import SimClockClient
from sim_clock.client.domains import domain_for_run
from sim_clock.client.domains import DOMAIN_HELP
from sim_clock.srv import Step


def start_server(domain_id: int) -> subprocess.Popen:
    """Start a clock server in sync mode on ``domain_id``."""
    executable = os.path.join(get_package_prefix('sim_clock'), 'lib', 'sim_clock', 'clock_server')
    return subprocess.Popen(
        [executable, '--ros-args', '-p', 'sync:=true', '-p', 'time_step:=0.001'],
        env=dict(os.environ, ROS_DOMAIN_ID=str(domain_id),
                 ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST'),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def client_costs(context, calls: int) -> list:
    """Time ``calls`` one-frame steps through SimClockClient, in seconds each."""
    client = SimClockClient(context=context, timeout_sec=30.0)
    client.status()  # discovery done before timing
    costs = []
    for _ in range(calls):
        start = time.perf_counter()
        client.step()
        costs.append(time.perf_counter() - start)
    client.close()
    return costs


def baseline_costs(context, calls: int) -> list:
    """Time ``calls`` one-frame steps with a bare client and spin_until_future_complete."""
    node = rclpy.create_node('bare_step_client', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    step = node.create_client(Step, '/sim_clock/step')
    step.wait_for_service(timeout_sec=30.0)
    costs = []
    for _ in range(calls):
        start = time.perf_counter()
        future = step.call_async(Step.Request(steps=1))
        executor.spin_until_future_complete(future, timeout_sec=30.0)
        assert future.result().success
        costs.append(time.perf_counter() - start)
    executor.shutdown()
    node.destroy_node()
    return costs


def report(name: str, costs: list, window: int) -> dict:
    """Print and return the first and last window's median per-call cost."""
    first = statistics.median(costs[:window]) * 1e6
    last = statistics.median(costs[-window:]) * 1e6
    figure = {'name': name, 'calls': len(costs), 'first_us': round(first, 1),
              'last_us': round(last, 1), 'last_over_first': round(last / first, 3),
              'unit': 'us per call (median of a window)'}
    print(f'{name}: {len(costs)} calls, median per call {first:.0f} us over the first '
          f'{window}, {last:.0f} us over the last {window} (x{last / first:.2f})')
    print(json.dumps(figure))
    return figure


def main(argv=None) -> int:
    """Run both measurements against one server."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--calls', type=int, default=10_000)
    parser.add_argument(
        '--baseline-calls', type=int, default=1000,
        help='calls for the baseline, whose cost grows (default: %(default)s)')
    parser.add_argument('--domain', type=int, help=DOMAIN_HELP)
    args = parser.parse_args(argv)
    window = max(1, min(1000, args.calls // 10))
    # A domain of its own: on another graph's, that graph's clock server would answer too.
    domain_id = domain_for_run(args.domain)
    server = start_server(domain_id)
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain_id)
    try:
        report('SimClockClient.step', client_costs(context, args.calls), window)
        baseline_calls = min(args.calls, args.baseline_calls)
        report('baseline spin_until_future_complete', baseline_costs(context, baseline_calls),
               max(1, min(window, baseline_calls // 10)))
    finally:
        rclpy.try_shutdown(context=context)
        server.send_signal(signal.SIGINT)
        server.wait(30)
    return 0


if __name__ == '__main__':
    sys.exit(main())
