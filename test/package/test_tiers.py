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

"""The suite's tiers are checked, not trusted: what a fast test may not do fails it."""

import os
import subprocess

import conftest
import pytest
import rclpy

pytestmark = pytest.mark.fast


def test_a_fast_test_that_starts_a_process_fails():
    """The start is refused, and remembered: the test fails at teardown even if it caught it."""
    with pytest.raises(conftest.TierViolation, match=r'started a process \(subprocess.Popen'):
        subprocess.Popen(['true'])
    with pytest.raises(conftest.TierViolation, match=r'started a process \(os.system'):
        os.system('true')
    assert len(conftest.GUARD.violations) == 2
    conftest.GUARD.violations.clear()  # this test's own, made on purpose


def test_a_fast_test_that_creates_an_rclpy_context_fails():
    """An rclpy context is a DDS participant: the fast tier has none."""
    with pytest.raises(conftest.TierViolation, match='created an rclpy context'):
        rclpy.init(context=rclpy.Context())
    assert len(conftest.GUARD.violations) == 1
    conftest.GUARD.violations.clear()


def test_every_test_file_is_in_a_tier_folder():
    """The folders of test/ that hold tests are the tier folders, and only those."""
    folders = {entry.name for entry in os.scandir(conftest.TEST_DIR) if entry.is_dir()
               and any(name.startswith('test_') and name.endswith('.py')
                       for name in os.listdir(entry.path))}
    assert folders == set(conftest.TIERS)
    assert not [name for name in os.listdir(conftest.TEST_DIR)
                if name.startswith('test_') and name.endswith('.py')]
