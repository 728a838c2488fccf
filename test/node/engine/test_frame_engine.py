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
The frame engine driven by small fakes of its parts: no node, no DDS, a steady clock of ours.

Every mode (real time, free run paced and at full speed, sync steps), a reset between frames,
a hold by a participant that releases and one that times out, a gated frame held for its
output, and a refused step. The time core and the change dispatch are the real ones.
"""

from typing import List

from node_doubles import Logger
import pytest
from sim_clock.core import settings
from sim_clock.core.axes import Axes
from sim_clock.core.frame_events import FrameEventRing
from sim_clock.node.changes import TimelineChanges
from sim_clock.node.engine import FrameEngine
from sim_clock.node.engine import StepRequest
from sim_clock.node.engine.parts import EngineParts

pytestmark = pytest.mark.fast

MS = 1_000_000
SECOND = 1_000 * MS


class SteadyClock:
    """Steady time that moves only when told to (or by ``auto_ns`` at every reading)."""

    def __init__(self, auto_ns: int = 0):
        self.now = 1_000 * SECOND
        self.auto_ns = auto_ns

    def __call__(self) -> int:
        self.now += self.auto_ns
        return self.now


class Sink:
    """Records each run of frames, those of them whose /clock went out, each time again."""

    ends_frames = False

    def __init__(self, boundary: int = 10 ** 9):
        self.frames: List[range] = []
        #: Each run's times whose /clock went out (none: the run is left out).
        self.clock: List[List[int]] = []
        self.times: List[int] = []
        #: Where its frames end (a bag's end): no run goes past it.
        self.boundary = boundary

    def publish_frames(self, frames: range, clock_times=None) -> None:
        self.frames.append(frames)
        out = list(frames if clock_times is None else clock_times)
        if out:
            self.clock.append(out)

    def publish_time(self, time_ns: int) -> None:
        self.times.append(time_ns)

    def limit(self, limit: int) -> int:
        return min(limit, self.boundary)

    def publishers(self) -> list:
        return []

    def end_of_frames(self):
        return None

    def close(self) -> None:
        pass

    def all_frames(self) -> List[int]:
        return [time_ns for run in self.frames for time_ns in run]


class Acknowledged:
    """A wait with nothing to wait for: no slice, no stalled reader."""

    stalled = []

    def __iter__(self):
        return iter(())


class AckWaits:
    """No reliable reader to wait for."""

    waited = False

    def take_waits(self):
        return {}, []

    def take_report(self):
        return ''

    def wait(self, publishers, timeout_ns):
        return Acknowledged()


class Recorder:
    """The frame timeline's calls, in order."""

    def __init__(self):
        self.ring = FrameEventRing(100)
        self.calls = []

    def frames(self, epoch, times, first, now_ns):
        self.calls.append(('frames', list(times), first))

    def missed(self, kind, names, time_ns, since_ns):
        self.calls.append(('missed', kind, list(names), time_ns))

    def step(self, service, user_id, time_ns, start_ns, frames, success, message):
        self.calls.append(('step', service, frames, success))


class Pace:
    """The tick: a period, and how many times /clock went out."""

    def __init__(self, full_speed=False):
        self.full_speed = full_speed
        self.period_ns = MS
        self.published_count = 0

    def published(self) -> None:
        self.published_count += 1


class FrameReaders:
    """The participants' side: each frame said to them."""

    def __init__(self):
        self.said = []

    def frame_out(self, time_ns=None) -> None:
        self.said.append(time_ns)

    def when_released(self, go_on) -> None:
        self.go_on = go_on


class GateReaders:
    """The gated topics' subscriptions: how often they were drained."""

    def __init__(self):
        self.drained = 0

    def drain(self) -> None:
        self.drained += 1

    def when_released(self, go_on) -> None:
        self.go_on = go_on


class Expected:
    """Every expected node is ready."""

    def look(self) -> bool:
        return True

    def describe_missing(self):
        return []

    def when_ready(self, ready) -> None:
        self.ready = ready


