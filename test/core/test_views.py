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

"""Clock views: parsing and exact offset and drift."""

from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st
import pytest
from sim_clock.core.rules import Refused
from sim_clock.core.units import MAX_TIME_NS
from sim_clock.core.views import parse_views
from sim_clock.core.views import View

pytestmark = pytest.mark.fast

NS = 1_000_000_000


def test_views_parse_offset_and_drift_exactly():
    """Seconds to ns once; ppm kept as the exact decimal written."""
    robot1, robot2 = parse_views({'robot1': {'offset': 0.25, 'drift_ppm': 50},
                                  'robot2': {'offset': -0.1, 'drift_ppm': -20.5}})
    assert robot1 == View('robot1', 250_000_000, Fraction(50))
    assert robot2 == View('robot2', -100_000_000, Fraction(-41, 2))
    assert robot1.topic == '/robot1/clock'
    assert robot1.describe() == 'robot1: offset 0.25 s, drift 50 ppm, on /robot1/clock'


@pytest.mark.parametrize('config, match', [
    ({'1robot': {}}, 'letters, digits and _'),
    ({'a/b': {}}, 'letters, digits and _'),
    ({'r': {'offset': 'soon'}}, 'offset must be a number'),
    ({'r': {'drift_ppm': float('nan')}}, 'drift_ppm must be a finite number'),
    ({'r': {'offset': 86_401}}, 'within a day'),
    ({'r': {'drift_ppm': 1_000_001}}, 'within 1000000'),
    ({'r': {'skew': 1}}, 'offset \\(s\\) and drift_ppm only'),
    ([1, 2], 'mapping of name'),
])
def test_bad_views_are_refused_naming_what_is_allowed(config, match):
    """Each bad view is refused with what is allowed."""
    with pytest.raises(Refused, match=match):
        parse_views(config)


def test_drift_over_ten_to_the_five_frames_is_exact():
    """10^5 frames of 1 ms at 50 ppm and +0.25 s: exactly 100 s + 0.25 s + 5 ms."""
    view = View('r', 250_000_000, Fraction(50))
    start = 7 * NS
    assert view.time_ns(start, start) == start + 250_000_000
    assert view.time_ns(start + 100 * NS, start) == start + 100 * NS + 250_000_000 + 5_000_000
    slow = View('r', 0, Fraction(-41, 2))  # -20.5 ppm: 1 s loses 20,500 ns
    assert slow.time_ns(NS, 0) == NS - 20_500
    assert View('r', -NS, Fraction(0)).time_ns(10, 0) == 0  # never below 0
    assert View('r', NS, Fraction(0)).time_ns(MAX_TIME_NS, 0) == MAX_TIME_NS


@given(elapsed=st.integers(0, 10**15), ppm=st.fractions(-10**6, 10**6, max_denominator=1000),
       offset=st.integers(-86_400 * NS, 86_400 * NS))
def test_a_view_is_the_floor_of_the_exact_value(elapsed, ppm, offset):
    """Integer arithmetic equals the floor of the exact rational value, and never decreases."""
    view = View('r', offset, ppm)
    exact = elapsed + offset + Fraction(elapsed) * ppm / 10**6
    assert view.time_ns(elapsed, 0) == min(max(exact.__floor__(), 0), MAX_TIME_NS)
    if ppm > -10**6:
        assert view.time_ns(elapsed + 1, 0) >= view.time_ns(elapsed, 0)
