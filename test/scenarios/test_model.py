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
The control surface, model-checked: random call sequences against one real server process.

A hypothesis state machine drives a clock server through sync_mode_cmd, step, step_once,
pause, resume, reset, set_sync and parameter changes (good and bad values, several user_ids)
and checks every response and ~/get_status against :class:`Model`, a small model of the
documented rules written here, independently of ``sim_clock.core.timeline``. While time runs by
itself (real-time mode or free run, not paused) frame and time are not predictable, and the
model compares them again only after a pause (when it adopts the frozen values) or a reset
into a state where time stands still. On a failure hypothesis prints the shortest sequence.
"""

from dataclasses import dataclass
import math

from harness import status_tuple
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant
from hypothesis.stateful import rule
from hypothesis.stateful import RuleBasedStateMachine
from hypothesis.stateful import run_state_machine_as_test
import pytest
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType
from rcl_interfaces.msg import ParameterValue

pytestmark = pytest.mark.process

NS = 1_000_000_000
MS = 1_000_000
MAX_STEPS = 1_000_000
MAX_STEP_MS = 86_400_000
#: Stands for "the current holder's user_id" among the ids a rule may use.
HOLDER = object()
USER_IDS = st.sampled_from(['a', 'b', '', 'c\x1bd', HOLDER])
STEPS = st.sampled_from([1, 1, 2, 3, 50, 0, MAX_STEPS + 1, 2**64 - 1])
STEP_MS = st.sampled_from([0, 0, 1, 5, 20, MAX_STEP_MS + 1, 2**32 - 1])
# Frame lengths and paces that keep a free run light on a shared machine.
TIME_STEPS = st.sampled_from([0.001, 0.01, 0.25, 0.0, -0.01, math.nan, math.inf, 1e9])
FACTORS = st.sampled_from([0.5, 1.0, 2.0, -1.0, math.nan, 1e6])


@dataclass
class Model:
    """The documented state of a clock server, changed only by the documented rules."""

    mode: str = 'simulation'
    sync: bool = True
    paused: bool = False
    frame: int = 0
    time_ns: int = 0
    epoch: int = 0
    owner: str = ''
    time_step_ns: int = 10 * MS
    rtf: float = 1.0
    known: bool = True  # frame and time predictable (time is not running by itself)

    @property
    def running(self) -> bool:
        """Whether time advances by itself."""
        return not self.paused and (self.mode == 'real_time' or not self.sync)

    def reset(self) -> None:
        """Time and frame to zero, one more epoch."""
        self.frame, self.time_ns, self.epoch = 0, 0, self.epoch + 1
        self.known = not self.running

    def switch(self, mode: str, sync: bool) -> bool:
        """Move to (mode, sync): a change drops the holder and resets; return if it changed."""
        if (mode, sync) == (self.mode, self.sync):
            return False
        self.mode, self.sync, self.owner = mode, sync, ''
        self.reset()
        return True

    def after_running_change(self) -> None:
        """Once time runs by itself, frame and time are no longer predictable."""
        if self.running:
            self.known = False


def valid_user_id(user_id: str) -> bool:
    """Return whether the server accepts this user_id at all."""
    return len(user_id) <= 256 and user_id.isprintable()


def _double(name: str, value: float) -> ParameterMsg:
    return ParameterMsg(name=name, value=ParameterValue(
        type=ParameterType.PARAMETER_DOUBLE, double_value=value))


def _valid_time_step(seconds: float) -> bool:
    return math.isfinite(seconds) and 1e-9 <= seconds <= 86_400


def _valid_factor(value: float) -> bool:
    return math.isfinite(value) and 0 <= value <= 10_000


def make_machine(client):
    """Build the state machine class around a connected test client."""

    class ControlSurface(RuleBasedStateMachine):
        """Random calls on the server, each checked against the model."""

        def __init__(self):
            super().__init__()
            # A known start: no holder, sync off, default rates, then sync on (one reset).
            assert client.set_sync(False).success
            for name, value in (('paused', False), ('time_step', 0.01),
                                ('real_time_factor', 1.0), ('mode', 'simulation')):
                assert client.set_parameter(name, value).successful
            assert client.set_sync(True).success
            status = client.status()
            self.model = Model(epoch=status.epoch)
            self.publish_rate = status.publish_rate

        def _user(self, user_id) -> str:
            return (self.model.owner or 'a') if user_id is HOLDER else user_id

        # -- the typed services -------------------------------------------------------------

        @rule(user_id=USER_IDS, start=st.booleans(), step_ms=STEP_MS)
        def sync_mode_cmd(self, user_id, start, step_ms):
            m, user_id = self.model, self._user(user_id)
            response = client.sync_mode_cmd(user_id, start, step_ms)
            refused = (not valid_user_id(user_id) or not 0 <= step_ms <= MAX_STEP_MS
                       or (m.owner and user_id != m.owner))
            assert response.result is (not refused), (response.message, m)
            if refused:
                assert response.user_id == m.owner, response
            else:
                held = m.mode == 'simulation' and m.sync
                if step_ms and (start or held):
                    m.time_step_ns = step_ms * MS
                if start:
                    if not held:
                        m.switch('simulation', True)
                    if not user_id:
                        assert response.user_id.startswith('user-'), response
                    else:
                        assert response.user_id == user_id
                    m.owner = response.user_id
                elif held:
                    m.switch('simulation', False)
                    m.after_running_change()
            if m.known:
                assert response.frame == m.frame
            assert response.time_step == m.time_step_ns // MS

        @rule(user_id=USER_IDS, steps=STEPS)
        def step(self, user_id, steps):
            m, user_id = self.model, self._user(user_id)
            response = client.step(user_id, steps)
            allowed = (valid_user_id(user_id) and m.mode == 'simulation'
                       and (m.sync or m.paused) and (not m.owner or user_id == m.owner)
                       and 1 <= steps <= MAX_STEPS)
            assert response.success is allowed, (response.message, m)
            assert m.known or not allowed  # a step needs time standing still
            if allowed:
                m.frame += steps
                m.time_ns += steps * m.time_step_ns
            assert response.epoch == m.epoch
            if m.known:
                assert response.frame == m.frame
                assert response.clock.sec * NS + response.clock.nanosec == m.time_ns

        # -- the std_srvs services ----------------------------------------------------------

        @rule()
        def step_once(self):
            m = self.model
            response = client.trigger('step_once')
            allowed = m.mode == 'simulation' and (m.sync or m.paused) and not m.owner
            assert response.success is allowed, (response.message, m)
            if allowed:
                m.frame += 1
                m.time_ns += m.time_step_ns

        @rule(paused=st.booleans())
        def pause_or_resume(self, paused):
            assert client.trigger('pause' if paused else 'resume').success
            self._set_paused(paused)

        @rule()
        def reset(self):
            assert client.trigger('reset').success
            self.model.reset()

        @rule(data=st.booleans())
        def set_sync(self, data):
            m = self.model
            response = client.set_sync(data)
            assert response.success
            if data:
                m.switch('simulation', True)
            else:
                released = m.owner
                m.owner = ''
                m.switch(m.mode, False)
                if released:
                    assert repr(released) in response.message
            m.after_running_change()

        # -- parameters ---------------------------------------------------------------------

        @rule(mode=st.sampled_from(['real_time', 'simulation', 'fast', '']))
        def set_mode(self, mode):
            m = self.model
            result = client.set_parameter('mode', mode)
            assert result.successful is (mode in ('real_time', 'simulation')), result.reason
            if result.successful:
                m.switch(mode, False if mode == 'real_time' else m.sync)
                m.after_running_change()

        @rule(sync=st.booleans())
        def set_sync_parameter(self, sync):
            m = self.model
            assert client.set_parameter('sync', sync).successful
            m.switch('simulation' if sync else m.mode, sync)
            m.after_running_change()

        @rule(paused=st.booleans())
        def set_paused_parameter(self, paused):
            assert client.set_parameter('paused', paused).successful
            self._set_paused(paused)

        @rule(seconds=TIME_STEPS)
        def set_time_step(self, seconds):
            result = client.set_parameter_msg(_double('time_step', seconds))
            assert result.successful is _valid_time_step(seconds), result.reason
            if result.successful:
                self.model.time_step_ns = round(seconds * NS)

        @rule(factor=FACTORS)
        def set_real_time_factor(self, factor):
            result = client.set_parameter_msg(_double('real_time_factor', factor))
            assert result.successful is _valid_factor(factor), result.reason
            if result.successful:
                self.model.rtf = factor

        def _set_paused(self, paused):
            m = self.model
            was_running = m.running
            m.paused = paused
            if was_running and not m.running:
                # Time stands still from here: adopt the frozen frame and time.
                status = client.status()
                m.frame = status.frame
                m.time_ns = status.clock.sec * NS + status.clock.nanosec
                m.known = True
            m.after_running_change()

        # -- after every rule ---------------------------------------------------------------

        @invariant()
        def status_matches_model(self):
            m = self.model
            (mode, sync, paused, frame, time_ns, epoch, owner, rtf, time_step_ns,
             publish_rate) = status_tuple(client.status())
            assert (mode, sync, paused, epoch, owner) == (
                m.mode, m.sync, m.paused, m.epoch, m.owner)
            assert (time_step_ns, rtf, publish_rate) == (
                m.time_step_ns, m.rtf, self.publish_rate)
            if m.known:
                assert (frame, time_ns) == (m.frame, m.time_ns)
            assert m.known is not m.running

        def teardown(self):
            # Leave no holder and no free run behind for the next example.
            client.set_sync(True)

    return ControlSurface


@pytest.mark.slow
def test_control_surface_follows_the_model(start_server, client):
    """Random sequences of calls and parameter changes; every answer as the rules say."""
    start_server({'publish_rate': 20.0})
    machine = make_machine(client)
    run_state_machine_as_test(machine, settings=settings(
        max_examples=100, stateful_step_count=30, deadline=None, derandomize=False,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]))