class Timer:
    """The engine's one-shot timer; :meth:`fire` runs its callback as the executor would."""

    def __init__(self, callback):
        self.callback = callback
        self.timer_period_ns = SECOND
        self.armed = False

    def cancel(self) -> None:
        self.armed = False

    def reset(self) -> None:
        self.armed = True

    def fire(self) -> None:
        assert self.armed, 'the engine armed no deadline'
        self.callback()


class Rig:
    """A frame engine with fakes of every part but the time core and the change dispatch."""

    def __init__(self, clock: SteadyClock = None, boundary: int = 10 ** 9, **values):
        self.clock = clock or SteadyClock()
        self.core = settings.initial({**settings.DEFAULTS, **values}, now_ns=self.clock)
        self.timeline = self.core.timeline
        # As the ticker does at each change of pace: the cap's grid follows the frame rate.
        self.core.rate_cap.pace(self.timeline.time_step_ns, self.timeline.real_time_factor)
        self.sink, self.pace, self.logger = Sink(boundary), Pace(), Logger()
        self.sink.ends_frames = boundary < 10 ** 9  # a boundary of its own: as a bag's end
        self.readers, self.gate_readers = FrameReaders(), GateReaders()
        self.expected = Expected()
        self.events = Recorder()
        # The core's changes, as the server takes them: its hold and rate cap follow resets.
        self.changes = TimelineChanges(
            self.timeline, Axes(), self.logger, self._reset,
            lambda: self.core.take_changes(self.clock(), Axes().to_clock))
        self.resets = []
        self.timers = []
        self.engine = FrameEngine(EngineParts(
            core=self.core, axes=Axes(), sink=self.sink, acks=AckWaits(), events=self.events,
            changes=self.changes, pace=self.pace, participants=self.readers,
            gate_readers=self.gate_readers, expected=self.expected, logger=self.logger,
            make_timer=self._timer, now_ns=self.clock))
        self.changes.listen(self.engine.on_change)
        self.answers = []

    def _timer(self, callback):
        timer = Timer(callback)
        self.timers.append(timer)
        return timer

    def _reset(self, epoch, before_ns, after_ns, cause):
        self.resets.append((epoch, before_ns, after_ns, cause))

    def step(self, steps: int, user_id: str = ''):
        self.engine.steps.step(
            StepRequest(user_id=user_id, steps=steps, reply=self.answers.append))

    def answer(self):
        assert len(self.answers) == 1, self.answers
        return self.answers.pop()


def test_a_step_publishes_its_frames_and_answers_at_once():
    rig = Rig(sync=True, time_step=0.01)
    rig.step(3)
    outcome = rig.answer()
    assert outcome.success and outcome.frame == 3 and outcome.clock_ns == 30 * MS, outcome
    assert rig.sink.all_frames() == [10 * MS, 20 * MS, 30 * MS]
    assert rig.pace.published_count == 1
    assert ('frames', [10 * MS, 20 * MS, 30 * MS], 1) in rig.events.calls
    assert ('step', '~/step', 3, True) in rig.events.calls


def test_what_ends_a_wait_calls_the_engine_itself_and_a_reset_republishes():
    """
    The engine registers with its parts: no call of theirs goes through the server.

    Participants and gates release it, the expected nodes say they are ready to it, and the
    change dispatch has it publish the time again after a reset.
    """
    rig = Rig(sync=True, time_step=0.01)
    assert rig.readers.go_on == rig.engine.released
    assert rig.gate_readers.go_on == rig.engine.released
    assert rig.expected.ready == rig.engine.expected_ready
    rig.step(2)
    rig.answer()
    rig.changes.apply(lambda: rig.timeline.set_paused(True))  # a change, no reset
    assert rig.sink.times == []
    rig.changes.apply(lambda: rig.timeline.reset('reset called'))
    assert rig.sink.times == [0] and rig.readers.said[-1] is None
    rig.expected.ready()
    assert rig.sink.times == [0, 0]


