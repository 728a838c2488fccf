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
CARLA-style synchronous mode: fixed delta seconds, then tick() in a loop.

The CARLA calls and their sim_clock counterparts:

    settings.synchronous_mode = True          client.acquire(time_step=0.05)
    settings.fixed_delta_seconds = 0.05
    world.apply_settings(settings)
    frame = world.tick()                      frame = client.step().frame
    (restore asynchronous mode)               leaving `with client.sync_mode(...)` releases

    python3 carla_style.py --ticks 200 --fixed-delta 0.05
"""

import argparse
import sys

import rclpy
from sim_clock.client import SimClockClient


def main(argv=None):
    """Tick the clock server like a CARLA world in synchronous mode."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--server', default='/sim_clock')
    parser.add_argument('--ticks', type=int, default=200)
    parser.add_argument('--fixed-delta', type=float, default=0.05)
    args = parser.parse_args(argv)

    rclpy.init()
    try:
        # sync_mode() takes sync mode with the fixed delta; its end gives it back.
        with SimClockClient(server=args.server, timeout_sec=10.0) as world, \
                world.sync_mode(time_step=args.fixed_delta):
            for _ in range(args.ticks):
                result = world.step()  # frame = world.tick()
            print(f'{args.ticks} ticks: frame {result.frame}, '
                  f'time {result.time_ns} ns (epoch {result.epoch})')
        return 0
    finally:
        rclpy.try_shutdown()


if __name__ == '__main__':
    sys.exit(main())
