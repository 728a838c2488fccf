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
Flow control of stepped frames: no reliable writer overwrites a sample a reader still lacks.

A KEEP_LAST writer repairs a reader's losses only from its history: a step whose frames put
more samples on one topic than that history holds, faster than a reader takes them, lost
samples at that reader. While time advances only by steps (sync mode, or paused), each
reliable writer may have at most a *window* of samples out since its readers last
acknowledged everything (half its depth, at most :data:`MAX_WINDOW`); then publishing waits
until they have (``Publisher.wait_for_all_acked``) and goes on with a full window. Free run is
not held back: as fast as possible outruns every reader by design (doc/design.md, "Flow
control"), except for the writers a sink holds also at full speed
(:meth:`Writers.hold_at_full_speed`: a bag's topics, whose reliable readers would otherwise
lose what a KEEP_LAST history overwrote before they acknowledged it).

One :class:`FlowControl` per node owns every writer's budget: each sink's writers are a group
(:meth:`FlowControl.writers`: /clock, the views, a bag's topics then /clock), and the writers
whose windows are spent, of every group, are waited for together: /clock and the views, which
spend their windows on the same frames, wait once per window.

A reader that has not acknowledged a window within :data:`WAIT_TIMEOUT_NS` is stalled: a dead
process (DDS keeps its reader matched until its lease ends, 20 s with Fast DDS) or a frozen
one. rclpy says only whether all of a writer's readers have acknowledged, not which, so the
live readers of that topic cannot be told from the stalled one: the topic is waited for again
at every window all the same, :data:`WAIT_TIMEOUT_NS` at most, and the next window goes out
after the wait (a throttled warning names the topic). While a stalled reader stays matched,
its topic thus gets one window per :data:`WAIT_TIMEOUT_NS`, and a live reader of it that takes
a window within that wait (100 samples a second: a slow reader on a loaded machine) loses
nothing; once the stalled reader has caught up, or the topic's readers change (a dead one's
lease ended), the windows go out as fast as they are acknowledged again. A frozen reader whose
process lives on (its DDS threads keep its lease) paces the steps so for as long as it stays
frozen, and loses itself what falls out of the writer's history meanwhile. Each wait holds the
executor: a step paced so answers the other services only once done; Ctrl-C ends it within
a slice. Acknowledged steps and a bag frame's data skip a stalled topic instead
(``sim_clock.node.acks``): they only delay an answer or a /clock (doc/design.md, "Flow
control").

A publish the writer refuses (Fast DDS 3 fails it after ``max_blocking_time`` once its history
is full of samples a matched reader lacks: a stalled reader that stayed matched while a whole
history went out) does not end the server. One policy decides, for /clock, the views and the
bag player alike (:meth:`Writers.retry`): the writer's readers get :data:`WAIT_TIMEOUT_NS`
more to acknowledge, then the sample is published again; if they still have not, or the same
sample is refused again at once, the writer gives up on the rest of that run of frames, as free
run drops frames for slow readers. :meth:`Writers.publish` then leaves the rest of its times
out (a warning says how many); the bag player's run
(``sim_clock.bag.flow_controlled_run.paced``), given the refusal ``sim_clock._replay.play``
raises, leaves that topic's messages out (played, not published) until the next run of frames
(:meth:`Writers.start`).

A node that stops (Ctrl-C, SIGTERM: ``Acknowledgements.stop``) waits for no reader and
publishes no further window: the frames left of a step would only delay its end.
"""

from array import array
from typing import Callable
from typing import List
from typing import Protocol

from rclpy.executors import ExternalShutdownException
from rclpy.qos import HistoryPolicy
from rclpy.qos import ReliabilityPolicy
from sim_clock._replay import DROPPED
from sim_clock._replay import UNLIMITED
from sim_clock.node.acks import Acknowledgements
from sim_clock.node.engine.parts import Logger

#: The most samples a writer has out, unacknowledged, between two waits.
MAX_WINDOW = 500
#: The longest one wait for a window's acknowledgements, in ns; then its readers are stalled.
#: 1 s counted a live keep-all reader as stalled on a loaded machine, and it lost frames.
WAIT_TIMEOUT_NS = 5_000_000_000
#: The least time between two warnings of stalled readers, in s: one window per wait would
#: otherwise say it every window.
STALLED_WARNING_PERIOD_S = 30.0


class PublisherDestroyed(RuntimeError):
    """A publish after the node began to destroy its publishers: never a refused sample."""


def window(qos) -> int:
    """Return the window of a writer with ``qos``: UNLIMITED if best effort."""
    if qos.reliability is ReliabilityPolicy.BEST_EFFORT:
        return UNLIMITED
    if qos.history is HistoryPolicy.KEEP_ALL:
        return MAX_WINDOW
    return max(min(qos.depth // 2, MAX_WINDOW), 1)


class RunState(Protocol):
    """Whether time advances by itself (the timeline): steps are flow-controlled, free run not."""

    free_running: bool

    def frame_period_ns(self):
        """Return the wall time between free-run frames: 0 as fast as possible, else more."""


class FlowControl:
    """
    The one owner of a node's flow control: arms its writers, and refills them in one wait.

    One per node (``ClockServer.flow``), built before its sinks. Each writer group asks for its
    budgets by :meth:`writers`: /clock (``ClockSink``), the views (``ClockViews``), a bag's
    topics then /clock (``BagFrames``). The owner arms or lifts every group at once
    (:meth:`start`), and a group whose writer has spent its window waits through
    :meth:`refill` for every spent writer of every group: /clock and the views, or a bag's
    topics and the views, are acknowledged in one wait per window instead of one per group.
    """

    def __init__(self, run: RunState, acks: Acknowledgements, logger: Logger,
                 context_ok: Callable[[], bool]):
        """
        Control the writers' flow while ``run`` does not free-run; wait through ``acks``.

        ``logger``: where stalled readers and refusals are said; ``context_ok``: whether the
        node's context still runs (a refusal after its end is not retried).
        """
        self._run = run
        self._acks = acks
        self._logger = logger
        self._context_ok = context_ok
        self._groups: List[Writers] = []
        #: Whether the writers are under flow control: time advances only by steps. Set at
        #: construction and after every dispatch of changes of the timeline (:meth:`start`).
        self.armed = not run.free_running
        #: Whether free run goes as fast as possible: the writers held at full speed are
        #: under flow control then too.
        self.full_speed = self._at_full_speed()

    def _at_full_speed(self) -> bool:
        return self._run.free_running and self._run.frame_period_ns() == 0

    def writers(self, publishers: List) -> 'Writers':
        """
        Return the budgets of ``publishers``, a group of this node's writers.

        Its :attr:`Writers.budgets` follow ``publishers``'s order (a bag's topics, then /clock:
        the layout of ``sim_clock._replay.play``). A writer has one budget per node: one
        already in a group is refused (ValueError).
        """
        publishers = list(publishers)
        grouped = {id(publisher) for group in self._groups for publisher in group.publishers}
        for publisher in publishers:
            if id(publisher) in grouped:
                raise ValueError(f'{publisher.topic_name} already has a flow-control budget')
            grouped.add(id(publisher))
        group = Writers(self, publishers)
        if self.armed:
            group.arm(True, self.full_speed)
        self._groups.append(group)
        return group

    def after_changes(self, changes: list) -> None:
        """After every dispatch of changes of the timeline (maybe none): :meth:`start`."""
        self.start()

    def start(self) -> bool:
        """Arm every group if time advances only by steps, else lift them; return whether armed."""
        armed, full_speed = not self._run.free_running, self._at_full_speed()
        if (armed, full_speed) != (self.armed, self.full_speed):  # else: a tick's fast path
            self.armed, self.full_speed = armed, full_speed
            for group in self._groups:
                group.arm(armed, full_speed)
        return armed

    def refill(self) -> None:
        """Wait until every spent writer of every group is acknowledged; give each a window."""
        spent = [(group, index) for group in self._groups
                 for index, budget in enumerate(group.budgets) if budget == 0]
        # Stalled topics too: their windows are what keeps their live readers from losing.
        stalled = self._acks.wait_now([group.publishers[index] for group, index in spent],
                                      WAIT_TIMEOUT_NS, skip_stalled=False)
        if stalled:
            self._logger.warning(
                f'stalled reliable readers of: {", ".join(stalled)} (they did not acknowledge '
                f'{MAX_WINDOW} samples or fewer within {WAIT_TIMEOUT_NS / 1e9:g} s): each '
                f'window of stepped frames on those topics waits {WAIT_TIMEOUT_NS / 1e9:g} s '
                f'for them until they catch up or leave (a dead process: at the end of its '
                f'lease)',
                throttle_duration_sec=STALLED_WARNING_PERIOD_S)
        for group, index in spent:
            group.budgets[index] = group.windows[index]


class Writers:
    """
    The budgets of one sink's writers (a bag's topics, then /clock) under a node's flow control.

    :attr:`budgets` is what ``sim_clock._replay.play`` spends (one entry per writer; negative:
    no limit). The node's :class:`FlowControl` arms or lifts it with every group after each
    change of the timeline, and refills a spent budget with those of the other groups. A
    bag's sink calls :meth:`start` before each run: its writers left out publish again.
    """

    def __init__(self, flow: FlowControl, publishers: List):
        self._flow = flow
        self._acks = flow._acks
        #: The writers, by the indices of :attr:`budgets`.
        self.publishers = publishers
        #: Each writer's window (:func:`window`).
        self.windows = [window(publisher.qos_profile) for publisher in publishers]
        self.budgets = array('q', [UNLIMITED] * len(publishers))
        #: The indices of the writers under flow control in free run as fast as possible too.
        self._full_speed_held = frozenset()
        self._armed = self._full_speed = False

    def hold_at_full_speed(self, indices) -> None:
        """Keep writers ``indices`` under flow control also in free run as fast as possible."""
        self._full_speed_held = frozenset(indices)
        self.arm(self._flow.armed, self._flow.full_speed)

    def _held(self, index: int) -> bool:
        return self._armed or (self._full_speed and index in self._full_speed_held)

    def arm(self, armed: bool, full_speed: bool = False) -> None:
        """
        Give every writer an empty budget if ``armed`` (a window's wait first), else none.

        ``full_speed``: free run goes as fast as possible; the writers held then
        (:meth:`hold_at_full_speed`) get an empty budget too.
        """
        self._armed, self._full_speed = armed, full_speed
        for index, size in enumerate(self.windows):
            # Armed afresh: what free run left unacknowledged is waited for first.
            self.budgets[index] = 0 if self._held(index) and size > 0 else UNLIMITED

    def start(self) -> bool:
        """
        Arm flow control if time advances only by steps, else lift it; return whether armed.

        Arms or lifts every group of the node (:meth:`FlowControl.start`). A writer of this
        group left out of the last run of frames (``DROPPED``) publishes again.
        """
        armed = self._flow.start()
        if DROPPED in self.budgets:
            for index, size in enumerate(self.windows):
                if self.budgets[index] == DROPPED:
                    self.budgets[index] = 0 if self._held(index) and size > 0 else UNLIMITED
        return armed

    def room(self, most: int) -> int:
        """
        Return how many samples the writers may publish before a wait, ``most`` at most.

        The smallest positive budget; ``most`` if no budget is positive (spent: the next
        take refills it; unlimited; dropped). The views' wrapper ends its windows there.
        """
        return min([budget for budget in self.budgets if budget > 0] + [most])

    def publish(self, which: int, publish: Callable[[int], None], times) -> None:
        """
        Publish each of ``times`` (a sequence) with ``publish`` on writer ``which``.

        In windows if flow control is armed (the node's :class:`FlowControl`). A refused publish is
        published again once its writer's readers have caught up; if they do not within
        :data:`WAIT_TIMEOUT_NS`, or the same sample is refused again, the rest of ``times`` is
        dropped on it (:meth:`retry`).
        """
        position, refused = 0, None  # where times are at, in the times given; the refusal
        budgets, acks = self.budgets, self._acks
        while times and not acks.stopped:
            # The window: up to the writer's budget (refilled by a wait once spent).
            if budgets[which] == 0:
                self.refill()
            budget = budgets[which]
            if budget < 0:
                window = times
            else:
                window = times if len(times) <= budget else times[:budget]
                budgets[which] = budget - len(window)
            try:
                for sent, time_ns in enumerate(window):
                    publish(time_ns)
            except PublisherDestroyed:
                raise
            except RuntimeError as error:
                times, position = times[sent:], position + sent
                again = self.retry(error, which, position, refused)
                refused = position
                if self.budgets[which] >= 0:
                    self.budgets[which] += len(window) - sent  # not spent: not sent
                if not again:
                    self.gave_up(which, error, f'{len(times)} frames not published on it')
                    return
                continue
            if window is times:
                return
            times, position = times[len(window):], position + len(window)

    def retry(self, error: RuntimeError, which: int, at, refused) -> bool:
        """
        Return whether to publish again the sample writer ``which`` refused with ``error``.

        The policy for a refused sample, of every sink: again once the writer's readers have
        caught up (:meth:`caught_up`), unless it is the sample refused last (``at`` equal to
        ``refused``, where the caller's last refusal was, or None): refused again right after
        the wait, the readers are not going to take it. False: the caller gives up on that
        writer for the rest of its run of frames (:meth:`gave_up`). In a node whose context
        ended while it published (Ctrl-C under ``rclpy.spin``, whose signal handler shuts the
        context down at once) it raises rclpy's ``ExternalShutdownException``, from ``error``:
        what a node spun the ROS 2 way ends on, without a traceback.
        """
        if not self._flow._context_ok():
            raise ExternalShutdownException(
                f'the context was shut down while {self.publishers[which].topic_name} '
                'published') from error
        return at != refused and self.caught_up(which)

    def gave_up(self, which: int, error: RuntimeError, consequence: str) -> None:
        """Warn that writer ``which`` gave up after refusing a sample, with ``consequence``."""
        self._flow._logger.warning(
            f'{self.publishers[which].topic_name} refused a sample ({error}) and its readers '
            f'did not catch up within {WAIT_TIMEOUT_NS / 1e9:g} s: {consequence}',
            throttle_duration_sec=5.0)

    def caught_up(self, which: int) -> bool:
        """Wait until writer ``which``'s readers have everything, at most WAIT_TIMEOUT_NS."""
        return self._acks.caught_up(self.publishers[which], WAIT_TIMEOUT_NS)

    def refill(self) -> None:
        """
        Wait until the spent writers are acknowledged; give them a window.

        Those of every group of the node (:meth:`FlowControl.refill`), in one wait.
        """
        self._flow.refill()
