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
DDS domain ids for tests and benchmarks: never one that a ROS graph on this host is on.

An id is handed out only if both hold:

- **No DDS participant of this host is on it**, whatever started it (a launch, a ROS install,
  another tool), as the transport shows it. RTPS gives domain *d* the UDP ports from
  ``7400 + 250 d`` to ``7400 + 250 d + 249`` (discovery and user traffic, multicast and one
  unicast pair per participant), and every participant binds at least its unicast pair, on
  shared memory too: a port of that span bound on this host (``/proc/net/udp``,
  ``/proc/net/udp6``) puts *d* in use. Within the kernel's ephemeral range (ports 32768 and up
  by default: domains 102 and up), where any program's socket may land, only the four ports
  of a domain's multicast and first participant count. A participant whose transports bind
  no UDP port (Fast DDS on shared memory alone) is seen by the lock it holds on its port's
  file (``/dev/shm/fastrtps_port<N>_el``, Fast DDS 3: ``fastdds_port<N>_el``), which
  ``/proc/locks`` lists while the process lives; a port file that a killed process left
  behind holds no lock and is not counted. Where ``/proc`` cannot be read
  (not Linux) nothing can be seen and only the claims below keep runs apart.
- **No other test run claimed it**: each id handed out is claimed for the host by a TCP socket
  bound to 127.0.0.1 on :data:`CLAIM_PORT_BASE` plus the id (the kernel frees the port when
  the process ends, even killed), so two runs that look at the same moment never take one id.
  A process keeps its last :data:`HELD` claims, enough for the domains of one test and its
  neighbours.

A graph that starts on an id after it was handed out is not seen; the ids come in turn, from
a random first one, so a long-lived graph is met only at the next look.
"""

import collections
import os
import random
import re
import socket
from typing import Callable
from typing import Dict
from typing import Iterable
from typing import List
from typing import Optional
from typing import Sequence

#: Domain id d is claimed by binding TCP port CLAIM_PORT_BASE + d on 127.0.0.1.
CLAIM_PORT_BASE = 17400
#: How many of its latest ids a process keeps claimed.
HELD = 8
#: RTPS port mapping (the DDS-RTPS specification's defaults, which every ROS 2 rmw keeps):
#: domain d's ports start at PORT_BASE + DOMAIN_GAIN * d.
PORT_BASE = 7400
DOMAIN_GAIN = 250
#: The highest domain id whose ports fit in UDP's range.
MAX_DOMAIN_ID = 232
#: The ids the suite and the sim_clock fixture take from, unless told otherwise.
TEST_IDS = range(1, 101)

#: A domain's ports that its first participant and its multicast take (d0, d2, d1, d3).
FIRST_PORTS = (0, 1, 10, 11)

#: Fast DDS's shared-memory port files: the lock file of port N.
_SHM_LOCK_FILE = re.compile(r'^fast(?:rtps|dds)_port(\d+)_el$')

#: What shows a domain in use: domain id -> what was seen, e.g. ``['UDP port 16660 bound']``.
InUse = Dict[int, List[str]]


class DomainInUse(RuntimeError):
    """A domain id asked for (or every one of a range) is taken; the message says by what."""


def domain_of_port(port: int) -> Optional[int]:
    """Return the DDS domain whose RTPS port span holds ``port``, or None."""
    if port < PORT_BASE:
        return None
    domain = (port - PORT_BASE) // DOMAIN_GAIN
    return domain if domain <= MAX_DOMAIN_ID else None


def _bound_udp_ports(paths: Iterable[str]) -> List[int]:
    ports = []
    for path in paths:
        try:
            with open(path) as table:
                lines = table.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 1 and ':' in fields[1]:
                ports.append(int(fields[1].rsplit(':', 1)[1], 16))
    return ports


def _ephemeral_ports(path: str) -> range:
    """Return the kernel's ephemeral port range (empty where it cannot be read)."""
    try:
        with open(path) as text:
            low, high = (int(value) for value in text.read().split())
    except (OSError, ValueError):
        return range(0)
    return range(low, high + 1)


def _locked_files(locks_path: str) -> set:
    """Return the (device, inode) of every file a lock is held on (``/proc/locks``)."""
    locked = set()
    with open(locks_path) as table:
        for line in table:
            fields = [field for field in line.split() if field != '->']
            if len(fields) > 5 and fields[5].count(':') == 2:
                major, minor, inode = fields[5].split(':')
                locked.add((os.makedev(int(major, 16), int(minor, 16)), int(inode)))
    return locked


def _locked_shm_ports(shm_dir: str, locks_path: str) -> List[int]:
    try:
        locked = _locked_files(locks_path)
        names = os.listdir(shm_dir)
    except OSError:
        return []
    ports = []
    for name in names:
        match = _SHM_LOCK_FILE.match(name)
        if match is None:
            continue
        try:
            stat = os.stat(os.path.join(shm_dir, name))
        except OSError:
            continue  # the port closed between the listing and the look
        if (stat.st_dev, stat.st_ino) in locked:
            ports.append(int(match.group(1)))
    return ports


