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
Participants on the node: ``~/join``, ``~/leave`` and the ``~/done`` topic.

The rules are the time core's :class:`~sim_clock.core.barrier.Barrier`; this module feeds it
from the wire and wakes the frame engine, which holds the waits (doc/design.md,
"Participants"). A participant
whose node leaves the graph, after the server has seen it there, is dropped with a warning.
"""

from dataclasses import dataclass
from typing import Callable
from typing import Optional

from sim_clock.core.barrier import Barrier
from sim_clock.core.presence import Presence
from sim_clock.core.rules import Refused
from sim_clock.core.units import join_ns
from sim_clock.core.units import split_ns
from sim_clock.msg import Done
from sim_clock.msg import Round
from sim_clock.node.engine.parts import nothing
from sim_clock.node.engine.parts import WaitParts
from sim_clock.node.services import fill
from sim_clock.node.services import serve
from sim_clock.srv import Join
from sim_clock.srv import Leave
from sim_clock.wire.names import DONE_QOS

#: How often the graph is looked at for participants whose node has gone, in s.
GRAPH_CHECK_PERIOD_S = 0.5
#: The node name the graph gives an endpoint whose process's node names it has not had yet.
UNNAMED_NODE = '_NODE_NAME_UNKNOWN_'


@dataclass
class JoinOutcome:
    """The outcome of ``~/join``, field for field."""

    success: bool
    message: str
    frame: int
    clock_ns: int


@dataclass
class LeaveOutcome:
    """The outcome of ``~/leave``."""

    success: bool
    message: str


class Participants:
    """The participants of one clock server: the ``barrier``'s wire, on ``parts.node``."""

    def __init__(self, parts: WaitParts, barrier: Barrier):
        self._node = node = parts.node
        self._timeline = parts.timeline
        self._to_clock = parts.axes.to_clock
        self._events = parts.events
        self._now = parts.now_ns
        self._expected = parts.expected
        #: A wait ended: the engine looks again (its ``released``, :meth:`when_released`).
        self._go_on: Callable[[], None] = nothing
        #: A participant joined or left (:meth:`when_joined_or_left`).
        self._joined_or_left: Callable[[], None] = nothing
        self._logger = node.get_logger()
        self.barrier = barrier
        self._presence = Presence()
        self._done_topic = node.resolve_topic_name('~/done')
        serve(node, ((Join, '~/join', self._on_join), (Leave, '~/leave', self._on_leave)))
        node.create_subscription(Done, '~/done', self._on_done, DONE_QOS)
        self._rounds = node.create_publisher(Round, '~/rounds', DONE_QOS)
        #: (epoch, Round): the last Round that said what next_frame participants published,
        #: with the epoch of its time: said again with that time in that epoch, never with the
        #: same time after a reset.
        self._carried = None
        node.create_timer(GRAPH_CHECK_PERIOD_S, self._check_graph, clock=parts.steady_clock)

    def join(self, name: str, node: str, period_ns: int, next_frame: bool = False,
             topics=()) -> JoinOutcome:
        """Add a participant; it takes part from the next frame."""
        timeline = self._timeline
        try:
            self.barrier.join(name, period_ns, node, next_frame, topics)
        except Refused as refused:
            return JoinOutcome(success=False, message=refused.reason,
                               frame=timeline.frame, clock_ns=self._clock_now())
        self._logger.info(
            f'participant {name!r} joined (period {period_ns} ns'
            + (f', node {node}' if node else '') + ')')
        self._presence.joined(name, self._now())
        self._joined_or_left()
        return JoinOutcome(success=True, message=f'joined; frame {timeline.frame} is the '
                                                 'last before its first',
                           frame=timeline.frame, clock_ns=self._clock_now())

    def leave(self, name: str, why: str = 'left') -> LeaveOutcome:
        """Remove a participant: no frame waits for it any more."""
        participant = self.barrier.participants.get(name)
        if not self.barrier.leave(name):
            return LeaveOutcome(success=False, message=f'no participant named {name!r}')
        # An expected node that leaves must say it is ready again before frames go on.
        self._expected.forget(name, participant.node)
        self._presence.left(name)
        self._joined_or_left()
        # One call per severity: rclpy refuses a second severity from the same line (it raised
        # in the server when a participant was dropped after another had left).
        if why == 'left':
            self._logger.info(f'participant {name!r} left')
        else:
            self._logger.warning(f'participant {name!r} {why}')
        self._released()
        return LeaveOutcome(success=True, message=f'{name!r} {why}')

    # -- the wire ------------------------------------------------------------------------------

    def _on_join(self, request, response):
        return fill(response, self.join(request.name, request.node, request.period_ns,
                                        request.next_frame, request.topics))

    def _on_leave(self, request, response):
        return fill(response, self.leave(request.name))

    def _on_done(self, msg: Done) -> None:
        time_ns, to_clock, timeline = join_ns(msg.time), self._to_clock, self._timeline
        if not to_clock(timeline.epoch_start_ns) <= time_ns <= to_clock(timeline.time_ns):
            # Stale: sent for a time of an earlier epoch, before the participant saw the reset
            # (it answers each republished time). Taken, it would set when it is due next.
            return
        barrier, now, name, round_, topics = (
            self.barrier, self._now(), msg.name, msg.round, msg.topics)
        counts = dict(zip(topics, msg.counts)) if topics else None
        if barrier.done(name, time_ns, now, join_ns(msg.next), round_, counts, msg.rounds,
                        msg.next_frame):
            self._events.done(timeline.epoch, time_ns,
                              barrier.participants[name].awaited_since_ns, now, name, round_)
            self._released()

    def when_joined_or_left(self, call: Callable[[], None]) -> None:
        """Call ``call`` after each join and each leave (a drop too)."""
        self._joined_or_left = call

    def when_released(self, go_on: Callable[[], None]) -> None:
        """Call ``go_on`` whenever a wait for the participants ends: the frame engine's."""
        self._go_on = go_on

    def _released(self) -> None:
        """Start the frame's next round, or let frames go on: a wait ended (a done, a leave)."""
        barrier = self.barrier
        if not barrier.clear:
            return  # the engine looks again at its deadline or at the next release
        # A next round only if this one's participants published anything (rounds.counts).
        started = barrier.next_round(self._now()) if barrier.rounds.counts else None
        if started is not None:
            self._publish_round(*started)
            return
        self._go_on()

    def frame_out(self, time_ns: Optional[int] = None) -> None:
        """
        Say what next_frame participants published during the frame before ``time_ns``.

        On ~/rounds, after the frame's data and /clock: it starts the frame for each of them.
        None: the time went out again; so does what was said with it.
        """
        if time_ns is None:
            said, now = self._carried, self._clock_now()
            if (said is not None and said[0] == self._timeline.epoch
                    and join_ns(said[1].time) == now):
                self._rounds.publish(said[1])
            else:
                # Nothing was said for this time: it went out before they joined (nothing was
                # published before it), or it is a reset's (what they published during the
                # last frame before it is delivered with it).
                carried = self.barrier.take_carried()
                if carried is not None:
                    self._carry(now, carried[0])
            return
        # Asked only with a next_frame participant joined: every frame out with participants.
        carried = self.barrier.take_carried() if self.barrier.carries else None
        if carried is None:
            self._carried = None
            return
        counts, shared = carried
        self._carry(time_ns, counts)
        if shared:
            self._logger.warning(
                'next_frame participants share topics (' + '; '.join(
                    f'{topic}: {", ".join(names)}' for topic, names in shared.items())
                + '): which of their messages a reader delivers at the next frame depends on '
                'arrival (doc/frames.md); give each topic one writer', once=True)

    def _publish_round(self, time_ns: int, number: int, counts: dict,
                       next_frame: bool = False) -> Round:
        """Start the frame's next round, or say what next_frame participants published in it."""
        msg = Round(round=number, next_frame=next_frame)
        msg.time.sec, msg.time.nanosec = split_ns(time_ns)
        msg.topics, msg.counts = list(counts), list(counts.values())
        self._rounds.publish(msg)
        return msg

    def _carry(self, time_ns: int, counts: dict) -> None:
        """Say what next_frame participants published before ``time_ns``; keep it to say again."""
        self._carried = (self._timeline.epoch,
                         self._publish_round(time_ns, 0, counts, next_frame=True))

    def _clock_now(self) -> int:
        return self._to_clock(self._timeline.time_ns)

    def _nodes_present(self) -> set:
        return {namespace.rstrip('/') + '/' + name
                for name, namespace in self._node.get_node_names_and_namespaces()}

    def _unnamed_done_writers(self) -> int:
        return sum(info.node_name == UNNAMED_NODE
                   for info in self._node.get_publishers_info_by_topic(self._done_topic))

    def _check_graph(self) -> None:
        watched = {p.name: p.node for p in self.barrier.participants.values() if p.node}
        if not watched:
            return
        for name, why in self._presence.gone(watched, self._nodes_present(),
                                             self._unnamed_done_writers(), self._now()):
            self.leave(name, why=why)