def test_a_refused_step_publishes_nothing_and_says_why():
    rig = Rig(sync=True, time_step=0.01)
    rig.changes.apply(lambda: rig.timeline.sync_mode_cmd('alice', True, 10))
    rig.step(2, user_id='bob')
    outcome = rig.answer()
    assert not outcome.success and outcome.frame == 0
    assert 'alice' in outcome.message, outcome.message
    assert rig.sink.frames == []
    assert any(level == 'warning' and 'step refused' in line for level, line in rig.logger.lines)


def _both_paths(calls):
    """
    Run ``calls`` (ms later, user_id, steps, target_frame, epoch): the quick path, then the queue.

    Return each path's outcomes, frames out, frame-timeline records and log lines, in a fresh
    rig each: alice holds sync mode from the start, with an owner_timeout of 0.5 s.
    """
    results = []
    for path in ('now', 'queued'):
        rig = Rig(sync=True, time_step=0.01, owner_timeout=0.5)
        rig.changes.apply(lambda: rig.timeline.sync_mode_cmd('alice', True, 10))
        outcomes = []
        for later_ms, user_id, steps, target_frame, epoch in calls:
            rig.clock.now += later_ms * MS
            request = StepRequest(user_id=user_id, steps=steps, reply=outcomes.append,
                                  target_frame=target_frame, epoch=epoch)
            if path == 'now':
                rig.engine.steps.step(request)
            else:
                rig.engine.steps.queue(request)
            assert len(outcomes) == calls.index((later_ms, user_id, steps, target_frame,
                                                 epoch)) + 1, 'answered within the call'
        results.append((outcomes, rig.sink.all_frames(), rig.events.calls, rig.logger.lines,
                        rig.timeline.holder))
    return results


def test_the_quick_path_and_the_queue_answer_every_step_alike():
    """
    Steps, a retry by target frame, a stale epoch, another user_id, a lapsed holder.

    The same outcomes, frames, frame-timeline records and log whichever path took them: the
    quick path is the queue's answer, given within the call.
    """
    calls = [(100, 'alice', 3, 0, None), (101, 'alice', 0, 5, None), (102, 'alice', 0, 5, None),
             (103, 'alice', 1, 0, 1), (104, 'bob', 1, 0, None), (105, 'alice', 2, 0, 0),
             (600, 'bob', 1, 0, None)]
    now, queued = _both_paths(calls)
    assert now == queued
    outcomes, frames, _, lines, holder = now
    assert [(o.success, o.frame) for o in outcomes] == [
        (True, 3), (True, 5), (True, 5), (False, 5), (False, 5), (True, 7), (True, 8)], outcomes
    assert 'expected 1' in outcomes[3].message and 'held by' in outcomes[4].message
    assert frames == [k * 10 * MS for k in range(1, 9)]
    # bob's last call came after alice's owner_timeout: her lease lapsed, and it was said.
    assert holder == '' and any('lapsed' in line for _, line in lines), lines


def test_free_run_publishes_the_frames_due_by_the_steady_clock():
    rig = Rig(sync=False, time_step=0.01, real_time_factor=1.0)
    rig.engine.free_run.tick()
    assert rig.sink.all_frames() == []
    rig.clock.now += 35 * MS    # three and a half frames of 10 ms at real time
    rig.engine.free_run.tick()
    assert rig.sink.all_frames() == [10 * MS, 20 * MS, 30 * MS]
    rig.clock.now += 10 * MS
    rig.engine.free_run.tick()
    assert rig.sink.all_frames()[-1] == 40 * MS and rig.timeline.frame == 4


def test_full_speed_free_run_publishes_batches_while_its_time_lasts():
    rig = Rig(SteadyClock(auto_ns=1_000), sync=False, time_step=0.001, real_time_factor=0.0)
    rig.pace.full_speed = True
    rig.engine.free_run.tick()
    frames = rig.sink.all_frames()
    assert len(frames) > 1
    assert frames == [MS * (k + 1) for k in range(len(frames))]     # every frame, in order


