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
Frames per second with one output gate against a bare rclpy loop doing the same job.

Run after scripts/setup.sh, from the repository, with AMENT_PREFIX_PATH=.venv:
.venv/bin/python benchmarks/gated_frames.py

The node under test is the same plain rclpy node in its own process for both (use_sim_time, a
timer of one frame, 10 ms, that publishes std_msgs/String on /cmd: it answers every frame).
sim_clock: sync mode, ``output_gates: /cmd`` (every frame gated), steps of ``--frames`` frames.
Bare: one rclpy node publishes a Clock, waits for the node's /cmd (spin_once), publishes the
next; on the EventsExecutor where rclpy has it and on the SingleThreadedExecutor. Prints each
in frames/s (medians of ``--repeat``) and the ratio to the faster bare loop (target >= 0.77).
"""

import argparse
import os
import subprocess
import sys
import time

from ament_index_python.packages import get_package_prefix
from determinism import stop_process
import rclpy
from rclpy.executors import SingleThreadedExecutor
try:
    from rclpy.experimental import EventsExecutor
except ImportError:  # not in this rclpy
    EventsExecutor = None
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sim_clock.client.domains import domain_for_run
from sim_clock.client.domains import DOMAIN_HELP
from sim_clock.client.lockstep_harness import parameter_arguments
from sim_clock.srv import Step
from sim_clock.wire.names import CLOCK_QOS
from sim_clock.wire.names import SERVICE_QOS
from std_msgs.msg import String

TIME_STEP_NS = 10_000_000
#: The node under test: its timer fires at each frame and publishes on /cmd.
NODE = """
import rclpy
from rclpy.parameter import Parameter
from std_msgs.msg import String
rclpy.init()
node = rclpy.create_node('gated_node', parameter_overrides=[Parameter('use_sim_time', value=True)])
publisher = node.create_publisher(String, '/cmd', 10)
message = String(data='cmd')
node.create_timer(0.01, lambda: publisher.publish(message))
try:
    rclpy.spin(node)
except KeyboardInterrupt:
    pass
rclpy.try_shutdown()
"""


def _start(args, env):
    return subprocess.Popen(args, env=env)


def _probe(domain: int, name: str, executor_class=SingleThreadedExecutor):
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain)
    node = rclpy.create_node(name, context=context)
    executor = executor_class(context=context)
    executor.add_node(node)
    return context, node, executor


def _spin_until(executor, condition, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f'timed out after {timeout} s waiting for {what}')
        executor.spin_once(timeout_sec=0.05)


def measure_sim_clock(frames: int, steps: int, env: dict, domain: int) -> float:
    """Return frames/s of ``steps`` steps of ``frames`` frames, every frame gated by /cmd."""
    server = _start([os.path.join(get_package_prefix('sim_clock'), 'lib', 'sim_clock',
                                  'clock_server'), '--ros-args', *parameter_arguments(
        {'sync': True, 'time_step': TIME_STEP_NS / 1e9, 'output_gates': '/cmd:10'}),
        '--log-level', 'warn'], env)
    node_process = _start([sys.executable, '-c', NODE], env)
    context, node, executor = _probe(domain, 'gated_frames_probe')
    client = node.create_client(Step, '/sim_clock/step', qos_profile=SERVICE_QOS)
    try:
        _spin_until(executor, client.service_is_ready, 'the server')
        _spin_until(executor, lambda: node.count_subscribers('/cmd') >= 1,
                    'the server subscribing /cmd')
        _spin_until(executor, lambda: node.count_subscribers('/clock') >= 1,
                    'the node subscribing /clock')
        elapsed = 0.0
        for call in range(steps + 1):
            started = time.perf_counter()
            future = client.call_async(Step.Request(steps=frames))
            _spin_until(executor, future.done, 'a step', timeout=60.0)
            if not future.result().success:
                raise SystemExit(f'step failed: {future.result().message}')
            if call:  # the first warms up
                elapsed += time.perf_counter() - started
        return frames * steps / elapsed
    finally:
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        stop_process(node_process)
        stop_process(server)


def measure_bare(frames: int, steps: int, env: dict, domain: int,
                 executor_class=SingleThreadedExecutor) -> float:
    """Return frames/s of a bare rclpy loop: publish a Clock, wait for /cmd, again."""
    node_process = _start([sys.executable, '-c', NODE], env)
    context, node, executor = _probe(domain, 'bare_gate_loop', executor_class)
    clock = node.create_publisher(Clock, '/clock', CLOCK_QOS)
    received = []
    node.create_subscription(String, '/cmd', received.append,
                             QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
    message = Clock()
    time_ns = 0

    def frame(timeout: float = 10.0) -> None:
        nonlocal time_ns
        time_ns += TIME_STEP_NS
        message.clock.sec, message.clock.nanosec = divmod(time_ns, 1_000_000_000)
        count = len(received)
        clock.publish(message)
        _spin_until(executor, lambda: len(received) > count, f'/cmd at {time_ns} ns', timeout)
    try:
        _spin_until(executor, lambda: node.count_publishers('/cmd') >= 1
                    and clock.get_subscription_count() >= 1, 'the node')
        # Until the node's writer has matched this reader an output can be lost: go on then.
        deadline = time.monotonic() + 30.0
        while not received:
            try:
                frame(timeout=0.5)
            except SystemExit:
                if time.monotonic() > deadline:
                    raise
        for _ in range(frames):  # warm-up
            frame()
        started = time.perf_counter()
        for _ in range(frames * steps):
            frame()
        return frames * steps / (time.perf_counter() - started)
    finally:
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        stop_process(node_process)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--frames', type=int, default=500, help='frames per step')
    parser.add_argument('--steps', type=int, default=4, help='steps measured')
    parser.add_argument('--repeat', type=int, default=3,
                        help='measurements of each, alternated; the medians are compared')
    parser.add_argument('--domain', type=int, help=DOMAIN_HELP)
    args = parser.parse_args()
    # The domain given, for every measurement in turn (each ends its processes with SIGINT,
    # so they leave the graph); else a fresh one each.
    given = None if args.domain is None else domain_for_run(args.domain)
    cases = {'sim_clock, one gated topic': measure_sim_clock,
             'bare rclpy loop, single-threaded executor': measure_bare}
    if EventsExecutor is not None:
        cases['bare rclpy loop, events executor'] = (
            lambda *arguments: measure_bare(*arguments, executor_class=EventsExecutor))
    figures = {name: [] for name in cases}
    for repetition in range(args.repeat):
        for offset, (name, measure) in enumerate(cases.items()):
            domain = given if given is not None else domain_for_run()
            env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
            figures[name].append(measure(args.frames, args.steps, env, domain))
    medians = {}
    for name, values in figures.items():
        medians[name] = sorted(values)[len(values) // 2]
        runs = ', '.join(f'{value:.0f}' for value in values)
        print(f'{name}: {medians[name]:.0f} frames/s (runs: {runs})', flush=True)
    gated = medians.pop('sim_clock, one gated topic')
    ratio = gated / max(medians.values())
    print(f'gated / the faster bare loop: {ratio:.2f}x (target >= 0.77x: '
          f'{"met" if ratio >= 0.77 else "NOT met"})')
    return 0


if __name__ == '__main__':
    sys.exit(main())
