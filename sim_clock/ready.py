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
Say on the clock server's ``~/ready`` what a node's writers and readers have matched.

A server told ``expected_participants`` sends no frame until each node named has said that
its endpoints matched those of the others (doc/frames.md, "Expected participants"). The
participant helper and the recorder report through :class:`ReadyReports`; any node can.
"""

import time
from typing import Callable
from typing import Iterable
from typing import Optional
from typing import Tuple

from rclpy.node import Node
from sim_clock.msg import Ready
from sim_clock.names import DEFAULT_SERVER
from sim_clock.names import READY_QOS

#: ROS's own topics, which no stack waits for.
ROS_TOPICS = ('/parameter_events', '/rosout')
#: How often the counts are looked at again, in ns.
LOOK_NS = 50_000_000


def endpoint_counts(node: Node, leave_out: Iterable[str]) -> Tuple[tuple, tuple]:
    """Return ((topic, readers matched) per writer, (topic, writers matched) per reader)."""
    left_out = set(leave_out)
    writers = tuple(sorted((p.topic_name, p.get_subscription_count()) for p in node.publishers
                           if p.topic_name not in left_out))
    readers = tuple(sorted((s.topic_name, s.get_publisher_count()) for s in node.subscriptions
                           if s.topic_name not in left_out))
    return writers, readers


class ReadyReports:
    """
    The reports of one node on ``<server>/ready``: published whenever a count changed.

    Call :meth:`look` often (each turn of the node's loop); it looks at the counts at most
    every :data:`LOOK_NS` and publishes only a change (the topic is transient local: the
    server gets the last one even if it starts later).

    ``pending``: the topics the node will read but has no reader of yet (a recorder that
    waits to learn a topic's type), each said as a reader that matched no writer: the server
    then holds the frames until that reader exists and has matched the writers it expects.
    """

    def __init__(self, node: Node, server: str = DEFAULT_SERVER, name: Optional[str] = None,
                 leave_out: Iterable[str] = (),
                 pending: Callable[[], Iterable[str]] = tuple):
        self._node = node
        self._pending = pending
        self.name = name or node.get_fully_qualified_name()
        prefix = server.rstrip('/')
        #: The writer of the reports, which no report counts.
        self.publisher = node.create_publisher(Ready, f'{prefix}/ready', READY_QOS)
        self._leave_out = {*ROS_TOPICS, *leave_out}
        self._prefix = prefix + '/'
        self._said = None
        self._looked_ns = 0

    def look(self, now_ns: Optional[int] = None) -> bool:
        """Publish the counts if they changed since they were last said; return whether."""
        now_ns = time.monotonic_ns() if now_ns is None else now_ns
        if now_ns - self._looked_ns < LOOK_NS:
            return False
        self._looked_ns = now_ns
        writers, readers = endpoint_counts(self._node, self._leave_out)
        writers = tuple(item for item in writers if not item[0].startswith(self._prefix))
        readers = tuple(item for item in readers if not item[0].startswith(self._prefix))
        read = {topic for topic, _ in readers}
        readers += tuple(sorted((topic, 0) for topic in set(self._pending()) - read))
        if (writers, readers) == self._said:
            return False
        self._said = (writers, readers)
        msg = Ready(name=self.name)
        msg.publications = [topic for topic, _ in writers]
        msg.readers = [count for _, count in writers]
        msg.subscriptions = [topic for topic, _ in readers]
        msg.writers = [count for _, count in readers]
        self.publisher.publish(msg)
        return True