def test_real_time_publishes_the_steady_time_elapsed():
    rig = Rig(mode='real_time', sync=False)
    start = rig.timeline.time_ns
    rig.clock.now += 5 * MS
    rig.engine.free_run.tick()
    assert rig.sink.all_frames() == [start + 5 * MS]


def test_a_reset_between_steps_starts_the_frames_again():
    rig = Rig(sync=True, time_step=0.01)
    rig.step(2)
    assert rig.answer().frame == 2
    rig.changes.apply(lambda: rig.timeline.reset('test'))
    assert rig.resets == [(1, 20 * MS, 0, 'test')]
    rig.step(1)
    outcome = rig.answer()
    assert outcome.success and outcome.epoch == 1 and outcome.frame == 1
    assert outcome.clock_ns == 10 * MS
    assert rig.sink.all_frames() == [10 * MS, 20 * MS, 10 * MS]


def test_a_step_held_by_a_participant_goes_on_at_its_done():
    rig = Rig(sync=True, time_step=0.01)
    rig.core.barrier.join('planner', 20 * MS)
    rig.step(4)
    assert rig.answers == []                            # held at its first due frame
    held = rig.sink.all_frames()[-1]
    assert rig.core.barrier.waiting_for == ['planner']
    assert rig.readers.said[-1] == held
    for _ in range(3):
        due = rig.sink.all_frames()[-1]
        rig.clock.now += MS
        assert rig.core.barrier.done('planner', due, rig.clock.now)
        rig.engine.steps.wake()
        if rig.answers:
            break
    outcome = rig.answer()
    assert outcome.success and outcome.frame == 4, outcome
    assert rig.sink.all_frames() == [10 * MS, 20 * MS, 30 * MS, 40 * MS]


def test_a_step_held_past_the_participant_timeout_stops_naming_it():
    rig = Rig(sync=True, time_step=0.01, participant_timeout=0.5)
    rig.core.barrier.join('slow', 0)
    rig.step(3)
    assert rig.answers == [] and rig.sink.all_frames() == [10 * MS]
    timer = rig.timers[0]
    assert timer.timer_period_ns == SECOND // 2         # armed for the participant's deadline
    rig.clock.now += SECOND // 2
    timer.fire()
    outcome = rig.answer()
    assert not outcome.success and outcome.late == ['slow'] and outcome.frame == 1
    assert 'slow' in outcome.message, outcome.message
    assert any(call[0] == 'missed' and call[2] == ['slow'] for call in rig.events.calls)


def test_a_new_step_gives_a_participant_still_awaited_a_new_timeout():
    """Late at one step, it is counted again from the next step's start, not from its frame."""
    rig = Rig(sync=True, time_step=0.01, participant_timeout=0.5)
    rig.core.barrier.join('slow', 0)
    rig.step(1)
    rig.clock.now += SECOND // 2
    rig.timers[0].fire()
    assert rig.answer().late == ['slow']
    rig.clock.now += SECOND  # still no done from it
    rig.step(1)
    assert rig.answers == []  # waiting again, not late at once
    assert rig.timers[0].timer_period_ns == SECOND // 2


def test_a_new_step_gives_a_gate_held_for_a_writer_a_new_timeout():
    """A gated frame held past its timeout with no writer is held again, from the new step on."""
    rig = Rig(sync=True, time_step=0.01, output_gates='/cmd@0.02', participant_timeout=0.5)
    rig.step(3)
    assert rig.answers == [] and rig.sink.all_frames() == [10 * MS]  # 20 ms held: no writer
    rig.clock.now += SECOND // 2
    rig.timers[0].fire()
    assert rig.answer().late == ['/cmd']
    rig.clock.now += SECOND
    rig.step(1)
    assert rig.answers == [] and rig.sink.all_frames() == [10 * MS]
    assert rig.timers[0].timer_period_ns == SECOND // 2


