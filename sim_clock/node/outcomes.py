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
What ServerControl returns to the services: each service's answer, field for field.

``~/get_status``'s is :class:`sim_clock.wire.status.Status`, which the client shares.
"""

from dataclasses import dataclass


@dataclass
class Answer:
    """The outcome of a request that only succeeds or not: the std_srvs services."""

    success: bool
    message: str


@dataclass
class SyncOutcome:
    """The outcome of ``~/sync_mode_cmd``, field for field."""

    result: bool
    user_id: str
    message: str
    frame: int
    time_step: int
