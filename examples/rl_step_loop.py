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
A reinforcement-learning style loop: env.reset(), then env.step(action) until done.

The environment advances simulated time by a fixed number of frames per action and observes a
node under test that lives on /clock (here, a toy integrator driven by the action). Each
step() returns only after the clock server published the new time and the node ran its
callbacks for it, so observations are never stale.

    python3 rl_step_loop.py --episodes 2 --horizon 50
"""

import argparse
import sys
import time

import rclpy
from rclpy.parameter import Parameter
from sim_clock.client import SimClockClient


class Integrator:
    """A toy plant on simulated time: integrates velocity on a 10 ms sim-time timer."""

    def __init__(self, node):
        self.node = node
        self.timer = None
        self.reset()

    def reset(self):
        """Start again at time zero."""
        self.position = 0.0
        self.velocity = 0.0
        self.ticks = 0
        self._last_ns = 0
        # A reset moves time backwards; a timer made before it would wait for the old time,
        # so the plant makes a new one (as TF clears its buffer on a backward jump).
        if self.timer is not None:
            self.node.destroy_timer(self.timer)
        self.timer = self.node.create_timer(0.01, self._on_timer)  # ROS time: runs on /clock

    def _on_timer(self):
        now_ns = self.node.get_clock().now().nanoseconds
        if now_ns > self._last_ns:
            self.position += self.velocity * (now_ns - self._last_ns) / 1e9
        self._last_ns = now_ns
        self.ticks += 1


class ClockEnv:
    """A minimal gym-like environment on a sim_clock server."""

    def __init__(self, client, node, executor, frames_per_action=10, horizon=50):
        self.client = client
        self.node = node
        self.executor = executor
        self.plant = Integrator(node)
        self.frames_per_action = frames_per_action
        self.horizon = horizon
        self.steps = 0

    def reset(self):
        """Start an episode: time back to zero (announced as a new epoch)."""
        self.client.reset()
        self._settle(lambda now: now == 0)
        self.plant.reset()
        self.steps = 0
        return self.plant.position

    def step(self, action):
        """Apply the action for frames_per_action frames; return (obs, reward, done)."""
        self.plant.velocity = action
        result = self.client.step(self.frames_per_action)
        self._settle(lambda now: now >= result.time_ns)
        self.steps += 1
        reward = -abs(1.0 - self.plant.position)
        return self.plant.position, reward, self.steps >= self.horizon

    def _settle(self, reached, timeout_sec=10.0):
        """Spin until the node's clock satisfies ``reached``, then run what became due."""
        deadline = time.monotonic() + timeout_sec
        while not reached(self.node.get_clock().now().nanoseconds):
            if time.monotonic() > deadline:
                raise TimeoutError('the node did not receive the new time')
            self.executor.spin_once(timeout_sec=0.1)
        while True:
            try:
                handler, _, _ = self.executor.wait_for_ready_callbacks(timeout_sec=0)
            except rclpy.executors.TimeoutException:
                return
            handler()


def main(argv=None):
    """Run a few episodes of a fixed policy."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--server', default='/sim_clock')
    parser.add_argument('--episodes', type=int, default=2)
    parser.add_argument('--horizon', type=int, default=50)
    args = parser.parse_args(argv)

    rclpy.init()
    node = rclpy.create_node(
        'rl_plant', parameter_overrides=[Parameter('use_sim_time', value=True)])
    executor = rclpy.executors.SingleThreadedExecutor()
    executor.add_node(node)
    try:
        with SimClockClient(node, server=args.server, timeout_sec=10.0) as client, \
                client.sync_mode(time_step=0.01):
            env = ClockEnv(client, node, executor, horizon=args.horizon)
            for episode in range(args.episodes):
                env.reset()
                total, done = 0.0, False
                while not done:
                    position, reward, done = env.step(action=1.0)
                    total += reward
                print(f'episode {episode}: final position {position:.3f}, '
                      f'return {total:.3f}, plant ticks {env.plant.ticks}')
        return 0
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    sys.exit(main())
