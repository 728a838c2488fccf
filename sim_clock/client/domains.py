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

"""DDS domain ids for tests, handed out in turn: the tests of one process never share one."""

import random


class DomainIds:
    """Hand out the domain ids 1 to 100 in turn, from a random first one."""

    def __init__(self, first: int = None):
        self._next = random.SystemRandom().randrange(1, 101) if first is None else first

    def take(self) -> int:
        """Return the next id (after 100 come 1, 2, ...)."""
        domain = self._next
        self._next = self._next % 100 + 1
        return domain


#: The one allocator of this process: the pytest fixture and the test suite draw from it.
DOMAINS = DomainIds()
