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
A synchronous Python client for the sim_clock services.

    from sim_clock.client import SimClockClient

    with SimClockClient(node) as clock:             # owns the client: closes it at the end
        with clock.sync_mode(time_step=0.01):       # holds sync mode; then puts back the server
            for _ in range(100):
                result = clock.step()               # returns once the new time is published
                print(result.frame, result.time_ns)

Every call blocks its caller until the answer comes or the timeout passes, and never
deadlocks: the client's service clients live on a private node of their own, spun by a private
executor during the call only. So a call works from the main thread, from inside a callback of
a busy executor (even a single-threaded one), and from a node that uses ``use_sim_time``: waits
are measured on the steady clock, never on ROS time. Per-call cost stays flat over any number of
calls (doc/design.md, "Executors").
"""

import contextlib
import itertools
import math
import threading
import time
from typing import Callable
from typing import Iterator
from typing import Optional
import warnings

from rcl_interfaces.srv import SetParameters
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from sim_clock.client.deprecated_names import renamed
from sim_clock.client.deprecated_names import renamed_attribute
from sim_clock.client.results import ControlResult
from sim_clock.client.results import FrameEvents
from sim_clock.client.results import ResetEvent
from sim_clock.client.results import ResetResult
from sim_clock.client.results import SeekResult
from sim_clock.client.results import SimClockClosed
from sim_clock.client.results import SimClockError
from sim_clock.client.results import SimClockInterrupted
from sim_clock.client.results import SimClockLate
from sim_clock.client.results import SimClockNoService
from sim_clock.client.results import SimClockRefused
from sim_clock.client.results import SimClockServerGone
from sim_clock.client.results import SimClockTimeout
from sim_clock.client.results import Status
from sim_clock.client.results import StepResult
from sim_clock.core.frame_events import FrameEvent
from sim_clock.core.rules import check_whole_steps
from sim_clock.core.rules import frames_until
from sim_clock.core.rules import MAX_STEPS_PER_CALL
from sim_clock.core.rules import Refused
from sim_clock.core.units import join_ns
from sim_clock.core.units import NS_PER_MS
from sim_clock.core.units import NS_PER_SEC
from sim_clock.core.units import split_ns
from sim_clock.msg import Reset
from sim_clock.srv import GetFrameEvents
from sim_clock.srv import GetProgress
from sim_clock.srv import GetStatus
from sim_clock.srv import Join
from sim_clock.srv import Leave
from sim_clock.srv import Seek
from sim_clock.srv import Step
from sim_clock.srv import SyncModeCmd
from sim_clock.wire.names import DEFAULT_SERVER
from sim_clock.wire.names import RESET_READER_QOS
from sim_clock.wire.names import SERVICE_QOS
from sim_clock.wire.participant_link import join_request
from sim_clock.wire.participant_link import leave_request
from sim_clock.wire.participant_link import ParticipantLink
from sim_clock.wire.progress_report import Playback
from sim_clock.wire.progress_report import ProgressReport
from sim_clock.wire.status import status_from_response
from std_srvs.srv import SetBool
from std_srvs.srv import Trigger

DEFAULT_TIMEOUT = 10.0
#: The services whose request, made twice, changes nothing more than once: asked again after
#: a timeout (up to ``retries`` times), as a lost answer looks the same as a slow one. A step
#: is, as this client asks it (by target frame and epoch). A reset is not (see reset()). A join
#: is: joining again under the same name with the same period changes nothing.
REPEATABLE = frozenset(('get_progress', 'get_status', 'join', 'pause', 'resume', 'set_sync',
                        'set_parameters', 'step'))
#: The type of each service of a server, by its name under the server's.
SERVICE_TYPES = {
    'get_status': GetStatus, 'step': Step, 'sync_mode_cmd': SyncModeCmd, 'join': Join,
    'leave': Leave, 'pause': Trigger, 'resume': Trigger, 'reset': Trigger, 'step_once': Trigger,
    'set_sync': SetBool, 'set_parameters': SetParameters, 'seek': Seek,
    'get_progress': GetProgress, 'get_frame_events': GetFrameEvents,
}

_instances = itertools.count()


class SimClockClient:
    """
    Drive a sim_clock server: take sync mode, step, read status, give sync mode back.

    :param node: a node whose context (and name, for the private node's name) is used; None
        makes a private node in ``context``.
    :param server: the server node's full name, ``/sim_clock`` unless namespaced or renamed.
    :param user_id: the id to hold sync mode under; empty: the server assigns one.
    :param timeout_sec: seconds each call waits for the service and for its answer (``timeout``
        before; that name still works, with a DeprecationWarning).
    :param context: the rclpy context when no node is given; None: the default context
        (``rclpy.init()`` must have been called).
    :param retries: how many times a call safe to repeat (REPEATABLE) is asked again after a
        timeout; never stepped twice.
    :param time_step: deprecated (DeprecationWarning): the frame length, in seconds, that a
        ``with`` block of the client took sync mode with; use :meth:`sync_mode` instead.

    ``with SimClockClient(...) as clock:`` owns the client, as ``with Node(...)`` owns a node:
    the block's end closes it, and that is all. Sync mode is taken by :meth:`acquire` and given
    back by :meth:`release`, or held for a block by ``with clock.sync_mode(time_step=...):``,
    which also puts back what it found. Taking or giving back sync mode changes mode or sync:
    a reset (MORAI's rule), announced: time starts again from 0.

    Taking sync mode used to be what ``with SimClockClient()`` did. For one release a block
    that relies on that keeps working, with a DeprecationWarning that points to
    :meth:`sync_mode`: a client made with ``time_step=`` takes sync mode on entry, and any
    other, at its first step in the block if the server's sync is off (where a step would be
    refused); at the block's end it gives sync mode back and puts back what it found.
    """

    def __init__(self, node: Optional[Node] = None, *, server: str = DEFAULT_SERVER,
                 user_id: str = '', timeout_sec: float = DEFAULT_TIMEOUT,
                 context: Optional[Context] = None, time_step: Optional[float] = None,
                 retries: int = 2, timeout: Optional[float] = None):
        self.server = server.rstrip('/')
        self._interrupted = threading.Event()
        if time_step is not None:
            warnings.warn(
                'SimClockClient(time_step=) is deprecated: with SimClockClient() will only '
                'close the client; hold sync mode with: with client.sync_mode(time_step=...):',
                DeprecationWarning, stacklevel=2)
        #: The frame length the deprecated ``with`` takes sync mode with (None: the server's).
        self._time_step = time_step
        #: In a ``with`` block whose first step may still take sync mode the deprecated way.
        self._legacy_pending = False
        self.user_id = user_id
        #: Seconds each call waits for the service and for its answer.
        self.timeout_sec = renamed(timeout_sec, timeout, 'timeout', 'timeout_sec')
        if node is not None:
            context = node.context
        base = node.get_name() if node is not None else 'sim_clock_client'
        # A private node on a private executor: calls never depend on the caller's executor.
        # Without the process's arguments: a launch remap (-r __node:=NAME) would give it the
        # name of the caller's node, and the graph two nodes of one name.
        self._node = rclpy.create_node(
            f'{base}_sim_clock_client_{next(_instances)}', context=context,
            namespace=node.get_namespace() if node is not None else None,
            start_parameter_services=False, use_global_arguments=False)
        self._executor = SingleThreadedExecutor(context=self._node.context)
        self._executor.add_node(self._node)
        self._clients = {}
        self._held = False
        #: The server's state when the deprecated ``with`` took sync mode: what its exit puts
        #: back (None: it took none).
        self._found: Optional[Status] = None
        self._user_node = node
        self.retries = retries
        #: (frame, epoch) where this client's last step left time, while it holds sync mode:
        #: the base of the next step's target frame. None: ask ~/get_status first.
        self._known = None

    # -- sync mode ----------------------------------------------------------------------------

    def acquire(self, time_step: Optional[float] = None) -> str:
        """
        Take sync mode (switching to simulation with sync on if needed); return the user_id.

        :param time_step: frame length in seconds, a whole number of ms; None keeps the
            server's.
        :raises SimClockRefused: another user_id holds sync mode (``holder`` names it).
        """
        self._legacy_pending = False
        step_ms = 0
        if time_step is not None:
            step_ns = round(time_step * NS_PER_SEC)
            if (not math.isfinite(time_step) or step_ns <= 0 or step_ns % NS_PER_MS
                    or step_ns // NS_PER_MS > 2**32 - 1):
                raise ValueError(
                    f'time_step must be a positive whole number of milliseconds (in seconds), '
                    f'got {time_step!r}; set the time_step parameter for other values')
            step_ms = step_ns // NS_PER_MS
        response = self._call(SyncModeCmd, 'sync_mode_cmd', SyncModeCmd.Request(
            user_id=self.user_id, start_sync_mode=True, time_step=step_ms))
        if not response.result:
            raise SimClockRefused(self.server, 'sync mode', response.message, response.user_id)
        self.user_id = response.user_id
        self._held = True
        return self.user_id

    def release(self) -> None:
        """Give sync mode back (time resets and free-runs again)."""
        response = self._call(SyncModeCmd, 'sync_mode_cmd', SyncModeCmd.Request(
            user_id=self.user_id, start_sync_mode=False, time_step=0))
        self._held = False
        if not response.result:
            raise SimClockRefused(
                self.server, 'the release of sync mode', response.message, response.user_id)

    @contextlib.contextmanager
    def sync_mode(self, time_step: Optional[float] = None) -> Iterator['SimClockClient']:
        """
        Hold sync mode for a ``with`` block; at its end give it back and put back what it found.

        ``with clock.sync_mode(time_step=0.01):`` notes the server's state, takes sync mode
        (:meth:`acquire`) and yields this client. At the block's end, also when it raised, it
        releases sync mode and puts back the mode, sync and ``time_step`` it found (a server
        found with sync on gets it on again, with no holder). Each change of mode or sync is an
        announced reset: time starts again from 0. An error while putting back never hides
        the block's own exception. The client stays open.

        :param time_step: frame length in seconds, a whole number of ms; None keeps the
            server's.
        :raises SimClockRefused: another user_id holds sync mode (nothing changed).
        """
        found = self.status()
        self.acquire(time_step)
        try:
            yield self
        except BaseException:
            try:
                self._give_back(found)
            except SimClockError:
                pass  # the block's exception is the one to see
            raise
        self._give_back(found)

    def _give_back(self, found: Status) -> None:
        """Release sync mode, if held, and put back the mode, sync and time_step ``found``."""
        if not self._held:
            return
        self.release()
        now = self.status()
        if now.time_step_ns != found.time_step_ns:
            self.set_parameter('time_step', found.time_step_ns / NS_PER_SEC)
        if found.mode != now.mode:
            self.set_parameter('mode', found.mode)
        elif found.sync != now.sync and found.mode != 'real_time':
            self.set_sync(found.sync)

    def __enter__(self) -> 'SimClockClient':
        """Return this client; the block's end closes it (see the class for sync mode)."""
        if self._time_step is not None:
            self._take_sync_as_with_did(self.status(), stacklevel=3)
        else:
            self._legacy_pending = True
        return self

    def __exit__(self, exc_type, exc, traceback) -> bool:
        """
        Close the client, also when the block raised; never hide the block's exception.

        Where the block took sync mode the deprecated way (see the class), give it back and
        put back what it found first.
        """
        self._legacy_pending = False
        try:
            found, self._found = self._found, None
            if found is not None:
                self._give_back(found)
        except SimClockError:
            if exc_type is None:
                raise
        finally:
            self.close()
        return False

    def _take_sync_as_with_did(self, found: Status, stacklevel: int) -> None:
        """Take sync mode as ``with SimClockClient()`` did, warning that it is deprecated."""
        warnings.warn(
            'with SimClockClient() taking sync mode is deprecated: it will only close the '
            'client; hold sync mode with: with client.sync_mode(time_step=...):',
            DeprecationWarning, stacklevel=stacklevel)
        self.acquire(self._time_step)
        self._found = found

    def _before_step(self) -> None:
        """
        In a ``with`` block, at its first step: take sync mode the deprecated way if needed.

        Needed where this client holds no sync mode and the server's sync is off, so that
        the step would be refused: the block was written for a ``with`` that took sync mode.
        """
        if not self._legacy_pending:
            return
        self._legacy_pending = False
        if not self._held:
            found = self.status()
            if not found.sync:
                self._take_sync_as_with_did(found, stacklevel=4)

    # -- time ----------------------------------------------------------------------------------

    def step(self, n: int = 1) -> StepResult:
        """
        Advance ``n`` frames; return once the last new time is published (and finished).

        Finished: by the participants the frames were due for, if any are joined. Retry-safe:
        the request names the frame to reach and the epoch it expects, so a call asked again
        after a lost answer (up to ``retries`` times) never steps twice, and a reset in
        between is refused instead of stepped over.

        :raises SimClockLate: participants or gated outputs were late; the step stopped there.
        :raises SimClockRefused: not in sync mode, another user holds it, ``n`` is invalid, or
            time was reset since this client last looked.
        """
        self._before_step()
        self._check_whole(n, f'a step of {n}')
        if not 1 <= n <= MAX_STEPS_PER_CALL:
            raise SimClockRefused(self.server, f'a step of {n}',
                                  f'steps must be between 1 and {MAX_STEPS_PER_CALL}, got {n}')
        frame, epoch = self._where()
        return self._step_to(frame + n, epoch, f'a step of {n}')

    def step_to(self, frame: int) -> StepResult:
        """
        Step until the frame counter is ``frame`` (nothing if it is there or past); retry-safe.

        More than 10^6 frames ahead goes in several calls, each retry-safe.
        """
        self._before_step()
        self._check_whole(frame, f'a step to frame {frame}')
        current, epoch = self._where()
        if frame <= current:
            return StepResult(current, self.status().time_ns, epoch)
        return self._step_through(current, frame, epoch)

    def _step_through(self, current: int, frame: int, epoch: int) -> StepResult:
        """Step from frame ``current`` to ``frame`` in epoch ``epoch``, 10^6 frames a call."""
        result = None
        while current < frame:
            current = min(frame, current + MAX_STEPS_PER_CALL)
            result = self._step_to(current, epoch, f'a step to frame {current}')
        return result

    def _check_whole(self, number, what: str) -> None:
        try:
            check_whole_steps(number)
        except Refused as refused:
            raise SimClockRefused(self.server, what, refused.reason) from None

    def _where(self) -> tuple:
        """Return (frame, epoch) where time is: from the last step while holding, else asked."""
        if self._known is None or not self._held:
            status = self.status()
            self._known = (status.frame, status.epoch)
        return self._known

    def _step_to(self, target: int, epoch: int, what: str) -> StepResult:
        request = Step.Request(user_id=self.user_id, steps=1, target_frame=target,
                               check_epoch=True, epoch=epoch)
        try:
            response = self._call(Step, 'step', request)
        except SimClockError:
            self._known = None  # what the step did is not known: the next one asks
            raise
        result = StepResult(response.frame, join_ns(response.clock), response.epoch,
                            tuple(response.unacknowledged))
        moved = response.success or response.late
        self._known = (response.frame, response.epoch) if moved else None
        if response.late:
            raise SimClockLate(self.server, what, response.message, response.late, result)
        if not response.success:
            raise SimClockRefused(self.server, what, response.message)
        return result

    def step_until(self, time_ns: int) -> StepResult:
        """
        Step whole frames until time reaches ``time_ns`` (integer ns, /clock) or just passes it.

        As Gazebo's ``run_to_sim_time``: the frames needed are counted once, from where time
        is, and stepped to that frame number in the epoch seen then, so a call asked again
        (after a lost answer) never passes the first frame at or after ``time_ns``, and a
        reset in between is refused. A time off the frame grid ends at the first frame after
        it; a time reached already steps nothing.
        """
        self._before_step()
        status = self.status()
        frames = frames_until(status.time_ns, status.time_step_ns, time_ns)
        if frames == 0:
            return StepResult(status.frame, status.time_ns, status.epoch)
        return self._step_through(status.frame, status.frame + frames, status.epoch)

    def status(self) -> Status:
        """Return the server's state."""
        return status_from_response(
            self._call(GetStatus, 'get_status', GetStatus.Request()))

    def frame_events(self, after: int = 0, max_events: int = 0) -> FrameEvents:
        """
        Return the server's frame timeline after sequence ``after`` (``~/get_frame_events``).

        ``max_events``: at most so many, the oldest first (0: all kept). Changes nothing.
        """
        r = self._call(GetFrameEvents, 'get_frame_events',
                       GetFrameEvents.Request(after=after, max_events=max_events))
        return FrameEvents(
            events=tuple(FrameEvent(
                sequence=e.sequence, kind=e.kind, epoch=e.epoch, sim_ns=e.sim_ns,
                start_ns=e.start_ns, end_ns=e.end_ns, name=e.name, count=e.count,
                success=e.success, detail=e.detail) for e in r.events),
            dropped=r.dropped, last_sequence=r.last_sequence, capacity=r.capacity,
            now_ns=r.now_ns)

    def seek(self, time_ns: int) -> SeekResult:
        """
        Go to /clock time ``time_ns`` (integer ns) within a bag player's bag: a reset.

        Asked once (asked again, a slow first seek would reset a second time), waiting as long
        as the calls safe to repeat wait in all.

        :raises SimClockRefused: the time is outside the bag (nothing changed).
        """
        request = Seek.Request()
        request.time.sec, request.time.nanosec = split_ns(time_ns)
        response = self._call(Seek, 'seek', request, patience=1 + self.retries)
        if not response.success:
            raise SimClockRefused(self.server, f'a seek to {time_ns} ns', response.message)
        return SeekResult(join_ns(response.clock), response.epoch)

    def progress(self) -> ProgressReport:
        """Return where a bag player's replay is (``~/get_progress``; changes nothing)."""
        r = self._call(GetProgress, 'get_progress', GetProgress.Request())
        return ProgressReport(
            bag_time_ns=join_ns(r.bag_time), start_ns=join_ns(r.start), end_ns=join_ns(r.end),
            percent=r.percent, messages_out=r.messages_out, messages_total=r.messages_total,
            rate=r.rate, time_left=r.time_left, epoch=r.epoch, playback=Playback(r.playback),
            messages_in_bag=r.messages_in_bag, messages_left_out=r.messages_left_out,
            left_out=r.left_out)

    def pause(self) -> ControlResult:
        """Freeze real-time and free-run time; return the server's words."""
        return ControlResult(self._trigger('pause'))

    def resume(self) -> ControlResult:
        """Unfreeze time; return the server's words."""
        return ControlResult(self._trigger('resume'))

    def reset(self) -> ResetResult:
        """
        Set time and frame to zero (epoch + 1); mode, sync and holder stay.

        Return the server's words and the epoch after the reset (as ``~/get_status`` reports
        it right after). Never asked twice (a slow first request would reset again): it waits
        for the answer as long as the calls safe to repeat wait in all (``timeout_sec`` times
        ``1 + retries``); then, if a reset happened since it asked the epoch, the answer was
        lost and the reset is taken as done (``answer_lost``). A timeout still leaves open
        whether the reset happens later.
        """
        epoch = self.status().epoch
        try:
            message = self._trigger('reset', patience=1 + self.retries)
        except SimClockTimeout:
            now = self.status().epoch
            if now == epoch:
                raise
            return ResetResult(f'time reset (epoch {now}); its answer was lost', now,
                               answer_lost=True)
        return ResetResult(message, self.status().epoch)

    def set_sync(self, on: bool) -> ControlResult:
        """Operator switch: sync on with no holder, or off releasing any holder."""
        response = self._call(SetBool, 'set_sync', SetBool.Request(data=on))
        if not response.success:
            raise SimClockRefused(self.server, f'set_sync {on}', response.message)
        return ControlResult(response.message)

    def join(self, name: str, period_ns: int = 0, node: str = '', next_frame: bool = False,
             topics=()) -> int:
        """
        Join as a participant: frames due for ``name`` wait until it says done (``~/done``).

        :param period_ns: simulated time between its frames; 0: every frame.
        :param node: its node's full name, so that it is dropped when that node goes.
        :param next_frame: it takes what participants published during a frame at the next
            one (doc/frames.md); ``topics``: then, those it publishes on.
        :return: the frame counter now; the next frame published is its first.
        """
        # The link makes the leave's client before the join's (ParticipantLink says why), in
        # this client's own cache, where the calls below find them.
        ParticipantLink(self._node, self.server, done=False, clients=self._clients)
        response = self._call(Join, 'join', join_request(
            name, node=node, period_ns=period_ns, next_frame=next_frame, topics=topics))
        if not response.success:
            raise SimClockRefused(self.server, f'the join of {name!r}', response.message)
        return response.frame

    def leave(self, name: str) -> ControlResult:
        """
        Stop taking part as ``name``; return the server's words.

        A server that goes away while the leave waits for its answer (its service leaves the
        graph: it stopped) ends the wait at once with :class:`SimClockServerGone`, as every
        call does, instead of at the timeout: there is nothing left to leave.
        """
        response = self._call(Leave, 'leave', leave_request(name))
        if not response.success:
            raise SimClockRefused(self.server, f'the leave of {name!r}', response.message)
        return ControlResult(response.message)

    def set_parameter(self, name: str, value) -> None:
        """Set one server parameter, as ``ros2 param set`` does."""
        request = SetParameters.Request(
            parameters=[Parameter(name, value=value).to_parameter_msg()])
        result = self._call(SetParameters, 'set_parameters', request).results[0]
        if not result.successful:
            raise SimClockRefused(self.server, f'{name} = {value!r}', result.reason)

    def on_reset(self, callback: Callable[[ResetEvent], None]):
        """
        Call ``callback`` with a :class:`ResetEvent` at every reset of the server's time.

        The subscription (``~/resets``, reliable, transient local: the last reset before it
        started comes too; deep enough that resets back to back each come) is made on the node
        given to this client, so its executor runs the callback; without one, on the client's
        private node, whose executor runs only during this client's calls. Return the
        subscription (destroy it to stop).
        """
        node = self._user_node or self._node
        return node.create_subscription(
            Reset, f'{self.server}/resets', lambda msg: callback(ResetEvent.from_msg(msg)),
            RESET_READER_QOS)

    timeout = renamed_attribute('timeout', 'timeout_sec')

    def spin_until(self, condition: Callable[[], bool], timeout_sec: Optional[float] = None,
                   *, timeout: Optional[float] = None) -> None:
        """
        Run this client's callbacks (on_reset without a node) until ``condition()`` is true.

        Raise :class:`SimClockTimeout` after ``timeout_sec`` s (None: wait as long as it takes).
        """
        timeout_sec = renamed(timeout_sec, timeout, 'timeout', 'timeout_sec')
        deadline = math.inf if timeout_sec is None else time.monotonic() + timeout_sec
        self._spin_until(condition, deadline, f'not done within {timeout_sec} s')

    def wait_for_services(self, names, timeout_sec: Optional[float] = None, *,
                          timeout: Optional[float] = None) -> list:
        """
        Wait until the server serves every service of ``names`` (``'step'``, ``'seek'``, ...).

        Return those that did not appear within ``timeout_sec`` s (None: the client's
        :attr:`timeout_sec`), in the order given; an empty list once all are there.
        """
        timeout_sec = renamed(timeout_sec, timeout, 'timeout', 'timeout_sec')
        clients = {name: self._client_for(SERVICE_TYPES[name], name) for name in names}
        deadline = time.monotonic() + (self.timeout_sec if timeout_sec is None else timeout_sec)
        try:
            self._spin_until(lambda: all(c.service_is_ready() for c in clients.values()),
                             deadline, '')
        except SimClockTimeout:
            pass
        return [name for name, client in clients.items() if not client.service_is_ready()]

    # -- plumbing ------------------------------------------------------------------------------

    def interrupt(self) -> None:
        """
        End the call under way in another thread, and every later one, at once.

        Each raises :class:`SimClockInterrupted` within a tenth of a second; what the server
        did of it is not known. For a program that stops (a panel's Ctrl-C) while a thread of
        it waits on a long step: that thread then ends, and :meth:`close` can follow.
        """
        self._interrupted.set()

    def close(self) -> None:
        """Destroy the private node; the client cannot be used afterwards."""
        if self._node is not None:
            self._executor.remove_node(self._node)
            self._executor.shutdown(timeout_sec=0)
            self._node.destroy_node()
            self._node = None

    def _trigger(self, name: str, patience: int = 1) -> str:
        response = self._call(Trigger, name, Trigger.Request(), patience)
        if not response.success:
            raise SimClockRefused(self.server, name, response.message)
        return response.message

    def _call(self, srv_type, name: str, request, patience: int = 1):
        for attempt in itertools.count():
            try:
                return self._call_once(srv_type, name, request, patience * self.timeout_sec)
            except SimClockNoService:
                raise  # asked again, a service that never appeared only makes the wait longer
            except SimClockTimeout:
                if name not in REPEATABLE or attempt >= self.retries:
                    raise

    def _client_for(self, srv_type, name: str):
        """Return the client of service ``name``, made on first use."""
        client = self._clients.get(name)
        if client is None:
            # As deep as the server's services: an answer is not lost while the caller is busy.
            client = self._node.create_client(
                srv_type, f'{self.server}/{name}', qos_profile=SERVICE_QOS)
            self._clients[name] = client
        return client

    def _call_once(self, srv_type, name: str, request, timeout: float):
        if self._node is None:
            raise SimClockClosed('this SimClockClient was closed')
        if name not in ('step', 'get_status'):
            self._known = None  # it may move time: the next step asks where time is
        full_name = f'{self.server}/{name}'
        client = self._client_for(srv_type, name)
        deadline = time.monotonic() + timeout
        if not client.service_is_ready():
            try:
                self._spin_until(client.service_is_ready, deadline, (
                    f'service {full_name} did not appear within {timeout} s: is the clock '
                    f'server running, on this ROS_DOMAIN_ID, under that name?'))
            except SimClockTimeout as timeout_error:
                raise SimClockNoService(str(timeout_error)) from None
        future = client.call_async(request)

        def answered() -> bool:
            # A server that stops (Ctrl-C, under ros2 launch with its participants) takes its
            # service off the graph: the call ends then, not at the timeout, and is not retried.
            return future.done() or not client.service_is_ready()
        try:
            self._spin_until(answered, deadline, (
                f'no answer from {full_name} within {timeout} s'))
        except SimClockTimeout:
            client.remove_pending_request(future)
            raise
        if not future.done():
            client.remove_pending_request(future)
            raise SimClockServerGone(
                f'the server {self.server} went away during the {name} call: its service '
                f'{full_name} left the graph before it answered (the server stopped or was '
                'killed)')
        return future.result()

    def _spin_until(self, condition, deadline: float, message: str) -> None:
        while not condition():
            if self._interrupted.is_set():
                raise SimClockInterrupted(
                    f'a call to {self.server} was interrupted before it ended')
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SimClockTimeout(message)
            self._executor.spin_once(timeout_sec=min(remaining, 0.1))
