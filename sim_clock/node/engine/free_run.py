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
Free run and real time: the frames due at each tick of the server's steady timer.

Free run with participants or output gates goes on from the frame they finished; as fast as
possible, frames go out in short batches that keep the services answering between them;
paced, the frames due now (under ``max_clock_rate``, what the rate cap can afford). With no
frame due, the current time goes out again when the republish period is up.
"""


from sim_clock.core.barrier import MAX_ROUNDS
from sim_clock.core.hold import Late
from sim_clock.core.pacing import FRAMES_PER_TICK
from sim_clock.core.pacing import FULL_SPEED_BATCH_NS
from sim_clock.core.pacing import FULL_SPEED_CHUNK
from sim_clock.core.pacing import full_speed_chunk
from sim_clock.core.pacing import SKIP_EMPTY_FRAMES
from sim_clock.core.units import MAX_TIME_NS
from sim_clock.node.engine.frames import Frames
from sim_clock.node.engine.parts import EngineMember
from sim_clock.node.engine.parts import EngineParts


class FreeRun(EngineMember):
    """The frames of free run and real time, one tick at a time (:meth:`tick`)."""

    def __init__(self, frames: Frames, parts: EngineParts):
        super().__init__(parts)
        self._frames = frames
        self._pace = parts.pace
        #: Since when free run has waited for expected participants (steady ns), and whether
        #: that was said.
        self._expected_since = None
        self._expected_said = False

    def tick(self) -> None:
        """Publish the frames due now; else republish when due."""
        timeline, frames_out = self._timeline, self._frames
        if timeline.release_lapsed_holder():
            self._changes.dispatch()
        if frames_out.at_frames_end is not None:
            frames_out.finish_frames()
        free_running, holds = timeline.free_running, False
        # Expected nodes asked only if there are any: the tick comes at every frame.
        if free_running and self._core.roster.expected and frames_out.expected_hold():
            self._waits_for_expected()
            frames = range(0)
        elif free_running and frames_out.holds_frames():
            # Only free run's waits are the tick's: a step's are its own (late ones stop it).
            holds = True
            frames = self._held()
        elif self._pace.full_speed:
            frames = self._full_speed_batch()
        else:  # paced under max_clock_rate: held back while the cap cannot afford a frame
            frames = timeline.poll(frames_out.limit(FRAMES_PER_TICK))
        if frames:
            self._expected_since, self._expected_said = None, False
            frames_out.publish(frames, holds)
            if frames[-1] >= MAX_TIME_NS - timeline.time_step_ns:
                self._logger.error(
                    'simulated time reached the latest representable value; reset to go on',
                    throttle_duration_sec=10.0)
        elif self._core.pacing.republish_due(self._now(), self._pace.period_ns,
                                             holds and self._barrier.awaited_have_answered):
            frames_out.republish()

    def _waits_for_expected(self) -> None:
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

    def _held(self) -> range:
        """Free run with participants or gates: the frames due, up to the next one that waits."""
        barrier, gates, frames_out = self._barrier, self._gates, self._frames
        if barrier.rounds.runaway[0]:  # a frame stopped at MAX_ROUNDS: said once, taken
            names, topics = barrier.take_runaway()
            self._logger.error(
                f'a frame stopped after {MAX_ROUNDS} rounds: participants {", ".join(names)} '
                f'still published on {", ".join(topics)} (a cycle that never goes quiet); '
                'free run goes on', throttle_duration_sec=5.0)
        silent = gates.late(self._now()) if gates.gates else []
        if silent:
            frames_out.missed(Late(topics=silent))
            gates.release(silent)
            self._logger.warning(
                f'free run: frame {self._timeline.frame} had no output on {", ".join(silent)} '
                'within the gate timeout; time goes on', throttle_duration_sec=5.0)
            frames_out.finish_frames()
        if not self._hold.settled or frames_out.at_frames_end is not None:
            late = barrier.overdue(self._now())[0]
            if late:
                self._logger.warning(
                    f'free run waits for late participants: {", ".join(late)}',
                    throttle_duration_sec=5.0)
            return range(0)
        count = frames_out.limit(frames_out.run_length(FRAMES_PER_TICK))
        if count == 1 and gates.gates and frames_out.unready(1):
            nobody = gates.no_writer(self._now())
            frames_out.no_writer(nobody)
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
        poll, publish = self._timeline.poll, self._frames.publish
        start = now = self._now()
        limit = self._frames.limit  # a run ends at the sink's boundary (a bag's end)
        deadline, published = start + FULL_SPEED_BATCH_NS, 0
        self._skip_empty()
        frames = poll(limit(FULL_SPEED_CHUNK))
        while frames and now < deadline:
            publish(frames, False)  # nothing holds frames (the tick asked)
            published += len(frames)
            now = self._now()
            self._skip_empty()
            frames = poll(limit(full_speed_chunk(published, now - start, deadline - now)))
        return frames

    def _skip_empty(self) -> None:
        """
        Go over a long run of frames that carry nothing (a bag's empty span), in one jump.

        As fast as possible nobody can follow those frames at wall pace: time goes to the
        frame before the next one with data (or the bag's end), which plays as any other.
        The frame counter counts the frames gone over; their /clock is not published.
        """
        empty = self._frames.empty_frames()
        if empty >= SKIP_EMPTY_FRAMES:
            self._timeline.skip(empty)
