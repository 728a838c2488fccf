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
CappedSink: the /clock rate cap applied to free run, and only to free run.

The time core and the cap are the real ones (whether participants hold frames is the core's
answer); the sink it wraps is a small fake of ours.
"""

from fractions import Fraction

from node_doubles import MS
from sim_clock.core.clock_rate import ClockRateCap
from sim_clock.core.pacing import Pacing
from sim_clock.core.settings import Core
from sim_clock.core.timeline import Timeline
from sim_clock.node.rate_cap import CappedSink


class Sink:
    """The sink wrapped: what it published, and a boundary of its own (a bag's end)."""

    def __init__(self, boundary: int = 10 ** 9):
        #: Each run's frames whose /clock went out, and each run's frames (a bag's data).
        self.frames = []
        self.runs = []
        self.times = []
        self.boundary = boundary
        self.closed = False

    def publish_frames(self, frames, clock_times=None) -> None:
        """Record a run of frames, and those whose /clock goes out (all if not said)."""
        self.runs.append(list(frames))
        if clock_times is None or clock_times:
            self.frames.append(list(frames if clock_times is None else clock_times))

    def publish_time(self, time_ns: int) -> None:
        """Record a time published again."""
        self.times.append(time_ns)

    def limit(self, limit: int) -> int:
        """Return ``limit``, up to the boundary."""
        return min(limit, self.boundary)

    def publishers(self) -> list:
        """Return a publisher of its own."""
        return ['clock publisher']

    def end_of_frames(self):
        """Return what it leaves to do at the end."""
        return 'the end'

    def close(self) -> None:
        """Note the close."""
        self.closed = True


def dispatch(core: Core) -> None:
    """Take the timeline's changes through the core, which follows resets (as the server does)."""
    core.take_changes(0, lambda time_ns: time_ns)


class Rig:
    """Free run of 1 ms frames at real-time pace under a cap (1000 frames/s, 100 Hz: 1 in 10)."""

    def __init__(self, max_rate=100, boundary=10 ** 9, **options):
        self.now = 0
        self.timeline = Timeline(lambda: self.now, **{'time_step_ns': MS, **options})
        self.cap = ClockRateCap(Fraction(max_rate))
        self.cap.pace(self.timeline.time_step_ns, self.timeline.real_time_factor)
        self.inner = Sink(boundary)
        self.core = Core(self.timeline, Pacing(10 * MS), rate_cap=self.cap)
        self.sink = CappedSink(self.inner, self.core, lambda: self.now)

    def run(self, wall_ms: int) -> range:
        """Let ``wall_ms`` of wall time pass; publish the frames due through the sink."""
        self.now += wall_ms * MS
        frames = self.timeline.poll(self.sink.limit(10 ** 6))
        self.sink.publish_frames(frames)
        return frames


def test_free_run_under_a_cap_publishes_only_the_grid():
    """Every 10th frame since the reset goes out, with its exact time."""
    rig = Rig()
    assert len(rig.run(25)) == 25
    rig.run(10)
    assert rig.inner.frames == [[10 * MS, 20 * MS], [30 * MS]]


def test_the_cap_counts_wall_time_by_the_clock_it_is_given():
    """
    Paced, its bucket refills by the node's steady clock, the engine's: not the machine's.

    Two seconds of that clock, in ticks of 10 ms, take a few microseconds of the machine's:
    every grid frame goes out all the same, none held back past its burst.
    """
    rig = Rig()
    for _ in range(200):
        rig.run(10)
    assert [time for run in rig.inner.frames for time in run] == [
        k * 10 * MS for k in range(1, 201)]


def test_participants_due_keep_the_last_frame_of_a_batch():
    """With the barrier in force the last frame goes out whatever the grid."""
    rig = Rig()
    rig.core.barrier.join('participant', MS)
    assert rig.core.holds_frames()
    rig.run(15)
    assert rig.inner.frames == [[10 * MS, 15 * MS]]


def test_without_a_cap_every_frame_goes_out():
    """max_clock_rate 0: the frames pass untouched."""
    rig = Rig(max_rate=0)
    frames = rig.run(5)
    assert rig.inner.frames == [list(frames)] == [[MS, 2 * MS, 3 * MS, 4 * MS, 5 * MS]]


def test_steps_pass_through_the_cap():
    """Sync mode: a step's frames all go out, and idle republishes carry the time given."""
    rig = Rig(sync=True)
    frames = rig.timeline.step('', 5)
    rig.sink.publish_frames(frames)
    rig.sink.publish_time(5 * MS)
    assert rig.inner.frames == [[MS, 2 * MS, 3 * MS, 4 * MS, 5 * MS]]
    assert rig.inner.times == [5 * MS]


def test_a_batch_with_nothing_on_the_grid_publishes_nothing():
    """No frame of the batch on the grid: its frames go to the sink, none on /clock."""
    rig = Rig()
    rig.run(5)
    assert rig.inner.frames == []
    assert rig.inner.runs == [[MS, 2 * MS, 3 * MS, 4 * MS, 5 * MS]]


def test_every_frame_reaches_the_sink_with_the_times_of_its_clock():
    """A sink with data (a bag's) gets every frame under the cap: only /clock is thinned."""
    rig = Rig()
    rig.run(25)
    rig.run(10)
    assert rig.inner.runs == [[k * MS for k in range(1, 26)], [k * MS for k in range(26, 36)]]
    assert rig.inner.frames == [[10 * MS, 20 * MS], [30 * MS]]


def test_an_idle_republish_carries_the_last_time_that_went_out():
    """Capped: the time published again is the last grid frame out, never a frame left out."""
    rig = Rig()
    rig.run(15)
    rig.sink.publish_time(rig.timeline.time_ns)
    assert rig.inner.times == [10 * MS]
    rig.sink.publish_time(rig.timeline.time_ns)
    assert rig.inner.times == [10 * MS, 10 * MS]


def test_a_reset_forgets_the_last_time_out():
    """After a reset the republish carries the new time, not the last epoch's."""
    rig = Rig()
    rig.run(15)
    rig.timeline.reset('test')
    dispatch(rig.core)
    rig.sink.publish_time(rig.timeline.time_ns)
    assert rig.inner.times == [0]


def test_the_limit_is_the_wrapped_sinks_and_the_caps():
    """Never past the wrapped sink's boundary; paced, held back by the cap's bucket."""
    rig = Rig(boundary=3)
    assert rig.sink.limit(100) == 3
    assert len(rig.run(50)) == 3
    held = Rig()
    # The bucket holds 10 grid frames a burst: at most up to frame 109 now.
    assert held.sink.limit(10 ** 6) == 109
    assert Rig(max_rate=0).sink.limit(10 ** 6) == 10 ** 6


def test_publishers_end_of_frames_and_close_are_the_wrapped_sinks():
    """The rest is the wrapped sink's."""
    rig = Rig()
    assert rig.sink.publishers() == ['clock publisher']
    assert rig.sink.end_of_frames() == 'the end'
    rig.sink.close()
    assert rig.inner.closed
