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
Which participants' nodes have gone from the graph: the rule the server drops them by.

A participant names its node when it joins; the server looks at the graph's nodes every so
often. A node seen there and then missing has left (its process ended): dropped at once. A
node not seen yet may only be unnamed so far: the graph learns a process's node names from
its discovery info (``ros_discovery_info``), which can come seconds after the process's
endpoints, and its service calls, under load. So a node never seen is dropped only once the
grace after its join has passed *and* the graph names every writer of the server's ``~/done``
topic (each participant has one): while a writer there belongs to a node not named yet, that
node may be this one.
"""

from dataclasses import dataclass
from dataclasses import field
from typing import Dict
from typing import Iterable
from typing import List
from typing import Mapping
from typing import Set
from typing import Tuple

#: A participant's node never seen in the graph this long after it joined may be gone.
GRACE_NS = 2_000_000_000


@dataclass
class Presence:
    """When each watched participant joined, and which of their nodes the graph has shown."""

    grace_ns: int = GRACE_NS
    joined_at: Dict[str, int] = field(default_factory=dict)
    seen: Set[str] = field(default_factory=set)

    def joined(self, name: str, now_ns: int) -> None:
        """Count ``name``'s grace from now."""
        self.joined_at[name] = now_ns

    def left(self, name: str) -> None:
        """Forget ``name`` (it left, or was dropped)."""
        self.joined_at.pop(name, None)

    def gone(self, watched: Mapping[str, str], present: Iterable[str], unnamed_writers: int,
             now_ns: int) -> List[Tuple[str, str]]:
        """
        Return (participant, why) for each watched one whose node is gone; note the rest.

        ``watched``: participant -> its node's full name; ``present``: the graph's nodes;
        ``unnamed_writers``: how many writers of ``~/done`` belong to a node the graph has
        not named yet.
        """
        present = set(present)
        out = []
        for name, node in watched.items():
            if node in present:
                self.seen.add(node)
            elif node in self.seen:
                self.seen.discard(node)
                out.append((name, f'dropped: its node {node} left the graph'))
            elif (not unnamed_writers
                  and now_ns - self.joined_at.get(name, now_ns) > self.grace_ns):
                out.append((name, f'dropped: its node {node} never appeared in the graph '
                                  f'in the {self.grace_ns / 1e9:g} s after it joined'))
        return out
