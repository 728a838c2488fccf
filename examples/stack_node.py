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
One node of a small stack under test, each in a process of its own (doc/frames.md).

    stack_node.py ROLE [--mode deterministic|next_frame|participant|plain] [--readers TOPIC=N ...]

perception (a 20 ms timer; takes the bag's ``/chatter``) -> ``/stage1`` -> planning (answers
each at once) -> ``/stage2``; control takes ``/stage1`` and ``/stage2`` (fan-in) and, on a
20 ms timer, publishes ``/result`` and ``/ping``, which planning answers at once on ``/pong``,
which control takes (a cycle). ``loop_a`` and ``loop_b`` answer each other at once, for ever
(a cycle that never goes quiet). Every message is ``<role>@<clock ns>|<payload>``; for each
message it processes the node prints ``got <topic> <its clock> <sender's clock> <data>``
(sender's clock -1: the bag's data), for each it publishes ``sent <topic> <its clock>``,
``joined`` once it runs, and ``matched`` once each of its
writers named by ``--readers`` has matched that many readers (a message sent before its reader
matched a writer is lost: step the stack only then).

``--mode deterministic`` (default): a deterministic participant, in rounds; ``next_frame``: one
that takes what was published during a frame at the next; ``participant``: a participant of
period 20 ms, without rounds; ``plain``: ``rclpy.spin``, nothing holds the clock.
"""

import argparse
import sys
import time

import rclpy
from rclpy.clock import Clock
from rclpy.clock import ClockType
from rclpy.executors import ExternalShutdownException
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from sim_clock.client.participant import Participant
from std_msgs.msg import String

QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
PERIOD_S = 0.02


class StackNode:
    """The node of one role; see the module's docstring."""

    def __init__(self, role: str):
        self.role = role
        self.node = node = rclpy.create_node(
            role, parameter_overrides=[Parameter('use_sim_time', value=True)])
        self._publishers = {}
        self._inbox = []
        if role == 'perception':
            self._publishers_for('/stage1')
            node.create_subscription(String, '/chatter', self._taken('/chatter', keep=True), QOS)
            node.create_timer(PERIOD_S, lambda: self._flush('/stage1', ','))
        elif role == 'planning':
            self._publishers_for('/stage2', '/pong')
            node.create_subscription(String, '/stage1', self._taken(
                '/stage1', then=lambda data: self._publish('/stage2', data)), QOS)
            node.create_subscription(String, '/ping', self._taken(
                '/ping', then=lambda data: self._publish('/pong', 'pong ' + data)), QOS)
        elif role == 'control':
            self._publishers_for('/result', '/ping')
            for topic in ('/stage1', '/stage2', '/pong'):
                node.create_subscription(String, topic, self._taken(topic, keep=True), QOS)
            node.create_timer(PERIOD_S, self._control_tick)
        elif role in ('loop_a', 'loop_b'):
            mine, theirs = ('/loop_a', '/loop_b')[::1 if role == 'loop_a' else -1]
            self._publishers_for(mine)
            node.create_subscription(String, theirs, lambda msg: self._publish(mine, msg.data),
                                     QOS)
            if role == 'loop_a':
                node.create_timer(PERIOD_S, lambda: self._publish(mine, 'start'))
        else:
            raise ValueError(f'no role {role!r}')

    def wait_matched(self, executor, timeout: float = 30.0) -> None:
        """
        Wait until a loop role's writer has matched the other loop node's reader.

        Each writes only to the other, on a volatile topic: a message sent before that reader
        matched this writer would be lost, and the reader would wait for it. Seeing both
        endpoints in the graph from a third node does not tell that they matched each other.
        """
        if self.role not in ('loop_a', 'loop_b'):
            return
        publisher = next(iter(self._publishers.values()))
        deadline = time.monotonic() + timeout
        while publisher.get_subscription_count() < 1 and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)

    def say_when_matched(self, readers: dict) -> None:
        """Print ``matched`` once each writer named in ``readers`` has matched that many."""
        publishers = [(self._publishers[topic], count) for topic, count in readers.items()
                      if topic in self._publishers]

        def check():
            if all(publisher.get_subscription_count() >= count
                   for publisher, count in publishers):
                print('matched', flush=True)
                timer.cancel()
        timer = self.node.create_timer(0.01, check, clock=Clock(clock_type=ClockType.STEADY_TIME))

    def _publishers_for(self, *topics) -> None:
        for topic in topics:
            self._publishers[topic] = self.node.create_publisher(String, topic, QOS)

    def _now(self) -> int:
        return self.node.get_clock().now().nanoseconds

    def _publish(self, topic: str, payload: str) -> None:
        now = self._now()
        self._publishers[topic].publish(String(data=f'{self.role}@{now}|{payload}'))
        print('sent', topic, now, flush=True)

    def _taken(self, topic: str, keep: bool = False, then=None):
        def callback(msg):
            sender = msg.data.partition('|')[0]
            sent = int(sender.split('@')[1]) if '@' in sender else -1
            print('got', topic, self._now(), sent, msg.data, flush=True)
            if keep:
                self._inbox.append(msg.data)
            if then is not None:
                then(msg.data)
        return callback

    def _flush(self, topic: str, separator: str) -> None:
        self._publish(topic, separator.join(self._inbox))
        self._inbox.clear()

    def _control_tick(self) -> None:
        self._publish('/ping', str(len(self._inbox)))
        self._flush('/result', ';')


def main(argv=None) -> int:
    """Run one role until Ctrl-C."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    parser.add_argument('role')
    parser.add_argument('--mode', choices=('deterministic', 'next_frame', 'participant', 'plain'),
                        default='deterministic')
    parser.add_argument('--readers', nargs='*', default=[], metavar='TOPIC=N',
                        help='print matched once these writers have matched N readers each')
    options = parser.parse_args(argv)
    rclpy.init()
    stack_node = StackNode(options.role)
    participant = None
    try:
        if options.mode != 'plain':
            participant = Participant(stack_node.node, name=options.role, period_sec=PERIOD_S,
                                      deterministic=options.mode == 'deterministic',
                                      next_frame=options.mode == 'next_frame')
            stack_node.wait_matched(participant.executor)
        print('joined', flush=True)
        if options.readers:
            stack_node.say_when_matched({topic: int(count) for topic, count in (
                item.split('=') for item in options.readers)})
        if participant is not None:
            participant.spin()
        else:
            rclpy.spin(stack_node.node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if participant is not None:
            participant.close()
        stack_node.node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
