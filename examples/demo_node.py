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
A node that lives on /clock: logs each simulated second, on a ROS-time timer.

Run it with use_sim_time (demo.launch.py does):
    python3 demo_node.py --ros-args -p use_sim_time:=true
"""

import signal
import sys

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node


class SimTimeListener(Node):
    """Log the simulated time once per simulated second."""

    def __init__(self):
        super().__init__('sim_time_listener')
        self.seconds = 0
        self.create_timer(1.0, self._on_second)  # the node's clock: /clock with use_sim_time

    def _on_second(self):
        self.seconds += 1
        now = self.get_clock().now().nanoseconds
        self.get_logger().info(f'simulated second {self.seconds}: time {now} ns')


def main(args=None):
    """Spin until Ctrl-C."""
    # Ctrl-C ends the spin through rclpy (its handler, chained to this one, shuts the context
    # down). Python's own handler would also raise KeyboardInterrupt wherever the interpreter
    # is, even in the cleanup below, and the node would exit with a traceback and code 1.
    signal.signal(signal.SIGINT, lambda signum, frame: None)
    rclpy.init(args=args)
    node = SimTimeListener()
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except RuntimeError:
        # Ctrl-C shut the context down between two rounds of the executor (rclpy raises
        # "failed to initialize wait set: the given context is not valid").
        if rclpy.ok():
            raise
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
