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

"""An old argument or attribute name: the new one's value, with a warning naming it."""

import warnings

import pytest
from sim_clock.client.deprecated_names import renamed
from sim_clock.client.deprecated_names import renamed_attribute

pytestmark = pytest.mark.fast


def test_an_old_argument_not_given_leaves_the_new_one_and_says_nothing():
    """None for the old name: the new name's value, no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        assert renamed(2.5, None, 'timeout', 'timeout_sec') == 2.5


def test_an_old_argument_given_wins_and_warns_with_the_new_name():
    """The old name's value, and a DeprecationWarning that names the new one."""
    with pytest.warns(DeprecationWarning, match='timeout= is deprecated: use timeout_sec='):
        assert renamed(2.5, 7.0, 'timeout', 'timeout_sec') == 7.0


class _Holder:
    timeout = renamed_attribute('timeout', 'timeout_sec')

    def __init__(self):
        self.timeout_sec = 1.0


def test_an_old_attribute_reads_and_writes_the_new_one_with_a_warning():
    """Read and write through the old name reach the new one; each use warns."""
    holder = _Holder()
    with pytest.warns(DeprecationWarning, match='timeout is deprecated: use timeout_sec'):
        assert holder.timeout == 1.0
    with pytest.warns(DeprecationWarning, match='timeout is deprecated: use timeout_sec'):
        holder.timeout = 3.0
    assert holder.timeout_sec == 3.0
