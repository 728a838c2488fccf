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
The client's arguments on rclpy's names, the old ones kept one release with a warning.

``timeout_sec`` where rclpy says it (the client, its waits, the participant); ``timeout`` still
works and says it is deprecated. No server: only what the client does with its arguments.
"""

import warnings

import pytest
from sim_clock.client import SimClockClient
from sim_clock.client import SimClockTimeout

pytestmark = pytest.mark.dds


def test_timeout_sec_is_the_clients_argument_and_timeout_still_works_with_a_warning(context):
    with warnings.catch_warnings():
        warnings.filterwarnings('error', message='.*timeout_sec')  # the new name: no warning
        client = SimClockClient(context=context, timeout_sec=2.5)
        assert client.timeout_sec == 2.5
        assert client.wait_for_services(['step'], timeout_sec=0) == ['step']
        with pytest.raises(SimClockTimeout, match='within 0.01 s'):
            client.spin_until(lambda: False, timeout_sec=0.01)
        client.close()
    with pytest.warns(DeprecationWarning, match='timeout= is deprecated: use timeout_sec='):
        old = SimClockClient(context=context, timeout=1.5)
    assert old.timeout_sec == 1.5
    with pytest.warns(DeprecationWarning, match='use timeout_sec'):
        assert old.timeout == 1.5
    with pytest.warns(DeprecationWarning, match='use timeout_sec'):
        assert old.wait_for_services(['step'], timeout=0) == ['step']
    with pytest.warns(DeprecationWarning, match='use timeout_sec'):
        with pytest.raises(SimClockTimeout, match='within 0.01 s'):
            old.spin_until(lambda: False, timeout=0.01)
    old.close()
