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
Expected participants on the node: ``~/ready`` feeds the core's :class:`Roster`.

The rules are ``core/roster.py``; this module takes each expected node's reports from the
wire, adds what the server's own writers of each frame (/clock, the clock views, a bag's
topics) have matched,
looks again while someone is missing (matches come without a message), and wakes the frame
engine once every expected node is ready (doc/frames.md, "Expected participants").
"""

from typing import Callable
from typing import Dict
from typing import List

from sim_clock.core.roster import Report
from sim_clock.core.roster import Roster
from sim_clock.core.roster import WriterView
from sim_clock.msg import Ready
from sim_clock.node.engine.parts import nothing
from sim_clock.wire.names import READY_READER_QOS
from sim_clock.wire.ready import readers_seen

#: How often the server looks again while an expected node is missing, in s.
LOOK_PERIOD_S = 0.05


class ExpectedParticipants:
    """
    The ``~/ready`` topic of ``node`` and the looks of its :class:`Roster`.

    ``data_publishers``: the server's own writers of each frame (/clock, the views, a bag's
    topics: its frame sink's ``publishers``). Once every expected node is ready, what
    :meth:`when_ready` registered is called (the frame engine goes on).
    """

    def __init__(self, node, roster: Roster, data_publishers: Callable[[], list],
                 steady_clock):
        self._node = node
        self.roster = roster
        self._data_publishers = data_publishers
        self._ready: Callable[[], None] = nothing
        self._was_ready = roster.all_ready
        node.create_subscription(Ready, '~/ready', self._on_ready, READY_READER_QOS)
        self._timer = node.create_timer(LOOK_PERIOD_S, self._on_timer, clock=steady_clock)

    def when_ready(self, ready: Callable[[], None]) -> None:
        """Call ``ready`` whenever every expected node has become ready: the frame engine's."""
        self._ready = ready

    def server_writers(self) -> Dict[str, List[WriterView]]:
        """Return topic -> each of the server's writers of frames, its matches and readers."""
        writers = {}
        for publisher in self._data_publishers():
            # The count first, the graph after: a reader matched in between is then in the
            # graph too, and cannot stand in for one the count missed.
            matched = publisher.get_subscription_count()
            writers.setdefault(publisher.topic_name, []).append(
                WriterView(matched, readers_seen(self._node, publisher.topic_name)))
        return writers

    def look(self) -> bool:
        """Look at the matches again; return whether every expected node is ready."""
        if self.roster.all_ready and not self.roster.expected:
            return True
        self._changed(self.roster.look(self.server_writers()))
        return self.roster.all_ready

    def describe_missing(self) -> List[str]:
        """Return what each expected node not ready lacks, in words."""
        return self.roster.describe_missing(self.server_writers())

    def forget(self, *names: str) -> None:
        """Forget what the nodes ``names`` said (they left): each must say it again."""
        for name in names:
            if name:
                self.roster.forget(name)
        self.look()

    def _on_ready(self, msg: Ready) -> None:
        report = Report.of(msg.publications, msg.readers, msg.subscriptions, msg.writers,
                           msg.readers_seen, msg.reader_nodes)
        self._changed(self.roster.report(msg.name, report, self.server_writers()))

    def _on_timer(self) -> None:
        if self.roster.expected and not self.roster.all_ready:
            self.look()

    def _changed(self, ready: bool) -> None:
        if ready == self._was_ready:
            return
        self._was_ready = ready
        if ready:
            self._node.get_logger().info(
                'every expected participant is ready: ' + ', '.join(self.roster.expected))
            self._ready()
