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
MORAI-style lockstep with the raw services: SyncModeCmd, then Step, frame by frame.

A MORAI client ports by pointing its service names at the clock server (remap
/SyncModeCmd:=/sim_clock/sync_mode_cmd); the request and response fields are MORAI's.

    python3 morai_style.py --frames 100 --time-step-ms 10
"""

import argparse
import sys
import time

import rclpy
from sim_clock.srv import Step
from sim_clock.srv import SyncModeCmd


def call(node, client, request, timeout_sec=10.0):
    """Call a service and wait for the answer with a timeout (steady clock)."""
    deadline = time.monotonic() + timeout_sec
    while not client.service_is_ready():
        if time.monotonic() > deadline:
            raise TimeoutError(f'{client.srv_name} is not available')
        rclpy.spin_once(node, timeout_sec=0.1)
    future = client.call_async(request)
    while not future.done():
        if time.monotonic() > deadline:
            raise TimeoutError(f'no answer from {client.srv_name}')
        rclpy.spin_once(node, timeout_sec=0.1)
    return future.result()


def main(argv=None):
    """Take sync mode, step, give it back."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--server', default='/sim_clock')
    parser.add_argument('--frames', type=int, default=100)
    parser.add_argument('--time-step-ms', type=int, default=10)
    args = parser.parse_args(argv)

    rclpy.init()
    node = rclpy.create_node('morai_style_client')
    sync_mode = node.create_client(SyncModeCmd, f'{args.server}/sync_mode_cmd')
    step = node.create_client(Step, f'{args.server}/step')
    try:
        # Sync mode on: the server assigns our user_id (MORAI: the master id).
        taken = call(node, sync_mode, SyncModeCmd.Request(
            user_id='', start_sync_mode=True, time_step=args.time_step_ms))
        if not taken.result:
            print(f'sync mode refused: {taken.message} (held by {taken.user_id})')
            return 1
        print(f'sync mode on as {taken.user_id}, frame {taken.frame}, '
              f'time_step {taken.time_step} ms')
        for _ in range(args.frames):
            done = call(node, step, Step.Request(user_id=taken.user_id, steps=1))
            if not done.success:
                print(f'step refused: {done.message}')
                return 1
            # When the answer arrives, /clock already carries the new time.
        print(f'frame {done.frame} at {done.clock.sec}.{done.clock.nanosec:09d} s')
        call(node, sync_mode, SyncModeCmd.Request(
            user_id=taken.user_id, start_sync_mode=False, time_step=0))
        print('sync mode off')
        return 0
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    sys.exit(main())
