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
Acknowledged steps: a step answers once every matched reliable reader has what it published.

With ``ack_timeout`` > 0 a step waits, after its last frame, until the publishers of its frames
(``/clock``, and a bag player's topics) are acknowledged by all their matched reliable readers,
or until the timeout; the answer names the topics that were not. The wait is cut into short
slices between which the executor serves everything else: the loop of :class:`Wait`, which
every wait of the node runs (a step's, flow control's, a bag frame's for its data). A topic
that timed out is not waited for again while its readers stay the same and still have not
caught up: a dead reader would otherwise stall every step for its whole lease
(doc/design.md, "Acknowledged steps"). Flow control alone waits for such a topic all the same
(``skip_stalled=False``): its windows are what keeps a live reader of that topic from losing
samples (doc/design.md, "Flow control").
Once the node stops (:meth:`Acknowledgements.stop`: Ctrl-C, SIGTERM) nothing is waited for.
"""

import time
from typing import Callable
from typing import Dict
from typing import Generator
from typing import Iterator
from typing import List
from typing import Optional
from typing import Set
from typing import Tuple

from rclpy.duration import Duration

#: The longest the executor is held by one wait for acknowledgements, in ns.
SLICE_NS = 2_000_000
#: Waits for readers shorter than this in all are left out of a step's answer, in ns.
REPORTED_WAIT_NS = 100_000_000
#: A look at whether a writer is acknowledged, without waiting.
NO_WAIT = Duration(nanoseconds=0)


class Acknowledgements:
    """
    The acknowledgement waits of one node, and its memory of stalled readers.

    One per node (``ClockServer.acks``), handed to whoever waits: the frame engine's steps,
    flow control and a bag's lockstep frames share what they learnt of stalled readers.
    """

    def __init__(self, on_wait: Optional[Callable[[List[str], int, int, List[str]], None]] = None):
        #: Called after each wait (:class:`Wait`) that had to wait: (topics, start and end in
        #: steady ns, the topics that stalled), for the frame timeline.
        self.on_wait = on_wait
        #: topic -> its matched readers when it last timed out
        self._stalled: Dict[str, int] = {}
        #: topic -> ns that waits for its readers (:class:`Wait`) took since ``take_waits``
        self._waited: Dict[str, int] = {}
        #: the topics waits found stalled since ``take_waits``
        self._stalled_now: Set[str] = set()
        #: Whether a wait waited or found readers stalled since ``take_waits``: a step asks
        #: :meth:`take_waits` only then.
        self.waited = False
        #: Whether :meth:`stop` was called: every wait ends at once (read on every publish).
        self.stopped = False

    def take_waits(self) -> Tuple[Dict[str, int], List[str]]:
        """
        Return what the waits waited for since the last call, and forget it.

        ``({topic: ns waited for its readers}, [topics whose readers stalled])``: what held a
        step's frames back (flow control, a bag frame's data), for the step's answer. A step
        takes them before its frames too, so that only its own are in its answer.
        """
        waited, stalled = self._waited, self._stalled_now
        if not (waited or stalled):
            return {}, []  # nothing waited: a step's usual case
        self._waited, self._stalled_now, self.waited = {}, set(), False
        return waited, sorted(stalled)

    def take_report(self) -> str:
        """Take the waits (:meth:`take_waits`) and say them for a step's answer (or '')."""
        return describe_waits(*self.take_waits())

    def stop(self) -> None:
        """
        End every wait at once from now on, as if acknowledged: the node is stopping.

        Safe in a signal handler (it only sets a flag). A wait under way ends within a slice.
        """
        self.stopped = True

    def wait(self, publishers, timeout_ns: int, *, skip_stalled: bool = True) -> 'Wait':
        """Return the wait until ``publishers`` are acknowledged, ``timeout_ns`` at most."""
        return Wait(self, publishers, timeout_ns, skip_stalled)

    def wait_now(self, publishers, timeout_ns: int, *, skip_stalled: bool = True) -> List[str]:
        """
        Wait until ``publishers`` are acknowledged, at most ``timeout_ns``; return the rest.

        Holds the executor meanwhile: for a frame's data before its /clock, and flow control.
        A step's wait (``StepRunner._acknowledged``) is the same :class:`Wait` with turns of
        the executor between slices. Once the node is stopped, it returns at once with nothing
        left. ``skip_stalled=False`` waits for the topics remembered as stalled too (flow
        control's windows).
        """
        slices = self._slices(publishers, timeout_ns, skip_stalled)
        while True:
            try:
                next(slices)  # straight on to the next slice
            except StopIteration as end:
                return end.value

    def _slices(self, publishers, timeout_ns: int,
                skip_stalled: bool) -> Generator[None, None, List[str]]:
        """
        Wait as :class:`Wait` says, yielding between two slices; return the topics left.

        Who is waited for: every publisher but, with ``skip_stalled``, those of a topic that
        stalled before whose readers are the same and have not caught up. Then the slices.
        Then the topics not acknowledged are remembered as stalled, and those and the skipped
        ones returned, sorted. A topic waited for again (``skip_stalled`` False, or its readers
        changed) is forgotten as stalled, and remembered again if it stalls again.
        """
        now = start = time.monotonic_ns()
        deadline = now + timeout_ns
        remembered, pending, skipped, topics = self._stalled, [], [], []
        for publisher in publishers:
            topic = publisher.topic_name
            if (skip_stalled and remembered.get(topic) == publisher.get_subscription_count()
                    and not publisher.wait_for_all_acked(NO_WAIT)):
                skipped.append(topic)
            else:
                remembered.pop(topic, None)
                pending.append(publisher)
                topics.append(topic)
        waited = self._waited
        while pending and now < deadline:
            if self.stopped:
                return []
            still = self.wait_slice(pending, deadline)
            after = time.monotonic_ns()
            for publisher in pending:  # each slice counts for every topic it waited for
                topic = publisher.topic_name
                waited[topic] = waited.get(topic, 0) + after - now
            self.waited = True
            pending, now = still, after
            if pending and now < deadline:
                yield
        stalled = skipped
        for publisher in pending:
            remembered[publisher.topic_name] = publisher.get_subscription_count()
            stalled.append(publisher.topic_name)
        if stalled:
            stalled.sort()
            self._stalled_now.update(stalled)
            self.waited = True
        if self.on_wait is not None and (topics or stalled):
            self.on_wait(topics or stalled, start, now, stalled)
        return stalled

    def caught_up(self, publisher, timeout_ns: int) -> bool:
        """
        Wait until ``publisher``'s readers have all it published, ``timeout_ns`` at most.

        Return whether they have; a stopped node (:meth:`stop`) ends the wait, with True.
        """
        deadline = time.monotonic_ns() + timeout_ns
        pending = [publisher]
        while pending and not self.stopped and time.monotonic_ns() < deadline:
            pending = self.wait_slice(pending, deadline)
        return not pending or self.stopped

    @staticmethod
    def wait_slice(pending, deadline: int) -> list:
        """Wait one slice (at most to ``deadline``); return the publishers still unacknowledged."""
        remaining = max(deadline - time.monotonic_ns(), 0)
        wait, still = Duration(nanoseconds=min(remaining, SLICE_NS)), []
        for publisher in pending:  # a loop: every wait of a bag frame's data takes a slice
            if not publisher.wait_for_all_acked(wait):
                still.append(publisher)
        return still


class Wait:
    """
    One wait for acknowledgements, in slices: the one wait loop of a node's waits.

    Iterating it is the wait: slices of at most :data:`SLICE_NS`, an item between two, until
    ``publishers`` are acknowledged by all their matched reliable readers, ``timeout_ns`` has
    passed, or the node stops (:meth:`Acknowledgements.stop`: then before the next slice, with
    nothing left). Between two items the caller may let the executor serve the rest (a step's wait,
    ``StepRunner._acknowledged``) or go straight on (:meth:`Acknowledgements.wait_now`).
    Topics whose readers stalled before, and are the same, are not waited for unless
    ``skip_stalled`` is False (flow control); those not acknowledged in time are remembered as
    stalled. Each wait counts for
    :meth:`Acknowledgements.take_waits` and, if it waited for anything, is recorded through
    ``on_wait``. Then :attr:`stalled` names the topics not acknowledged (those skipped too).
    """

    __slots__ = ('_acks', '_publishers', '_timeout_ns', '_skip_stalled', 'stalled')

    def __init__(self, acks: Acknowledgements, publishers, timeout_ns: int,
                 skip_stalled: bool = True):
        self._acks, self._publishers, self._timeout_ns = acks, publishers, timeout_ns
        self._skip_stalled = skip_stalled
        #: The topics not acknowledged, sorted, once iterated.
        self.stalled: List[str] = []

    def __iter__(self) -> Iterator[None]:
        self.stalled = yield from self._acks._slices(self._publishers, self._timeout_ns,
                                                     self._skip_stalled)


def describe_waits(waited: Dict[str, int], stalled: List[str]) -> str:
    """
    Say what held a step's frames back for their readers, or '' if nothing did for long.

    ``waited`` (topic -> ns) and ``stalled`` as :meth:`Acknowledgements.take_waits` returns
    them: flow control's waits and a bag frame's wait for its data, appended to the answer.
    """
    parts = []
    total = sum(waited.values())
    if total >= REPORTED_WAIT_NS:
        slowest = sorted(waited.items(), key=lambda item: (-item[1], item[0]))
        parts.append(
            f'; paced by its readers: waited {total / 1e9:.3f} s for the acknowledgements of '
            + ', '.join(f'{topic} ({ns / 1e9:.3f} s)' for topic, ns in slowest
                        if ns >= REPORTED_WAIT_NS // 10))
    if stalled:
        parts.append(f'; readers of {", ".join(stalled)} stalled (no acknowledgement in time): '
                     'they may have lost samples')
    return ''.join(parts)
