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
The one place a change of the timeline is announced.

The time core records each change it makes (``Timeline.take_changes``); :meth:`dispatch`
takes them, logs each, records each reset on the frame timeline, hands each to the listeners
in the order they listen, then calls what follows every dispatch (the time published again
after a reset, the tick's period, the parameter events).
"""

from typing import Callable
from typing import List
from typing import Optional
from typing import TypeVar

from sim_clock.core.axes import Axes
from sim_clock.core.state import Change
from sim_clock.core.timeline import Timeline
from sim_clock.node.engine.parts import Logger
from sim_clock.node.resets import log_change

T = TypeVar('T')


class TimelineChanges:
    """
    Announce the changes of ``timeline``: to the log, to ``on_reset`` and to the listeners.

    ``on_reset(epoch, before_ns, after_ns, cause)`` is given the /clock times of each reset
    (the frame timeline records it); ``take()`` returns the changes (default: the timeline's
    own; the server's core also follows each reset in its hold first).
    """

    def __init__(self, timeline: Timeline, axes: Axes, logger: Logger,
                 on_reset: Callable[[int, int, int, str], None],
                 take: Optional[Callable[[], List[Change]]] = None):
        self._take = take or timeline.take_changes
        self._axes = axes
        self._logger = logger
        self._on_reset = on_reset
        self._listeners: List[Callable[[Change], None]] = []
        self._after: List[Callable[[List[Change]], None]] = []

    def listen(self, listener: Callable[[Change], None]) -> None:
        """Hand ``listener`` every change, after the listeners before it."""
        self._listeners.append(listener)

    def after_dispatch(self, callback: Callable[[List[Change]], None]) -> None:
        """Call ``callback`` with the changes (maybe none) at the end of every dispatch."""
        self._after.append(callback)

    def apply(self, change: Callable[[], T]) -> T:
        """Run ``change()`` on the timeline; then announce what changed, even if it raised."""
        try:
            return change()
        finally:
            self.dispatch()

    def dispatch(self) -> None:
        """Announce the changes the timeline recorded since the last call."""
        changes = self._take()
        to_clock = self._axes.to_clock
        for change in changes:
            log_change(self._logger, change, to_clock(change.time_after_ns))
            if change.reset:
                self._on_reset(change.epoch, to_clock(change.time_before_ns),
                               to_clock(change.time_after_ns), change.cause)
            for listener in self._listeners:
                listener(change)
        for callback in self._after:
            callback(changes)