def test_a_gated_frame_waits_for_its_output():
    rig = Rig(sync=True, time_step=0.01, output_gates='/cmd@0.02')
    gates = rig.core.gates
    assert not gates.matched('/cmd', 1, rig.clock.now)
    assert gates.arrived('/cmd', rig.clock.now) is False     # the writer is proven matched
    rig.step(3)
    assert rig.answers == [] and rig.sink.all_frames() == [10 * MS, 20 * MS]
    assert rig.gate_readers.drained == 1
    rig.clock.now += MS
    assert gates.arrived('/cmd', rig.clock.now)
    rig.engine.steps.wake()
    outcome = rig.answer()
    assert outcome.success and outcome.frame == 3, outcome
    assert rig.sink.all_frames() == [10 * MS, 20 * MS, 30 * MS]


def test_a_release_in_free_run_sends_the_frames_due_at_once():
    """A done that releases a held free-run frame: the frames due go out in its callback."""
    rig = Rig(sync=False, time_step=0.01, real_time_factor=1.0)
    rig.core.barrier.join('planner', 0)
    rig.clock.now += 10 * MS
    rig.engine.free_run.tick()
    assert rig.sink.all_frames() == [10 * MS]           # held there for the participant
    rig.clock.now += 20 * MS
    rig.engine.free_run.tick()
    assert rig.sink.all_frames() == [10 * MS]
    assert rig.core.barrier.done('planner', 10 * MS, rig.clock.now)
    rig.engine.released()                               # no tick: the release itself
    assert rig.sink.all_frames() == [10 * MS, 20 * MS]  # the next one due, held again


def test_a_held_frame_is_republished_at_publish_rate_until_each_holder_has_answered_once():
    """
    Free run held for a participant: its time again each 10 ms until its first done came.

    A first done may be lost before its writer matched, and only a republish brings it again;
    once every participant held for has answered a frame, each republish costs them all a done
    and a wake-up, so a held frame's time comes again each 100 ms at most.
    """
    rig = Rig(sync=False, time_step=0.01, real_time_factor=1.0)
    pacing = rig.core.pacing
    rig.pace.published = lambda: setattr(pacing, 'last_publish_ns', rig.clock.now)

    def republished_in(wall_ms: int) -> int:
        before = len(rig.sink.times)
        for _ in range(wall_ms):
            rig.clock.now += MS
            rig.engine.free_run.tick()
        return len(rig.sink.times) - before

    rig.core.barrier.join('planner', 0)
    rig.clock.now += 10 * MS
    rig.engine.free_run.tick()
    assert rig.sink.all_frames() == [10 * MS]           # out, held for it
    assert republished_in(300) == 30                    # no done yet: at publish_rate
    assert rig.core.barrier.done('planner', 10 * MS, rig.clock.now)
    rig.engine.released()
    assert rig.sink.all_frames() == [10 * MS, 20 * MS]  # the next, held again
    assert republished_in(300) == 3                     # it answered before: each 100 ms
    rig.core.barrier.join('late_joiner', 0)             # joins; due from the next frame
    assert rig.core.barrier.done('planner', 20 * MS, rig.clock.now)
    rig.engine.released()
    assert republished_in(100) == 10                    # a holder with no done yet: 10 ms


def test_a_release_wakes_a_held_step_and_leaves_sync_mode_without_a_tick():
    rig = Rig(sync=True, time_step=0.01)
    rig.core.barrier.join('planner', 0)
    rig.step(2)
    assert rig.answers == [] and rig.sink.all_frames() == [10 * MS]
    assert rig.core.barrier.done('planner', 10 * MS, rig.clock.now)
    rig.engine.released()
    assert rig.sink.all_frames() == [10 * MS, 20 * MS]
    assert rig.core.barrier.done('planner', 20 * MS, rig.clock.now)
    rig.engine.released()
    outcome = rig.answer()
    assert outcome.success and outcome.frame == 2, outcome


# -- the /clock rate cap (max_clock_rate): free run only ----------------------------------------


def capped(max_rate=100.0, **values) -> Rig:
    """Free run of 1 ms frames at real-time pace under a cap (1000 frames/s, 100 Hz: 1 in 10)."""
    return Rig(clock=SteadyClock(), time_step=0.001, max_clock_rate=max_rate, **values)


