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
A frame's run: its messages, then its /clock. The Python model beside the C loop's adaptor.

:func:`python_run` is the reference; :func:`native_run` adapts ``sim_clock._replay.play`` (the
loop in C, ``src/replay.c``), which the tests hold to the model.
"""

from array import array
from bisect import bisect_right
from typing import Callable
from typing import Optional

from sim_clock import _replay
from sim_clock.bag.cursor import Run
from sim_clock.bag.read_ahead import EMPTY_BATCH


def python_run(emit: Callable[[tuple, int, int], object],
               frame_done: Callable[[int], object],
               budgets: Optional[array] = None) -> Run:
    """
    Return the :data:`Run` that hands out messages by ``emit(batch, start, stop)``.

    For each frame, the messages ``start`` to ``stop`` (excluded) of the batch due by then, if
    any, in one call; then ``frame_done(t)`` with the frame's time. ``budgets``: as for
    ``sim_clock._replay.play``, by the topic indices in ``batch[1]``, then /clock (flow
    control, :mod:`sim_clock.node.flow`). The model of ``sim_clock._replay.play``, and a run
    for batches of any kind whose first item is the times and second the topics.
    """
    def run(batch, index, frames, offset_ns):
        times = () if batch is None else batch[0]
        size = len(times)
        for finished, t in enumerate(frames):
            up_to_ns = offset_ns + t
            if index < size and times[index] <= up_to_ns:
                stop = (size if times[-1] <= up_to_ns
                        else bisect_right(times, up_to_ns, index + 1, size))
                allowed = stop if budgets is None else _affordable(budgets, batch[1], index, stop)
                if allowed > index:
                    emit(batch, index, allowed)
                if allowed < stop:
                    return finished, allowed
                index = stop
            if index == size and batch is not None:
                return finished, index
            if not spend(budgets, -1):
                return finished, index
            frame_done(t)
        return len(frames), index
    return run


def spend(budgets: Optional[array], which: int) -> bool:
    """Take one publish off ``budgets[which]``; False if it is 0 (negative: no limit)."""
    if budgets is None or budgets[which] < 0:
        return True
    if budgets[which] == 0:
        return False
    budgets[which] -= 1
    return True


def _affordable(budgets: array, topics, start: int, stop: int) -> int:
    """Spend the budgets of messages ``start`` on; return the first that cannot go (or stop)."""
    for index in range(start, stop):
        if not spend(budgets, topics[index]):
            return index
    return stop


def native_run(publishers: array, clock_publisher: int, clock_offset_ns: int,
               budgets: Optional[array] = None) -> Run:
    """
    Return the :data:`Run` of packed batches in C (``sim_clock._replay.play``).

    ``publishers``: the rcl addresses of the topics' publishers (``array('Q')``, by topic
    index); ``clock_publisher``: that of /clock, whose times are the frames' plus
    ``clock_offset_ns``; ``budgets``: see :func:`python_run`. Frames must be a range. The
    addresses must outlive the run's use.
    """
    play = _replay.play

    def run(batch, index, frames, offset_ns):
        final = batch is None
        times, topics, blob, offsets = EMPTY_BATCH if final else batch
        return play(publishers, topics, blob, offsets, times, index, frames.start, frames.step,
                    len(frames), offset_ns, clock_publisher, clock_offset_ns, final, budgets)
    return run
