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
Step latency with and without acknowledgements (ack_timeout), one reliable reader.

Run after scripts/setup.sh, from the repository, with AMENT_PREFIX_PATH=.venv and
ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST: .venv/bin/python benchmarks/acked_step.py

Prints the p50 and p99 of one-frame ~/step calls against a server with ack_timeout 0 and 5 s,
with this process's node subscribed to /clock (reliable, keep last 1000), and their ratio.
"""

import argparse
import os
import signal
import subprocess
import sys
import time

from ament_index_python.packages import get_package_prefix
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sim_clock.client.domains import domain_for_run
from sim_clock.client.domains import DOMAIN_HELP
from sim_clock.client.lockstep_harness import parameter_arguments
from sim_clock.srv import Step
from sim_clock.wire.names import SERVICE_QOS


def measure(ack_timeout: float, calls: int, domain: int) -> list:
    """Return the latencies (s) of ``calls`` one-frame steps against a fresh server."""
    executable = os.path.join(get_package_prefix('sim_clock'), 'lib', 'sim_clock',
                              'clock_server')
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
    server = subprocess.Popen(
        [executable, '--ros-args', *parameter_arguments(
            {'sync': True, 'time_step': 0.001, 'ack_timeout': ack_timeout}),
         '--log-level', 'warn'], env=env)
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain)
    node = rclpy.create_node('acked_step_probe', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    seen = []
    node.create_subscription(Clock, '/clock', seen.append,
                             QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
    client = node.create_client(Step, '/sim_clock/step', qos_profile=SERVICE_QOS)
    try:
        while not client.service_is_ready() or not seen:
            executor.spin_once(timeout_sec=0.1)
        latencies = []
        for _ in range(calls + 20):
            started = time.perf_counter()
            future = client.call_async(Step.Request(steps=1))
            while not future.done():
                executor.spin_once(timeout_sec=1.0)
            latencies.append(time.perf_counter() - started)
        return latencies[20:]
    finally:
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        server.send_signal(signal.SIGINT)
        server.wait(10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--calls', type=int, default=200)
    parser.add_argument('--domain', type=int, help=DOMAIN_HELP)
    args = parser.parse_args()
    domain = domain_for_run(args.domain)
    figures = {}
    for ack_timeout in (0.0, 5.0):
        latencies = sorted(measure(ack_timeout, args.calls, domain))
        figures[ack_timeout] = (latencies[len(latencies) // 2],
                                latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))])
        print(f'ack_timeout {ack_timeout:g} s: step p50 {figures[ack_timeout][0] * 1e6:.0f} us, '
              f'p99 {figures[ack_timeout][1] * 1e6:.0f} us', flush=True)
    ratio = figures[5.0][0] / figures[0.0][0]
    print(f'acknowledged / published step p50: {ratio:.2f}x (target <= 1.5x: '
          f'{"met" if ratio <= 1.5 else "NOT met"})')
    return 0


if __name__ == '__main__':
    sys.exit(main())
