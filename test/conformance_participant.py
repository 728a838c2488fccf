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
A participant written from doc/frames.md's wire protocol alone, in plain rclpy.

    conformance_participant.py ROLE [--mode deterministic|next_frame] [--readers TOPIC=N ...]

It plays one role of the stack of ``examples/stack_node.py`` (``perception``, ``planning`` or
``control``) and prints what that script prints: ``joined``, ``matched``, and ``got <topic>
<its clock> <sender's clock> <data>`` for each message it processes. It imports rclpy, the
message types and sim_clock's generated interfaces (``sim_clock.msg``, ``sim_clock.srv``), and
nothing else of sim_clock: what it needs to know is doc/frames.md, "The wire protocol, for a
participant in any language", and the ``.msg`` and ``.srv`` files. The comments name the part
of that section each piece follows. ``test/scenarios/test_conformance.py`` runs it in place of the
helper-based node of its role and compares the recordings.

It keeps the frame's time itself (the node does not use ``use_sim_time``), and the role's timer
follows rcl's rules for a timer of ROS time created at time 0: due at each frame at or after
its next call, then a period later.
"""

import argparse
import signal
import sys
import time

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.executors import SingleThreadedExecutor
from rclpy.executors import TimeoutException
from rclpy.qos import DurabilityPolicy
from rclpy.qos import HistoryPolicy
from rclpy.qos import qos_check_compatible
from rclpy.qos import QoSCompatibility
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rclpy.serialization import deserialize_message
from rclpy.signals import SignalHandlerOptions
from rosgraph_msgs.msg import Clock
from sim_clock.msg import Done
from sim_clock.msg import Ready
from sim_clock.msg import Round
from sim_clock.srv import Join
from sim_clock.srv import Leave
from std_msgs.msg import String

NS = 1_000_000_000
SERVER = '/sim_clock'
#: The stack's topics (examples/stack_node.py): reliable, deep enough for a round.
QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
#: /clock, ~/rounds and ~/done: reliable, volatile, deep (frames.md, "Endpoints").
SERVER_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                        reliability=ReliabilityPolicy.RELIABLE,
                        durability=DurabilityPolicy.VOLATILE)
#: ~/ready: reliable, transient local, depth 1 (frames.md, "Expected participants").
READY_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                       reliability=ReliabilityPolicy.RELIABLE,
                       durability=DurabilityPolicy.TRANSIENT_LOCAL)
#: The roles' timer period, as examples/stack_node.py has it.
PERIOD_NS = 20_000_000
#: How long it waits for the server, and for a round's or frame's messages, in s.
TIMEOUT_S = 10.0
#: How long leaving may take at the end: a courtesy, the server may be gone.
LEAVE_TIMEOUT_S = 1.0
#: How often the endpoints' matches are looked at for ~/ready, in ns.
READY_LOOK_NS = 50_000_000


def stamp_ns(stamp) -> int:
    """Return a builtin_interfaces/Time as integer nanoseconds."""
    return stamp.sec * NS + stamp.nanosec


def set_stamp(stamp, time_ns: int) -> None:
    """Set a builtin_interfaces/Time from integer nanoseconds."""
    stamp.sec, stamp.nanosec = divmod(time_ns, NS)


class SimTimer:
    """A timer of simulated time, as rcl runs one on ROS time (rcl/src/rcl/timer.c)."""

    def __init__(self, period_ns: int, callback, now_ns: int = 0):
        self.period_ns = period_ns
        self.callback = callback
        self.last_call_ns = now_ns
        self.next_call_ns = now_ns + period_ns

    def jumped(self, now_ns: int) -> None:
        """Time went back behind the last call (a reset): the next call is a period from now."""
        if now_ns < self.last_call_ns:
            self.last_call_ns, self.next_call_ns = now_ns, now_ns + self.period_ns

    def run_due(self, now_ns: int) -> None:
        """Call back while due at ``now_ns``; the next call moves by whole periods."""
        while now_ns >= self.next_call_ns:
            self.last_call_ns = now_ns
            self.next_call_ns += self.period_ns
            if self.next_call_ns < now_ns:  # missed periods are skipped
                behind = now_ns - self.next_call_ns
                self.next_call_ns += (1 + (behind - 1) // self.period_ns) * self.period_ns
            self.callback()


class Role:
    """
    What one node of the stack does, as in examples/stack_node.py.

    ``send(topic, payload)`` publishes ``<role>@<clock ns>|<payload>``; ``now()`` is the
    frame's time.
    """

    def __init__(self, role: str, send, now):
        self.role = role
        self._send = send
        self._now = now
        self._inbox = []
        #: (topic, callback) for each subscription, in the order they are made.
        self.subscriptions = []
        self.publications = []
        self.timer = None
        if role == 'perception':
            self.publications = ['/stage1']
            self.subscriptions = [('/chatter', self._taken('/chatter', keep=True))]
            self.timer = SimTimer(PERIOD_NS, lambda: self._flush('/stage1', ','))
        elif role == 'planning':
            self.publications = ['/stage2', '/pong']
            self.subscriptions = [
                ('/stage1', self._taken('/stage1', then=lambda d: self._send('/stage2', d))),
                ('/ping', self._taken('/ping', then=lambda d: self._send('/pong', 'pong ' + d)))]
        elif role == 'control':
            self.publications = ['/result', '/ping']
            self.subscriptions = [(topic, self._taken(topic, keep=True))
                                  for topic in ('/stage1', '/stage2', '/pong')]
            self.timer = SimTimer(PERIOD_NS, self._control_tick)
        else:
            raise ValueError(f'no role {role!r}')

    def _taken(self, topic: str, keep: bool = False, then=None):
        def callback(msg: String) -> None:
            sender = msg.data.partition('|')[0]
            sent = int(sender.split('@')[1]) if '@' in sender else -1
            print('got', topic, self._now(), sent, msg.data, flush=True)
            if keep:
                self._inbox.append(msg.data)
            if then is not None:
                then(msg.data)
        return callback

    def _flush(self, topic: str, separator: str) -> None:
        self._send(topic, separator.join(self._inbox))
        self._inbox.clear()

    def _control_tick(self) -> None:
        self._send('/ping', str(len(self._inbox)))
        self._flush('/result', ';')


class Participant:
    """
    One participant on the wire: joins, says ready, takes each frame, says done, leaves.

    ``next_frame``: the rule of the next frame; else rounds within a frame.
    """

    def __init__(self, role: str, next_frame: bool, server: str = SERVER):
        self.node = node = rclpy.create_node(role)
        self.name = role
        self.next_frame = next_frame
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(node)
        self.role = Role(role, self._send, lambda: self.time_ns)
        #: The frame's time and round under way (None: no frame yet).
        self.time_ns = None
        self.round = 0
        #: What arrived and is not handled yet: /clock times, Rounds.
        self._clocks = []
        self._rounds = []
        # The server's topics first: an executor then hands out a /clock or a Round before
        # messages that came before it whenever both wait, which _frame must not depend on.
        prefix = server.rstrip('/')
        self._clock_sub = None if next_frame else node.create_subscription(
            Clock, '/clock', lambda msg: self._clocks.append(stamp_ns(msg.clock)), SERVER_QOS)
        self._rounds_sub = node.create_subscription(
            Round, f'{prefix}/rounds', self._rounds.append, SERVER_QOS)
        #: Per subscription, in the order made: (topic, callback, inbox of serialized
        #: messages, the subscription). Raw: the bytes are what orders the delivery.
        self._inputs = []
        for topic, callback in self.role.subscriptions:
            inbox = []
            subscription = node.create_subscription(String, topic, inbox.append, QOS, raw=True)
            self._inputs.append((topic, callback, inbox, subscription))
        self._publishers = {topic: node.create_publisher(String, topic, QOS)
                            for topic in self.role.publications}
        #: Rounds: what it published in the round under way, held (publisher, msg); both
        #: rules: how many by topic.
        self._held = []
        self._counts = {}
        #: Next frame: the topics and counts of its last done (said again as it was).
        self._said = {}
        self._done = node.create_publisher(Done, f'{prefix}/done', SERVER_QOS)
        self._ready = node.create_publisher(Ready, f'{prefix}/ready', READY_QOS)
        self._join = node.create_client(Join, f'{prefix}/join')
        self._leave = node.create_client(Leave, f'{prefix}/leave')
        self._ready_said = None
        self._ready_looked_ns = 0

    # -- joining -------------------------------------------------------------------------------

    def join(self) -> None:
        """Join, wait for the server's topics to match, say ready ("Joining and leaving")."""
        request = Join.Request(name=self.name, node=self.node.get_fully_qualified_name(),
                               period_ns=0, next_frame=self.next_frame,
                               topics=sorted(self.role.publications) if self.next_frame else [])
        response = self._call(self._join, request, TIMEOUT_S, again=True)
        if response is None or not response.success:
            raise RuntimeError(f'join refused or unanswered: {response}')
        # A Round or a /clock sent before the server's writer matched its reader is lost,
        # and so is a done sent before the server's reader matched its writer.
        deadline = time.monotonic() + TIMEOUT_S
        subscriptions = [self._rounds_sub] + ([self._clock_sub] if self._clock_sub else [])
        while (any(sub.get_publisher_count() < 1 for sub in subscriptions)
               or self._done.get_subscription_count() < 1):
            if time.monotonic() > deadline:
                raise RuntimeError('the server did not match its rounds, done and clock topics')
            self.executor.spin_once(timeout_sec=0.05)
        self.look_ready(force=True)

    def look_ready(self, force: bool = False) -> None:
        """Say on ~/ready what its writers and readers have matched, when that changed."""
        now = time.monotonic_ns()
        if not force and now - self._ready_looked_ns < READY_LOOK_NS:
            return
        self._ready_looked_ns = now
        # Each writer's count first, then the readers the graph shows that it could match.
        writers = [(topic, self._publishers[topic].get_subscription_count())
                   for topic in self.role.publications]
        writers = [(topic, count, self._readers_seen(topic)) for topic, count in writers]
        readers = [(topic, subscription.get_publisher_count())
                   for topic, _, _, subscription in self._inputs]
        if (writers, readers) == self._ready_said:
            return
        self._ready_said = (writers, readers)
        self._ready.publish(Ready(
            name=self.node.get_fully_qualified_name(),
            publications=[topic for topic, _, _ in writers],
            readers=[n for _, n, _ in writers],
            subscriptions=[topic for topic, _ in readers], writers=[n for _, n in readers],
            readers_seen=[len(seen) for _, _, seen in writers],
            reader_nodes=[name for _, _, seen in writers for name in seen]))

    def _readers_seen(self, topic: str) -> list:
        """Return the node of each reader of ``topic`` its writer could match, from the graph."""
        me = (self.node.get_name(), self.node.get_namespace())
        mine = [info for info in self.node.get_publishers_info_by_topic(topic)
                if (info.node_name, info.node_namespace) == me]
        if not mine:
            return []
        return sorted(
            f'{info.node_namespace.rstrip("/")}/{info.node_name}'
            for info in self.node.get_subscriptions_info_by_topic(topic)
            if info.topic_type == mine[0].topic_type and qos_check_compatible(
                mine[0].qos_profile, info.qos_profile)[0] != QoSCompatibility.ERROR)

    def matched(self, readers: dict) -> bool:
        """Whether each writer named in ``readers`` has matched that many readers."""
        return all(self._publishers[topic].get_subscription_count() >= count
                   for topic, count in readers.items() if topic in self._publishers)

    def leave(self) -> None:
        """Leave, waiting a short while at most: the server may be gone already."""
        self._call(self._leave, Leave.Request(name=self.name), LEAVE_TIMEOUT_S)

    def _call(self, client, request, timeout: float, again: bool = False):
        """Call a service; None past ``timeout``. ``again``: ask again every 2 s (idempotent)."""
        deadline = time.monotonic() + timeout
        while not client.service_is_ready():
            if time.monotonic() > deadline:
                return None
            self.executor.spin_once(timeout_sec=0.05)
        while time.monotonic() < deadline:
            future = client.call_async(request)
            attempt = min(deadline, time.monotonic() + 2.0) if again else deadline
            while not future.done() and time.monotonic() < attempt:
                self.executor.spin_once(timeout_sec=0.05)
            if future.done():
                return future.result()
            client.remove_pending_request(future)
        return None

    # -- frames --------------------------------------------------------------------------------

    def spin_once(self) -> None:
        """
        Take what came; answer each new time, each round, each time published again.

        A time that differs from the frame's is a new frame, earlier ones too ("Resets").
        """
        self.executor.spin_once(timeout_sec=0.05)
        while self._clocks or self._rounds:
            clocks, self._clocks[:] = list(self._clocks), []
            for time_ns in clocks:  # rounds: a /clock of a new time starts a frame
                if time_ns == self.time_ns:
                    self._publish_done()  # published again: the same done again
                else:
                    self._frame(time_ns, None)
            rounds, self._rounds[:] = list(self._rounds), []
            for msg in rounds:
                self._on_round(msg)

    def _on_round(self, msg: Round) -> None:
        """Take a Round: "Frames in rounds", 2; "Frames at the next frame", 1 to 3."""
        time_ns = stamp_ns(msg.time)
        if self.next_frame:
            if not msg.next_frame:
                # A round of participants in rounds: not its own; answered at once.
                if time_ns == self.time_ns and msg.round == self.round + 1:
                    self.round = msg.round
                    self._publish_done({})
                return
            if time_ns == self.time_ns:
                self._publish_done(self._said)  # the time published again: the same done
                return
            counts = dict(zip(msg.topics, msg.counts))
            self._await(counts, f'at {time_ns} ns')
            self._frame(time_ns, counts)
            return
        if msg.next_frame or time_ns != self.time_ns or msg.round != self.round + 1:
            return  # not the round that comes next: an old one, or of another time or rule
        self.round = msg.round
        self._release()
        self._await(dict(zip(msg.topics, msg.counts)), f'round {msg.round} of {time_ns} ns')
        self._deliver(None)
        self._publish_done()

    def _frame(self, time_ns: int, limits) -> None:
        """
        Round 0 of a new time: take every subscription empty, deliver, run the timer, done.

        The /clock or Round that starts the frame may be taken before messages that came
        before it (the bag's data of the frame, acknowledged before its /clock went out):
        everything that waits is taken first, and only then delivered ("What waits").
        """
        self._drain()
        if self._held:
            self.node.get_logger().warning(
                f'what it published in the last round of {self.time_ns} ns goes out now, at '
                f'{time_ns} ns (that frame was stopped)')
            self._release()
        self._counts.clear()
        self.time_ns, self.round = time_ns, 0
        timer = self.role.timer
        if timer is not None:
            timer.jumped(time_ns)
        self._deliver(limits)
        if timer is not None:
            timer.run_due(time_ns)
        self._publish_done()

    def _drain(self) -> None:
        """
        Take everything that has arrived, on every subscription, until nothing is left.

        The stack's subscriptions are taken directly (``take_message`` until it returns None),
        not through the executor: its wait set can show a subscription as not ready while a
        message its writer already has acknowledged waits in the reader's queue, and a burst
        would then be split over two rounds. The server's topics go through the executor.
        """
        while True:
            try:
                handler, _, _ = self.executor.wait_for_ready_callbacks(timeout_sec=0)
            except TimeoutException:
                break
            handler()
            if handler.exception() is not None:
                raise handler.exception()
        for _, _, inbox, subscription in self._inputs:
            with subscription.handle:
                while True:
                    taken = subscription.handle.take_message(String, True)
                    if taken is None:
                        break
                    inbox.append(taken[0])

    def _await(self, counts: dict, where: str) -> None:
        """Wait until each subscription holds as many messages as ``counts`` says."""
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            self._drain()
            missing = sorted({topic for topic, _, inbox, _ in self._inputs
                              if len(inbox) < counts.get(topic, 0)})
            if not missing:
                return
            if time.monotonic() > deadline:
                self.node.get_logger().error(
                    f'{where}: not all messages arrived on {", ".join(missing)}; delivering '
                    'what came')
                return
            self.executor.spin_once(timeout_sec=0.05)

    def _deliver(self, limits) -> None:
        """
        Deliver what waits, by topic name, then in ascending order of the serialized bytes.

        Subscription by subscription in topic-name order, each one's messages compared as
        Python compares bytes (the CDR header included). ``limits``: next frame, the first so
        many of each topic it names (those published during the frame before); the rest wait.
        Topics it does not name: all that came.
        """
        for topic, callback, inbox, _ in sorted(self._inputs, key=lambda item: item[0]):
            limit = None if limits is None else limits.get(topic)
            batch = sorted(inbox[:limit])
            del inbox[:len(batch)]
            for raw in batch:
                callback(deserialize_message(raw, String))

    def _send(self, topic: str, payload: str) -> None:
        """Publish for the role: held until the next round (rounds), or at once (next frame)."""
        msg = String(data=f'{self.name}@{self.time_ns}|{payload}')
        if self.next_frame:
            self._publishers[topic].publish(msg)
        else:
            self._held.append((self._publishers[topic], msg))
        self._counts[topic] = self._counts.get(topic, 0) + 1

    def _release(self) -> None:
        """Send what the last round held (rounds), in the order it was published."""
        held, self._held = self._held, []
        self._counts.clear()
        for publisher, msg in held:
            publisher.publish(msg)

    def _publish_done(self, counts=None) -> None:
        """
        Done for the time and round under way.

        Rounds: the topics published on in the round, with their counts. Next frame: every
        topic it publishes on, 0 where nothing was published; said again as it was.
        """
        if counts is None:
            counts = dict(self._counts)
            if self.next_frame:
                counts = {**dict.fromkeys(sorted(self.role.publications), 0), **counts}
                self._said = counts
        msg = Done(name=self.name, rounds=True, round=self.round, next_frame=self.next_frame,
                   topics=list(counts), counts=list(counts.values()))
        set_stamp(msg.time, self.time_ns)
        self._done.publish(msg)


