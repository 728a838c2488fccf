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
A node under test: fuses two topics on a simulated-time timer and publishes the result.

    fusion_node.py [--participant] [--period 0.05]

Subscribes ``/a`` and ``/b`` (std_msgs/Float64), and every ``--period`` simulated seconds
publishes on ``/fused`` (std_msgs/String) what it took since the last tick: the count and sum
of ``/a``, the count and last value of ``/b``, and the tick's time. With ``--participant`` it
takes part in the clock (the one line in ``main``): each tick then sees exactly the data
stamped up to its time, whatever the machine's load. Without it, what a tick sees depends on
when the messages and ``/clock`` happen to arrive, and on how far time went meanwhile.
"""

import argparse
import sys

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rclpy.utilities import remove_ros_args
from sim_clock.client import participant
from std_msgs.msg import Float64
from std_msgs.msg import String

#: Inputs: reliable, every message kept until taken.
INPUT_QOS = QoSProfile(history=HistoryPolicy.KEEP_ALL, depth=1,
                       reliability=ReliabilityPolicy.RELIABLE)
#: The result: reliable and transient local, so a recorder that matches late still gets all.
RESULT_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10_000,
                        reliability=ReliabilityPolicy.RELIABLE,
                        durability=DurabilityPolicy.TRANSIENT_LOCAL)


class Fusion(Node):
    """Take ``/a`` and ``/b``; each ``period`` (simulated) publish on ``/fused`` what came."""

    def __init__(self, period: float):
        super().__init__('fusion', parameter_overrides=[
            Parameter('use_sim_time', Parameter.Type.BOOL, True)])
        self._a = []
        self._b = []
        self.create_subscription(Float64, '/a', lambda msg: self._a.append(msg.data), INPUT_QOS)
        self.create_subscription(Float64, '/b', lambda msg: self._b.append(msg.data), INPUT_QOS)
        self._publisher = self.create_publisher(String, '/fused', RESULT_QOS)
        self.create_timer(period, self._tick)

    def _tick(self) -> None:
        last_b = repr(self._b[-1]) if self._b else '-'
        text = (f't={self.get_clock().now().nanoseconds} a={len(self._a)}:{sum(self._a)!r} '
                f'b={len(self._b)}:{last_b}')
        self._a.clear()
        self._b.clear()
        self._publisher.publish(String(data=text))


def main(args=None) -> int:
    """Run the node until Ctrl-C or SIGTERM, as a participant if asked."""
    argv = sys.argv if args is None else args
    parser = argparse.ArgumentParser(prog='fusion_node.py', description=__doc__.split('\n')[1])
    parser.add_argument('--participant', action='store_true',
                        help='take part in the clock (sim_clock.client.participant)')
    parser.add_argument('--period', type=float, default=0.05,
                        help='simulated seconds between results (default 0.05)')
    options = parser.parse_args(remove_ros_args(argv)[1:])
    rclpy.init(args=argv)
    node = Fusion(options.period)
    try:
        if options.participant:
            participant.spin(node, period_sec=options.period)
        else:
            rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
