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
A participant's side of a clock server's ``~/join``, ``~/done`` and ``~/leave``, on a node.

The one place the participant protocol is written in Python (doc/frames.md says what each
field means): the participant helper (``client/participant.py``), the bag follower
(``bag/follower.py``) and ``SimClockClient.join``/``leave`` all go through
:class:`ParticipantLink`. It only asks and says; how a caller waits (a blocking call, a
non-blocking state machine polling a future) is the caller's.
"""

import enum
import time
from typing import Callable
from typing import Dict
from typing import Iterable
from typing import MutableMapping
from typing import Optional

from rclpy.node import Node
from rclpy.task import Future
from sim_clock.core.units import split_ns
from sim_clock.msg import Done
from sim_clock.srv import Join
from sim_clock.srv import Leave
from sim_clock.wire.names import DEFAULT_SERVER
from sim_clock.wire.names import DONE_QOS
from sim_clock.wire.names import SERVICE_QOS

#: The longest a participant waits for the answer to its ``~/leave``, in ns. Leaving is a
#: courtesy: under ``ros2 launch`` the server gets the same Ctrl-C and may be gone already,
#: the process must end within 2 s (launch escalates to SIGTERM after 5 s), and a server
#: drops a participant whose node left the graph anyway.
LEAVE_TIMEOUT_NS = 500_000_000
#: How long one turn of a bounded leave's wait spins at most, in s.
LEAVE_POLL_S = 0.05
#: How long an asked join's answer is waited for before it is asked again (a join is
#: idempotent): the server may answer before its response writer has matched the asking
#: client's reader, and the answer is lost.
JOIN_ANSWER_NS = 5_000_000_000


class Left(enum.Enum):
    """How a bounded leave (:meth:`ParticipantLink.leave`) ended."""

    #: The server answered (whatever it said: a name it did not know is gone from it too).
    ANSWERED = 'answered'
    #: The server's ``~/leave`` was not served when asked: nothing was sent.
    NOT_SERVED = 'not served'
    #: Sent, and no answer came in time, or the service left the graph while it waited.
    UNANSWERED = 'unanswered'


def join_request(name: str, *, node: str = '', period_ns: int = 0, next_frame: bool = False,
                 topics: Iterable[str] = ()) -> Join.Request:
    """Return the ``~/join`` request of participant ``name`` (``srv/Join.srv``, field by field)."""
    return Join.Request(name=name, node=node, period_ns=period_ns, next_frame=next_frame,
                        topics=list(topics))


def leave_request(name: str) -> Leave.Request:
    """Return the ``~/leave`` request of participant ``name``."""
    return Leave.Request(name=name)


class ParticipantLink:
    """
    The endpoints of the participant protocol with the clock server ``server``, on ``node``.

    Made at once, in this order: the ``~/leave`` client, the ``~/join`` client, the ``~/done``
    writer. The leave's client comes first because a leave may follow the join in a hurry
    (Ctrl-C), and a server learns of a process's endpoints in the order they were made: once it
    has heard the join it knows the leave's writer too, and no leave request is lost to a
    writer it has not matched yet.

    :param node: the node the endpoints live on; its owner spins it.
    :param server: the server node's full name.
    :param done: make the ``~/done`` writer; False for a link that joins and leaves on
        someone's behalf (``SimClockClient``), whose participant says done elsewhere.
    :param calls: make the ``~/join`` and ``~/leave`` clients; False for a participant whose
        calls go through a ``SimClockClient`` on a private node (the participant helper), so
        that its waits run none of ``node``'s callbacks.
    :param clients: service clients by service name (``'join'``, ``'leave'``) that the node's
        other calls share (a ``SimClockClient``'s): the link takes its clients from it, and
        puts there those it makes; they are then that mapping's owner's to destroy.
    """

    def __init__(self, node: Node, server: str = DEFAULT_SERVER, *, done: bool = True,
                 calls: bool = True,
                 clients: Optional[MutableMapping[str, object]] = None):
        self._node = node
        self.server = server.rstrip('/')
        #: What this link made and :meth:`destroy` destroys (shared clients excluded).
        self._made = []
        self.leave_client = self.join_client = self.done_publisher = None
        if calls:
            self.leave_client = self._client(Leave, 'leave', clients)
            self.join_client = self._client(Join, 'join', clients)
        if done:
            self.done_publisher = node.create_publisher(Done, f'{self.server}/done', DONE_QOS)
            self._made.append(self.done_publisher)

    def _client(self, srv_type, service: str, clients):
        client = None if clients is None else clients.get(service)
        if client is None:
            client = self._node.create_client(
                srv_type, f'{self.server}/{service}', qos_profile=SERVICE_QOS)
            if clients is None:
                self._made.append(client)
            else:
                clients[service] = client
        return client

    # -- join ----------------------------------------------------------------------------------

    def done_matched(self) -> bool:
        """
        Whether the server's ``~/done`` reader has matched this link's writer.

        A done said before then is lost (the topic is volatile), and its frame held until
        the time is published again and answered again.
        """
        return self.done_publisher.get_subscription_count() > 0

    def ready_to_join(self) -> bool:
        """Whether ``~/join`` is served and (with a done writer) the done topic matched."""
        return self.join_client.service_is_ready() and (
            self.done_publisher is None or self.done_matched())

    def ask_join(self, name: str, **fields) -> Future:
        """
        Ask to join as ``name``; return the future of the server's ``Join.Response``.

        ``fields``: the rest of :func:`join_request` (``node``, ``period_ns``, ``next_frame``,
        ``topics``). A join is safe to ask again under the same name (nothing changes); an
        answer that does not come can be given up with :meth:`forget`.
        """
        return self.join_client.call_async(join_request(name, **fields))

    def forget(self, future: Future) -> None:
        """Give up a request of this link not answered yet: its answer, if it comes, is dropped."""
        for client in (self.join_client, self.leave_client):
            if client is not None:
                client.remove_pending_request(future)

    # -- done ----------------------------------------------------------------------------------

    def say_done(self, name: str, time_ns: int, next_ns: int = 0, *,
                 counts: Optional[Dict[str, int]] = None, round_number: int = 0,
                 next_frame: bool = False) -> None:
        """
        Say on ``~/done`` that participant ``name`` has finished /clock time ``time_ns``.

        Without ``counts``: a participant without rounds, due next at the first frame at or
        after ``next_ns`` (0: a period after its last one). With ``counts`` (topic -> messages,
        possibly empty): a deterministic participant, which finished round ``round_number`` of
        that time having published so many on each topic; ``next_frame``: under that rule,
        with ``counts`` naming every topic it publishes on.
        """
        msg = Done(name=name)
        msg.time.sec, msg.time.nanosec = split_ns(time_ns)
        if counts is None:
            msg.next.sec, msg.next.nanosec = split_ns(next_ns)
        else:
            msg.rounds, msg.round, msg.next_frame = True, round_number, next_frame
            msg.topics, msg.counts = list(counts), list(counts.values())
        self.done_publisher.publish(msg)

    # -- leave ---------------------------------------------------------------------------------

    def ask_leave(self, name: str) -> Future:
        """Ask to leave as ``name``; return the future of the server's ``Leave.Response``."""
        return self.leave_client.call_async(leave_request(name))

    def leave(self, name: str, spin_once: Callable[[float], None],
              timeout_ns: int = LEAVE_TIMEOUT_NS) -> Left:
        """
        Leave as ``name``, waiting at most ``timeout_ns`` for the answer; say how it ended.

        A server whose ``~/leave`` is not served (it stopped) is not asked; one whose service
        leaves the graph while the leave waits (it stopped at the same moment) is not waited
        for. ``spin_once(timeout_sec)``: runs the executor that spins this link's node once,
        for at most that long.
        """
        client = self.leave_client
        if not client.service_is_ready():
            return Left.NOT_SERVED
        future = self.ask_leave(name)
        deadline = time.monotonic_ns() + timeout_ns
        while not future.done() and client.service_is_ready():
            remaining = deadline - time.monotonic_ns()
            if remaining <= 0:
                break
            spin_once(min(remaining / 1e9, LEAVE_POLL_S))
        if future.done():
            return Left.ANSWERED
        self.forget(future)
        return Left.UNANSWERED

    def destroy(self) -> None:
        """Destroy the endpoints this link made (shared clients stay); it cannot be used after."""
        node = self._node
        for entity in self._made:
            if entity is self.done_publisher:
                node.destroy_publisher(entity)
            else:
                node.destroy_client(entity)
        self._made = []
        self.leave_client = self.join_client = self.done_publisher = None


class Joining:
    """
    A join asked without blocking, for a node whose own loop calls :meth:`poll` each turn.

    It asks once ``~/join`` is served, the done topic has matched and ``also_ready()`` says
    so (a player waits for the source's /clock writer, say), and asks again when no answer
    came within ``answer_ns``. ``fields``: the rest of :func:`join_request`.
    """

    def __init__(self, link: ParticipantLink, name: str, *,
                 also_ready: Callable[[], bool] = lambda: True,
                 answer_ns: int = JOIN_ANSWER_NS, **fields):
        self._link = link
        self._name = name
        self._also_ready = also_ready
        self._answer_ns = answer_ns
        self._fields = fields
        self._future: Optional[Future] = None
        self._asked_ns = 0

    def poll(self, now_ns: int) -> Optional[Join.Response]:
        """Return the server's ``Join.Response`` once it came (success or not); None until."""
        future = self._future
        if future is None:
            if self._link.ready_to_join() and self._also_ready():
                self._future = self._link.ask_join(self._name, **self._fields)
                self._asked_ns = now_ns
            return None
        if not future.done():
            if now_ns - self._asked_ns >= self._answer_ns:  # lost: asked again
                self._link.forget(future)
                self._future = None
            return None
        return future.result()
