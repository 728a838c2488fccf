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
Expected participants: no frame goes out until every node named in advance is ready.

A stack started all at once (one launch file) is stepped before its nodes have joined and
before their writers have matched their readers: a first message sent then is lost. The
server is told the nodes to wait for (``expected_participants``); each of them says, on
``~/ready`` (a ``sim_clock/msg/Ready``), which topics it publishes and subscribes to and how
many readers or writers each of those endpoints has matched so far, again whenever that
changes. A node is ready once every node named has said so at least once (so that every
endpoint of the stack is known) and each of its endpoints has matched every endpoint of the
other side among the named nodes (and the server's own writers of a bag's topics): a writer
on ``/a`` as many readers as the named nodes hold on ``/a``, a reader as many writers. Counts
are at least, not exactly: a tool that also reads (``ros2 topic echo``) changes nothing.

Writers are checked by name where their node says the names (the server's own writers of
each frame, ``/clock``, clock views and a bag's topics, always; a node's when its report lists
the readers each writer sees): a reader that no one expects (any node started with
``use_sim_time`` reads ``/clock``; a ``ros2 topic echo``) would otherwise stand in for an
expected reader that the writer has not matched yet, though that reader already matched the
writer (the two sides of a match are discovered apart). Such a writer must see, among the
readers its node's graph shows that it could match, every reader of every expected node on its
topic, and have matched as many readers as it sees (:class:`WriterView`).
"""

from dataclasses import dataclass
from dataclasses import field
import re
from typing import Dict
from typing import Iterable
from typing import List
from typing import Mapping
from typing import Sequence
from typing import Tuple

from sim_clock.core.rules import Refused

#: The most names ``expected_participants`` takes.
MAX_EXPECTED = 256
_NAME = re.compile(r'^(/[A-Za-z_][A-Za-z0-9_]*)+$')


def node_name(name: str) -> str:
    """Return a node's full name with its leading slash: 'planner' -> '/planner'."""
    return name if name.startswith('/') else '/' + name


def parse_expected(value) -> Tuple[str, ...]:
    """
    Return the node names of an ``expected_participants`` value; refuse a bad one.

    A list of names, an empty list of any type, or one text of names separated by commas or
    spaces (a launch argument), brackets and quotes allowed; each with or without its leading
    slash (``planner``, ``/robot/planner``).
    """
    if value is None:  # '[]' on the command line: an array of no type, taken as none
        return ()
    if isinstance(value, str):
        text = value.strip()
        if text.startswith('[') and text.endswith(']'):
            text = text[1:-1]
        names = [part.strip('\'"') for part in re.split(r'[\s,]+', text) if part.strip('\'"')]
    elif isinstance(value, (list, tuple)):
        names = list(value)
    else:
        raise Refused(f'expected_participants must be a list of node names, got {value!r}')
    full = []
    for name in names:
        if not isinstance(name, str) or not _NAME.match(node_name(name)):
            raise Refused(f'expected_participants: {name!r} is not a node name (letters, digits '
                          'and _, not starting with a digit, namespaces separated by /)')
        full.append(node_name(name))
    twice = sorted({name for name in full if full.count(name) > 1})
    if twice:
        raise Refused(f'expected_participants names {", ".join(twice)} more than once')
    if len(full) > MAX_EXPECTED:
        raise Refused(f'expected_participants takes at most {MAX_EXPECTED} names, '
                      f'got {len(full)}')
    return tuple(full)


@dataclass(frozen=True)
class Report:
    """What one node said on ``~/ready``: per endpoint, its topic and what it has matched."""

    #: (topic, readers matched) for each of its writers
    writers: Tuple[Tuple[str, int], ...] = ()
    #: (topic, writers matched) for each of its readers
    readers: Tuple[Tuple[str, int], ...] = ()
    #: For each of its writers, the node of each reader it sees (:class:`WriterView`); empty:
    #: a node that says counts only, whose writers are checked by count.
    seen: Tuple[Tuple[str, ...], ...] = ()

    @classmethod
    def of(cls, publications: Sequence[str], readers: Sequence[int],
           subscriptions: Sequence[str], writers: Sequence[int],
           readers_seen: Sequence[int] = (), reader_nodes: Sequence[str] = ()) -> 'Report':
        """
        Return a report from the fields of a ``Ready`` message (lists cut to the shorter).

        ``readers_seen`` and ``reader_nodes`` are taken only when they name the readers of
        every writer, ``reader_nodes`` holding exactly as many names as they add up to.
        """
        seen = ()
        if len(readers_seen) == len(publications) == len(readers) and sum(
                int(n) for n in readers_seen) == len(reader_nodes):
            names, start = [], 0
            for count in readers_seen:
                names.append(tuple(reader_nodes[start:start + int(count)]))
                start += int(count)
            seen = tuple(names)
        return cls(tuple(zip(publications, (int(n) for n in readers))),
                   tuple(zip(subscriptions, (int(n) for n in writers))), seen)


#: The key of :meth:`Roster.missing` for the server's own writers.
SERVER = 'the server'


