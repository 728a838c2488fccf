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

"""The parameter table and its rules: one table, one wording, mode and sync kept consistent."""

from fractions import Fraction

import pytest
from sim_clock.core import settings
from sim_clock.core.rules import Mode
from sim_clock.core.rules import Refused
from sim_clock.core.rules import SYNC_NEEDS_SIMULATION
from sim_clock.core.units import NS_PER_MS

pytestmark = pytest.mark.fast

RT, SIM = Mode.REAL_TIME, Mode.SIMULATION


def test_every_setting_has_a_description_and_parses_its_default():
    """Each entry is complete; its default parses; doubles have a range."""
    for setting in settings.SETTINGS:
        assert setting.description
        setting.parse(setting.default)
        assert (setting.low is not None) == isinstance(setting.default, float)
    assert list(settings.DEFAULTS) == [setting.name for setting in settings.SETTINGS]


@pytest.mark.parametrize('given, mode, completed', [
    ({'mode': 'real_time'}, SIM, {'mode': 'real_time', 'sync': False}),
    ({'mode': 'real_time', 'sync': True}, SIM, {'mode': 'real_time', 'sync': True}),
    ({'sync': True}, RT, {'sync': True, 'mode': 'simulation'}),
    ({'sync': True}, SIM, {'sync': True}),
    ({'time_step': 1, 'paused': True}, SIM, {'time_step': 1.0, 'paused': True}),
    ({'use_sim_time': True}, SIM, {'use_sim_time': True}),
])
def test_complete_keeps_mode_and_sync_consistent(given, mode, completed):
    """Real-time drops sync; sync from real-time switches to simulation; ints become doubles."""
    result = settings.complete(given, mode)
    assert result == completed
    assert [type(value) for value in result.values()] == [type(v) for v in completed.values()]


@pytest.mark.parametrize('given, reason', [
    ({'mode': 'real_time', 'sync': True}, SYNC_NEEDS_SIMULATION),
    ({'mode': 'warp'}, 'mode must be one of real_time, simulation'),
    ({'sync': 'yes'}, 'sync must be true or false'),
    ({'time_step': 0.0}, 'time_step must be between 1e-09 and 86400 s'),
    ({'publish_rate': 0.0}, 'publish_rate must be between 0.1 and 10000.0 Hz'),
    ({'real_time_factor': -1.0}, 'real_time_factor must be between 0 (as fast as possible)'),
    ({'owner_timeout': -1.0}, 'owner_timeout must be >= 0 s'),
    ({'participant_timeout': 0.0}, 'participant_timeout must be between 0.001 and 86400 s'),
    ({'ack_timeout': -0.5}, 'ack_timeout must be between 0 (steps do not wait) and 86400 s'),
])
def test_parse_refuses_with_what_is_allowed(given, reason):
    """A refusal names the parameter and what is allowed."""
    with pytest.raises(Refused, match=reason.replace('(', r'\(').replace(')', r'\)')):
        settings.parse(given, SIM)


def test_parse_ignores_what_it_does_not_own():
    """Parameters of others (use_sim_time, loop) are not ours to refuse."""
    assert settings.parse({'use_sim_time': 'whatever', 'loop': 3}, SIM) == {}


def test_apply_is_one_reset_for_mode_and_sync():
    """Mode and sync together are one reset; the rest apply without one."""
    core = settings.initial(settings.DEFAULTS, now_ns=lambda: 0)
    timeline, pacing = core.timeline, core.pacing
    parsed = settings.parse({'mode': 'simulation', 'sync': True, 'time_step': 0.005,
                             'real_time_factor': 2.0, 'publish_rate': 50.0,
                             'participant_timeout': 0.25}, SIM)
    settings.apply(parsed, core)
    assert core.hold.timeout.ns == 250 * NS_PER_MS
    assert core.barrier.timeout is core.gates.timeout is core.hold.timeout
    status = timeline.status()
    assert (status.epoch, status.sync, status.time_step_ns) == (1, True, 5 * NS_PER_MS)
    assert status.real_time_factor == Fraction(2)
    assert pacing.publish_period_ns == 20 * NS_PER_MS
    assert [change.reset for change in timeline.take_changes()] == [True, False, False]


def test_shown_reads_the_state_a_service_changed():
    """After sync_mode_cmd: mode, sync, paused, and the new time_step in seconds."""
    timeline = settings.initial(settings.DEFAULTS, now_ns=lambda: 0).timeline
    timeline.sync_mode_cmd('a', True, 20)
    assert settings.shown(timeline, (0.01, 10 * NS_PER_MS)) == {
        'mode': 'simulation', 'sync': True, 'paused': False, 'time_step': 0.02}
    assert tuple(settings.shown(timeline, (0.01, 10 * NS_PER_MS))) == settings.SHOWN


def test_shown_keeps_the_time_step_as_set_while_it_gives_the_same_ns():
    """Seconds finer than 1 ns read back as set; once the step changed, its ns in seconds."""
    values = dict(settings.DEFAULTS, time_step=0.0123456789012)
    timeline = settings.initial(values, now_ns=lambda: 0).timeline
    assert timeline.time_step_ns == 12345679
    assert settings.shown(timeline, (0.0123456789012, 12345679))['time_step'] == 0.0123456789012
    timeline.set_time_step_ns(5 * NS_PER_MS)
    assert settings.shown(timeline, (0.0123456789012, 12345679))['time_step'] == 0.005
