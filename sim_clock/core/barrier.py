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
Participants: processes that hold the clock until they have finished each frame due for them.

The rules, free of ROS. A participant joins with a period in simulated time (0: every frame):
the first frame published after it joined is due for it, then each frame at least a period
after the last one due. A participant may instead name, with each done, the next time it needs
(its next timer, say): then the first frame at or after that time is the next one due for it,
whatever its period. After a frame, the next one waits until every participant it was due
for has said it finished that time (:meth:`Barrier.done`). Joins and leaves take effect at a
frame boundary; a reset makes the next frame due for everyone again.

Deterministic participants (doc/frames.md) also say, with each done, what they published in
the round they finished; while a round ends with messages published, the frame takes one more
round of the participants it was due for (:meth:`Barrier.next_round`), at most
:data:`MAX_ROUNDS`.
"""

from dataclasses import dataclass
from dataclasses import field
from typing import Dict
from typing import Iterable
from typing import List
from typing import Optional
from typing import Set
from typing import Tuple

from sim_clock.core.rules import check_user_id
from sim_clock.core.rules import Refused
from sim_clock.core.units import MAX_TIME_NS
from sim_clock.core.waits import Awaited
from sim_clock.core.waits import Timeout

#: The most participants at once.
MAX_PARTICIPANTS = 64
#: The most rounds of one frame (doc/frames.md): a cycle of participants that still publishes
#: after this many is stopped, and named.
MAX_ROUNDS = 100


@dataclass
class Participant(Awaited):
    """One participant's bookkeeping and its wait (:class:`Awaited`); /clock times, in ns."""

    name: str
    period_ns: int
    #: The node to watch: when it leaves the graph, the participant is dropped ('' : none).
    node: str = ''
    #: The time of the last frame that was due for it (None: none since it joined or a reset).
    last_due_ns: Optional[int] = None
    #: The last time it said it finished.
    last_done_ns: Optional[int] = None
    #: The next time it said it needs (None: a period after the last frame due).
    next_ns: Optional[int] = None
    #: Whether it takes part in the rounds of a frame (it said so with its last done).
    in_rounds: bool = False
    #: Whether it takes what was published during a frame at the next one (it joined so),
    #: the topics it said it publishes on, and the last time whose counts it carried.
    next_frame: bool = False
    topics: Set[str] = field(default_factory=set)
    carried_ns: Optional[int] = None

    @property
    def next_due_ns(self) -> Optional[int]:
        """
        Return the earliest time of the next frame due for it (None: the next frame).

        A frame is due for it once its time reaches this: the one rule of when it is due.
        """
        if self.last_due_ns is None:
            return None
        return self.next_ns if self.next_ns is not None else self.last_due_ns + self.period_ns


@dataclass
class Rounds:
    """
    The rounds of the frame out (doc/frames.md): what its participants published in each.

    Round 0 is the frame itself; while a round ends with messages published, the frame's
    participants take part in one more, in which those messages are delivered.
    """

    #: The frame's /clock time, and the names of the participants it was due for.
    time_ns: Optional[int] = None
    names: Tuple[str, ...] = ()
    #: The round under way, and what its participants published so far, by topic.
    number: int = 0
    counts: Dict[str, int] = field(default_factory=dict)
    #: Who published on which topic in the round under way, and in the one before.
    publishers: Dict[str, Set[str]] = field(default_factory=dict)
    previous: Dict[str, Set[str]] = field(default_factory=dict)
    #: After MAX_ROUNDS: the participants and topics that still published (else empty).
    runaway: Tuple[Tuple[str, ...], Tuple[str, ...]] = ((), ())
    #: What next_frame participants published while they took the frame, by topic.
    carried: Dict[str, int] = field(default_factory=dict)


