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
A second /clock publisher is an alarm: ROS expects one clock source (rosbag2#1645).

The server looks at the graph once a second (a steady timer): every other node that publishes
on ``/clock`` is logged once as an error naming it, shown by ``~/get_status`` and on
``/diagnostics`` at ERROR level, and cleared (logged) when it goes.
"""

from typing import List

from sim_clock.wire.names import CLOCK_TOPIC

#: How often the graph is looked at, in s.
CHECK_PERIOD_S = 1.0


def full_name(namespace: str, name: str) -> str:
    """Return a node's fully qualified name."""
    return f'{namespace.rstrip("/")}/{name}'


class ClockSourceAlarm:
    """Watch ``node``'s graph for other publishers of ``topics`` (``/clock``)."""

    def __init__(self, node, steady_clock, topics=(CLOCK_TOPIC,)):
        self._node = node
        self._topics = tuple(topics)
        self._own = node.get_fully_qualified_name()
        #: ``'<node> on <topic>'`` for each other publisher seen at the last check, sorted.
        self.others: List[str] = []
        self._timer = node.create_timer(CHECK_PERIOD_S, self.check, clock=steady_clock)

    def check(self) -> None:
        """Look at the graph now; log what came and what went."""
        others = set()
        for topic in self._topics:
            for info in self._node.get_publishers_info_by_topic(topic):
                name = full_name(info.node_namespace, info.node_name)
                if name != self._own:
                    others.add(f'{name} on {topic}')
        logger = self._node.get_logger()
        for other in sorted(others - set(self.others)):
            logger.error(f'another clock source: {other} publishes too; ROS expects one, and '
                         'two make time jump (stop it, or remap one of them)')
        for gone in sorted(set(self.others) - others):
            logger.info(f'clock source gone: {gone}')
        self.others = sorted(others)
