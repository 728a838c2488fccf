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
A node's publish-to-take latency under the lockstep layer with no server, beside without it.

Run after scripts/setup.sh, from the repository, with AMENT_PREFIX_PATH=.venv:

    .venv/bin/python benchmarks/layer_latency.py --turns 3 --messages 3000

Each turn starts two plain rclpy processes with ``use_sim_time`` and no clock server on the
domain: a talker that, once its writer has matched, publishes the steady clock
(``CLOCK_MONOTONIC``, one clock for every process of the host) on /latency every 2 ms of wall
time until the listener has left, and a listener that takes each message on ``rclpy.spin``
and keeps the steady clock at its callback minus the one in the message. Turns alternate
without the layer and with both processes under it (``lib/sim_clock/lockstep``: its agent
started by the /clock subscription of ``use_sim_time``, looking for a server that never
comes), so that a machine's drift touches both alike. Prints each turn's p50 and p90 in us,
then the median p50 of each side and their ratio (the layer's target: within 2 %,
doc/lockstep-layer.md).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

from ament_index_python.packages import get_package_prefix
from sim_clock.client.domains import domain_for_run
from sim_clock.client.domains import DOMAIN_HELP

#: The messages before these many are not kept: discovery, the first takes, caches warming.
WARM_UP = 300

#: How long the talker may take to see that the listener has left (it then ends by itself).
TALKER_END_S = 10.0

#: The two processes, by role (argv[1]); argv[2] how many messages the listener keeps, after
#: argv[3] not kept; argv[4] the turn's topic (a talker that matched a listener of the turn
#: before, still leaving the graph, took its leaving for its own listener's, and ended).
NODE = """
import json
import sys
import time

import rclpy
from rclpy.clock import Clock
from rclpy.clock import ClockType
from rclpy.executors import ExternalShutdownException
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from std_msgs.msg import String

role, count, warm_up, topic = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rclpy.init()
node = rclpy.create_node(f'latency_{role}',
                         parameter_overrides=[Parameter('use_sim_time', value=True)])
qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
steady = Clock(clock_type=ClockType.STEADY_TIME)
if role == 'talker':
    publisher = node.create_publisher(String, topic, qos)
    matched = [False]

    def send():
        if publisher.get_subscription_count() >= 1:
            matched[0] = True
            publisher.publish(String(data=str(time.monotonic_ns())))
        elif matched[0]:
            raise SystemExit(0)  # the listener has kept its messages and left
    node.create_timer(0.002, send, clock=steady)
else:
    latencies = []

    def take(msg):
        latencies.append(time.monotonic_ns() - int(msg.data))
        if len(latencies) == warm_up + count:
            kept = sorted(latencies[warm_up:])
            print(json.dumps({'p50_us': kept[len(kept) // 2] / 1000,
                              'p90_us': kept[len(kept) * 9 // 10] / 1000}), flush=True)
            raise SystemExit(0)
    node.create_subscription(String, topic, take, qos)
try:
    rclpy.spin(node)
except (KeyboardInterrupt, ExternalShutdownException, SystemExit):
    pass
node.destroy_node()
rclpy.try_shutdown()
"""


def turn(domain_id: int, messages: int, layer: bool, topic: str) -> dict:
    """Run the talker and the listener once on ``topic``; return the listener's p50 and p90."""
    lockstep = os.path.join(get_package_prefix('sim_clock'), 'lib', 'sim_clock', 'lockstep')
    prefix = [lockstep] if layer else []
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain_id),
               ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
    argv = [str(messages), str(WARM_UP), topic]
    listener = subprocess.Popen([*prefix, sys.executable, '-c', NODE, 'listener', *argv],
                                env=env, stdout=subprocess.PIPE, text=True)
    talker = subprocess.Popen([*prefix, sys.executable, '-c', NODE, 'talker', *argv], env=env,
                              stdout=subprocess.DEVNULL)
    try:
        out, _ = listener.communicate(timeout=120 + messages * 0.01)
        try:
            talker.wait(TALKER_END_S)  # it ends once the listener has left the graph
        except subprocess.TimeoutExpired:
            pass  # stopped below
    finally:
        if talker.poll() is None:
            talker.terminate()
            talker.wait(30)
        if listener.poll() is None:
            listener.kill()
    if listener.returncode != 0 or not out.strip():
        raise RuntimeError(f'the listener ended with {listener.returncode} and no figures')
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> int:
    """Alternate turns without and with the layer; print each and the medians side by side."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--turns', type=int, default=3, help='turns on each side')
    parser.add_argument('--messages', type=int, default=3000,
                        help='messages kept a turn, after the warm-up (default: %(default)s)')
    parser.add_argument('--domain', type=int, help=DOMAIN_HELP)
    args = parser.parse_args(argv)
    # A domain of its own: no clock server of another graph may answer the layer's agent.
    domain_id = domain_for_run(args.domain)
    p50 = {False: [], True: []}
    for k in range(args.turns):
        for layer in (False, True):
            figures = turn(domain_id, args.messages, layer,
                           f'/latency/turn_{k + 1}_{"layer" if layer else "bare"}')
            p50[layer].append(figures['p50_us'])
            name = 'under the layer, no server' if layer else 'without the layer'
            print(f'turn {k + 1} {name}: p50 {figures["p50_us"]:.1f} us, '
                  f'p90 {figures["p90_us"]:.1f} us', flush=True)
    without, under = statistics.median(p50[False]), statistics.median(p50[True])
    print(f'publish-to-take p50, median of {args.turns} turns of {args.messages} messages: '
          f'without the layer {without:.1f} us | under the layer, no server {under:.1f} us '
          f'| ratio {under / without:.3f}')
    print(json.dumps({'name': 'publish-to-take p50 under the lockstep layer, no server',
                      'without_us': round(without, 1), 'under_us': round(under, 1),
                      'ratio': round(under / without, 3), 'turns': args.turns,
                      'messages': args.messages}))
    return 0


if __name__ == '__main__':
    sys.exit(main())