def domains_in_use(proc: str = '/proc', shm_dir: str = '/dev/shm') -> InUse:
    """
    Return the DDS domains that a live participant of this host is on, and what shows each.

    UDP ports bound in a domain's RTPS span, and Fast DDS shared-memory ports whose lock a
    live process holds (the module's docstring says why those). Empty where ``proc`` cannot
    be read.
    """
    seen: InUse = {}
    ephemeral = _ephemeral_ports(os.path.join(proc, 'sys', 'net', 'ipv4', 'ip_local_port_range'))
    for port in sorted(set(_bound_udp_ports(
            [os.path.join(proc, 'net', 'udp'), os.path.join(proc, 'net', 'udp6')]))):
        domain = domain_of_port(port)
        if domain is None:
            continue
        if port in ephemeral and (port - PORT_BASE) % DOMAIN_GAIN not in FIRST_PORTS:
            continue  # any program's socket may land here
        seen.setdefault(domain, []).append(f'UDP port {port} bound')
    for port in sorted(set(_locked_shm_ports(shm_dir, os.path.join(proc, 'locks')))):
        domain = domain_of_port(port)
        if domain is not None:
            seen.setdefault(domain, []).append(f'Fast DDS shared-memory port {port} open')
    return seen


def describe(in_use: InUse, domains: Iterable[int]) -> str:
    """Return ``'3 (UDP port 8160 bound), 7 (...)'`` for the given ids of ``in_use``."""
    return ', '.join(f'{domain} ({", ".join(in_use[domain][:2])})' for domain in domains)


def check_free(domain: int, in_use: Callable[[], InUse] = domains_in_use) -> None:
    """
    Raise :class:`DomainInUse` if a DDS participant of this host is on ``domain``.

    For an id a user gave explicitly: a test on a domain another graph is on would step or
    reset that graph's clock.
    """
    seen = in_use()
    if domain in seen:
        raise DomainInUse(
            f'DDS domain {domain} is in use on this host: {describe(seen, [domain])}. A test '
            'on it would reach the ROS graph running there; stop that graph, or choose a '
            f'domain no process is on ({_free_hint(seen)})')


def _free_hint(seen: InUse) -> str:
    free = [domain for domain in TEST_IDS if domain not in seen][:5]
    return 'e.g. ' + ', '.join(map(str, free)) if free else 'none of 1 to 100 is free'


def claim(domain: int, port_base: int = CLAIM_PORT_BASE):
    """Return a socket that claims ``domain`` on this host, or None if another holds it."""
    claimer = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        claimer.bind(('127.0.0.1', port_base + domain))
    except OSError:
        claimer.close()
        return None
    return claimer


class DomainIds:
    """
    Hand out domain ids of ``ids`` (default 1 to 100) in turn, from a random first one.

    Each id handed out is claimed, and no DDS participant of this host is on it (the module's
    docstring says how both are checked). ``first``: the first id to look at (None: random).
    ``port_base``: where the claims' ports start (the host's allocators share
    :data:`CLAIM_PORT_BASE`; a test of the allocator itself takes ports of its own).
    ``in_use``: what shows the domains in use (:func:`domains_in_use`).
    """

    def __init__(self, first: Optional[int] = None, port_base: int = CLAIM_PORT_BASE,
                 ids: Sequence[int] = TEST_IDS,
                 in_use: Callable[[], InUse] = domains_in_use):
        self._ids = list(ids)
        start = random.SystemRandom().randrange(len(self._ids)) if first is None else (
            self._ids.index(first))
        self._next = start
        self._port_base = port_base
        self._in_use = in_use
        self._claims = collections.deque()

    def take(self) -> int:
        """Return the next id that no run claimed and no participant of this host is on."""
        seen = self._in_use()
        claimed = []
        for _ in range(len(self._ids)):
            domain = self._ids[self._next]
            self._next = (self._next + 1) % len(self._ids)
            if domain in seen:
                continue
            claimer = claim(domain, self._port_base)
            if claimer is None:
                claimed.append(domain)
                continue
            self._claims.append(claimer)
            while len(self._claims) > HELD:
                self._claims.popleft().close()
            return domain
        busy = sorted(domain for domain in seen if domain in self._ids)
        raise DomainInUse(
            f'no DDS domain id {self._said_ids()} is free on this host: '
            f'DDS participants are on {describe(seen, busy) or "none"}; other test runs '
            f'claim {", ".join(map(str, sorted(claimed))) or "none"} (TCP ports '
            f'{self._port_base} + id). Stop the ROS graphs or test runs on them, or give a '
            'domain explicitly (the sim_clock fixture: --sim-clock-domain-id N or '
            '@pytest.mark.sim_clock(domain_id=N))')

    def _said_ids(self) -> str:
        """Say the ids it hands out: as a range where they are one (``from 0 to 232``)."""
        ids = self._ids
        if list(ids) == list(range(ids[0], ids[0] + len(ids))):
            return f'from {ids[0]} to {ids[-1]}'
        return 'among ' + ', '.join(map(str, ids))


#: The help of a benchmark's or soak's --domain option.
DOMAIN_HELP = ('DDS domain to run on (default: one that no ROS graph of this host is on and no '
               'other run claimed); refused if a DDS participant of this host is on it')

#: The one allocator of this process: the pytest fixture, the test suite, the benchmarks and
#: the soaks draw from it.
DOMAINS = DomainIds()


def domain_for_run(given: Optional[int] = None) -> int:
    """
    Return the domain of a benchmark or soak: ``given`` once checked, else the next of DOMAINS.

    A given id is refused with :class:`DomainInUse` if a DDS participant of this host is on it
    (:func:`check_free`). ``ROS_DOMAIN_ID`` is never read here: a shell that exported it for
    the simulation it runs would put the run's servers beside that simulation's.
    """
    if given is None:
        return DOMAINS.take()
    check_free(given)
    return given
