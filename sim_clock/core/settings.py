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
The clock server's parameters as one table, and how a set of new values reaches the core.

Each :class:`Setting` has its name, default, description, range and parser; the node turns the
table into ROS parameters with descriptors (``sim_clock.node.parameters``). The coupling of
``mode`` and ``sync`` is said here once: :func:`complete` and :func:`parse`.
"""

from dataclasses import dataclass
from dataclasses import field
from typing import Callable
from typing import Dict
from typing import List
from typing import Mapping
from typing import Optional
from typing import Protocol
from typing import Tuple

from sim_clock.core.barrier import Barrier
from sim_clock.core.clock_rate import ClockRateCap
from sim_clock.core.frame_events import check_length
from sim_clock.core.frame_events import DEFAULT_LENGTH
from sim_clock.core.frame_events import FrameEventRing
from sim_clock.core.frame_events import MAX_LENGTH
from sim_clock.core.gates import check_periods
from sim_clock.core.gates import Gates
from sim_clock.core.gates import parse_gates
from sim_clock.core.hold import Hold
from sim_clock.core.pacing import Pacing
from sim_clock.core.roster import parse_expected
from sim_clock.core.roster import Roster
from sim_clock.core.rules import ack_timeout_from_seconds
from sim_clock.core.rules import check_mode_sync
from sim_clock.core.rules import HOLDING_MODES
from sim_clock.core.rules import MAX_CLOCK_RATE
from sim_clock.core.rules import max_clock_rate_from_float
from sim_clock.core.rules import MAX_PUBLISH_RATE
from sim_clock.core.rules import MAX_REAL_TIME_FACTOR
from sim_clock.core.rules import MAX_TIME_STEP_NS
from sim_clock.core.rules import MIN_PUBLISH_RATE
from sim_clock.core.rules import Mode
from sim_clock.core.rules import MODE_NAMES
from sim_clock.core.rules import owner_timeout_from_seconds
from sim_clock.core.rules import parse_bool
from sim_clock.core.rules import parse_mode
from sim_clock.core.rules import participant_timeout_from_seconds
from sim_clock.core.rules import publish_period_from_rate
from sim_clock.core.rules import real_time_factor_from_float
from sim_clock.core.rules import start_time_from_value
from sim_clock.core.rules import time_step_from_seconds
from sim_clock.core.state import Change
from sim_clock.core.timeline import Timeline
from sim_clock.core.units import NS_PER_SEC
from sim_clock.core.waits import DEFAULT_TIMEOUT_NS


class Position(Protocol):
    """A place in recorded data that follows the timeline's time (a bag player's cursor)."""

    def move_to(self, time_ns: int, epoch: int) -> None:
        """Go to timeline time ``time_ns``, where epoch ``epoch`` starts (a reset)."""


@dataclass
class Core:
    """The core objects that the settings configure."""

    timeline: Timeline
    pacing: Pacing
    #: What a frame waits for: the participants and the output gates, with one timeout.
    hold: Hold = field(default_factory=lambda: Hold.with_timeout(DEFAULT_TIMEOUT_NS))
    #: How long a step waits for its frames to be acknowledged, ns; 0: it does not.
    ack_timeout_ns: int = 0
    #: Which free-run frames go out under max_clock_rate.
    rate_cap: ClockRateCap = field(default_factory=ClockRateCap)
    #: The nodes no frame goes out without (expected_participants).
    roster: Roster = field(default_factory=Roster)
    #: The frame timeline (frame_events), and whether each event is published.
    frame_events: FrameEventRing = field(default_factory=FrameEventRing)
    publish_frame_events: bool = False
    #: Where recorded data plays from (a bag player's), moved by every reset; None: no data.
    position: Optional[Position] = None

    def holds_frames(self) -> bool:
        """Whether frames wait for participants or output gates now (some set, in this mode)."""
        hold = self.hold
        return (bool(hold.barrier.participants or hold.gates.gates)
                and self.timeline.mode in HOLDING_MODES)

    def nothing_to_wait_for(self) -> bool:
        """
        Whether no step could wait now: nothing holds frames, expects nodes or waits for acks.

        No participant or gate holds frames (:meth:`holds_frames`), no expected node, no
        ``ack_timeout``. What lets a step be answered within its call
        (``StepRunner.step``). Read from the settings as they are, never kept: nothing to
        invalidate when they change.
        """
        return not (self.ack_timeout_ns or self.roster.expected or self.holds_frames())

    def holding(self) -> bool:
        """Whether participants or gates hold the next frame: someone or a writer is awaited."""
        return self.hold.holding

    def take_changes(self, now_ns: int, to_clock: Callable[[int], int]) -> List[Change]:
        """
        Return the timeline's changes since the last call; follow each reset in the core.

        At a reset the recorded data's position moves to the new time, the rate cap forgets
        the last time out, nothing is awaited any more, and the new time is a frame like any
        other: while participants hold frames, the next waits until each has taken it (its
        rounds run, what it published counted). ``now_ns``: steady time; ``to_clock``:
        timeline time to /clock time, the barrier's. The views need nothing: their drift
        counts from the timeline's epoch start.
        """
        changes = self.timeline.take_changes()
        for change in changes:
            if change.reset:
                if self.position is not None:
                    self.position.move_to(change.time_after_ns, change.epoch)
                self.hold.reset()
                self.rate_cap.restart()
                if self.timeline.mode in HOLDING_MODES:
                    self.hold.barrier.published(to_clock(change.time_after_ns), now_ns)
        return changes

    @property
    def barrier(self) -> Barrier:
        """Return the participants, whom the hold keeps."""
        return self.hold.barrier

    @property
    def gates(self) -> Gates:
        """Return the output gates, which the hold keeps."""
        return self.hold.gates


@dataclass(frozen=True)
class Setting:
    """One parameter: its default (which gives its type), what it means, and its parser."""

    name: str
    default: object
    description: str
    parse: Callable[[object], object]
    constraints: str = ''
    #: The closed range of a double parameter, as ROS enforces it; None: no range.
    low: Optional[float] = None
    high: Optional[float] = None
    #: Takes values of several types (dynamic_typing): 'wall' or a number, say.
    dynamic: bool = False


SETTINGS = (
    Setting(
        'mode', Mode.SIMULATION.value,
        'How time advances: real_time follows the wall clock; simulation advances in frames '
        'of time_step (free run, or only by steps when sync is on). A change resets time to 0.',
        parse_mode, constraints='one of: ' + ', '.join(MODE_NAMES)),
    Setting(
        'sync', False,
        'Simulation mode: time advances only by ~/step calls. A change resets time to 0. '
        'Setting it true in real_time mode switches to simulation.',
        parse_bool('sync'), constraints='true needs mode simulation (switched to if needed)'),
    Setting(
        'time_step', 0.01,
        'Length of one simulation frame, in seconds (converted once to integer ns).',
        time_step_from_seconds, constraints='s, > 0',
        low=1e-9, high=float(MAX_TIME_STEP_NS // NS_PER_SEC)),
    Setting(
        'real_time_factor', 1.0,
        'Free-run pace: simulated seconds per wall second. 1.0 wall pace, 2.0 twice as fast, '
        '0 as fast as possible.',
        real_time_factor_from_float, constraints='0 = as fast as possible',
        low=0.0, high=float(MAX_REAL_TIME_FACTOR)),
    Setting(
        'publish_rate', 100.0,
        '/clock rate in real_time mode and while time does not advance (paused, sync idle), '
        'in Hz.',
        publish_period_from_rate, constraints='Hz', low=MIN_PUBLISH_RATE, high=MAX_PUBLISH_RATE),
    Setting(
        'paused', False,
        'Freeze real-time and free-run time (/clock keeps being published, unchanged).',
        parse_bool('paused')),
    Setting(
        'owner_timeout', 0.0,
        'Seconds without a call from the sync holder after which its lease lapses (sync stays '
        'on, anyone may step or take it). 0: a lease never lapses.',
        owner_timeout_from_seconds, constraints='s, 0 = never',
        low=0.0, high=float(MAX_TIME_STEP_NS // NS_PER_SEC)),
    Setting(
        'participant_timeout', DEFAULT_TIMEOUT_NS / NS_PER_SEC,
        'Seconds a frame waits for a participant that has not said it finished; then a step '
        'stops there and names it (free run logs it and keeps waiting).',
        participant_timeout_from_seconds, constraints='s, > 0',
        low=0.001, high=float(MAX_TIME_STEP_NS // NS_PER_SEC)),
    Setting(
        'ack_timeout', 0.0,
        'Seconds a step waits, after its last frame, until every matched reliable reader of '
        'its topics has acknowledged them; the answer names the topics that were not. 0: '
        'steps answer once their frames are published.',
        ack_timeout_from_seconds, constraints='s, 0 = no wait',
        low=0.0, high=float(MAX_TIME_STEP_NS // NS_PER_SEC)),
    Setting(
        'start_time', '0',
        "Where time starts, and where every reset takes it: '0' (MORAI's rule), 'wall' (the "
        "wall clock at that moment, as MORSE starts), or seconds ('1700000000.5', exact to "
        'the ns). Frames are whole steps from there. A change applies at the next reset.',
        start_time_from_value, constraints="'wall', or seconds: a number or decimal text",
        dynamic=True),
    Setting(
        'max_clock_rate', 0.0,
        'Free run: at most this many /clock messages per wall second, in Hz; 0 publishes every '
        'frame. Frames go out on a grid (every 1st, 2nd, 5th, 10th, 20th, ... frame since the '
        'last reset, the smallest stride under the cap), each at its exact time, so a '
        "subscriber's timer whose period is a multiple of the stride fires at its exact times. "
        'Steps and sync mode are never capped.',
        max_clock_rate_from_float, constraints='Hz, 0 = no cap',
        low=0.0, high=float(MAX_CLOCK_RATE)),
    Setting(
        'output_gates', '',
        "Frames that wait for a message on a topic: entries 'TOPIC[@PERIOD_S][:TIMEOUT_S]', a "
        "list (['/cmd@0.05', '/odom']) or one text separated by commas or spaces. '/cmd@0.05': "
        'each frame that reaches a multiple of 0.05 s of /clock waits until one message on '
        "/cmd arrives after that frame's /clock went out; no period: every frame; a timeout "
        '(s) past which a step stops there and names the topic (free run logs it and goes on), '
        "default participant_timeout. Simulation mode only. '' : none.",
        parse_gates, constraints='periods: multiples of time_step; timeouts > 0',
        dynamic=True),
    Setting(
        'expected_participants', '',
        'Nodes no frame goes out without (simulation mode): a list of full node names, with '
        "or without the leading slash (['/perception', 'planning']), or one text separated by "
        'commas or spaces. Each must say on ~/ready that its writers and readers matched '
        'those of the others named; until then a step waits (past participant_timeout it '
        "stops and names what each lacks) and free run waits. '' : none.",
        parse_expected, constraints='node names, each at most once', dynamic=True),
    Setting(
        'frame_events', DEFAULT_LENGTH,
        "How many frame events the server keeps (each frame out, each participant's done, "
        'each gated output, acknowledgement waits, step calls, resets; doc/timeline.md), '
        'read with ~/get_frame_events and simclock trace, report and top. 0: none recorded. '
        'A change keeps the newest.',
        check_length, constraints=f'0 (off) to {MAX_LENGTH} events'),
    Setting(
        'publish_frame_events', False,
        'Also publish each frame event on ~/frame_events as it is recorded (to record them '
        'in a bag, say).',
        parse_bool('publish_frame_events')),
)

BY_NAME = {setting.name: setting for setting in SETTINGS}
#: name -> default, as config/sim_clock.yaml holds them.
DEFAULTS = {setting.name: setting.default for setting in SETTINGS}
#: The settings that services change too (``~/pause``, ``~/set_sync``, ...): their values
#: are read from the timeline (:func:`shown`), never kept beside it.
SHOWN = ('mode', 'sync', 'paused', 'time_step')


def complete(values: Mapping[str, object], mode: Mode) -> Dict[str, object]:
    """
    Return the values to set for ``values``, keeping mode and sync consistent.

    Leaving simulation turns sync off; sync on from real-time mode (``mode`` now) switches to
    simulation, as ``~/sync_mode_cmd`` does. Integers given for double parameters become
    doubles.
    """
    completed = {
        name: float(value) if isinstance(BY_NAME.get(name, _ANY).default, float)
        and isinstance(value, int) and not isinstance(value, bool) else value
        for name, value in values.items()}
    if 'sync' not in values and values.get('mode') == Mode.REAL_TIME.value:
        completed['sync'] = False
    if 'mode' not in values and values.get('sync') is True and mode is Mode.REAL_TIME:
        completed['mode'] = Mode.SIMULATION.value
    return completed


def parse(values: Mapping[str, object], mode: Mode,
          core: Optional[Core] = None) -> Dict[str, object]:
    """
    Parse the values of our settings in ``values`` (others are ignored); refuse if invalid.

    ``core``: the state they change (None: every setting is given), for the checks across
    settings: the gates' periods against ``time_step``.
    """
    parsed = {name: BY_NAME[name].parse(value) for name, value in values.items()
              if name in BY_NAME}
    if 'sync' in parsed:
        check_mode_sync(parsed.get('mode', mode), parsed['sync'])
    gates = parsed['output_gates'] if 'output_gates' in parsed else (
        core.gates.specs if core is not None else ())
    time_step_ns = parsed['time_step'] if 'time_step' in parsed else (
        core.timeline.time_step_ns if core is not None else None)
    if time_step_ns is not None:
        check_periods(gates, time_step_ns)
    return parsed


def apply(parsed: Mapping[str, object], core: Core) -> None:
    """Apply parsed values; a mode or sync change is one reset."""
    timeline = core.timeline
    if 'mode' in parsed or 'sync' in parsed:
        status = timeline.status()
        timeline.set_mode_sync(parsed.get('mode', status.mode), parsed.get('sync', status.sync))
    if 'time_step' in parsed:
        timeline.set_time_step_ns(parsed['time_step'])
    if 'real_time_factor' in parsed:
        timeline.set_real_time_factor(parsed['real_time_factor'])
    if 'owner_timeout' in parsed:
        timeline.set_holder_timeout_ns(parsed['owner_timeout'])
    if 'paused' in parsed:
        timeline.set_paused(parsed['paused'])
    if 'publish_rate' in parsed:
        core.pacing.publish_period_ns = parsed['publish_rate']
    if 'participant_timeout' in parsed:
        core.hold.timeout.ns = parsed['participant_timeout']
    if 'output_gates' in parsed:
        core.gates.configure(parsed['output_gates'])
    if 'ack_timeout' in parsed:
        core.ack_timeout_ns = parsed['ack_timeout']
    if 'start_time' in parsed:
        timeline.set_start_ns(parsed['start_time'])
    if 'max_clock_rate' in parsed:
        core.rate_cap.set_max_rate(parsed['max_clock_rate'])
    if 'expected_participants' in parsed:
        core.roster.configure(parsed['expected_participants'])
    if 'frame_events' in parsed:
        core.frame_events.resize(parsed['frame_events'])
    if 'publish_frame_events' in parsed:
        core.publish_frame_events = parsed['publish_frame_events']


def initial(values: Mapping[str, object], **timeline_options) -> Core:
    """Return the core objects that start with ``values`` (every setting, parsed)."""
    parsed = parse(values, parse_mode(values['mode']))
    timeline = Timeline(
        mode=parsed['mode'], sync=parsed['sync'], paused=parsed['paused'],
        time_step_ns=parsed['time_step'], real_time_factor=parsed['real_time_factor'],
        holder_timeout_ns=parsed['owner_timeout'], start_ns=parsed['start_time'],
        **timeline_options)
    hold = Hold.with_timeout(parsed['participant_timeout'])
    hold.gates.configure(parsed['output_gates'])
    roster = Roster()
    roster.configure(parsed['expected_participants'])
    return Core(timeline, Pacing(parsed['publish_rate']),
                hold, parsed['ack_timeout'], ClockRateCap(parsed['max_clock_rate']), roster,
                FrameEventRing(parsed['frame_events']), parsed['publish_frame_events'])


def shown(timeline: Timeline, time_step_set: Tuple[float, int]) -> Dict[str, object]:
    """
    Return the values of the settings in :data:`SHOWN` as the timeline's state gives them.

    ``time_step_set``: the seconds last set and the ns they gave. The timeline owns the time
    step; ``time_step`` reads back as it was set while it is still the timeline's, and after
    a service changed the step, as the step's ns in seconds.
    """
    status = timeline.status()
    given, given_ns = time_step_set
    time_step = given if given_ns == status.time_step_ns else status.time_step_ns / NS_PER_SEC
    return {'mode': status.mode.value, 'sync': status.sync, 'paused': status.paused,
            'time_step': time_step}


_ANY = Setting('', None, '', lambda value: value)
