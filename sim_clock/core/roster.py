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

    @classmethod
    def of(cls, publications: Sequence[str], readers: Sequence[int],
           subscriptions: Sequence[str], writers: Sequence[int]) -> 'Report':
        """Return a report from the fields of a ``Ready`` message (lists cut to the shorter)."""
        return cls(tuple(zip(publications, (int(n) for n in readers))),
                   tuple(zip(subscriptions, (int(n) for n in writers))))


#: The key of :meth:`Roster.missing` for the server's own writers.
SERVER = 'the server'


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
               server_writers: Mapping[str, Sequence[int]] = None) -> bool:
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

    def look(self, server_writers: Mapping[str, Sequence[int]] = None) -> bool:
        """
        Find which expected nodes are ready now; return whether all are.

        ``server_writers``: topic -> the readers matched by each of the server's own writers
        on it (a bag's topics); each must have matched the expected nodes' readers too.
        """
        missing = self.missing(server_writers)
        self.server_lacks = missing.pop(SERVER, '')
        self.ready = set(self.expected) - set(missing)
        return self.all_ready

    def missing(self, server_writers: Mapping[str, Sequence[int]] = None) -> Dict[str, str]:
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
            _, readers = self._endpoints()
            short = [f'its writer on {topic} matched {min(counts)} of {readers[topic]} readers'
                     for topic, counts in sorted(server_writers.items())
                     if counts and min(counts) < readers.get(topic, 0)]
            if short:
                lacking[SERVER] = '; '.join(short)
        return lacking

    def describe_missing(self, server_writers: Mapping[str, Sequence[int]] = None) -> List[str]:
        """Return '<node>: <what it lacks>' for each expected node not ready (and the server)."""
        return [f'{name}: {lacks}' for name, lacks in self.missing(server_writers).items()]

    def _lacks(self, name: str, server_writers: Mapping[str, Sequence[int]]) -> str:
        """Return what node ``name`` lacks to be ready, in words; '' if nothing."""
        report = self.reports.get(name)
        if report is None:
            return 'not joined, or has not said on ~/ready which topics it uses'
        silent = [other for other in self.expected if other not in self.reports]
        if silent:
            return f'waits for {", ".join(silent)} to say which topics they use'
        writers, readers = self._endpoints()
        short = []
        for topic, matched in report.writers:
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
