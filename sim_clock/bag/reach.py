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
Which messages went out before any reader of their topic had matched: lost to DDS discovery.

A volatile reader gets nothing a writer published before the two matched. A reader started
just before the player may not be discovered for seconds (doc/bags.md, "The delay and
discovery"), and free run as fast as possible plays a bag in milliseconds: its messages then
reach nobody, and nothing else would say so. :class:`FirstMatches` notes, per topic, the bag
time reached when its writer's first reader matched; the messages of the first pass stamped
up to then are counted at the end, from the bag. Free of rclpy.
"""

from dataclasses import dataclass
from typing import Callable
from typing import Dict
from typing import List
from typing import Optional
from typing import Sequence
from typing import Tuple


@dataclass(frozen=True)
class Unheard:
    """Messages of one topic that went out before its writer had matched any reader."""

    topic: str
    count: int
    #: Whether a reader matched later (else none ever did): it missed these.
    matched_later: bool


class FirstMatches:
    """
    When each topic's writer first matched a reader, as the bag time reached then.

    ``start_ns``: the bag time the first pass starts from (messages stamped from it on go out
    with the frames after it).
    """

    def __init__(self, topics: Sequence[str], start_ns: int):
        self._topics = list(topics)
        self._start_ns = start_ns
        #: Per topic: the bag time reached when its first reader matched (None: not yet).
        self.first_match: List[Optional[int]] = [None] * len(self._topics)

    def matched(self, index: int, reached_ns: int) -> None:
        """Note that topic ``index``'s writer matched a reader with the bag at ``reached_ns``."""
        if self.first_match[index] is None:
            self.first_match[index] = reached_ns

    def spans(self, reached_ns: int, subscribed: Sequence[bool]) -> List[Tuple[int, int, bool]]:
        """
        Return (topic index, last bag time, matched later) of each topic that may have lost some.

        The messages of the topic stamped from the start to that time (included) went out before
        a reader matched. ``reached_ns``: the bag time reached by now; ``subscribed``: whether
        each writer has a reader now (a match not seen as an event yet came after all).
        """
        spans = []
        for index, first in enumerate(self.first_match):
            last = reached_ns if first is None else min(first, reached_ns)
            if last > self._start_ns:
                spans.append((index, last, first is not None or bool(subscribed[index])))
        return spans

    def unheard(self, reached_ns: int, subscribed: Sequence[bool],
                count: Callable[[int, Dict[int, int]], Dict[int, int]]) -> List[Unheard]:
        """
        Return the :class:`Unheard` of each topic that lost some, in topic order.

        ``count(first, lasts)`` returns, for each topic index of ``lasts``, its messages stamped
        from ``first`` to ``lasts[index]`` (included): :meth:`Bag.count_until`.
        """
        spans = self.spans(reached_ns, subscribed)
        if not spans:
            return []
        counts = count(self._start_ns, {index: last for index, last, _ in spans})
        return [Unheard(self._topics[index], counts.get(index, 0), later)
                for index, _, later in spans if counts.get(index, 0)]
