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
The steps of the frame engine: each ``~/step`` (and the calls like it), from request to answer.

A step that nothing can wait for is answered within its call, in one pass from request to
answer (:meth:`StepRunner.step`). Any other is one generator
(:meth:`StepRunner._run_step`) that yields the steady time it waits until, and that the runner
resumes itself then or whenever what it waits for may have changed (a participant's done or
leave, a change of the timeline, a message on a gated topic): it needs no executor that awaits
coroutines, and behaves the same under the package's runtime and under ``rclpy.spin`` in any
executor. Its answer goes out through the reply it was given, later than the service callback
if it waits (``compat.DeferredReplies``). Steps run one at a time, in the order they came.
"""

from collections import deque
from dataclasses import dataclass
from typing import Any
from typing import Callable
from typing import Generator
from typing import Optional

from sim_clock.core.barrier import MAX_ROUNDS
from sim_clock.core.hold import Late
from sim_clock.core.rules import Refused
from sim_clock.node.engine.frames import Frames
from sim_clock.node.engine.parts import EngineMember
from sim_clock.node.engine.parts import EngineParts
from sim_clock.node.engine.parts import StepOutcome


#: The shortest wait the runner's timer is armed for, in ns (a turn of the executor).
TURN_NS = 1_000
#: How often a step waiting for expected participants looks at their matches again, in ns.
EXPECTED_LOOK_NS = 50_000_000
#: What a step yields to be resumed at the next turn of the executor (a deadline passed).
NEXT_TURN = 0
#: A step's wait, and the waits it is made of: a generator that yields the steady time to be
#: resumed at (None: only when woken, :meth:`StepRunner.wake`) and returns what it came to.
Waiting = Generator[Optional[int], None, Any]


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


class StepRunner(EngineMember):
    """
    The steps of one engine: frames in runs up to the next frame that waits; then the answer.

    ``frames`` publishes the frames and says what holds them; the runner takes them from the
    timeline, waits for what holds them, and answers.
    """

    def __init__(self, frames: Frames, parts: EngineParts):
        super().__init__(parts)
        self._frames = frames
        self._acks = parts.acks
        self._sink = parts.sink
        self._to_clock = parts.axes.to_clock
        self._steps = deque()
        #: The step running now: (request, coroutine), or None.
        self._running = None
        self._resuming = self._woken = False
        self._timer = parts.make_timer(self._on_timer)
        self._timer.cancel()
        self._armed = False

    def step(self, request: StepRequest) -> None:
        """
        Take a step; its outcome goes to ``request.reply``, within this call if it can.

        A step that nothing can wait for is answered here, in one pass (the quick path): the
        request, the rules, the frames out, the answer. Any other (a step running or queued,
        any participant, gate, expected node or ``ack_timeout``, or a step with ``progress``)
        goes to :meth:`queue`.
        """
        # The request: answered now only if nothing could wait, before it or after it.
        if (request.progress is not None or self._running is not None or self._steps
                or not self._core.nothing_to_wait_for()):
            self.queue(request)
            return
        timeline, acks = self._timeline, self._acks
        start, frame, epoch_before = self._now(), timeline.frame, timeline.epoch
        if acks.waited:
            acks.take_waits()  # what held earlier frames back is not this step's
        # The rules: the timeline checks the step and advances (a lapsed holder announced).
        try:
            frames = timeline.step(request.user_id, request.steps, request.target_frame,
                                   request.epoch)
        except Refused as refused:
            frames, outcome = None, self._refused(refused)
        finally:
            if timeline.changed:
                self._changes.dispatch()
        if frames is not None:
            # The frames out: data, /clock and views; the frame timeline; the pace.
            self._frames.publish(frames, False)
            clock_ns = self._to_clock(timeline.time_ns)
            outcome = StepOutcome(
                True, f'frame {timeline.frame}, time {clock_ns} ns'
                + (acks.take_report() if acks.waited else ''),
                timeline.frame, clock_ns, timeline.epoch)
        # The answer, recorded in the frame timeline.
        if self._events.ring.length:
            self._events.step(
                request.service, request.user_id, outcome.clock_ns, start,
                outcome.frame - frame if outcome.epoch == epoch_before else outcome.frame,
                outcome.success, outcome.message)
        request.reply(outcome)

    def queue(self, request: StepRequest) -> None:
        """
        Take a step after those before it, waiting for what holds its frames.

        Its outcome goes to ``request.reply``: within this call if nothing waits.
        """
        if self._events.ring.length:
            # Recorded in the frame timeline as it is answered: a reply of its own, for this call.
            start, frame, epoch = self._now(), self._timeline.frame, self._timeline.epoch
            reply = request.reply

            def recorded(outcome: StepOutcome) -> None:
                frames = outcome.frame - frame if outcome.epoch == epoch else outcome.frame
                self._events.step(request.service, request.user_id, outcome.clock_ns, start,
                                  frames, outcome.success, outcome.message)
                reply(outcome)
            request.reply = recorded
        self._steps.append(request)
        if self._running is None:
            self._resume()

    def _take_all(self, request: StepRequest) -> range:
        """Check the step and advance the timeline by all its frames; return them."""
        return self._dispatching(self._timeline.step, request.user_id, request.steps,
                                 request.target_frame, request.epoch)

    def _dispatching(self, step: Callable, *args):
        """
        Run ``step(*args)`` (a check or a step of the timeline); dispatch what it changed, if any.

        A step changes nothing that listeners follow (only a lapsed hold, when it does): the
        dispatch, which also retimes the tick timer, is left out of the step's path otherwise.
        """
        try:
            return step(*args)
        finally:
            if self._timeline.changed:
                self._changes.dispatch()

    def _refused(self, refused: Refused) -> StepOutcome:
        self._logger.warning(
            f'step refused: {refused.reason}', throttle_duration_sec=1.0)
        return self._outcome(False, refused.reason)

    def _done(self) -> StepOutcome:
        outcome = self._outcome(True, '')
        outcome.message = (f'frame {outcome.frame}, time {outcome.clock_ns} ns'
                           + self._acks.take_report())
        return outcome

    def _run_step(self, request: StepRequest) -> Waiting:
        """One step: frames in runs up to the next frame that waits; then the answer."""
        timeline, barrier, hold, frames = self._timeline, self._barrier, self._hold, self._frames
        self._acks.take_waits()  # what held earlier frames back is not this step's
        if self._core.roster.expected and frames.expected_hold():
            try:
                self._dispatching(timeline.check_step, request.user_id, request.steps,
                                  request.target_frame, request.epoch)
            except Refused as refused:
                return self._refused(refused)
            missing = yield from self._expected_ready()
            if missing:
                return self._outcome(
                    False, f'frame {timeline.frame} waits for expected participants that are '
                    f'not ready after participant_timeout '
                    f'({self._hold.timeout.ns / 1e9:g} s): {"; ".join(missing)}; 0 of '
                    f'{request.steps} frames done',
                    late=[line.split(':', 1)[0] for line in missing])
        try:
            if request.progress is None and not frames.holds_frames():
                # Nothing waits between its frames (their answer may wait for acknowledgements).
                taken = self._take_all(request)
                steps, remaining = len(taken), 0
                frames.publish(taken, False)
            else:
                steps = remaining = self._dispatching(
                    timeline.check_step, request.user_id, request.steps, request.target_frame,
                    request.epoch)
        except Refused as refused:
            return self._refused(refused)
        # A new step: who is still awaited, and a gate holding a frame for a writer, get a new
        # timeout (with no gates, only a participant can be awaited).
        if self._gates.gates or not hold.settled:
            hold.count_again(self._now())
        while True:
            late = yield from self._finished()
            if late is not None:
                frames.missed(late)
                return self._outcome(
                    False, f'frame {timeline.frame} waits for {_describe(late)}; '
                    f'{steps - remaining} of {steps} frames done',
                    late=late.participants + late.topics)
            if barrier.rounds.runaway[0]:  # a frame stopped at MAX_ROUNDS: taken, said
                names, topics = barrier.take_runaway()
                return self._outcome(
                    False, f'frame {timeline.frame} stopped after {MAX_ROUNDS} rounds: '
                    f'participants {", ".join(names)} still published on {", ".join(topics)} '
                    f'(a cycle that never goes quiet); {steps - remaining} of {steps} frames '
                    'done', late=names)
            done = steps - remaining
            if request.progress is not None:
                if done and remaining:
                    yield NEXT_TURN  # a cancel, for one, may come
                if not request.progress(done) and remaining:
                    return self._outcome(
                        False, f'stopped by the caller after {done} of {steps} frames')
            if not remaining:
                break
            holds = frames.holds_frames()
            if request.progress is not None:
                count = 1
            elif holds:
                count = frames.run_length(remaining)
            else:
                count = remaining
            if count == 1 and holds:
                nobody = yield from self._writers()
                if nobody:
                    return self._outcome(
                        False, f'frame {timeline.frame + 1} is held: no node publishes '
                        f'{", ".join(nobody)} (no writer matched the gate within its timeout); '
                        f'{steps - remaining} of {steps} frames done', late=nobody)
            try:
                taken = self._dispatching(timeline.step, request.user_id, count)
            except Refused as refused:
                return self._outcome(
                    False, f'stopped after {steps - remaining} of {steps} frames: '
                    f'{refused.reason}')
            frames.publish(taken, holds)
            remaining -= count
        outcome = self._done()
        if self._core.ack_timeout_ns:
            outcome.unacknowledged = yield from self._acknowledged(self._core.ack_timeout_ns)
            if outcome.unacknowledged:
                outcome.message += ('; not acknowledged by all reliable readers in time: '
                                    + ', '.join(outcome.unacknowledged))
        return outcome

    def _finished(self) -> Waiting:
        """
        Wait until no participant works on a frame out and no gated output is missing.

        Return None then (what the frames left to do at their end applied), or the late
        participants and the gated topics past their timeout (:class:`Late`).
        """
        hold = self._hold
        while not hold.settled:
            late, deadline = hold.overdue(self._now())
            if late is not None:
                return late
            yield deadline
        if self._frames.at_frames_end is not None:
            self._frames.finish_frames()
        return None

    def _expected_ready(self) -> Waiting:
        """Wait until every expected node is ready; return what each lacks past the timeout."""
        expected = self._expected
        deadline = self._now() + self._hold.timeout.ns
        while not expected.look():
            now = self._now()
            if now >= deadline:
                return expected.describe_missing()
            # Woken by a report; matches come without one, so looked at again meanwhile.
            yield min(deadline, now + EXPECTED_LOOK_NS)
        return []

    def _writers(self) -> Waiting:
        """
        Hold the next frame until each gate of it has a writer matched both ways.

        Return [] then, or the gated topics that had no writer within their timeout.
        """
        gates = self._gates
        while self._frames.unready(1):
            nobody = gates.no_writer(self._now())
            if nobody:
                self._frames.no_writer(nobody)
                return nobody
            yield gates.deadline_ns()
        return []

    def _acknowledged(self, timeout_ns: int) -> Waiting:
        """Wait for the sink's writers' acknowledgements, ``timeout_ns`` at most; name the rest."""
        # The node's one wait loop; it records the wait in the frame timeline (``on_wait``).
        wait = self._acks.wait(self._sink.publishers(), timeout_ns)
        for _ in wait:
            yield NEXT_TURN  # status, pause, done messages meanwhile
        return wait.stalled

    def _outcome(self, success: bool, message: str, late=()) -> StepOutcome:
        timeline = self._timeline
        return StepOutcome(success=success, message=message, frame=timeline.frame,
                           clock_ns=self._to_clock(timeline.time_ns), epoch=timeline.epoch,
                           late=list(late))

    # -- the driver ----------------------------------------------------------------------------

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
                    deadline_ns = coroutine.send(None)
                except StopIteration as stop:
                    self._running = None
                    request.reply(stop.value)
                    continue
                except BaseException:
                    self._running = None
                    raise
                if not self._woken:
                    # Resumed at its deadline unless woken before (None: only when woken).
                    if deadline_ns is not None:
                        self._timer.timer_period_ns = max(deadline_ns - self._now(), TURN_NS)
                        self._timer.reset()
                        self._armed = True
                    return
        finally:
            self._resuming = False

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


def _describe(late: Late) -> str:
    """Name what a frame waits for past its timeout: participants, and gated topics."""
    parts = [f'late participants: {", ".join(late.participants)}'] if late.participants else []
    if late.topics:
        parts.append(f'output on {", ".join(late.topics)} (no message after its /clock within '
                     'the gate timeout)')
    return ' and '.join(parts)
