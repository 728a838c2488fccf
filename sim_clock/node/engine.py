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
The frame engine: every frame of every mode, from the timer or the service call to the answer.

A frame is, in this order (:meth:`FrameEngine._publish`): its data and its /clock (the sink:
a bag's messages, then /clock, then the clock views, flow-controlled while stepped), then the
participants it is due for and the output gates that hold it; then what the frames left to
do at their end (a bag's loop or its pause at the end) once those participants have finished
them and the gated outputs came (:meth:`FrameEngine._finish_frames`).
Frames come from :meth:`FrameEngine.tick` (free run and real time, the server's steady timer)
and :meth:`FrameEngine.step` (``~/step``, ``~/step_once``, ``~/step_simulation``,
``~/simulate_steps``), whose frames are taken in runs that end on the next frame due for a
participant or gated (one frame at a time for a step that reports its progress, as
``~/simulate_steps`` does), and whose answer waits for those participants and outputs and,
with ``ack_timeout``, for acknowledgements. A gated frame is held, in both, until each of its
gates has a writer that can deliver to it (:meth:`FrameEngine._writers`).

A step is one coroutine (:meth:`FrameEngine._run_step`) that this engine resumes itself
whenever what it waits for may have changed (a participant's done or leave, a change of the
timeline, a message on a gated topic, a deadline): it needs no executor that awaits
coroutines, and behaves the same under the package's runtime and under ``rclpy.spin`` in any
executor. Its answer goes out through the reply it was given, later than the service callback
if it waits (``compat.DeferredReplies``).
Steps run one at a time, in the order they came.
"""

from collections import deque
from dataclasses import dataclass
from typing import Callable
from typing import List
from typing import Optional

from sim_clock.core.barrier import MAX_ROUNDS
from sim_clock.core.frame_events import DONE
from sim_clock.core.frame_events import GATE
from sim_clock.core.hold import Late
from sim_clock.core.pacing import FRAMES_PER_TICK
from sim_clock.core.pacing import FULL_SPEED_BATCH_NS
from sim_clock.core.pacing import FULL_SPEED_CHUNK
from sim_clock.core.pacing import full_speed_chunk
from sim_clock.core.rules import participants_hold
from sim_clock.core.rules import Refused
from sim_clock.core.units import MAX_TIME_NS
from sim_clock.node.acks import describe_waits
from sim_clock.node.engine_parts import EngineParts
from sim_clock.node.outcomes import StepOutcome

#: The shortest wait the engine's timer is armed for, in ns (a turn of the executor).
TURN_NS = 1_000
#: How often a step waiting for expected participants looks at their matches again, in ns.
EXPECTED_LOOK_NS = 50_000_000


class Until:
    """What a step awaits: a wake (:meth:`FrameEngine.wake`), or steady time ``deadline_ns``."""

    __slots__ = ('deadline_ns',)

    def __init__(self, deadline_ns: Optional[int]):
        #: None: no deadline; one already passed: the next turn of the executor.
        self.deadline_ns = deadline_ns

    def __await__(self):
        yield self


@dataclass
class StepRequest:
    """A step asked for, as ``~/step`` takes it; ``reply`` is given its outcome, once."""

    user_id: str
    steps: int
    reply: Callable[[StepOutcome], None]
    target_frame: int = 0
    #: The epoch the caller expects (None: any).
    epoch: Optional[int] = None
    #: Given: the frames go one at a time; before the first and after each is finished (its
    #: participants done, then a turn of the executor) it is called with the frames done so
    #: far and returns whether to go on: False stops the step at that frame boundary
    #: (``~/simulate_steps``: feedback, cancel).
    progress: Optional[Callable[[int], bool]] = None
    #: The service it came through, for the frame timeline.
    service: str = '~/step'


class FrameEngine:
    """
    The frames of one clock server, from :class:`EngineParts`: no node, no server.

    The time core in ``parts.core`` (timeline, the hold of participants and gates, pacing, rate
    cap, roster, ack timeout) decides; the engine publishes through ``parts.sink``, says each
    frame to the participants and gates, waits for them, and announces changes through
    ``parts.changes``.
    The server hands :meth:`on_change` every change of the timeline.
    """

    def __init__(self, parts: EngineParts):
        self._parts = parts
        self._events = parts.events
        self.sink = parts.sink
        self._core = core = parts.core
        self._timeline = core.timeline
        self._hold = core.hold
        self._barrier = core.barrier
        self._gates = core.gates
        self._acks = parts.acks
        self._axes = parts.axes
        self._changes = parts.changes
        self._pace = parts.pace
        self._logger = parts.logger
        self._participants = parts.participants
        self._expected = parts.expected
        self._now = parts.now_ns
        self._steps = deque()
        #: The step running now: (request, coroutine), or None.
        self._running = None
        self._resuming = self._woken = False
        #: What the frames out left to do once finished: a change of the timeline, or None.
        self._at_frames_end: Optional[Callable] = None
        self._timer = parts.make_timer(self._on_timer)
        self._timer.cancel()
        self._armed = False
        #: Free run: since when it has waited for expected participants (steady ns), and
        #: whether that was said.
        self._expected_since = None
        self._expected_said = False

    # -- steps -----------------------------------------------------------------------------------

    def step(self, request: StepRequest) -> None:
        """Take a step; its outcome goes to ``request.reply`` (before this returns if it can)."""
        if self._events.ring.length:
            request = self._recorded(request)
        if (self._running is None and not self._steps and request.progress is None
                and not self._core.ack_timeout_ns and not self.holds_frames()
                and not self._expected_hold()):
            # Nothing to wait for, before it or after it: answered within this call.
            request.reply(self._quick_step(request))
            return
        self._steps.append(request)
        if self._running is None:
            self._resume()

    def _recorded(self, request: StepRequest) -> StepRequest:
        """Return ``request`` with a reply that also records the call in the frame timeline."""
        start, frame, epoch = self._now(), self._timeline.frame, self._timeline.epoch
        reply = request.reply

        def recorded(outcome: StepOutcome) -> None:
            frames = outcome.frame - frame if outcome.epoch == epoch else outcome.frame
            self._events.step(request.service, request.user_id, outcome.clock_ns, start,
                              frames, outcome.success, outcome.message)
            reply(outcome)
        request.reply = recorded  # a request of its own, made for this call
        return request

    def _quick_step(self, request: StepRequest) -> StepOutcome:
        """Take a step whose frames nothing waits for: all of them in one call; answer it."""
        self._acks.take_waits()  # what held earlier frames back is not this step's
        try:
            self._publish(self._take_all(request))
        except Refused as refused:
            return self._refused(refused)
        return self._done()

    def _take_all(self, request: StepRequest) -> range:
        """Check the step and advance the timeline by all its frames; return them."""
        return self._dispatching(lambda: self._timeline.step(
            request.user_id, request.steps, request.target_frame, request.epoch))

    def _refused(self, refused: Refused) -> StepOutcome:
        self._logger.warning(
            f'step refused: {refused.reason}', throttle_duration_sec=1.0)
        return self._outcome(False, refused.reason)

    def _done(self) -> StepOutcome:
        return self._outcome(
            True, f'frame {self._timeline.frame}, time {self._clock_now()} ns'
            + describe_waits(*self._acks.take_waits()))

    async def _run_step(self, request: StepRequest) -> StepOutcome:
        """One step: frames in runs up to the next frame that waits; then the answer."""
        timeline, barrier, hold = self._timeline, self._barrier, self._hold
        self._acks.take_waits()  # what held earlier frames back is not this step's
        if self._expected_hold():
            try:
                self._dispatching(lambda: timeline.check_step(
                    request.user_id, request.steps, request.target_frame, request.epoch))
            except Refused as refused:
                return self._refused(refused)
            missing = await self._expected_ready()
            if missing:
                return self._outcome(
                    False, f'frame {timeline.frame} waits for expected participants that are '
                    f'not ready after participant_timeout '
                    f'({self._hold.timeout.ns / 1e9:g} s): {"; ".join(missing)}; 0 of '
                    f'{request.steps} frames done',
                    late=[line.split(':', 1)[0] for line in missing])
        try:
            if request.progress is None and not self.holds_frames():
                # Nothing waits between its frames (their answer may wait for acknowledgements).
                frames = self._take_all(request)
                steps, remaining = len(frames), 0
                self._publish(frames)
            else:
                steps = remaining = self._dispatching(lambda: timeline.check_step(
                    request.user_id, request.steps, request.target_frame, request.epoch))
        except Refused as refused:
            return self._refused(refused)
        hold.count_again(self._now())
        while True:
            late = (await self._finished()) if not hold.settled else self._clear()
            if late:
                self._missed(late)
                return self._outcome(
                    False, f'frame {timeline.frame} waits for {_describe(late)}; '
                    f'{steps - remaining} of {steps} frames done',
                    late=late.participants + late.topics)
            names, topics = barrier.take_runaway()
            if names:
                return self._outcome(
                    False, f'frame {timeline.frame} stopped after {MAX_ROUNDS} rounds: '
                    f'participants {", ".join(names)} still published on {", ".join(topics)} '
                    f'(a cycle that never goes quiet); {steps - remaining} of {steps} frames '
                    'done', late=names)
            done = steps - remaining
            if request.progress is not None:
                if done and remaining:
                    await Until(0)  # a turn of the executor: a cancel, for one, may come
                if not request.progress(done) and remaining:
                    return self._outcome(
                        False, f'stopped by the caller after {done} of {steps} frames')
            if not remaining:
                break
            if request.progress is not None:
                count = 1
            elif self.holds_frames():
                count = self._run_length(remaining)
            else:
                count = remaining
            if count == 1 and self.holds_frames():
                nobody = await self._writers()
                if nobody:
                    return self._outcome(
                        False, f'frame {timeline.frame + 1} is held: no node publishes '
                        f'{", ".join(nobody)} (no writer matched the gate within its timeout); '
                        f'{steps - remaining} of {steps} frames done', late=nobody)
            try:
                frames = self._dispatching(lambda: timeline.step(request.user_id, count))
            except Refused as refused:
                return self._outcome(
                    False, f'stopped after {steps - remaining} of {steps} frames: '
                    f'{refused.reason}')
            self._publish(frames)
            remaining -= count
        outcome = self._done()
        if self._core.ack_timeout_ns:
            outcome.unacknowledged = await self._acknowledged(self._core.ack_timeout_ns)
            if outcome.unacknowledged:
                outcome.message += ('; not acknowledged by all reliable readers in time: '
                                    + ', '.join(outcome.unacknowledged))
        return outcome

    def _dispatching(self, step: Callable):
        """
        Run ``step()`` (a check or a step of the timeline); dispatch what it changed, if any.

        A step changes nothing that listeners follow (only a lapsed hold, when it does): the
        dispatch, which also retimes the tick timer, is left out of the step's path otherwise.
        """
        try:
            return step()
        finally:
            if self._timeline.changed:
                self._changes.dispatch()

    def _clear(self) -> Late:
        """:meth:`_finished` when nothing is awaited: settle, nobody late."""
        self._finish_frames()
        return Late()

    async def _finished(self) -> Late:
        """
        Wait until no participant works on a frame out and no gated output is missing.

        Return nobody, or the late participants and the gated topics past their timeout.
        """
        hold = self._hold
        while not hold.settled:
            late = hold.late(self._now())
            if late:
                return late
            await Until(hold.deadline_ns())
        self._finish_frames()
        return Late()

    def _expected_hold(self) -> bool:
        """Whether frames wait for expected participants that are not ready yet."""
        return (not self._core.roster.all_ready and participants_hold(self._timeline.mode)
                and not self._expected.look())

    async def _expected_ready(self) -> List[str]:
        """Wait until every expected node is ready; return what each lacks past the timeout."""
        expected = self._expected
        deadline = self._now() + self._hold.timeout.ns
        while not expected.look():
            now = self._now()
            if now >= deadline:
                return expected.describe_missing()
            # Woken by a report; matches come without one, so looked at again meanwhile.
            await Until(min(deadline, now + EXPECTED_LOOK_NS))
        return []

    async def _writers(self) -> List[str]:
        """
        Hold the next frame until each gate of it has a writer matched both ways.

        Return [] then, or the gated topics that had no writer within their timeout.
        """
        gates = self._gates
        while self._unready(1):
            nobody = gates.no_writer(self._now())
            if nobody:
                self._no_writer(nobody)
                return nobody
            await Until(gates.deadline_ns())
        return []

    def _unready(self, count: int, start: bool = True) -> List[str]:
        """Return the gates of the last of the next ``count`` frames with no writer ready."""
        timeline, to_clock = self._timeline, self._axes.to_clock
        last = to_clock(timeline.time_ns + count * timeline.time_step_ns)
        return self._gates.hold(to_clock(timeline.time_ns), last, self._now(), start)

    async def _acknowledged(self, timeout_ns: int) -> List[str]:
        """Wait for the sink's writers' acknowledgements, ``timeout_ns`` at most; name the rest."""
        # The node's one wait loop; it records the wait in the frame timeline (``on_wait``).
        wait = self._acks.wait(self.sink.publishers(), timeout_ns)
        for _ in wait:
            await Until(0)  # a turn of the executor: status, pause, done messages meanwhile
        return wait.stalled

    def _missed(self, late: Late) -> None:
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

    def _no_writer(self, topics: List[str]) -> None:
        """Record the gates that held a frame for their timeout with no writer matched."""
        if not self._events.ring.length:
            return
        for topic in topics:
            gate = self._gates.gates[topic]
            self._events.missed(GATE, [topic], gate.held_ns, gate.held_since_ns)

    def _clock_now(self) -> int:
        """Return the /clock time of the current time."""
        return self._axes.to_clock(self._timeline.time_ns)

    def _outcome(self, success: bool, message: str, late=()) -> StepOutcome:
        timeline = self._timeline
        return StepOutcome(success=success, message=message, frame=timeline.frame,
                           clock_ns=self._clock_now(), epoch=timeline.epoch,
                           late=list(late))

    # -- the driver of steps ---------------------------------------------------------------------

    def wake(self) -> None:
        """Look again at what the running step waits for: something it may wait on changed."""
        if self._resuming:
            self._woken = True
        elif self._running is not None:
            self._resume()

    def _resume(self) -> None:
        """Run the steps until one waits (the timer or a wake resumes it) or none is left."""
        if self._armed:
            self._timer.cancel()
            self._armed = False
        self._resuming = True
        try:
            while self._running is not None or self._steps:
                if self._running is None:
                    request = self._steps.popleft()
                    self._running = (request, self._run_step(request))
                request, coroutine = self._running
                self._woken = False
                try:
                    awaited = coroutine.send(None)
                except StopIteration as stop:
                    self._running = None
                    request.reply(stop.value)
                    continue
                except BaseException:
                    self._running = None
                    raise
                if not self._woken:
                    self._arm(awaited.deadline_ns)
                    return
        finally:
            self._resuming = False

    def _arm(self, deadline_ns: Optional[int]) -> None:
        """Resume at ``deadline_ns`` (steady time) unless woken before; None: only when woken."""
        if deadline_ns is not None:
            self._timer.timer_period_ns = max(deadline_ns - self._now(), TURN_NS)
            self._timer.reset()
            self._armed = True

    def _on_timer(self) -> None:
        self._timer.cancel()
        self._armed = False
        if self._running is not None and not self._resuming:
            self._resume()

    def close(self) -> None:
        """Drop the steps not answered: the node is being destroyed."""
        self._timer.cancel()
        if self._running is not None:
            self._running[1].close()
        self._running = None
        self._steps.clear()

    # -- frames ----------------------------------------------------------------------------------

    def holds_frames(self) -> bool:
        """Whether frames wait for participants or output gates now."""
        return self._hold.has_holders and participants_hold(self._timeline.mode)

    def _run_length(self, limit: int) -> int:
        """
        Return how many frames go out up to the next one due for a participant or gated.

        A gated frame whose gates have no writer ready is left out of a longer run: it goes
        alone, held until they have (:meth:`_writers`).
        """
        count = self._hold.frames_until_awaited(
            self._clock_now(), self._timeline.time_step_ns, limit)
        if count > 1 and self._unready(count, start=False):
            return count - 1
        return count

    def _publish(self, frames: range) -> None:
        """Publish new frames: data, /clock and views; note them for participants; then settle."""
        if not frames:
            return
        to_clock, holds, gated = self._axes.to_clock, self.holds_frames(), False
        if holds:
            last = to_clock(frames[-1])
            before = to_clock(frames[0] - frames.step)
            gated = self._gates.gated_in(before, last)
            if gated:  # what the gated topics carry from now on answers these frames
                self._parts.gate_readers.drain()
        self.sink.publish_frames(frames)
        now = self._now()  # when they went out: participants and gates hold from here
        if self._events.ring.length:
            offset = to_clock(0)
            self._events.frames(range(frames.start + offset, frames.stop + offset, frames.step),
                                self._timeline.frame - len(frames) + 1, now)
        self._pace.published()
        if holds:
            self._participants.frame_out(last)  # after its data and /clock
            self._hold.published(before, last, now, gated)
        self._at_frames_end = self.sink.end_of_frames() or self._at_frames_end
        self._finish_frames()

    def _finish_frames(self) -> None:
        """Apply what the frames out left to do at their end, once no participant works on them."""
        if self._at_frames_end is not None and self._hold.settled:
            change, self._at_frames_end = self._at_frames_end, None
            self._changes.apply(change)

    def republish(self) -> None:
        """Publish the current time again (not a new frame), for nodes that start late."""
        self.sink.publish_time(self._timeline.time_ns)
        self._pace.published()
        self._participants.frame_out()  # what was said with it, again

    def tick(self) -> None:
        """Free run and real time: publish the frames due now; else republish when due."""
        timeline = self._timeline
        if timeline.release_lapsed_holder():
            self._changes.dispatch()
        self._finish_frames()
        if timeline.free_running and self._expected_hold():
            self._free_run_waits_for_expected()
            frames = range(0)
        elif self.holds_frames() and timeline.free_running:
            # Only free run's waits are the tick's: a step's are its own (late ones stop it).
            frames = self._held_free_run()
        elif self._pace.full_speed:
            frames = self._full_speed_batch()
        else:  # paced under max_clock_rate: held back while the cap cannot afford a frame
            frames = timeline.poll(self.sink.limit(FRAMES_PER_TICK))
        if frames:
            self._expected_since, self._expected_said = None, False
            self._publish(frames)
            if frames[-1] >= MAX_TIME_NS - timeline.time_step_ns:
                self._logger.error(
                    'simulated time reached the latest representable value; reset to go on',
                    throttle_duration_sec=10.0)
        elif self._core.pacing.republish_due(self._now(), self._pace.period_ns):
            self.republish()

    def _free_run_waits_for_expected(self) -> None:
        """Free run holds for expected participants: said once past participant_timeout."""
        now = self._now()
        if self._expected_since is None:
            self._expected_since = now
        elif now - self._expected_since > self._hold.timeout.ns and not self._expected_said:
            self._expected_said = True
            self._logger.warning(
                'free run waits for expected participants that are not ready after '
                f'participant_timeout ({self._hold.timeout.ns / 1e9:g} s): '
                + '; '.join(self._expected.describe_missing()))

    def _held_free_run(self) -> range:
        """Free run with participants or gates: the frames due, up to the next one that waits."""
        barrier, gates = self._barrier, self._gates
        names, topics = barrier.take_runaway()
        if names:
            self._logger.error(
                f'a frame stopped after {MAX_ROUNDS} rounds: participants {", ".join(names)} '
                f'still published on {", ".join(topics)} (a cycle that never goes quiet); '
                'free run goes on', throttle_duration_sec=5.0)
        silent = gates.late(self._now())
        if silent:
            self._missed(Late(topics=silent))
            gates.release(silent)
            self._logger.warning(
                f'free run: frame {self._timeline.frame} had no output on {", ".join(silent)} '
                'within the gate timeout; time goes on', throttle_duration_sec=5.0)
            self._finish_frames()
        if not self._hold.settled or self._at_frames_end is not None:
            late = barrier.late(self._now())
            if late:
                self._logger.warning(
                    f'free run waits for late participants: {", ".join(late)}',
                    throttle_duration_sec=5.0)
            return range(0)
        count = self.sink.limit(self._run_length(FRAMES_PER_TICK))
        if count == 1 and self._unready(1):
            nobody = gates.no_writer(self._now())
            self._no_writer(nobody)
            gates.release(nobody)
            if nobody:
                self._logger.warning(
                    f'free run: no node publishes {", ".join(nobody)} (no writer matched the '
                    f'gate within its timeout); frame {self._timeline.frame + 1} goes out '
                    'without waiting for it', throttle_duration_sec=5.0)
            if gates.holding:
                return range(0)
        return self._timeline.poll(count)

    def _full_speed_batch(self) -> range:
        """
        Free run as fast as possible: publish frames for FULL_SPEED_BATCH_NS; return the last.

        Short batches keep the services answering between them. After a first chunk, each
        takes what the batch's time left holds at the rate measured so far (the engine's work
        per call spread over as many frames as fit); the last is returned, for the tick.
        """
        poll = self._timeline.poll
        start = now = self._now()
        limit = self.sink.limit  # a run ends at the sink's boundary (a bag's end)
        deadline, published = start + FULL_SPEED_BATCH_NS, 0
        frames = poll(limit(FULL_SPEED_CHUNK))
        while frames and now < deadline:
            self._publish(frames)
            published += len(frames)
            now = self._now()
            frames = poll(limit(full_speed_chunk(published, now - start, deadline - now)))
        return frames

    def on_change(self, change) -> None:
        """Follow a change of the timeline: a step waiting may go on."""
        if change.reset:
            # A reset supersedes what the old epoch's frames left to do (a loop, a pause).
            self._at_frames_end = None
        self.wake()


def _describe(late: Late) -> str:
    """Name what a frame waits for past its timeout: participants, and gated topics."""
    parts = [f'late participants: {", ".join(late.participants)}'] if late.participants else []
    if late.topics:
        parts.append(f'output on {", ".join(late.topics)} (no message after its /clock within '
                     'the gate timeout)')
    return ' and '.join(parts)