def main(argv=None) -> int:
    """Run one role until SIGINT or SIGTERM; leave the clock on the way out."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    parser.add_argument('role', choices=('perception', 'planning', 'control'))
    parser.add_argument('--mode', choices=('deterministic', 'next_frame'), default='deterministic')
    parser.add_argument('--readers', nargs='*', default=[], metavar='TOPIC=N',
                        help='print matched once these writers have matched N readers each')
    options = parser.parse_args(argv)
    readers = {topic: int(count) for topic, count in (item.split('=') for item in options.readers)}
    # Signals are noted, not left to rclpy (whose handler shuts the context down at once): the
    # participant leaves first.
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    stop = []
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda signum, frame: stop.append(signum))
    participant = Participant(options.role, options.mode == 'next_frame')
    try:
        participant.join()
        print('joined', flush=True)
        said_matched = not readers
        while rclpy.ok() and not stop:
            participant.look_ready()
            if not said_matched and participant.matched(readers):
                print('matched', flush=True)
                said_matched = True
            participant.spin_once()
        participant.leave()
    except ExternalShutdownException:
        pass
    finally:
        # The executor first, while the context is valid: left to the garbage collector at
        # exit, rclpy 9 destroys its signal guard condition after the shutdown and prints an
        # InvalidHandle traceback.
        participant.executor.shutdown()
        participant.node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
