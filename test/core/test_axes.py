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

"""The time coordinates: every conversion is exact and undone by its inverse."""

from hypothesis import given
from hypothesis import strategies as st
import pytest
from sim_clock.core.axes import Axes
from sim_clock.core.units import MAX_TIME_NS

pytestmark = pytest.mark.fast

TIMES = st.integers(min_value=0, max_value=MAX_TIME_NS)


@given(TIMES, TIMES, TIMES)
def test_conversions_round_trip_exactly(time_ns, clock_offset_ns, bag_start_ns):
    """Timeline to /clock and to bag time and back, in integer ns, whatever the offsets."""
    axes = Axes(clock_offset_ns=clock_offset_ns, bag_start_ns=bag_start_ns)
    assert axes.from_clock(axes.to_clock(time_ns)) == time_ns
    assert axes.from_bag(axes.to_bag(time_ns)) == time_ns
    assert axes.to_clock(time_ns) - axes.to_clock(0) == time_ns


def test_a_bag_played_from_zero_and_from_its_stamps():
    """--start-at-zero: /clock counts from 0 while bag time starts at the bag's first stamp."""
    from_zero = Axes(clock_offset_ns=0, bag_start_ns=1_000_000_007)
    as_stamped = Axes(clock_offset_ns=1_000_000_007, bag_start_ns=1_000_000_007)
    assert from_zero.to_clock(5) == 5 and from_zero.to_bag(5) == 1_000_000_012
    assert as_stamped.to_clock(5) == as_stamped.to_bag(5) == 1_000_000_012
    assert Axes().to_clock(5) == Axes().to_bag(5) == 5
