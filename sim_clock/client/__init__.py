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
The client side: drive a clock server from Python, the command line or pytest.

Imports nothing of the node or the bags: ``import sim_clock.client`` loads rclpy and the
service and message types only.
"""

from sim_clock.client.api import SimClockClient
from sim_clock.client.results import ControlResult
from sim_clock.client.results import FrameEvents
from sim_clock.client.results import ResetEvent
from sim_clock.client.results import ResetResult
from sim_clock.client.results import SeekResult
from sim_clock.client.results import SimClockClosed
from sim_clock.client.results import SimClockError
from sim_clock.client.results import SimClockInterrupted
from sim_clock.client.results import SimClockLate
from sim_clock.client.results import SimClockNoService
from sim_clock.client.results import SimClockRefused
from sim_clock.client.results import SimClockServerGone
from sim_clock.client.results import SimClockTimeout
from sim_clock.client.results import SimClockUnavailable
from sim_clock.client.results import Status
from sim_clock.client.results import StepResult
from sim_clock.wire.progress_report import Playback
from sim_clock.wire.progress_report import ProgressReport

__all__ = [
    'ControlResult', 'FrameEvents', 'Playback', 'ProgressReport', 'ResetEvent', 'ResetResult',
    'SeekResult', 'SimClockClient', 'SimClockClosed', 'SimClockError', 'SimClockInterrupted',
    'SimClockLate', 'SimClockNoService', 'SimClockRefused', 'SimClockServerGone',
    'SimClockTimeout', 'SimClockUnavailable', 'Status', 'StepResult',
]