def run(rig: Rig, wall_ms: int) -> range:
    """Let ``wall_ms`` of wall time pass; publish the frames due as a tick does."""
    rig.clock.now += wall_ms * MS
    frames = rig.timeline.poll(rig.engine.frames.limit(10 ** 6))
    rig.engine.frames.publish(frames, rig.core.holds_frames())
    return frames


def test_free_run_under_a_cap_publishes_only_the_grid_and_every_frame_to_the_sink():
    """Every 10th frame since the reset goes out on /clock; a sink with data gets them all."""
    rig = capped()
    assert len(run(rig, 25)) == 25
    run(rig, 10)
    assert rig.sink.clock == [[10 * MS, 20 * MS], [30 * MS]]
    assert [list(frames) for frames in rig.sink.frames] == [
        [k * MS for k in range(1, 26)], [k * MS for k in range(26, 36)]]


def test_the_cap_counts_wall_time_by_the_engines_clock():
    """Two seconds of the engine's clock in ticks of 10 ms: every grid frame goes out."""
    rig = capped()
    for _ in range(200):
        run(rig, 10)
    assert [time for out in rig.sink.clock for time in out] == [
        k * 10 * MS for k in range(1, 201)]


def test_participants_due_keep_the_last_frame_of_a_run():
    """With the barrier in force the last frame goes out whatever the grid."""
    rig = capped()
    rig.core.barrier.join('participant', MS)
    assert rig.core.holds_frames()
    rig.clock.now += 15 * MS
    rig.engine.frames.publish(rig.timeline.poll(15), True)
    assert rig.sink.clock == [[10 * MS, 15 * MS]]


def test_without_a_cap_every_frame_goes_out():
    """max_clock_rate 0: the frames pass untouched."""
    rig = capped(max_rate=0.0)
    frames = run(rig, 5)
    assert rig.sink.clock == [list(frames)] == [[MS, 2 * MS, 3 * MS, 4 * MS, 5 * MS]]


def test_steps_are_not_capped_and_a_republish_after_one_carries_its_time():
    """Sync mode: a step's frames all go out; the time again is the step's last."""
    rig = capped(sync=True)
    rig.step(5)
    assert rig.answer().success
    rig.engine.frames.republish()
    assert rig.sink.clock == [[MS, 2 * MS, 3 * MS, 4 * MS, 5 * MS]]
    assert rig.sink.times == [5 * MS]


def test_a_run_with_nothing_on_the_grid_publishes_no_clock():
    """No frame of the run on the grid: its frames reach the sink, none on /clock."""
    rig = capped()
    run(rig, 5)
    assert rig.sink.clock == []
    assert [list(frames) for frames in rig.sink.frames] == [[MS, 2 * MS, 3 * MS, 4 * MS, 5 * MS]]


def test_an_idle_republish_carries_the_last_time_that_went_out():
    """Capped: the time published again is the last grid frame out, never a frame left out."""
    rig = capped()
    run(rig, 15)
    rig.engine.frames.republish()
    rig.engine.frames.republish()
    assert rig.sink.times == [10 * MS, 10 * MS]


def test_a_reset_forgets_the_last_time_out():
    """After a reset the time published again is the new time, not the last epoch's."""
    rig = capped()
    run(rig, 15)
    rig.changes.apply(lambda: rig.timeline.reset('test'))
    assert rig.sink.times[-1] == 0
    rig.engine.frames.republish()
    assert rig.sink.times[-1] == 0


def test_the_limit_is_the_sinks_boundary_and_the_caps():
    """Never past the sink's boundary; paced, held back by the cap's bucket."""
    rig = Rig(clock=SteadyClock(), boundary=3, time_step=0.001, max_clock_rate=100.0)
    assert rig.engine.frames.limit(100) == 3
    assert len(run(rig, 50)) == 3
    # The bucket holds 10 grid frames a burst: at most up to frame 109 now.
    assert capped().engine.frames.limit(10 ** 6) == 109
    assert capped(max_rate=0.0).engine.frames.limit(10 ** 6) == 10 ** 6
