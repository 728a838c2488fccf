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

"""The dds tier's check: rclpy nodes in the pytest process, and no child process."""

import subprocess

import conftest
import pytest

pytestmark = pytest.mark.dds


def test_a_dds_test_creates_a_context_but_starts_no_process(context):
    """The ``context`` fixture made a DDS participant; a process is refused, and remembered."""
    assert context.ok()
    with pytest.raises(conftest.TierViolation, match='started a process'):
        subprocess.run(['true'])
    assert len(conftest.GUARD.violations) == 1
    conftest.GUARD.violations.clear()  # this test's own, made on purpose
