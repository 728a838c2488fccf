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
Output gates on the node: a raw subscription per gated topic, of whatever type it carries.

The rules are the time core's :class:`~sim_clock.core.gates.Gates`; this module feeds it from
the wire and wakes the frame engine, which holds the waits (doc/design.md, "Output gates").
A gated topic's type is read from the graph (its publishers); until one is seen the topic is
looked for again every :data:`DISCOVERY_PERIOD_S`. The writers each reader matches are fed to
the core as they change (the subscription's matched events, and its count when it is created),
so that the engine holds a gated frame until its reader has a writer (see
:meth:`~sim_clock.core.gates.Gates.unready`). A message counts for a gated frame when this node
takes it after that frame's /clock was handed to DDS: just before the frame goes out, the
engine has every gated subscription drop what it holds (:meth:`OutputGates.drain`), so a
message received earlier never counts.
"""

from typing import Callable

from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from sim_clock.compat import drop_pending
from sim_clock.core.gates import Gates
from sim_clock.node.engine.parts import nothing
from sim_clock.node.engine.parts import WaitParts
from sim_clock.wire.message_types import get_message

#: How often gated topics not subscribed yet are looked for in the graph, in s.
DISCOVERY_PERIOD_S = 0.1
#: Received messages kept per gated topic before they are taken (one releases a frame).
DEPTH = 10


class OutputGates:
    """The subscriptions of one clock server's gated topics (the ``gates``), on ``parts.node``."""

    def __init__(self, parts: WaitParts, gates: Gates):
        self._node = parts.node
        self._events = parts.events
        self._timeline = parts.timeline
        self._now = parts.now_ns
        #: A wait ended: the engine looks again (its ``released``, :meth:`when_released`).
        self._go_on: Callable[[], None] = nothing
        self.gates = gates
        #: topic -> its subscription
        self._subscriptions = {}
        self._timer = self._node.create_timer(
            DISCOVERY_PERIOD_S, self.refresh, clock=parts.steady_clock)

    def when_released(self, go_on: Callable[[], None]) -> None:
        """Call ``go_on`` whenever a wait for a gated output ends: the frame engine's."""
        self._go_on = go_on

    def reconfigure(self) -> None:
        """
        Follow a new gates table (``output_gates`` set): subscribe and drop, then go on.

        A frame held for a gate no longer in the table waits for it no more: the engine looks
        again (a step goes on, free run ticks).
        """
        self.refresh()
        self._go_on()

    def refresh(self) -> None:
        """
        Subscribe the gated topics that have a publisher now; drop the ones not gated.

        Releases nothing: a subscription releases a frame when its writer matches
        (:meth:`_on_matched`). At the server's start, before anything was published, a release
        in free run would send frames out from within the node's construction.
        """
        wanted = set(self.gates.gates)
        for topic in set(self._subscriptions) - wanted:
            self._node.destroy_subscription(self._subscriptions.pop(topic))
        missing = wanted - set(self._subscriptions)
        if missing:
            for topic in sorted(missing):
                self._subscribe(topic)
        if set(self._subscriptions) == wanted:
            self._timer.cancel()
        elif self._timer.is_canceled():
            self._timer.reset()

    def _subscribe(self, topic: str) -> None:
        node = self._node
        infos = node.get_publishers_info_by_topic(topic)
        type_names = sorted({info.topic_type for info in infos})
        if not type_names:
            return
        try:
            message_class = get_message(type_names[0])
        except LookupError as error:
            node.get_logger().error(
                f'output gate {topic}: cannot subscribe {type_names[0]}: {error}',
                throttle_duration_sec=10.0)
            return
        # A reliable reader would not match a best-effort writer: reliable only if all are.
        reliable = all(info.qos_profile.reliability == ReliabilityPolicy.RELIABLE
                       for info in infos)
        qos = QoSProfile(depth=DEPTH, reliability=ReliabilityPolicy.RELIABLE if reliable
                         else ReliabilityPolicy.BEST_EFFORT)
        subscription = node.create_subscription(
            message_class, topic, lambda msg: self._on_message(topic), qos, raw=True,
            event_callbacks=SubscriptionEventCallbacks(
                matched=lambda status: self._on_matched(topic, status.current_count)))
        self._subscriptions[topic] = subscription
        node.get_logger().info(
            f'output gate {topic}: subscribed ({type_names[0]}, '
            f'{"reliable" if reliable else "best effort"})')
        # A reader created after its writers were discovered matches them at once; its matched
        # event comes later, through the executor, and a frame may ask before it.
        self._on_matched(topic, subscription.get_publisher_count())

    def drain(self) -> None:
        """Drop the messages the gated subscriptions hold: a gated frame is going out."""
        for subscription in self._subscriptions.values():
            drop_pending(subscription)

    def _on_message(self, topic: str) -> None:
        # Not (msg, info): rclpy 7's EventsExecutor fails on callbacks that take the info.
        gate, now = self.gates.gates.get(topic), self._now()
        awaited = None if gate is None else (gate.awaited_ns, gate.awaited_since_ns)
        if self.gates.arrived(topic, now):
            if awaited is not None and awaited[0] is not None:
                self._events.gate(self._timeline.epoch, awaited[0], awaited[1], now, topic)
            if not self.gates.awaited:
                self._go_on()

    def _on_matched(self, topic: str, writers: int) -> None:
        if self.gates.matched(topic, writers, self._now()):
            self._go_on()
