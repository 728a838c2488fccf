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
A node's messages held and delivered by round: what makes a stack of participants deterministic.

The helper takes over the node's subscriptions and publishers (doc/frames.md): a message that
arrives waits in its subscription's inbox until the round it belongs to, and is then delivered
with the others of that round in a fixed order (by topic, then by its serialized bytes); a
message the node publishes is held, counted, and sent when the next round starts, so that what
a round publishes is never seen in the same round, whatever DDS delivers first.
"""

from collections import Counter
from typing import Callable
from typing import Dict
from typing import Iterable
from typing import List
from typing import Optional

from rclpy.serialization import serialize_message
from sim_clock.compat import take_ready
from sim_clock.compat import takes_message_info

#: Topics a node publishes for ROS itself, never held.
ROS_TOPICS = ('/parameter_events', '/rosout')


class _Inbox:
    """One subscription taken over: its own callback, and what waits for the next round."""

    def __init__(self, subscription):
        self.subscription = subscription
        self.topic = subscription.topic_name
        self.callback = subscription.callback
        self.items: List[tuple] = []
        items = self.items
        if takes_message_info(subscription):
            subscription.callback = lambda msg, info: items.append((msg, info))
        else:
            subscription.callback = lambda msg: items.append((msg,))

    def take(self) -> None:
        """Take what waits in the subscription's queue, without a wait set."""
        self.items.extend(take_ready(self.subscription))

    def deliver(self, limit: Optional[int] = None) -> int:
        """
        Call the subscription's callback with each message waiting, in a fixed order.

        ``limit``: only the first so many that arrived (the rest wait for a later delivery).
        """
        items = sorted(self.items[:limit], key=_key)
        del self.items[:len(items)]
        for item in items:
            self.callback(*item)
        return len(items)


def _key(item: tuple) -> bytes:
    msg = item[0]
    return msg if isinstance(msg, (bytes, bytearray)) else serialize_message(msg)


class RoundDelivery:
    """
    The subscriptions and publishers of ``node``, taken over by round.

    ``own``: the helper's own entities (its /clock and rounds subscriptions, its done
    publisher), left alone. ``hold``: False, what the node publishes goes out at once, only
    counted (next frame: the readers take it at the next frame, by the counts).
    """

    def __init__(self, node, own: Iterable, hold: bool = True):
        self._node = node
        self._hold = hold
        self._own = {id(entity) for entity in own}
        self._inboxes: Dict[int, _Inbox] = {}
        self._publishers: Dict[int, Callable] = {}
        #: What the node published in the round under way: (publish, msg), in order.
        self._held: List[tuple] = []
        self._counts: Counter = Counter()
        #: The topics of the publishers taken over.
        self.topics = set()
        self.adopt()

    def adopt(self) -> None:
        """Take over the subscriptions and publishers the node made since the last call."""
        for subscription in self._node.subscriptions:
            key = id(subscription)
            if key not in self._own and key not in self._inboxes:
                self._inboxes[key] = _Inbox(subscription)
        for publisher in self._node.publishers:
            key = id(publisher)
            if (key in self._own or key in self._publishers
                    or publisher.topic_name in ROS_TOPICS):
                continue
            self._publishers[key] = publish = publisher.publish
            self.topics.add(publisher.topic_name)

            def hold(msg, publish=publish, topic=publisher.topic_name):
                if self._hold:
                    self._held.append((publish, msg))
                else:
                    publish(msg)
                self._counts[topic] += 1
            publisher.publish = hold

    @property
    def counts(self) -> Dict[str, int]:
        """Return what the node published in the round under way, by topic."""
        return dict(self._counts)

    def release(self) -> None:
        """Send what the node published in the last round, in the order it published it."""
        held, self._held = self._held, []
        self._counts.clear()
        for publish, msg in held:
            publish(msg)

    def take(self) -> None:
        """Take what has arrived for the node's subscriptions into their inboxes."""
        for inbox in self._inboxes.values():
            inbox.take()

    def missing(self, counts: Dict[str, int]) -> List[str]:
        """Return the topics whose inboxes hold fewer than ``counts`` says were published."""
        return sorted({inbox.topic for inbox in self._inboxes.values()
                       if len(inbox.items) < counts.get(inbox.topic, 0)})

    def deliver(self, limits: Optional[Dict[str, int]] = None) -> int:
        """
        Deliver every inbox, topic by topic in name order; return the messages delivered.

        ``limits``: for the topics it names, only the first so many messages of each inbox.
        """
        limits = limits or {}
        inboxes = sorted(self._inboxes.values(), key=lambda inbox: inbox.topic)
        return sum(inbox.deliver(limits.get(inbox.topic)) for inbox in inboxes)
