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
Output gates: frames that wait for a message on a topic, from a node that knows nothing of us.

The rules, free of ROS. The ``output_gates`` parameter is a list of entries
``TOPIC[@PERIOD_S][:TIMEOUT_S]``: ``/cmd@0.05`` gates every frame that reaches a multiple of
50 ms of /clock time, ``/odom`` every frame, ``/cmd@0.05:2`` the same as the first with a
timeout of 2 s (default: ``participant_timeout``). A frame at /clock time ``t`` that follows
the time ``before`` is gated by a gate of period ``P`` when a multiple of ``P`` lies in
``(before, t]``: with times on the grid of ``time_step``, the frames whose time is a multiple
of ``P``; off the grid, the first frame at or after each multiple, which is when a ROS timer of
period ``P`` fires. A gated frame waits until one message arrived on its topic after its /clock
went out (:meth:`Gates.arrived`: the node feeds it only those); then the next frames may go.

Before that, a gated frame's /clock goes out only once the gate's reader has a writer that can
deliver to it (the question :meth:`Gates.unready`; :meth:`Gates.hold` holds the frame for the
gates it names): it has matched one (:meth:`Gates.matched`, fed by the node) and either heard
from it since or matched it :data:`MATCH_MARGIN_NS` ago. The reader's side of a
match says nothing of the writer's: a writer that has not matched the reader yet publishes to
nobody, and the frame's output is lost (doc/modes-and-services.md, "Output gates").
"""

from dataclasses import dataclass
from dataclasses import field
import decimal
import re
from typing import Collection
from typing import Dict
from typing import Iterable
from typing import List
from typing import Optional
from typing import Tuple

from sim_clock.core.rules import Refused
from sim_clock.core.units import MAX_TIME_NS
from sim_clock.core.units import NS_PER_SEC
from sim_clock.core.waits import Awaited
from sim_clock.core.waits import Timeout

#: The most gates at once.
MAX_GATES = 32
#: How long after its reader matched a writer a gate counts that writer as matched both ways
#: too, when nothing was heard from it since; steady ns. The writer's side follows one
#: discovery message later: a median 3.3 ms, at worst 0.34 s in 100 runs on two loaded cores
#: (doc/modes-and-services.md, "Output gates").
MATCH_MARGIN_NS = NS_PER_SEC
#: An absolute ROS topic name: '/' then tokens of letters, digits and '_', none led by a digit.
_TOPIC = re.compile(r'(/[A-Za-z_][A-Za-z0-9_]*)+')
_ENTRY = re.compile(r'(?P<topic>[^@:]*)(?:@(?P<period>[^:]*))?(?::(?P<timeout>.*))?')
#: What an entry looks like, for the refusals.
FORM = ("entries 'TOPIC[@PERIOD_S][:TIMEOUT_S]', e.g. '/cmd@0.05' (frames at multiples of "
        "50 ms wait for one message on /cmd), '/odom' (every frame), '/cmd@0.05:2' (timeout 2 s)")


@dataclass(frozen=True)
class GateSpec:
    """One entry of ``output_gates``: a topic, a period (0: every frame) and a timeout."""

    topic: str
    period_ns: int = 0
    #: How long a gated frame waits, steady ns; None: the participant timeout.
    timeout_ns: Optional[int] = None

    @property
    def text(self) -> str:
        """Return the entry as ``output_gates`` takes it."""
        text = self.topic
        if self.period_ns:
            text += '@' + _seconds(self.period_ns)
        if self.timeout_ns is not None:
            text += ':' + _seconds(self.timeout_ns)
        return text


def _seconds(time_ns: int) -> str:
    """Return ns as the shortest exact decimal of seconds: 50000000 -> '0.05'."""
    sec, nanosec = divmod(time_ns, NS_PER_SEC)
    return f'{sec}.{nanosec:09d}'.rstrip('0').rstrip('.')


def _duration_ns(text: str, what: str, entry: str) -> int:
    """Return decimal seconds as exact ns; refuse what is not a number of seconds >= 0."""
    try:
        seconds = decimal.Decimal(text.strip())
    except decimal.InvalidOperation:
        raise Refused(f'output_gates entry {entry!r}: the {what} must be a number of seconds, '
                      f'got {text!r}; {FORM}') from None
    if not seconds.is_finite():
        raise Refused(f'output_gates entry {entry!r}: the {what} must be a finite number of '
                      f'seconds, got {text!r}')
    if seconds < 0:
        raise Refused(f'output_gates entry {entry!r}: the {what} must not be negative, got '
                      f'{text!r}')
    time_ns = seconds * NS_PER_SEC
    if time_ns != time_ns.to_integral_value():
        raise Refused(f'output_gates entry {entry!r}: the {what} must be a whole number of '
                      f'nanoseconds, got {text!r}')
    if time_ns > MAX_TIME_NS:
        raise Refused(f'output_gates entry {entry!r}: the {what} must be at most '
                      f'{MAX_TIME_NS // NS_PER_SEC} s, got {text!r}')
    return int(time_ns)


def parse_entry(entry: str) -> GateSpec:
    """Return the gate an entry ``TOPIC[@PERIOD_S][:TIMEOUT_S]`` says; refuse a bad one."""
    if not isinstance(entry, str):
        raise Refused(f'output_gates entries must be text, got {entry!r}; {FORM}')
    match = _ENTRY.fullmatch(entry.strip())
    topic = match.group('topic').strip() if match else ''
    if not match or not _TOPIC.fullmatch(topic):
        raise Refused(f'output_gates entry {entry!r}: {topic!r} is not an absolute topic name '
                      "('/' then names of letters, digits and '_', none starting with a digit, "
                      f"e.g. '/cmd' or '/robot_1/cmd_vel'); {FORM}")
    period_ns, timeout_ns = 0, None
    if match.group('period') is not None:
        period_ns = _duration_ns(match.group('period'), 'period', entry)
    if match.group('timeout') is not None:
        timeout_ns = _duration_ns(match.group('timeout'), 'timeout', entry)
        if timeout_ns == 0:
            raise Refused(f'output_gates entry {entry!r}: the timeout must be > 0 s (leave it '
                          'out for participant_timeout)')
    return GateSpec(topic, period_ns, timeout_ns)


def parse_gates(value) -> Tuple[GateSpec, ...]:
    """
    Return the gates of an ``output_gates`` value; refuse a bad one, naming what is allowed.

    Takes a list of entries, an empty list of any type (``ros2 param set ... "[]"``), or one
    text of entries separated by commas or spaces (a launch argument), brackets and quotes
    allowed (``"['/cmd@0.05', '/odom']"``).
    """
    if value is None:  # '[]' on the command line: an array of no type, taken as none
        return ()
    if isinstance(value, str):
        text = value.strip()
        if text.startswith('[') and text.endswith(']'):  # a list written as text (YAML)
            text = text[1:-1]
        entries = [part.strip('\'"') for part in re.split(r'[\s,]+', text) if part]
    elif isinstance(value, (list, tuple)):
        entries = list(value)
    else:
        raise Refused(f'output_gates must be a list of text entries, got {value!r}; {FORM}')
    specs = tuple(parse_entry(entry) for entry in entries)
    topics = [spec.topic for spec in specs]
    twice = sorted({topic for topic in topics if topics.count(topic) > 1})
    if twice:
        raise Refused(f'output_gates names {", ".join(twice)} more than once; one entry per '
                      'topic')
    if len(specs) > MAX_GATES:
        raise Refused(f'output_gates takes at most {MAX_GATES} entries, got {len(specs)}')
    return specs


def check_periods(specs: Iterable[GateSpec], time_step_ns: int) -> None:
    """Refuse a gate whose period is not a whole number of frames of ``time_step_ns``."""
    for spec in specs:
        if spec.period_ns % time_step_ns:
            raise Refused(
                f'output_gates entry {spec.text!r}: the period {spec.period_ns} ns is not a '
                f'multiple of time_step ({time_step_ns} ns); use a whole number of frames, or '
                'no period (every frame)')


def gated(period_ns: int, before_ns: int, time_ns: int) -> bool:
    """Whether a frame at ``time_ns`` after time ``before_ns`` is gated by a period (0: all)."""
    if not period_ns:
        return True
    return time_ns // period_ns > before_ns // period_ns


def frames_until_gated(period_ns: int, time_ns: int, time_step_ns: int, limit: int) -> int:
    """Return how many frames after ``time_ns`` go out up to the next gated one (included)."""
    if not period_ns:
        return min(limit, 1)
    next_multiple = (time_ns // period_ns + 1) * period_ns
    return min(limit, -(-(next_multiple - time_ns) // time_step_ns))


@dataclass
class Gate(Awaited):
    """One gate and its wait (:class:`Awaited`); /clock times in ns, waits in steady ns."""

    spec: GateSpec
    #: The /clock time of the last frame a message released (None: none yet).
    last_satisfied_ns: Optional[int] = None
    #: The writers the gate's reader has matched (0 until the node subscribes the topic).
    writers: int = 0
    #: Steady time since which it has matched a writer (None: none now).
    matched_since_ns: Optional[int] = None
    #: Whether a message came from a writer since then: that writer has matched the reader.
    heard: bool = False
    #: While a gated frame is held for a writer: the frame's /clock time, and since when.
    held_ns: Optional[int] = None
    held_since_ns: int = 0
    #: A gated frame let go without a writer (free run past the timeout): its /clock time.
    passed_ns: Optional[int] = None


@dataclass
class Gates:
    """The gates of one clock server and what the frame out waits for."""

    #: The timeout of gates that name none (participant_timeout).
    timeout: Timeout = field(default_factory=Timeout)
    #: See :data:`MATCH_MARGIN_NS`.
    match_margin_ns: int = MATCH_MARGIN_NS
    gates: Dict[str, Gate] = field(default_factory=dict)

    def configure(self, specs: Iterable[GateSpec]) -> None:
        """Take a new table: unchanged topics keep their state, removed ones wait no more."""
        old, self.gates = self.gates, {}
        for spec in specs:
            gate = old.get(spec.topic) or Gate(spec)
            gate.spec = spec
            self.gates[spec.topic] = gate

    @property
    def specs(self) -> Tuple[GateSpec, ...]:
        """Return the gates as configured, in the order given."""
        return tuple(gate.spec for gate in self.gates.values())

    @property
    def awaited(self) -> bool:
        """Whether the frame out waits for a message on any topic."""
        return any(gate.awaited_ns is not None for gate in self.gates.values())

    @property
    def holding(self) -> bool:
        """Whether the frame out waits for a message, or the next frame for a writer."""
        return any(gate.awaited_ns is not None or gate.held_ns is not None
                   for gate in self.gates.values())

    @property
    def waiting_for(self) -> List[str]:
        """Return the topics the frame out waits for a message on, or the next for a writer."""
        return sorted(topic for topic, gate in self.gates.items()
                      if gate.awaited_ns is not None or gate.held_ns is not None)

    def frames_until_gated(self, time_ns: int, time_step_ns: int, limit: int) -> int:
        """Return how many frames after ``time_ns`` may go out up to the next gated one."""
        count = limit
        for gate in self.gates.values():
            count = frames_until_gated(gate.spec.period_ns, time_ns, time_step_ns, count)
        return count

    def gated_in(self, before_ns: int, time_ns: int) -> bool:
        """Whether frames from ``before_ns`` (excluded) to ``time_ns`` hold a gated one."""
        return any(gated(gate.spec.period_ns, before_ns, time_ns)
                   for gate in self.gates.values())

    def published(self, before_ns: int, time_ns: int, now_ns: int) -> List[str]:
        """
        Note frames out from ``before_ns`` (excluded) to ``time_ns``; return the topics awaited.

        ``now_ns``: steady time, from which the timeout counts. A gated frame let go without a
        writer (:meth:`release`) waits for nothing on that topic.
        """
        topics = []
        for topic, gate in self.gates.items():
            if gated(gate.spec.period_ns, before_ns, time_ns):
                passed = gate.passed_ns == time_ns
                gate.held_ns = gate.passed_ns = None
                if passed:
                    continue
                gate.await_frame(time_ns, now_ns)
                topics.append(topic)
        return topics

    def matched(self, topic: str, writers: int, now_ns: int) -> bool:
        """
        Note how many writers ``topic``'s reader matches now (``now_ns``: steady time).

        Return whether a frame is held for a writer on it (look again: it may go).
        """
        gate = self.gates.get(topic)
        if gate is None:
            return False
        if not writers:
            gate.matched_since_ns, gate.heard = None, False
        elif not gate.writers:
            gate.matched_since_ns = now_ns
        gate.writers = writers
        return gate.held_ns is not None

    def ready_ns(self, gate: Gate) -> Optional[int]:
        """Return the steady time from which ``gate`` has a writer matched both ways, or None."""
        if gate.matched_since_ns is None:
            return None
        return gate.matched_since_ns + (0 if gate.heard else self.match_margin_ns)

    def unready(self, before_ns: int, time_ns: int, now_ns: int) -> List[str]:
        """
        Return the topics that gate the frame at ``time_ns`` and have no writer ready now.

        ``before_ns``: the time of the frame before it. A question only: nothing changes.
        """
        topics = []
        for topic, gate in self.gates.items():
            if gated(gate.spec.period_ns, before_ns, time_ns) and gate.passed_ns != time_ns:
                ready_ns = self.ready_ns(gate)
                if ready_ns is None or ready_ns > now_ns:
                    topics.append(topic)
        return topics

    def hold(self, topics: Collection[str], time_ns: int, now_ns: int) -> None:
        """
        Hold the frame at ``time_ns`` for the gates of ``topics`` (:meth:`unready`'s answer).

        Its timeout counts from the first hold of that frame, at ``now_ns``; every other gate
        holds no frame from now on (an empty ``topics`` lets every held frame go).
        """
        for topic, gate in self.gates.items():
            if topic not in topics:
                gate.held_ns = None
            elif gate.held_ns != time_ns:
                gate.held_ns, gate.held_since_ns = time_ns, now_ns

    def no_writer(self, now_ns: int) -> List[str]:
        """Return the topics a frame was held for at least their timeout with no writer, sorted."""
        return sorted(topic for topic, gate in self.gates.items()
                      if gate.held_ns is not None and not gate.writers
                      and now_ns - gate.held_since_ns >= self.timeout_ns(gate))

    def arrived(self, topic: str, now_ns: int) -> bool:
        """
        Note a message on ``topic``: its writer has matched the reader, so the reader is ready.

        Return whether it released a wait: the awaited frame's, which only a message taken
        after that frame's /clock went out reaches (the node drops older ones), or a frame held
        until its writer is known to have matched. ``now_ns``: steady time, for the slowest wait.
        """
        gate = self.gates.get(topic)
        if gate is None:
            return False
        proof = gate.matched_since_ns is not None and not gate.heard
        gate.heard = gate.heard or proof
        if gate.awaited_ns is None:
            return proof and gate.held_ns is not None
        gate.last_satisfied_ns = gate.answered(now_ns)
        return True

    def timeout_ns(self, gate: Gate) -> int:
        """Return how long a frame waits for ``gate``, steady ns."""
        spec_timeout = gate.spec.timeout_ns
        return self.timeout.ns if spec_timeout is None else spec_timeout

    def late(self, now_ns: int) -> List[str]:
        """Return the topics awaited for at least their timeout, sorted."""
        return sorted(topic for topic, gate in self.gates.items()
                      if gate.late(now_ns, self.timeout_ns(gate)))

    def deadline_ns(self) -> Optional[int]:
        """
        Return the steady time of the next change without a message or match, or None.

        The first awaited topic late; a held frame's writer ready, or its timeout.
        """
        times = [t for t in (gate.deadline_ns(self.timeout_ns(gate))
                             for gate in self.gates.values()) if t is not None]
        for gate in self.gates.values():
            if gate.held_ns is not None:
                ready_ns = self.ready_ns(gate)
                times.append(gate.held_since_ns + self.timeout_ns(gate) if ready_ns is None
                             else ready_ns)
        return min(times) if times else None

    def count_again(self, now_ns: int) -> None:
        """Give the topics still awaited or held for a new timeout from ``now_ns`` (a new step)."""
        for gate in self.gates.values():
            gate.count_again(now_ns)
            if gate.held_ns is not None:
                gate.held_since_ns = now_ns

    def release(self, topics: Iterable[str]) -> None:
        """
        Stop waiting for ``topics`` (free run goes on past a late gate).

        A frame held for a writer on one goes out without waiting for a message on it.
        """
        for topic in topics:
            gate = self.gates.get(topic)
            if gate is not None:
                gate.awaited_ns = None
                if gate.held_ns is not None:
                    gate.passed_ns, gate.held_ns = gate.held_ns, None

    def reset(self) -> None:
        """Time went back: no frame waits any more."""
        for gate in self.gates.values():
            gate.awaited_ns = gate.held_ns = gate.passed_ns = None
