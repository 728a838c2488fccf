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
The frames out: every frame of every mode goes out here, and what holds it is said here.

A frame is, in this order (:meth:`Frames.publish`): its data and its /clock (the sink: a bag's
messages, then /clock, then the clock views, flow-controlled while stepped), then the
participants it is due for and the output gates that hold it; then what the frames left to do
at their end (a bag's loop or its pause at the end) once those participants have finished
them and the gated outputs came (:meth:`Frames.finish_frames`). Frames come from the free-run
tick (:class:`~.free_run.FreeRun`) and from the steps (:class:`~.steps.StepRunner`), whose runs
end on the next frame due for a participant or gated (:meth:`Frames.run_length`); a gated
frame is held, in both, until each of its gates has a writer that can deliver to it
(:meth:`Frames.unready`). Both are given the one :class:`Frames` of their engine.
"""

from typing import Callable
from typing import List
from typing import Optional

from sim_clock.core.frame_events import DONE
from sim_clock.core.frame_events import GATE
from sim_clock.core.hold import Late
from sim_clock.core.rules import HOLDING_MODES
from sim_clock.node.engine.parts import EngineMember
from sim_clock.node.engine.parts import EngineParts


class Frames(EngineMember):
    """
    The frames of one clock server going out, and what holds them: no node, no server.

    The time core in ``parts.core`` (timeline, the hold of participants and gates, pacing, rate
    cap, roster) decides; this publishes through ``parts.sink`` and says each frame to the
    participants and gates. Its engine's steps and free run call it; it calls neither.
    """

    def __init__(self, parts: EngineParts):
        super().__init__(parts)
        core = parts.core
        self.sink = parts.sink
        self._axes = parts.axes
        self._pace = parts.pace
        self._participants = parts.participants
        self._gate_readers = parts.gate_readers
        #: The /clock rate cap of free run (the rule: ``core.clock_rate``).
        self._cap = core.rate_cap
        #: Whether the sink's frames may leave something to do at their end (a bag's).
        self._ends_frames = parts.sink.ends_frames
        #: Whether frames wait for participants or output gates now: the core's answer.
        self.holds_frames = core.holds_frames
        #: What the frames out left to do once finished (:meth:`finish_frames`): a change of
        #: the timeline, or None. Read by free run at every tick; a reset drops it.
        self.at_frames_end: Optional[Callable] = None

    # -- what holds frames -----------------------------------------------------------------------

    def expected_hold(self) -> bool:
        """Whether frames wait for expected participants that are not ready yet."""
        return (not self._core.roster.all_ready and self._timeline.mode in HOLDING_MODES
                and not self._expected.look())

    def run_length(self, limit: int) -> int:
        """
        Return how many frames go out up to the next one due for a participant or gated.

        A gated frame whose gates have no writer ready is left out of a longer run: it goes
        alone, held until they have (:meth:`unready`).
        """
        timeline = self._timeline
        count = self._hold.frames_until_awaited(
            self._axes.to_clock(timeline.time_ns), timeline.time_step_ns, limit)
        if count > 1 and self._gates.gates and self.unready(count, start=False):
            return count - 1
        return count

    def unready(self, count: int, start: bool = True) -> List[str]:
        """Return the gates of the last of the next ``count`` frames with no writer ready."""
        if not self._gates.gates:
            return []  # no output gates: every frame of free run with participants asks
        timeline, to_clock = self._timeline, self._axes.to_clock
        last, now = to_clock(timeline.time_ns + count * timeline.time_step_ns), self._now()
        topics = self._gates.unready(to_clock(timeline.time_ns), last, now)
        # ``start``: that frame is held for them (its timeout counts); else only asked.
        # Either way a frame held before is held no more unless its gates are named again.
        self._gates.hold(topics if start else (), last, now)
        return topics

    # -- frames ----------------------------------------------------------------------------------

    def limit(self, limit: int) -> int:
        """
        Return how many frames free run may advance now, up to ``limit``.

        Never past the sink's boundary (a bag's end); under ``max_clock_rate``, what the rate
        cap can afford now (held back: 0).
        """
        if self._ends_frames:  # only a sink whose frames end somewhere has a boundary
            limit = self.sink.limit(limit)
        if not (self._cap.active and self._timeline.frame_period_ns() is not None):
            return limit
        return self._cap.limit(limit, self._timeline.frame, self._now())

    def empty_frames(self) -> int:
        """Return how many of the next frames carry nothing: the sink's answer (0: none known)."""
        return self.sink.empty_frames() if self._ends_frames else 0

    def publish(self, frames: range, holds: bool) -> None:
        """
        Publish new frames: data, /clock and views; note them for participants; then settle.

        ``holds``: whether participants or gates hold frames now (:meth:`holds_frames`, which
        the caller has asked). Under ``max_clock_rate`` in free run, only the frames of the
        cap's grid go out on /clock; the sink publishes every frame's data all the same.
        """
        if not frames:
            return
        to_clock, gated, cap = self._axes.to_clock, False, self._cap
        if holds:
            last = to_clock(frames[-1])
            before = to_clock(frames[0] - frames.step)
            gated = bool(self._gates.gates) and self._gates.gated_in(before, last)
            if gated:  # what the gated topics carry from now on answers these frames
                self._gate_readers.drain()
        if cap.active and self._timeline.frame_period_ns() is not None:
            out = cap.select(frames, self._timeline.frame, self._now(), keep_last=holds)
            self.sink.publish_frames(frames, out)
            if out:
                cap.last_out_ns = out[-1]
        else:
            self.sink.publish_frames(frames)
            cap.last_out_ns = frames[-1]  # a capped republish never goes back before it
        now = self._now()  # when they went out: participants and gates hold from here
        if self._events.ring.length:
            offset = to_clock(0)
            timeline = self._timeline
            self._events.frames(timeline.epoch,
                                range(frames.start + offset, frames.stop + offset, frames.step),
                                timeline.frame - len(frames) + 1, now)
        self._pace.published()
        if holds:
            self._participants.frame_out(last)  # after its data and /clock
            self._hold.published(before, last, now, gated)
        if self._ends_frames:
            self.at_frames_end = self.sink.end_of_frames() or self.at_frames_end
        if self.at_frames_end is not None:
            self.finish_frames()

    def finish_frames(self) -> None:
        """Apply what the frames out left to do at their end, once no participant works on them."""
        if self.at_frames_end is not None and self._hold.settled:
            change, self.at_frames_end = self.at_frames_end, None
            self._changes.apply(change)

    def republish(self) -> None:
        """
        Publish the current time again (not a new frame), for nodes that start late.

        In capped free run, the last time that went out: never a frame left out (a timer due
        before it would fire late), never an older one. A reset starts from its new time
        (the core forgets the last time out: ``settings.Core.take_changes``).
        """
        time_ns, cap = self._timeline.time_ns, self._cap
        if (cap.active and cap.last_out_ns is not None
                and self._timeline.frame_period_ns() is not None):
            time_ns = cap.last_out_ns
        self.sink.publish_time(time_ns)
        cap.last_out_ns = time_ns
        self._pace.published()
        self._participants.frame_out()  # what was said with it, again

    # -- the frame timeline ----------------------------------------------------------------------

    def missed(self, late: Late) -> None:
        """Record the participants and gated outputs a frame stopped waiting for."""
        if not self._events.ring.length:
            return
        for name in late.participants:
            participant = self._barrier.participants.get(name)
            if participant is not None and participant.awaited_ns is not None:
                self._events.missed(DONE, [name], participant.awaited_ns,
                                    participant.awaited_since_ns)
        for topic in late.topics:
            gate = self._gates.gates.get(topic)
            if gate is not None and gate.awaited_ns is not None:
                self._events.missed(GATE, [topic], gate.awaited_ns, gate.awaited_since_ns)

    def no_writer(self, topics: List[str]) -> None:
        """Record the gates that held a frame for their timeout with no writer matched."""
        if not self._events.ring.length:
            return
        for topic in topics:
            gate = self._gates.gates[topic]
            self._events.missed(GATE, [topic], gate.held_ns, gate.held_since_ns)