@dataclass
class Barrier:
    """The participants and what the next frame waits for."""

    #: How long a frame waits for a participant before it is late (participant_timeout).
    timeout: Timeout = field(default_factory=Timeout)
    participants: Dict[str, Participant] = field(default_factory=dict)
    rounds: Rounds = field(default_factory=Rounds)
    #: Whether a next_frame participant is joined: only then does a frame out carry what was
    #: published before it (:meth:`take_carried`). Kept by :meth:`join` and :meth:`leave`.
    carries: bool = False

    def join(self, name: str, period_ns: int, node: str = '', next_frame: bool = False,
             topics: Iterable[str] = ()) -> Participant:
        """
        Add a participant (or change a joined one's period); it counts from the next frame.

        ``next_frame``: it takes what participants published during a frame at the next one
        (:meth:`take_carried` says what, as each frame goes out); ``topics``: those it
        publishes on (its dones may add more).
        """
        check_user_id(name)
        if not name:
            raise Refused('a participant needs a name (any printable text)')
        if isinstance(period_ns, bool) or not isinstance(period_ns, int) or not (
                0 <= period_ns <= MAX_TIME_NS):
            raise Refused(f'period must be between 0 (every frame) and {MAX_TIME_NS} ns, '
                          f'got {period_ns!r}')
        if name not in self.participants and len(self.participants) >= MAX_PARTICIPANTS:
            raise Refused(f'{MAX_PARTICIPANTS} participants are joined already; one must leave')
        participant = self.participants.get(name)
        if participant is None:
            participant = self.participants[name] = Participant(name, period_ns, node)
        else:
            participant.period_ns, participant.node = period_ns, node
        participant.next_frame, participant.topics = next_frame, set(topics)
        self._note_carriers()
        return participant

    def leave(self, name: str) -> bool:
        """Remove a participant; return whether it was joined. A frame stops waiting for it."""
        left = self.participants.pop(name, None) is not None
        self._note_carriers()
        return left

    def _note_carriers(self) -> None:
        """Set :attr:`carries` from the participants joined now (at a join or a leave)."""
        self.carries = any(p.next_frame for p in self.participants.values())

    @property
    def waiting_for(self) -> List[str]:
        """Return the names the current frame still waits for, sorted."""
        return sorted(p.name for p in self.participants.values() if p.awaited_ns is not None)

    @property
    def awaited_have_answered(self) -> bool:
        """Whether some participant is awaited and every one awaited has said a done before."""
        awaited = False
        for participant in self.participants.values():
            if participant.awaited_ns is not None:
                if participant.last_done_ns is None:
                    return False
                awaited = True
        return awaited

    @property
    def clear(self) -> bool:
        """Whether the next frame may be published (nobody is awaited)."""
        for participant in self.participants.values():  # a loop: asked at every frame
            if participant.awaited_ns is not None:
                return False
        return True

    def frames_until_due(self, time_ns: int, time_step_ns: int, limit: int) -> int:
        """
        Return how many frames after ``time_ns`` may go out before one is due (that one included).

        At most ``limit``; ``limit`` when nobody is joined.
        """
        count = limit
        for participant in self.participants.values():
            next_due = participant.next_due_ns
            if next_due is None:
                return min(count, 1)
            # frames_until's ceiling, in place: this is on every held frame's walk.
            frames = max(1, -(-(next_due - time_ns) // time_step_ns))
            count = min(count, frames)
        return max(count, 1) if limit > 0 else 0

    def published(self, time_ns: int, now_ns: int) -> List[str]:
        """Note a frame out at ``time_ns``; return the names it waits for (its round 0)."""
        waiting = []
        for participant in self.participants.values():
            due_ns = participant.next_due_ns
            if due_ns is None or time_ns >= due_ns:
                participant.last_due_ns = time_ns
                participant.await_frame(time_ns, now_ns)
                waiting.append(participant.name)
        waiting.sort()
        # What next_frame participants published before is said with the next frame out.
        self.rounds = Rounds(time_ns=time_ns, names=tuple(waiting), carried=self.rounds.carried)
        return waiting

    def done(self, name: str, time_ns: int, now_ns: int, next_ns: int = 0, round_: int = 0,
             counts: Optional[Dict[str, int]] = None, in_rounds: bool = False,
             next_frame: bool = False) -> bool:
        """
        Note that ``name`` finished ``time_ns``; return whether that releases a wait for it.

        ``next_ns``: the next time it needs, if later than ``time_ns`` (else its period rules).
        ``round_``, ``counts``: the round of the frame it finished, and what it published in it
        by topic; ``in_rounds``: it takes part in rounds (deterministic participants). A done
        for an earlier round releases nothing. ``next_frame``: what it published is delivered
        at the next frame (:meth:`take_carried`), not in a round of this one.
        """
        participant = self.participants.get(name)
        if participant is None:
            return False
        participant.in_rounds = in_rounds or next_frame
        in_rounds = participant.in_rounds
        rounds = self.rounds
        if next_frame and time_ns != participant.carried_ns:
            # What it published while it took this time goes to the next frame, awaited or not
            # (the time published again before a step), once.
            participant.carried_ns = time_ns
            participant.topics.update(counts or {})
            for topic, count in (counts or {}).items():
                rounds.carried[topic] = rounds.carried.get(topic, 0) + count
        if participant.last_done_ns is None or time_ns >= participant.last_done_ns:
            participant.last_done_ns = time_ns
            # A participant in rounds is due at every frame: its next time means nothing.
            participant.next_ns = next_ns if next_ns > time_ns and not in_rounds else None
        if participant.awaited_ns is None or time_ns < participant.awaited_ns:
            return False
        if time_ns == rounds.time_ns and round_ != rounds.number:
            return False  # a done of an earlier round, answered again
        participant.answered(now_ns)
        if next_frame:
            return True
        for topic, count in (counts or {}).items():
            if count > 0:
                rounds.counts[topic] = rounds.counts.get(topic, 0) + count
                rounds.publishers.setdefault(topic, set()).add(name)
        return True

    def next_round(self, now_ns: int) -> Optional[Tuple[int, int, Dict[str, int]]]:
        """
        Start the frame's next round if its last one published anything: (time, round, counts).

        None while a participant is still awaited in this round, or when the frame is finished
        (nothing was published, or MAX_ROUNDS were reached: then :attr:`Rounds.runaway` names
        who still published).
        """
        rounds = self.rounds
        if rounds.time_ns is None or not rounds.counts or not self.clear:
            return None
        if rounds.number + 1 >= MAX_ROUNDS:
            # The cycle: who published in the last two rounds (a ping-pong takes both).
            cycle = {**rounds.previous, **rounds.publishers}
            names = sorted(set().union(*cycle.values()))
            rounds.runaway = (tuple(names), tuple(sorted(cycle)))
            rounds.counts, rounds.publishers, rounds.previous = {}, {}, {}
            return None
        counts = rounds.counts
        rounds.number += 1
        rounds.counts, rounds.previous, rounds.publishers = {}, rounds.publishers, {}
        for name in rounds.names:
            participant = self.participants.get(name)
            if participant is not None and participant.in_rounds:
                participant.await_frame(rounds.time_ns, now_ns)
        return rounds.time_ns, rounds.number, counts

    def take_carried(self) -> Optional[Tuple[Dict[str, int], Dict[str, Tuple[str, ...]]]]:
        """
        As a frame goes out: what next_frame participants published during the one before.

        (counts by topic, every topic they publish on included, 0: none; the topics more than
        one of them publishes on, with their names); None when no next_frame participant is
        joined. Taken once: the time published again carries none.
        """
        if not self.carries:
            return None
        writers = self._next_frame_writers()
        rounds = self.rounds
        carried, rounds.carried = rounds.carried, {}
        shared = {topic: tuple(names) for topic, names in writers.items() if len(names) > 1}
        return {**dict.fromkeys(writers, 0), **carried}, shared

    def _next_frame_writers(self) -> Dict[str, List[str]]:
        """Return the next_frame participants that publish on each topic, by topic name."""
        writers: Dict[str, List[str]] = {}
        for participant in sorted(self.participants.values(), key=lambda p: p.name):
            if participant.next_frame:
                for topic in participant.topics:
                    writers.setdefault(topic, []).append(participant.name)
        return dict(sorted(writers.items()))

    def take_runaway(self) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
        """Return and forget the participants and topics of a frame stopped at MAX_ROUNDS."""
        runaway, self.rounds.runaway = self.rounds.runaway, ((), ())
        return runaway

    def overdue(self, now_ns: int) -> Tuple[List[str], Optional[int]]:
        """
        Return who is late at ``now_ns``, and when the next one awaited will be.

        (the names awaited for at least the timeout, sorted; the earliest steady time at which
        one awaited and not late yet is late, or None): one pass for a wait's two questions.
        """
        timeout_ns, late, first = self.timeout.ns, [], None
        for participant in self.participants.values():  # a loop: every wait asks
            deadline = participant.deadline_ns(timeout_ns)
            if deadline is None:
                continue
            if deadline <= now_ns:
                late.append(participant.name)
            elif first is None or deadline < first:
                first = deadline
        late.sort()
        return late, first

    def count_again(self, now_ns: int) -> None:
        """Give the participants still awaited a new timeout from ``now_ns`` (a new step)."""
        for participant in self.participants.values():
            participant.count_again(now_ns)

    def reset(self) -> None:
        """
        Time went back: nobody is awaited, and the next frame is due for everyone.

        What next_frame participants published during the last frame before is kept: it was
        sent, so the readers take it at the first frame said after the reset.
        """
        self.rounds = Rounds(carried=self.rounds.carried)
        for participant in self.participants.values():
            participant.last_due_ns = participant.awaited_ns = participant.last_done_ns = None
            participant.next_ns = participant.carried_ns = None
