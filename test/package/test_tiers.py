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
The suite's tiers are checked, not trusted: what a fast test may not do fails it.

Each test module declares its tier (``pytestmark``); a module that declares none is refused at
collection, and every test file is checked here too, also one that holds no test yet.
"""

import os
import subprocess
import types

import conftest
import pytest
import rclpy

pytestmark = pytest.mark.fast


def test_a_fast_test_that_starts_a_process_fails():
    """The start is refused, and remembered: the test fails at teardown even if it caught it."""
    assert conftest.GUARD.forbidden == conftest.FORBIDDEN['fast']  # from this module's marker
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


def _test_files():
    for folder, _, files in os.walk(conftest.TEST_DIR):
        for name in sorted(files):
            if name.startswith('test_') and name.endswith('.py'):
                yield os.path.relpath(os.path.join(folder, name), conftest.TEST_DIR)


def test_every_test_file_declares_one_tier():
    """Each test file names one tier in its pytestmark, read from its source as --tier reads it."""
    files = list(_test_files())
    assert len(files) > 100
    missing = [name for name in files
               if conftest.declared_tier(os.path.join(conftest.TEST_DIR, name)) is None]
    assert not missing, 'no tier declared (test/conftest.py): ' + ', '.join(missing)


def test_a_tier_is_read_from_the_module_and_from_its_source(tmp_path):
    """One tier marker among others is the tier; none, or two, is refused with what to write."""
    marked = types.SimpleNamespace(pytestmark=[pytest.mark.process, pytest.mark.slow])
    assert conftest.module_tier(marked) == 'process'
    assert conftest.module_tier(types.SimpleNamespace(pytestmark=pytest.mark.dds)) == 'dds'
    with pytest.raises(conftest.NoTier, match='declares no tier: .*pytestmark = pytest.mark.fast'):
        conftest.module_tier(types.SimpleNamespace(pytestmark=pytest.mark.slow))
    with pytest.raises(conftest.NoTier, match='declares the tiers fast, dds'):
        conftest.module_tier(types.SimpleNamespace(pytestmark=[pytest.mark.fast,
                                                               pytest.mark.dds]))
    sources = {
        'import pytest\n\npytestmark = pytest.mark.dds\n': 'dds',
        'import pytest\n\npytestmark = [pytest.mark.process, pytest.mark.skipif(True)]\n':
            'process',
        'import pytest\n\n\n@pytest.mark.fast\ndef test_x():\n    pass\n': None,
        'import pytest\n\npytestmark = [pytest.mark.fast, pytest.mark.dds]\n': None,
    }
    for source, tier in sources.items():
        path = tmp_path / 'test_probe.py'
        path.write_text(source)
        assert conftest.declared_tier(path) == tier, source
