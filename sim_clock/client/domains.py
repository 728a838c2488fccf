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
DDS domain ids for tests, handed out in turn: never one that another process on this host uses.

The tests of one process never share a domain; two test runs on one host at the same time
(two suites, a suite beside the pytest fixture of another project) would cross-talk where both
drew the same one. So each id handed out is also claimed for the host: a TCP socket bound to
127.0.0.1 on :data:`CLAIM_PORT_BASE` plus the id (DDS uses UDP; the kernel frees the port when
the process ends, even killed). An id claimed by another process is skipped. A process keeps
its last :data:`HELD` claims, enough for the domains of one test and its neighbours.
"""

import collections
import random
import socket

#: Domain id d is claimed by binding TCP port CLAIM_PORT_BASE + d on 127.0.0.1.
CLAIM_PORT_BASE = 17400
#: How many of its latest ids a process keeps claimed.
HELD = 8


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
    Hand out the domain ids 1 to 100 in turn, from a random first one, each claimed.

    ``port_base``: where the claims' ports start (the host's allocators share
    :data:`CLAIM_PORT_BASE`; a test of the allocator itself takes ports of its own).
    """

    def __init__(self, first: int = None, port_base: int = CLAIM_PORT_BASE):
        self._next = random.SystemRandom().randrange(1, 101) if first is None else first
        self._port_base = port_base
        self._claims = collections.deque()

    def take(self) -> int:
        """Return the next id this host does not use (after 100 come 1, 2, ...)."""
        for _ in range(100):
            domain = self._next
            self._next = self._next % 100 + 1
            claimer = claim(domain, self._port_base)
            if claimer is not None:
                self._claims.append(claimer)
                while len(self._claims) > HELD:
                    self._claims.popleft().close()
                return domain
        raise RuntimeError('every DDS domain id from 1 to 100 is claimed by other processes '
                           f'on this host (TCP ports {self._port_base + 1} to '
                           f'{self._port_base + 100})')


#: The one allocator of this process: the pytest fixture and the test suite draw from it.
DOMAINS = DomainIds()
