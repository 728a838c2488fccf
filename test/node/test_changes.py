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
TimelineChanges: the one place a change of the timeline is announced.

A real timeline makes the changes; the log, the reset recorder, the listeners and what follows
each dispatch are ours, recording. /clock has an offset, so that times are seen converted.
"""

from node_doubles import Logger
from node_doubles import MS
import pytest
from sim_clock.core.axes import Axes
from sim_clock.core.rules import Refused
from sim_clock.core.state import ChangeKind
from sim_clock.core.timeline import Timeline
from sim_clock.node.changes import TimelineChanges
from sim_clock.node.resets import ResetEvents

pytestmark = pytest.mark.fast

OFFSET_NS = 5_000 * MS
SECOND_NS = 1_000 * MS


class Rig:
    """A timeline in sync mode, its changes announced to recorders."""

    def __init__(self, **options):
        self.now = 0
        self.timeline = Timeline(lambda: self.now, **{'sync': True, **options})
        self.logger = Logger()
        self.resets = []
        self.heard = []
        self.after = []
        self.changes = TimelineChanges(self.timeline, Axes(clock_offset_ns=OFFSET_NS),
                                       self.logger, self._on_reset)

    def _on_reset(self, epoch, before_ns, after_ns, cause):
        self.resets.append((epoch, before_ns, after_ns, cause))
        self.heard.append(('on_reset', epoch))


def test_listeners_hear_each_change_in_the_order_they_listen():
    """Change by change, every listener in turn: the first to listen hears each first."""
    rig = Rig()
    rig.changes.listen(lambda change: rig.heard.append(('first', change.kind)))
    rig.changes.listen(lambda change: rig.heard.append(('second', change.kind)))
    rig.timeline.set_paused(True)
    rig.timeline.set_time_step_ns(20 * MS)
    rig.changes.dispatch()
    assert rig.heard == [('first', ChangeKind.PAUSE), ('second', ChangeKind.PAUSE),
                         ('first', ChangeKind.TIME_STEP), ('second', ChangeKind.TIME_STEP)]


def test_each_reset_is_recorded_in_clock_time_before_the_listeners_hear_it():
    """on_reset gets the epoch, the /clock times before and after, and the cause."""
    rig = Rig()
    rig.changes.listen(lambda change: rig.heard.append(('listener', change.epoch)))
    rig.timeline.step('', 3)
    rig.timeline.reset('test reset')
    rig.timeline.set_paused(True)
    rig.changes.dispatch()
    assert rig.resets == [(1, OFFSET_NS + 30 * MS, OFFSET_NS, 'test reset')]
    assert rig.heard == [('on_reset', 1), ('listener', 1), ('listener', 1)]


def test_each_change_is_logged_at_its_level_with_its_clock_time():
    """A reset and a pause at INFO with /clock times; a lapsed lease WARN; the rest DEBUG."""
    rig = Rig(holder_timeout_ns=SECOND_NS)
    rig.timeline.step('', 2)
    rig.timeline.set_paused(True)
    rig.timeline.reset('asked')
    rig.timeline.set_time_step_ns(20 * MS)
    rig.changes.dispatch()
    assert rig.logger.at('info') == [
        f'time paused at {OFFSET_NS + 20 * MS} ns',
        f'time reset to {OFFSET_NS} ns (epoch 1): asked']
    assert rig.logger.at('debug') == ['time_step 20000000 ns']
    assert rig.logger.at('warning') == []
    rig.timeline.sync_mode_cmd('alice', True, 0)
    rig.changes.dispatch()
    rig.now += SECOND_NS
    assert rig.timeline.release_lapsed_holder() == 'alice'
    rig.changes.dispatch()
    assert len(rig.logger.at('warning')) == 1
    assert 'alice' in rig.logger.at('warning')[0] and 'lapsed' in rig.logger.at('warning')[0]


def test_after_dispatch_follows_the_listeners_with_every_change_or_none():
    """Each callback gets the dispatch's changes, after every listener; [] when none."""
    rig = Rig()
    rig.changes.listen(lambda change: rig.heard.append('listener'))
    rig.changes.after_dispatch(lambda changes: rig.after.append(('first', changes)))
    rig.changes.after_dispatch(lambda changes: rig.heard.append('after'))
    rig.timeline.set_paused(True)
    rig.timeline.set_paused(False)
    rig.changes.dispatch()
    assert rig.heard == ['listener', 'listener', 'after']
    assert [[change.kind for change in changes] for _, changes in rig.after] == [
        [ChangeKind.PAUSE, ChangeKind.RESUME]]
    rig.changes.dispatch()
    assert rig.after[-1] == ('first', [])
    assert rig.heard[-1] == 'after'


def test_changes_are_announced_once():
    """A second dispatch hands nobody the changes the first announced."""
    rig = Rig()
    rig.changes.listen(lambda change: rig.heard.append(change.kind))
    rig.timeline.reset('once')
    rig.changes.dispatch()
    rig.changes.dispatch()
    assert rig.heard == [('on_reset', 1), ChangeKind.RESET]
    assert len(rig.resets) == 1


def test_apply_returns_what_the_change_returns_and_announces_it():
    """Run the change (apply), announces what it recorded, and returns its value."""
    rig = Rig()
    rig.changes.after_dispatch(rig.after.append)
    assert rig.changes.apply(lambda: rig.timeline.set_paused(True)) is True
    assert [change.kind for change in rig.after[0]] == [ChangeKind.PAUSE]


def test_apply_announces_what_changed_before_a_change_raised():
    """A change that raises half way: what it recorded is announced all the same."""
    rig = Rig()
    rig.changes.after_dispatch(rig.after.append)

    def pause_then_refuse():
        rig.timeline.set_paused(True)
        rig.timeline.set_time_step_ns(0)    # refused: no frame of 0 ns

    with pytest.raises(Refused):
        rig.changes.apply(pause_then_refuse)
    assert [change.kind for change in rig.after[0]] == [ChangeKind.PAUSE]
    assert rig.logger.at('info') == [f'time paused at {OFFSET_NS} ns']


class Published:
    """What ResetEvents publishes, kept in order: the part of a publisher it uses."""

    def __init__(self):
        self.messages = []

    def publish(self, msg) -> None:
        self.messages.append(msg)


def test_each_reset_and_only_a_reset_goes_out_on_resets_in_clock_time():
    """A reset on ~/resets: a message per reset, with /clock times, mode and sync."""
    rig = Rig()
    published = Published()
    events = ResetEvents(published, Axes(clock_offset_ns=OFFSET_NS).to_clock)
    rig.changes.listen(events.on_change)
    rig.timeline.step('', 3)
    rig.timeline.set_paused(True)
    rig.timeline.reset('test reset')
    rig.timeline.set_time_step_ns(20 * MS)
    rig.changes.dispatch()
    assert len(published.messages) == 1
    msg = published.messages[0]
    assert (msg.epoch, msg.cause, msg.mode, msg.sync) == (1, 'test reset', 'simulation', True)
    assert (msg.time_before.sec, msg.time_before.nanosec) == divmod(OFFSET_NS + 30 * MS, SECOND_NS)
    assert (msg.time_after.sec, msg.time_after.nanosec) == divmod(OFFSET_NS, SECOND_NS)
