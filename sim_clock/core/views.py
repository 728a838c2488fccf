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
Clock views: the server's time as a robot with an unsynchronised clock sees it (MORSE).

A view has an offset and a drift in parts per million. Its time at server time ``t`` is
``t + offset + floor((t - start) * drift_ppm / 10^6)``, where ``start`` is the time of the
epoch's start (the last reset), in exact integer arithmetic: the drift accumulates from each
reset, as a clock set at that moment would. A view never goes below 0.
"""

from dataclasses import dataclass
import decimal
from fractions import Fraction
import re
from typing import List
from typing import Mapping

from sim_clock.core.rules import finite_decimal
from sim_clock.core.rules import Refused
from sim_clock.core.units import MAX_TIME_NS
from sim_clock.core.units import NS_PER_SEC

#: A view's name: one ROS name token, so that /<name>/clock is a valid topic.
_NAME = re.compile(r'[A-Za-z][A-Za-z0-9_]*')
#: The largest drift accepted, in parts per million either way.
MAX_DRIFT_PPM = 1_000_000


@dataclass(frozen=True)
class View:
    """One clock view: its name, offset (ns) and drift (ppm, exact)."""

    name: str
    offset_ns: int
    drift_ppm: Fraction

    @property
    def topic(self) -> str:
        """Return the topic the view is published on."""
        return f'/{self.name}/clock'

    def time_ns(self, time_ns: int, start_ns: int) -> int:
        """Return the view's time at server time ``time_ns``, the epoch started at ``start_ns``."""
        elapsed = time_ns - start_ns
        drift = elapsed * self.drift_ppm.numerator // (self.drift_ppm.denominator * 10**6)
        return min(max(time_ns + self.offset_ns + drift, 0), MAX_TIME_NS)

    def describe(self) -> str:
        """Return the view in words, as ~/get_status lists it."""
        return (f'{self.name}: offset {decimal.Decimal(self.offset_ns) / NS_PER_SEC} s, drift '
                f'{float(self.drift_ppm):g} ppm, on {self.topic}')


def parse_views(config: Mapping) -> List[View]:
    """
    Return the views of a configuration: ``{name: {offset: seconds, drift_ppm: ppm}}``.

    Refuse (naming the view and what is allowed) a bad name, a missing or non-numeric field,
    an offset beyond a day either way, or a drift beyond 10^6 ppm either way.
    """
    if not isinstance(config, Mapping):
        raise Refused(
            f'clock views must be a mapping of name to offset and drift, got {config!r}')
    views = []
    for name, fields in config.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise Refused(f'clock view name {name!r} must be letters, digits and _, starting '
                          'with a letter')
        if not isinstance(fields, Mapping) or set(fields) - {'offset', 'drift_ppm'}:
            raise Refused(f'clock view {name!r}: give offset (s) and drift_ppm only, got '
                          f'{fields!r}')
        offset = finite_decimal(fields.get('offset', 0), f'clock view {name!r} offset')
        drift = finite_decimal(fields.get('drift_ppm', 0), f'clock view {name!r} drift_ppm')
        offset_ns = int((offset * NS_PER_SEC).to_integral_value(decimal.ROUND_HALF_EVEN))
        if abs(offset_ns) > 86_400 * NS_PER_SEC:
            raise Refused(f'clock view {name!r}: offset must be within a day either way, got '
                          f'{fields.get("offset")!r} s')
        if abs(drift) > MAX_DRIFT_PPM:
            raise Refused(f'clock view {name!r}: drift_ppm must be within {MAX_DRIFT_PPM} either '
                          f'way, got {fields.get("drift_ppm")!r}')
        views.append(View(name, offset_ns, Fraction(drift)))
    return views
