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

"""Messages handed out frame by frame, each frame up to its bag time, restartable from any time."""

from typing import Callable
from typing import Iterator
from typing import Optional
from typing import Sequence
from typing import Tuple

#: ``run(batch, index, frames, offset_ns[, clock_times]) -> (frames_done, index)``, what
#: :meth:`Cursor.play` calls: play ``frames`` in turn, each handing out the messages of
#: ``batch`` from ``index`` on stamped up to ``offset_ns`` plus the frame's time, then
#: finishing the frame (its /clock, if its time is in ``clock_times`` when given); stop at the
#: first frame that uses the batch up, before finishing it (the next batch may hold more of
#: its messages). ``batch`` None: no message is left, every frame finishes. Return the frames
#: finished and the index of the batch's next message. :func:`python_run` is the model; the
#: bag player's is ``sim_clock._replay.play``.
Run = Callable[..., Tuple[int, int]]


class Cursor:
    """
    Messages handed out in time order, frame by frame, from a restartable stream of batches.

    ``open_batches(start_ns)`` returns an iterator of batches whose times run in order from
    ``start_ns`` on, batch after batch. A batch is a tuple whose first item is the list of its
    messages' times in ns (a :data:`Batch` or a :data:`PackedBatch`); the cursor hands out runs
    of a batch's messages by their indices. Each message is handed out once between two
    :meth:`seek` calls; :attr:`handed_out` counts them all.
    """

    def __init__(self, open_batches: Callable[[int], Iterator[tuple]], start_ns: int):
        self._open_batches = open_batches
        #: Frames done by the last :meth:`play`.
        self.frames_played = 0
        #: Messages handed out since the cursor was made, over every seek: each run moves the
        #: batch's index past the messages it handed out.
        self.handed_out = 0
        self.seek(start_ns)

    def seek(self, start_ns: int) -> None:
        """Start again from ``start_ns``: the next message handed out is the first at or after."""
        self._batch = None
        self._batches = iter(self._open_batches(start_ns))
        self._next_batch()

    def _next_batch(self) -> None:
        self._batch = None
        self._index = 0
        for batch in self._batches:
            if batch[0]:
                self._batch = batch
                return

    @property
    def exhausted(self) -> bool:
        """Whether every message has been handed out."""
        return self._batch is None

    @property
    def next_known(self) -> bool:
        """Whether the next message is in the batch at hand (not used up by the last play)."""
        return self._batch is not None and self._index < len(self._batch[0])

    @property
    def next_time_ns(self) -> Optional[int]:
        """Return the time of the next message, or None."""
        return None if self._batch is None else self._batch[0][self._index]

    def play(self, frames: Sequence[int], offset_ns: int, run: Run,
             clock_times: Optional[Sequence[int]] = None) -> None:
        """
        Play ``frames`` in turn, each up to ``offset_ns`` plus its time, by ``run`` (:data:`Run`).

        ``clock_times``: given to ``run``: None, or the times of the frames whose /clock goes
        out (the others publish their messages only).

        ``run`` is given each batch in turn from where the last play stopped, and None once no
        message is left. What the stream of batches raises (a read error) propagates once the
        messages before it are out, with the frame unfinished; :attr:`frames_played` counts
        the frames finished before it (all of them otherwise). The cursor is then exhausted
        until a :meth:`seek`.
        """
        done = 0
        # A run that is given no clock_times publishes every frame's /clock.
        extra = () if clock_times is None else (clock_times,)
        try:
            while True:
                batch, index = self._batch, self._index
                finished, self._index = run(batch, index, frames[done:], offset_ns, *extra)
                self.handed_out += self._index - index
                done += finished
                if batch is None or done == len(frames):
                    return
                self._next_batch()  # the batch is used up within the frame
        finally:
            self.frames_played = done
