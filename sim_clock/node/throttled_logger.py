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
The server's logger: rclpy's, with ``throttle_duration_sec`` and ``once`` decided here first.

rclpy finds a throttled or once-only call's call site by inspecting the caller's frame and
source file at every call, also when it then says nothing: about 200 us a call. The frame
engine asks for its warnings at every tick (1 ms) while a frame waits for late participants,
so that cost went to the waits themselves. Here a call site is its caller's code object and
line, read in well under a microsecond, and a call that would be throttled or repeated never
reaches rclpy. Throttling counts steady time, as rclpy's does on the node's steady clock.
"""

import sys
from typing import Callable
from typing import Dict
from typing import Tuple

from sim_clock.core.units import NS_PER_SEC

#: A call site: the calling function's code and the line it called from.
Site = Tuple[object, int]


class ThrottledLogger:
    """``info``, ``warning``, ``error`` (and the rest) of ``logger``, throttled per call site."""

    def __init__(self, logger, now_ns: Callable[[], int]):
        self._logger = logger
        self._now_ns = now_ns
        #: For each call site throttled so far: the steady time (ns) it may say something again.
        self._next_ns: Dict[Site, int] = {}
        #: The call sites of ``once=True`` calls that have said their line.
        self._said: set = set()

    # Each level calls rclpy from a line of its own: rclpy keeps one severity per call site,
    # and raises if one site logs at two.

    def debug(self, message: str, **kwargs) -> bool:
        """Log at DEBUG."""
        return not self._held_back(kwargs) and self._logger.debug(message, **kwargs)

    def info(self, message: str, **kwargs) -> bool:
        """Log at INFO."""
        return not self._held_back(kwargs) and self._logger.info(message, **kwargs)

    def warning(self, message: str, **kwargs) -> bool:
        """Log at WARN."""
        return not self._held_back(kwargs) and self._logger.warning(message, **kwargs)

    def error(self, message: str, **kwargs) -> bool:
        """Log at ERROR."""
        return not self._held_back(kwargs) and self._logger.error(message, **kwargs)

    def fatal(self, message: str, **kwargs) -> bool:
        """Log at FATAL."""
        return not self._held_back(kwargs) and self._logger.fatal(message, **kwargs)

    def _held_back(self, kwargs: dict) -> bool:
        """
        Take ``throttle_duration_sec`` and ``once`` out of ``kwargs``; whether they hold it back.

        The call site is the caller of the level's method: two frames up from here.
        """
        throttle_duration_sec = kwargs.pop('throttle_duration_sec', None)
        once = kwargs.pop('once', False)
        if throttle_duration_sec is None and not once:
            return False
        caller = sys._getframe(2)
        site = (caller.f_code, caller.f_lineno)
        if once:
            if site in self._said:
                return True
            self._said.add(site)
        if throttle_duration_sec is not None:
            now = self._now_ns()
            if now < self._next_ns.get(site, now):
                return True
            self._next_ns[site] = now + round(throttle_duration_sec * NS_PER_SEC)
        return False
