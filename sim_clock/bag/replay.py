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
from typing import Tuple

from sim_clock import _replay
from sim_clock.bag.cursor import Run
from sim_clock.bag.read_ahead import EMPTY_BATCH
from sim_clock.node.flow_control import PublisherDestroyed

#: A refused publish, telling where (``which``, ``done``, ``index``; see ``src/replay.c``).
PublishRefused = _replay.PublishRefused
#: The budget of a writer whose samples are not published (they count as played).
DROPPED = _replay.DROPPED
#: The ``which`` of /clock in a :class:`PublishRefused`, and its entry in the budgets.
CLOCK_INDEX = _replay.CLOCK_INDEX
#: What a budget lets the next publish do (as ``spend`` in ``src/replay.c``).
STOP, PUBLISH, SKIP = range(3)


def refused(text: str, which: int, done: int, index: int) -> PublishRefused:
    """Return a :class:`PublishRefused` as ``sim_clock._replay`` raises it."""
    error = PublishRefused(text)
    error.which, error.done, error.index = which, done, index
    return error


def python_run(emit: Callable[[tuple, int, int], object],
               frame_done: Callable[[int], object],
               budgets: Optional[array] = None) -> Run:
    """
    Return the :data:`Run` that hands out messages by ``emit(batch, start, stop)``.

    For each frame, the messages ``start`` to ``stop`` (excluded) of the batch due by then, if
    any, in one call; then ``frame_done(t)`` with the frame's time. ``budgets``: as for
    ``sim_clock._replay.play``, by the topic indices in ``batch[1]``, then /clock (flow
    control, :mod:`sim_clock.node.flow_control`). ``clock_times`` (the run's argument): None,
    or the ascending times of the frames whose /clock goes out (the others publish messages
    only). A refusal, ``emit``'s :class:`PublishRefused` (as ``sim_clock._replay.publish``
    raises it) or a RuntimeError of ``frame_done`` (other than
    :class:`PublisherDestroyed`), raises a PublishRefused that tells where, the budgets of what
    was not published given back. The model of ``sim_clock._replay.play``, and a run for
    batches of any kind whose first item is the times and second the topics.
    """
    def run(batch, index, frames, offset_ns, clock_times=None):
        times = () if batch is None else batch[0]
        size = len(times)
        due = None if clock_times is None else set(clock_times)
        for finished, t in enumerate(frames):
            up_to_ns = offset_ns + t
            if index < size and times[index] <= up_to_ns:
                stop = (size if times[-1] <= up_to_ns
                        else bisect_right(times, up_to_ns, index + 1, size))
                try:
                    index, spent = _publish_due(emit, budgets, batch, index, stop)
                except PublishRefused as error:
                    error.done = finished
                    raise
                if spent:
                    return finished, index
            if index == size and batch is not None:
                return finished, index
            if due is not None and t not in due:
                continue
            go = spend(budgets, CLOCK_INDEX)
            if go == STOP:
                return finished, index
            if go == PUBLISH:
                try:
                    frame_done(t)
                except PublisherDestroyed:
                    raise
                except RuntimeError as error:
                    refund(budgets, CLOCK_INDEX)
                    raise refused(str(error), CLOCK_INDEX, finished, index) from error
        return len(frames), index
    return run


def spend(budgets: Optional[array], which: int) -> int:
    """
    Return what ``budgets[which]`` lets the next publish do: PUBLISH, STOP or SKIP.

    PUBLISH takes one off a positive budget; STOP is a budget of 0; SKIP one of
    :data:`DROPPED`; any other negative budget (or no budgets) is no limit.
    """
    if budgets is None:
        return PUBLISH
    budget = budgets[which]
    if budget == DROPPED:
        return SKIP
    if budget < 0:
        return PUBLISH
    if budget == 0:
        return STOP
    budgets[which] = budget - 1
    return PUBLISH


def refund(budgets: Optional[array], which: int) -> None:
    """Give back what :func:`spend` took for a publish that did not happen."""
    if budgets is not None and budgets[which] >= 0:
        budgets[which] += 1


def _publish_due(emit, budgets: Optional[array], batch, start: int,
                 stop: int) -> Tuple[int, bool]:
    """Publish messages ``start`` to ``stop`` within ``budgets``: (where it stopped, if spent)."""
    if budgets is None:
        _emit(emit, None, batch, start, stop)
        return stop, False
    topics, first = batch[1], start
    for index in range(start, stop):
        go = spend(budgets, topics[index])
        if go != PUBLISH:
            _emit(emit, budgets, batch, first, index)
            if go == STOP:
                return index, True
            first = index + 1  # SKIP: played, not published
    _emit(emit, budgets, batch, first, stop)
    return stop, False


def _emit(emit, budgets: Optional[array], batch, start: int, stop: int) -> None:
    """``emit`` messages ``start`` to ``stop`` (spent); give back what a refusal kept back."""
    if start < stop:
        try:
            emit(batch, start, stop)
        except PublishRefused as error:
            for index in range(error.index, stop):
                refund(budgets, batch[1][index])
            raise


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

    def run(batch, index, frames, offset_ns, clock_times=None):
        final = batch is None
        times, topics, blob, offsets = EMPTY_BATCH if final else batch
        if clock_times is not None and not isinstance(clock_times, array):
            clock_times = array('q', clock_times)
        return play(publishers, topics, blob, offsets, times, index, frames.start, frames.step,
                    len(frames), offset_ns, clock_publisher, clock_offset_ns, final, budgets,
                    clock_times)
    return run
