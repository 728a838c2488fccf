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
The frame engine: its frames out, its steps and its free run, made and wired together.

:class:`FrameEngine` makes the one :class:`~.frames.Frames` of a server and gives it to the
:class:`~.steps.StepRunner` and the :class:`~.free_run.FreeRun` it makes; then it routes what
ends a wait (a done, a leave, a gated message, a ready node, a change of the timeline) to the
step waiting and to free run. None of the three calls back into it.
"""

from sim_clock.node.engine.frames import Frames
from sim_clock.node.engine.free_run import FreeRun
from sim_clock.node.engine.parts import EngineParts
from sim_clock.node.engine.steps import StepRunner


class FrameEngine:
    """
    The frames of one clock server, from :class:`EngineParts`: no node, no server.

    ``steps`` takes the steps (:meth:`StepRunner.step`: each waits for what holds its frames
    and is answered); ``free_run`` publishes the free-run and real-time frames due at each tick
    (:meth:`FreeRun.tick`); ``frames`` publishes every frame and says what holds it. The
    server hands :meth:`on_change` every change of the timeline.
    """

    def __init__(self, parts: EngineParts):
        self._timeline = parts.core.timeline
        self.frames = Frames(parts)
        self.steps = StepRunner(self.frames, parts)
        self.free_run = FreeRun(self.frames, parts)
        # What ends a wait calls the engine, which goes on with a step or free run.
        parts.participants.when_released(self.released)
        parts.gate_readers.when_released(self.released)
        parts.expected.when_ready(self.expected_ready)
        parts.changes.after_dispatch(self._after_changes)

    def close(self) -> None:
        """Drop the steps not answered: the node is being destroyed."""
        self.steps.close()

    def released(self) -> None:
        """Go on with a step or free run: a wait may have ended (a done, a leave, an output)."""
        self.steps.wake()
        if self._timeline.free_running:
            self.free_run.tick()

    def expected_ready(self) -> None:
        """
        Every expected node is ready: the current time again, then a waiting step goes on.

        Their readers of /clock have just matched: the time published again reaches each
        before the first frame's data (one writer, in order), so a recorder stamps that data
        and a participant has the time it starts from. Free run goes on at its next tick.
        """
        self.frames.republish()
        self.steps.wake()

    def _after_changes(self, changes: list) -> None:
        """After a dispatch with a reset: the new time at once, for every reader of /clock."""
        if any(change.reset for change in changes):
            self.frames.republish()

    def on_change(self, change) -> None:
        """Follow a change of the timeline: a step waiting may go on."""
        if change.reset:
            # A reset supersedes what the old epoch's frames left to do (a loop, a pause).
            self.frames.at_frames_end = None
        self.steps.wake()
