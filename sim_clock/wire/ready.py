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

from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.qos import qos_check_compatible
from rclpy.qos import QoSCompatibility
from sim_clock.msg import Ready
from sim_clock.wire.names import DEFAULT_SERVER
from sim_clock.wire.names import READY_QOS

#: ROS's own topics, which no stack waits for.
ROS_TOPICS = ('/parameter_events', '/rosout')
#: How often the counts are looked at again, in ns.
LOOK_NS = 50_000_000
#: How long a node that ends waits for the server to have its last report, in ns.
GONE_WAIT_NS = 500_000_000


def full_node_name(info) -> str:
    """Return the full name of the node of a graph endpoint: ``/ns/name``, ``/name``."""
    return f'{info.node_namespace.rstrip("/")}/{info.node_name}'


def readers_seen(node: Node, topic: str) -> Tuple[str, ...]:
    """
    Return the node of each reader of ``topic`` in ``node``'s graph that its writer could match.

    A reader of another type, or of a QoS the node's writer on ``topic`` does not offer
    (transient local, a deadline), never matches it and is left out; so is everything while
    that writer is not in the graph yet (an expected reader then counts as not seen).
    """
    me = (node.get_name(), node.get_namespace())
    own = [info for info in node.get_publishers_info_by_topic(topic)
           if (info.node_name, info.node_namespace) == me]
    if not own:
        return ()
    return tuple(sorted(
        full_node_name(info) for info in node.get_subscriptions_info_by_topic(topic)
        if info.topic_type == own[0].topic_type and qos_check_compatible(
            own[0].qos_profile, info.qos_profile)[0] != QoSCompatibility.ERROR))


def endpoint_counts(node: Node, counted: Callable[[str], bool],
                    seen: Callable[[str, tuple], Tuple[str, ...]]) -> Tuple[tuple, tuple]:
    """
    Return the endpoints on the topics ``counted`` says, as ``~/ready`` says them.

    ((topic, readers matched, readers seen) per writer, (topic, writers matched) per reader);
    the readers seen of a topic from ``seen(topic, its writers' counts)`` (a
    :class:`SeenReaders`), asked after the counts.
    """
    writers = [(p.topic_name, p.get_subscription_count()) for p in node.publishers
               if counted(p.topic_name)]
    graph = {topic: seen(topic, tuple(count for name, count in writers if name == topic))
             for topic in {topic for topic, _ in writers}}
    return (tuple(sorted((topic, count, graph[topic]) for topic, count in writers)),
            tuple(sorted((s.topic_name, s.get_publisher_count()) for s in node.subscriptions
                         if counted(s.topic_name))))


#: The graph's name for the node of an endpoint whose node it does not know yet (its process's
#: node list has not come): named once it has.
UNKNOWN_NODE = '_NODE_NAME_UNKNOWN_'


class SeenReaders:
    """
    :func:`readers_seen` of a node's topics, asked of the graph only when it may have changed.

    A topic is settled when each of its writers has matched as many readers as were seen, the
    counts are those of the last look and every reader seen has its node's name: a reader that
    then appears in the graph has not been matched (the report, without it, holds the frames
    that wait for it), and its match changes a count, which makes the next look ask the graph
    again. A reader whose node is not named yet is named later without any count changing, so
    the graph is asked again until it is. A look at the graph costs a few hundred microseconds
    a topic; a participant looks every 50 ms.

    ``look``: topic -> the readers seen (:func:`readers_seen` of the node).
    """

    def __init__(self, look: Callable[[str], Tuple[str, ...]]):
        self._look = look
        self._last = {}

    def __call__(self, topic: str, counts: tuple) -> Tuple[str, ...]:
        """Return the readers seen on ``topic``, whose writers have matched ``counts``."""
        last = self._last.get(topic)
        if last is not None and last[0] == counts and all(
                count == len(last[1]) for count in counts) and not any(
                UNKNOWN_NODE in name for name in last[1]):
            return last[1]
        names = self._look(topic)
        self._last[topic] = (counts, names)
        return names


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
        self._seen = SeenReaders(lambda topic: readers_seen(node, topic))

    def _counted(self, topic: str) -> bool:
        """Whether an endpoint on ``topic`` is said: not ROS's, not the server's own."""
        return topic not in self._leave_out and not topic.startswith(self._prefix)

    def look(self, now_ns: Optional[int] = None) -> bool:
        """Publish the counts if they changed since they were last said; return whether."""
        now_ns = time.monotonic_ns() if now_ns is None else now_ns
        if now_ns - self._looked_ns < LOOK_NS:
            return False
        self._looked_ns = now_ns
        writers, readers = endpoint_counts(self._node, self._counted, self._seen)
        read = {topic for topic, _ in readers}
        readers += tuple(sorted((topic, 0) for topic in set(self._pending()) - read))
        if (writers, readers) == self._said:
            return False
        self._said = (writers, readers)
        msg = Ready(name=self.name)
        msg.publications = [topic for topic, _, _ in writers]
        msg.readers = [count for _, count, _ in writers]
        msg.readers_seen = [len(seen) for _, _, seen in writers]
        msg.reader_nodes = [name for _, _, seen in writers for name in seen]
        msg.subscriptions = [topic for topic, _ in readers]
        msg.writers = [count for _, count in readers]
        self.publisher.publish(msg)
        return True

    def gone(self, timeout_ns: int = GONE_WAIT_NS) -> None:
        """
        Say that the node ends: its last report with every count 0; wait for the server's ack.

        The report is the last on the topic (transient local): the server holds frames until
        the node, started again, says it is ready, instead of going on with what this one
        matched (a recorder started again would miss the first frames of its new run). A node
        that never said anything says nothing. ``timeout_ns``: the longest it waits for the
        server to have the report.
        """
        if self._said is None:
            return
        writers, readers = self._said
        msg = Ready(name=self.name)
        msg.publications = [topic for topic, _, _ in writers]
        msg.readers = [0] * len(writers)
        msg.subscriptions = [topic for topic, _ in readers]
        msg.writers = [0] * len(readers)
        self.publisher.publish(msg)
        self.publisher.wait_for_all_acked(Duration(nanoseconds=timeout_ns))