@dataclass(frozen=True)
class WriterView:
    """A writer as its own node sees it: what it matched, and the readers it could match."""

    #: The readers it has matched (its count).
    matched: int = 0
    #: The full node name of each reader its node's graph shows on its topic that it could
    #: match (type and QoS compatible), one entry per reader, taken after ``matched``.
    seen: Tuple[str, ...] = ()

    def lacks(self, topic: str, expected: Mapping[str, int]) -> List[str]:
        """
        Return what it lacks, in words, to have matched each of ``expected``'s readers.

        ``expected``: node name -> the readers that expected node holds on ``topic``.
        """
        short = [f'its writer on {topic} does not see {count - self.seen.count(name)} of the '
                 f'{count} readers of {name} yet'
                 for name, count in sorted(expected.items()) if self.seen.count(name) < count]
        if self.matched < len(self.seen):
            short.append(f'its writer on {topic} matched {self.matched} of the '
                         f'{len(self.seen)} readers it sees')
        return short


@dataclass
class Roster:
    """The nodes a frame waits for before the first one goes out, and what each said."""

    expected: Tuple[str, ...] = ()
    reports: Dict[str, Report] = field(default_factory=dict)
    #: The expected nodes found ready by the last look; a node that leaves is taken out.
    ready: set = field(default_factory=set)
    #: What the server's own writers lacked at the last look; '' nothing.
    server_lacks: str = ''

    def configure(self, names: Iterable[str]) -> None:
        """Expect ``names`` (full node names) from now on; what was said is kept."""
        self.expected = tuple(names)
        self.ready &= set(self.expected)
        if not self.expected:
            self.server_lacks = ''

    @property
    def all_ready(self) -> bool:
        """Whether no expected node is missing, as of the last look: frames may go out."""
        return len(self.ready) == len(self.expected) and not self.server_lacks

    def report(self, name: str, report: Report,
               server_writers: Mapping[str, Sequence[WriterView]] = None) -> bool:
        """
        Take what node ``name`` said (its latest report replaces the one before); look again.

        ``server_writers`` as :meth:`look` takes it. Return whether all are ready now.
        """
        self.reports[node_name(name)] = report
        return self.look(server_writers)

    def forget(self, name: str) -> None:
        """Node ``name`` left (or was dropped): it must say it is ready again."""
        self.reports.pop(node_name(name), None)
        self.ready.discard(node_name(name))

    def look(self, server_writers: Mapping[str, Sequence[WriterView]] = None) -> bool:
        """
        Find which expected nodes are ready now; return whether all are.

        ``server_writers``: topic -> each of the server's own writers of each frame on it
        (/clock, the views, a bag's topics); each must have matched the expected nodes'
        readers too, and every other reader it sees.
        """
        missing = self.missing(server_writers)
        self.server_lacks = missing.pop(SERVER, '')
        self.ready = set(self.expected) - set(missing)
        return self.all_ready

    def missing(self, server_writers: Mapping[str, Sequence[WriterView]] = None
                ) -> Dict[str, str]:
        """Return each expected node (and SERVER) that is not ready, with what it lacks."""
        if not self.expected:
            return {}
        server_writers = server_writers or {}
        lacking = {}
        for name in self.expected:
            lacks = self._lacks(name, server_writers)
            if lacks:
                lacking[name] = lacks
        if all(name in self.reports for name in self.expected):
            short = []
            for topic, writers in sorted(server_writers.items()):
                expected = self._readers_by_node(topic)
                for writer in writers:
                    short += [lack for lack in writer.lacks(topic, expected)
                              if lack not in short]
            if short:
                lacking[SERVER] = '; '.join(short)
        return lacking

    def describe_missing(self, server_writers: Mapping[str, Sequence[WriterView]] = None
                         ) -> List[str]:
        """Return '<node>: <what it lacks>' for each expected node not ready (and the server)."""
        return [f'{name}: {lacks}' for name, lacks in self.missing(server_writers).items()]

    def _lacks(self, name: str, server_writers: Mapping[str, Sequence[WriterView]]) -> str:
        """Return what node ``name`` lacks to be ready, in words; '' if nothing."""
        report = self.reports.get(name)
        if report is None:
            return 'not joined, or has not said on ~/ready which topics it uses'
        silent = [other for other in self.expected if other not in self.reports]
        if silent:
            return f'waits for {", ".join(silent)} to say which topics they use'
        writers, readers = self._endpoints()
        short = []
        for index, (topic, matched) in enumerate(report.writers):
            if report.seen:  # by name, as the server's own writers
                short += WriterView(matched, report.seen[index]).lacks(
                    topic, self._readers_by_node(topic))
                continue
            need = readers.get(topic, 0)
            if matched < need:
                short.append(f'its writer on {topic} matched {matched} of {need} readers')
        for topic, matched in report.readers:
            need = writers.get(topic, 0) + len(server_writers.get(topic, ()))
            if matched < need:
                short.append(f'its reader on {topic} matched {matched} of {need} writers')
        return '; '.join(short)

    def _endpoints(self) -> Tuple[Dict[str, int], Dict[str, int]]:
        """Return how many writers and readers the expected nodes said they hold, by topic."""
        writers, readers = {}, {}
        for name in self.expected:
            report = self.reports[name]
            for topic, _ in report.writers:
                writers[topic] = writers.get(topic, 0) + 1
            for topic, _ in report.readers:
                readers[topic] = readers.get(topic, 0) + 1
        return writers, readers

    def _readers_by_node(self, topic: str) -> Dict[str, int]:
        """Return node name -> the readers it said it holds on ``topic``, for expected nodes."""
        counts = {}
        for name in self.expected:
            held = sum(1 for read, _ in self.reports[name].readers if read == topic)
            if held:
                counts[name] = held
        return counts
