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
Take part in the clock from an rclpy node, with one line in its ``main``.

    from sim_clock.client import participant
    participant.spin(node, period_sec=0.1)      # instead of rclpy.spin(node)

The node joins the clock server as a participant (``~/join``) and says it has finished a
/clock time (``~/done``) only once every callback that became due at that time has run, its
``use_sim_time`` timers included; the server holds the next frame until then. With each done
it names the next time one of the node's ``use_sim_time`` timers is due, so the frames that
wait for it are exactly those its timers fire at (and, without such timers, one a period).
"""

import time
from typing import Dict
from typing import List
from typing import Optional

from rclpy.executors import ExternalShutdownException
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rosgraph_msgs.msg import Clock as ClockMsg
from sim_clock.client.api import DEFAULT_TIMEOUT
from sim_clock.client.api import SimClockClient
from sim_clock.client.api import SimClockError
from sim_clock.client.deprecated_names import renamed
from sim_clock.client.rounds import RoundDelivery
from sim_clock.client.spinning import due_timers
from sim_clock.client.spinning import next_timer_ns
from sim_clock.client.spinning import own_waitables
from sim_clock.client.spinning import run_ready_callbacks
from sim_clock.client.spinning import signals_noted
from sim_clock.compat import call_timer
from sim_clock.compat import detach_time_source
from sim_clock.compat import executor_tasks
from sim_clock.compat import LeanWait
from sim_clock.compat import take_ready
from sim_clock.core.rules import seconds_to_ns
from sim_clock.core.units import join_ns
from sim_clock.msg import Round
from sim_clock.wire.names import CLOCK_TOPIC
from sim_clock.wire.names import DEFAULT_SERVER
from sim_clock.wire.names import DONE_QOS
from sim_clock.wire.participant_link import LEAVE_TIMEOUT_NS
from sim_clock.wire.participant_link import ParticipantLink
from sim_clock.wire.ready import ReadyReports

#: The participant's own /clock subscription: reliable and deep, so it sees every frame.
CLOCK_QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST, depth=1000,
    reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)

#: Deterministic: the longest the executor goes unspun while frames keep the helper busy, so
#: that the QoS event handlers of the node's publishers and subscriptions are served (its
#: timers, services and clients wake the helper's own waits).
SERVE_NS = 100_000_000
#: Deterministic: the most passes over the timers due at one time.
MAX_TIMER_LOOKS = 1000
#: The longest a participant waits for the answer to its ~/leave, in s (why: the link's
#: LEAVE_TIMEOUT_NS).
LEAVE_TIMEOUT_S = LEAVE_TIMEOUT_NS / 1e9


class Participant:
    """
    A node taking part in the clock: join on creation, say done after each time, leave on close.

    ``with Participant(node) as participant:`` leaves at the end of the block, as
    :meth:`close` does.

    :param node: the node (with ``use_sim_time``), not spun by anything else.
    :param executor: what spins it; None: a SingleThreadedExecutor of its own.
    :param name: the participant's name; None: the node's full name.
    :param period_sec: simulated seconds between the frames it must finish; 0: every frame
        (``period`` before; that name still works, with a DeprecationWarning).
    :param server: the server node's full name.
    :param timeout_sec: seconds each call to the server, and the join's match, waits
        (``timeout`` before; that name still works, with a DeprecationWarning).
    :param deterministic: take part in the rounds of every frame (doc/frames.md): the
        messages between participants are delivered by round, in a fixed order, so that a
        stack of participants runs the same way every time and never sees a message of its
        future; every frame waits for it (``period_sec`` is ignored).
    :param next_frame: deterministic, with what participants publish during a frame delivered
        at the next frame instead of in rounds within it (doc/frames.md): one round a frame,
        a frame's delay per hop; every participant of a stack takes the same rule.
    """

    def __init__(self, node: Node, executor=None, *, name: Optional[str] = None,
                 period_sec: float = 0.0, server: str = DEFAULT_SERVER,
                 timeout_sec: float = DEFAULT_TIMEOUT, deterministic: bool = False,
                 next_frame: bool = False, timeout: Optional[float] = None,
                 period: Optional[float] = None):
        timeout_sec = renamed(timeout_sec, timeout, 'timeout', 'timeout_sec')
        period_sec = renamed(period_sec, period, 'period', 'period_sec')
        self.node = node
        self.executor = executor or SingleThreadedExecutor(context=node.context)
        #: Whether the executor is its own, shut down by :meth:`close`.
        self._owns_executor = executor is None
        if executor is None:
            self.executor.add_node(node)
        self.name = name or node.get_fully_qualified_name()
        #: /clock messages received and not applied to the node's clock yet, oldest first.
        self._clocks: List[ClockMsg] = []
        # The node's clock follows the /clock messages this helper applies, once the data
        # that came before each is taken, instead of following them as they arrive.
        self._time_source = detach_time_source(node)
        # Its dones go out on the node; its join and leave through the client's private node
        # (below), so that their waits run none of the node's callbacks.
        self._link = ParticipantLink(node, server, calls=False)
        self._done = self._link.done_publisher
        # Next frame: each frame starts with the server's Round that says what was published
        # during the one before (it goes out after the frame's data and /clock).
        self._clock_sub = None if next_frame else node.create_subscription(
            ClockMsg, CLOCK_TOPIC, self._clocks.append, CLOCK_QOS)
        #: What its writers and readers matched, said on ~/ready for expected_participants
        #: (once it has joined).
        self._ready = ReadyReports(node, server)
        own = [entity for entity in (self._done, self._clock_sub, self._ready.publisher)
               if entity is not None]
        #: Deterministic: the rounds started by the server, not taken yet; the frame's time and
        #: round under way; the node's messages held and delivered by round.
        self._round_msgs: List[Round] = []
        self._time_ns = self._round = None
        #: Next frame: the server's Rounds that start frames, not taken yet; what this one said
        #: in its last done (answered again as it was).
        self._next_frame = next_frame
        self._carried: List[Round] = []
        self._said: Dict[str, int] = {}
        self._timeout_ns = seconds_to_ns(timeout_sec, 'timeout_sec')
        self._delivery = None
        self._spun_ns = 0
        self._lean = LeanWait(node.context)
        #: What the helper waits on between rounds and frames: the server's topics.
        self._server_subs = []
        rounds = self._rounds_sub = None
        if deterministic or next_frame:
            period_sec = 0.0
            rounds = self._rounds_sub = node.create_subscription(
                Round, f'{server.rstrip("/")}/rounds', self._on_round, DONE_QOS)
            own.append(rounds)
            self._server_subs = [sub for sub in (self._clock_sub, rounds) if sub is not None]
            self._delivery = RoundDelivery(node, own, hold=not next_frame)
        self._client = SimClockClient(node, server=server, timeout_sec=timeout_sec)
        self._closed = False
        #: The signals :meth:`spin` took (SIGINT, SIGTERM): a wait for messages ends on one.
        self._signals: List[int] = []
        self._client.join(self.name, seconds_to_ns(period_sec, 'period_sec'),
                          node.get_fully_qualified_name(), next_frame,
                          sorted(self._delivery.topics) if next_frame else ())
        # A done said before the server's reader matched this writer would be lost (volatile),
        # and its frame held until a republished time is answered; a round started before the
        # server's writer matched this reader would be lost too.
        deadline = time.monotonic_ns() + self._timeout_ns
        while ((rounds is not None and rounds.get_publisher_count() < 1)
               or not self._link.done_matched()):
            if time.monotonic_ns() > deadline:
                raise SimClockError(
                    f'participant {self.name!r}: the server at {server} did not match its '
                    f'done topic in {timeout_sec} s')
            self.executor.spin_once(timeout_sec=0.05)
        # Joined, and the server's ends of its rounds and done topics matched (which no
        # report counts): it says what its own endpoints matched.
        self._ready.look()

    def spin_once(self, timeout_sec: float = 0.1) -> None:
        """
        Run the node's callbacks for a while; then finish each /clock time received, in order.

        For each time: first every message that came before its /clock is taken (the node's
        clock still at the time before, so no timer of the new time runs yet), then the time
        is applied and what became due runs (its timers, and what they set off); then done.
        A time the server publishes again while it waits is answered again, in case the
        first done went out before the server's reader had matched this writer.

        Raise :class:`SimClockError` if the node is no longer in this participant's executor:
        ``rclpy.spin_once(node)`` or another executor's ``add_node`` takes it away, and then
        nothing would take /clock again and the server would wait for this node forever.
        """
        if self.node not in self.executor.get_nodes():
            raise SimClockError(
                f'participant {self.name!r}: its node was taken out of the participant '
                'executor (by rclpy.spin_once(node), or add_node of another executor); spin '
                'the node only through the participant (spin_once, spin)')
        self._ready.look()
        if self._delivery is not None:
            self._spin_rounds(timeout_sec)
            return
        self.executor.spin_once(timeout_sec=timeout_sec)
        if not self._clocks:
            return
        run_ready_callbacks(self.executor)
        clocks, self._clocks[:] = list(self._clocks), []
        for msg in clocks:
            if self._time_source is not None:
                self._time_source.clock_callback(msg)
            run_ready_callbacks(self.executor)
        self._publish_done(join_ns(clocks[-1].clock))

    def _spin_rounds(self, timeout_sec: float) -> None:
        """
        Deterministic: each new time in rounds, as doc/frames.md says.

        Round 0 of time t: what came before its /clock (a bag's data stamped up to t) is
        delivered with the clock at t, then the timers due at t run; then each round the
        server starts releases what the last one published, waits until it has arrived, and
        delivers it. What a round publishes is held until the next one.

        A look through the executor costs a wait set of every entity of the node (about
        200 us in rclpy): the helper takes what has arrived on its own topics and the node's
        subscriptions directly (a take from an empty queue costs a microsecond), waits through
        the executor only when nothing is there, and runs the executor after a round's
        callbacks only when they may have set something off there (:meth:`_set_off`).

        Once :meth:`spin` took a signal, nothing more is taken: the participant is leaving,
        and the server may have stopped in the middle of a frame.
        """
        self._take_ready()
        if not self._clocks and not self._round_msgs and not self._carried:
            self._wait(timeout_sec)
        if time.monotonic_ns() - self._spun_ns > SERVE_NS:
            self._spin_executor(0)  # its event handlers, at least this often
        delivery = self._delivery
        clocks, self._clocks[:] = list(self._clocks), []
        for msg in clocks:
            if self._signals:
                return
            time_ns = join_ns(msg.clock)
            if time_ns == self._time_ns:
                self._publish_done(time_ns)  # published again: answered again
                continue
            if delivery.counts:
                self.node.get_logger().warning(
                    f'participant {self.name!r}: what it published in the last round of '
                    f'{self._time_ns} ns goes out now, at {time_ns} ns (that frame was stopped)')
                delivery.release()
            self._frame(time_ns, msg, None)
        carried, self._carried[:] = list(self._carried), []
        for msg in carried:
            if self._signals:
                return
            time_ns = join_ns(msg.time)
            if time_ns == self._time_ns:
                self._publish_done(time_ns, self._said)  # published again: answered again
                continue
            self._frame(time_ns, ClockMsg(clock=msg.time), self._carried_counts(msg, timeout_sec))
            delivery.release()  # went out as published: only the counts start again
        while self._round_msgs and not self._signals:
            msg = self._round_msgs.pop(0)
            if join_ns(msg.time) == self._time_ns and msg.round == self._round + 1:
                if self._next_frame:  # rounds of participants of the other rule: not its own
                    self._round = msg.round
                    self._publish_done(self._time_ns, {})
                    continue
                self._take_round(msg, timeout_sec)

    def _frame(self, time_ns: int, clock: ClockMsg, limits: Optional[Dict[str, int]]) -> None:
        """Round 0 of a new time: the clock, what waits (``limits``: so many), timers; done."""
        delivery = self._delivery
        self._time_ns, self._round = time_ns, 0
        self._round_msgs.clear()
        if self._time_source is not None:
            self._time_source.clock_callback(clock)
        delivered = delivery.deliver(limits)
        ran = self._run_due_timers()
        if (delivered or ran) and self._set_off():
            run_ready_callbacks(self.executor)  # what the callbacks set off
        delivery.adopt()
        self._publish_done(time_ns)

    def _carried_counts(self, carried: Round, timeout_sec: float) -> Dict[str, int]:
        """
        Next frame: wait until what was published during the frame before has arrived.

        The server says it, by topic, as the frame goes out (a ``Round`` with ``next_frame``);
        each subscription waits until it holds that many of its topic's messages. Those are
        the first that arrived: one writer sends a topic's messages in order, and what it
        publishes during this frame comes after them. Returns the counts, for the delivery.
        """
        counts = dict(zip(carried.topics, carried.counts))
        self._await_counts(counts, f'at {join_ns(carried.time)} ns', timeout_sec)
        return counts

    def _await_counts(self, counts: Dict[str, int], where: str, timeout_sec: float) -> None:
        """Wait until each subscription holds ``counts`` of its topic; say what did not come."""
        delivery, deadline = self._delivery, time.monotonic_ns() + self._timeout_ns
        while True:
            delivery.take()
            missing = delivery.missing(counts)
            if not missing or self._signals:  # stopping: nothing more is taken
                return
            if time.monotonic_ns() > deadline:
                self.node.get_logger().error(
                    f'participant {self.name!r}: {where}: not all messages arrived on '
                    f'{", ".join(missing)} (best effort, or a history too short?); delivering '
                    'what came')
                return
            self._wait(timeout_sec, data=True)

    def _take_ready(self) -> None:
        """Take what has arrived on /clock, the rounds and the node's subscriptions."""
        if self._clock_sub is not None:
            self._clocks.extend(item[0] for item in take_ready(self._clock_sub))
        for (msg, *_) in take_ready(self._rounds_sub):
            self._on_round(msg)
        self._delivery.take()

    def _on_round(self, msg: Round) -> None:
        (self._carried if msg.next_frame else self._round_msgs).append(msg)

    def _wait(self, timeout_sec: Optional[float], data: bool = False) -> None:
        """
        Wait for the server, a timer, a request (``data``: a message too); run what is not one.

        On a wait set without the nodes' waitables (:class:`~sim_clock.compat.LeanWait`), at
        less than half the cost of the executor's; through the executor where a node has
        waitables of its own (an action's) or the context is shutting down. Waiting for the
        server, the node's messages do not wake it: they are taken when it comes, and every
        message of a round or frame was sent before the server heard the last done of it.
        """
        nodes = self.executor.get_nodes()
        if self.node.context.ok() and not own_waitables(nodes):
            timeout_ns = -1 if timeout_sec is None else max(int(timeout_sec * 1e9), 0)
            subscriptions = None if data else self._server_subs
            if not self._lean.wait(nodes, timeout_ns, subscriptions):
                self._take_ready()
                return
            timeout_sec = 0
        self._spin_executor(timeout_sec)

    def _spin_executor(self, timeout_sec: Optional[float]) -> None:
        self._spun_ns = time.monotonic_ns()
        self.executor.spin_once(timeout_sec=timeout_sec)
        self._take_ready()

    def _run_due_timers(self) -> bool:
        """
        Run the node's ``use_sim_time`` timers due now, in the executor's order: did any run.

        Each is called directly (:func:`~sim_clock.compat.call_timer`); one that cannot be (a
        coroutine) runs through a look of the executor, which runs what it finds ready.
        """
        ran = False
        for _ in range(MAX_TIMER_LOOKS):
            due = due_timers(self.executor)
            if not due:
                break
            ran = True
            for timer in due:
                if not call_timer(self.executor, timer):
                    self._spin_executor(0)
        return ran

    def _set_off(self) -> bool:
        """
        Whether callbacks that ran may have made something ready in the executor.

        A timer due, a task (a coroutine, ``create_task``), a guard condition or a waitable
        of the node's own (an action's; not the QoS event handlers every node has): then the
        executor runs what is ready, in the same round. Messages are taken directly, and a
        service's answer comes when it comes (outside the guarantee, doc/frames.md).
        """
        if executor_tasks(self.executor):
            return True
        nodes = self.executor.get_nodes()
        if own_waitables(nodes) or any(True for node in nodes for _ in node.guards):
            return True
        return bool(due_timers(self.executor))

    def _take_round(self, msg: Round, timeout_sec: float) -> None:
        """Release the last round's messages, wait for everyone's, deliver them; then done."""
        delivery = self._delivery
        self._round = msg.round
        delivery.release()
        self._await_counts(dict(zip(msg.topics, msg.counts)),
                           f'round {msg.round} of {self._time_ns} ns', timeout_sec)
        if delivery.deliver() and self._set_off():
            run_ready_callbacks(self.executor)  # what the callbacks set off
        delivery.adopt()
        self._publish_done(self._time_ns)

    def _publish_done(self, time_ns: int, counts: Optional[Dict[str, int]] = None) -> None:
        delivery = self._delivery
        if delivery is None:
            self._link.say_done(self.name, time_ns, next_timer_ns(self.executor))
            return
        if counts is None:
            counts = delivery.counts
            if self._next_frame:  # every topic it publishes on: a reader waits for each
                counts = {**dict.fromkeys(sorted(delivery.topics), 0), **counts}
                self._said = counts
        self._link.say_done(self.name, time_ns, counts=counts, round_number=self._round,
                            next_frame=self._next_frame)

    def spin(self) -> None:
        """
        Spin until the context shuts down, or until SIGINT (Ctrl-C) or SIGTERM.

        In the main thread a signal is taken by this participant instead of rclpy: it leaves
        first, then shuts the node's context down as rclpy's handler would have. (rclpy's
        handler shuts the context down at once, and a participant that cannot call ``~/leave``
        any more is dropped by the server with a warning.) Further signals while it leaves are
        ignored: under ``ros2 launch`` a terminal's Ctrl-C comes twice. A signal also ends a
        wait for the messages of a round or frame at once.
        """
        with signals_noted() as received:
            self._signals = received
            while self.node.context.ok() and not received:
                self.spin_once()
            if received:
                self.close()
        if received:
            self.node.context.try_shutdown()

    def __enter__(self) -> 'Participant':
        """Own the participation for a block: :meth:`close` (leave) at its end."""
        return self

    def __exit__(self, exc_type, exc, traceback) -> bool:
        """Leave the clock, also when the block raised; never hides its exception."""
        self.close()
        return False

    def close(self) -> None:
        """
        Leave the clock, if the server answers within LEAVE_TIMEOUT_S; release the client; once.

        A server whose ~/leave is no longer served (no service matches the leave's client:
        it stopped) is not asked; one that does not answer (it stopped at the same moment, or
        was killed) is left without. Either is said in the log at info level, never raised: a
        server drops a participant whose node left the graph anyway.
        """
        if self._closed:
            return
        self._closed = True
        try:
            if not self.node.context.ok():
                return
            # The leave's own client, matched since the join: the graph's list of nodes (from
            # each process's discovery info) can lag its endpoints, and a server that serves
            # may not be listed yet right after a join.
            if self._client.wait_for_services(['leave'], 0):
                self.node.get_logger().info(
                    f'participant {self.name!r} left without ~/leave: the server '
                    f'{self._client.server} is gone')
                return
            self._client.timeout_sec = min(self._client.timeout_sec, LEAVE_TIMEOUT_S)
            self._client.leave(self.name)
        except SimClockError as error:
            self.node.get_logger().info(
                f'participant {self.name!r} left without an answer from the server: {error}')
        finally:
            self._client.close()
            if self._owns_executor:
                # Now, while the context is valid: left to the garbage collector at the
                # interpreter's exit, rclpy 9's executor destroys its signal guard condition
                # after the shutdown and prints an InvalidHandle traceback.
                self.executor.shutdown(timeout_sec=0)


def spin(node: Node, executor=None, **options) -> None:
    """
    Spin ``node`` as :func:`rclpy.spin` does, taking part in the clock; leave at the end.

    A signal while it joins, before :meth:`Participant.spin` takes them, comes through
    rclpy's handlers (``KeyboardInterrupt``, a context shut down): it ends quietly too.
    """
    participant = None
    try:
        participant = Participant(node, executor, **options)
        participant.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if participant is not None:
            participant.close()
