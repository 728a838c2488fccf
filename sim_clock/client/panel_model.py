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
What the control panel shows and what it may do, without ROS and without the web.

The panel (``simclock panel``, :mod:`sim_clock.client.panel`) puts out two kinds of update:
a *state* after each poll of the server (what ``simclock top`` reads, as often), and a
*tick* each time ``/clock`` moved (at most :data:`TICKS_PER_SEC` a second). This module makes
both from the client's results, parses what a page asks (:func:`parse_command`) and says who
may ask it (:class:`Access`). Times travel as decimal strings of integer nanoseconds: a
browser's numbers lose digits past 2^53.
"""

from collections import deque
from dataclasses import dataclass
import hmac
import ipaddress
from typing import Deque
from typing import List
from typing import Optional
from typing import Sequence
from typing import Tuple
from urllib.parse import urlsplit

from sim_clock.client.top import holding_line
from sim_clock.client.top import pace_line
from sim_clock.core.frame_stats import holders
from sim_clock.core.rules import MAX_STEPS_PER_CALL
from sim_clock.core.units import format_seconds
from sim_clock.core.units import NS_PER_SEC

#: The most ticks a second the panel pushes while /clock moves (each page gets every one).
TICKS_PER_SEC = 20
#: The real-time factor plot: the last PLOT_SPAN_NS of wall time, one point per PLOT_STEP_NS.
PLOT_SPAN_NS = 30 * NS_PER_SEC
PLOT_STEP_NS = NS_PER_SEC // 2
#: How many resets the page lists, newest first.
RESETS_SHOWN = 10
#: What a page may ask, and the field each takes (None: none).
ACTIONS = {'pause': None, 'resume': None, 'step': 'n', 'step_until': 'time_ns',
           'rate': 'factor', 'sync': 'on', 'seek': 'time_ns'}


class BadCommand(ValueError):
    """A page's request that is not a command: what was wrong, and what is allowed."""


@dataclass(frozen=True)
class Command:
    """One thing a page asks the server: ``action`` (of :data:`ACTIONS`) and its value."""

    action: str
    value: object = None


def parse_command(request) -> Command:
    """
    Return the command of a page's request (a JSON object), or raise :class:`BadCommand`.

    ``step``: ``n``, a whole number of frames from 1 to 10^6; ``step_until`` and ``seek``:
    ``time_ns``, a /clock time in integer ns (a decimal string or a whole number); ``rate``:
    ``factor``, a number (the server says which it takes); ``sync``: ``on``, true or false.
    """
    if not isinstance(request, dict):
        raise BadCommand(f'a command is a JSON object, got {type(request).__name__}')
    action = request.get('action')
    if action not in ACTIONS:
        raise BadCommand(f'unknown action {action!r}; allowed: {", ".join(sorted(ACTIONS))}')
    field = ACTIONS[action]
    if field is None:
        return Command(action)
    if field not in request:
        raise BadCommand(f'{action} needs {field!r}')
    value = request[field]
    if action == 'step':
        if isinstance(value, bool) or not isinstance(value, int) or \
                not 1 <= value <= MAX_STEPS_PER_CALL:
            raise BadCommand(f'step needs n, a whole number of frames from 1 to '
                             f'{MAX_STEPS_PER_CALL}, got {value!r}')
    elif field == 'time_ns':
        value = _nanoseconds(action, value)
    elif action == 'rate':
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise BadCommand(f'rate needs factor, a number, got {value!r}')
        value = float(value)
    elif not isinstance(value, bool):
        raise BadCommand(f'sync needs on, true or false, got {value!r}')
    return Command(action, value)


def _nanoseconds(action: str, value) -> int:
    """Return a /clock time given as a decimal string or a whole number of ns (>= 0)."""
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise BadCommand(f'{action} needs time_ns, a /clock time in whole ns (0 or more, as a '
                     f'decimal string), got {value!r}')


class Access:
    """
    Who may press the buttons: nobody (read-only), anyone who can open the page, or a token.

    ``token`` None: every page that connects may control (served on loopback only). A token
    (served to others) must come with the page's connection, as the URL printed carries it.
    """

    def __init__(self, read_only: bool = False, token: Optional[str] = None):
        self.read_only = read_only
        self.token = token

    def may_control(self, given: Optional[str]) -> bool:
        """Whether a page that gave ``given`` as its token may send commands."""
        if self.read_only:
            return False
        if self.token is None:
            return True
        return hmac.compare_digest((given or '').encode(), self.token.encode())

    def why_not(self) -> str:
        """Say why a page may not control, in words for the page."""
        if self.read_only:
            return 'this panel is read-only (simclock panel --read-only)'
        return 'read-only: the URL has no valid token (the one simclock panel printed)'


#: The names of this host that every panel answers to.
LOOPBACK_NAMES = ('localhost',)
#: The addresses a panel "on this host only" may be served on.
LOOPBACK_HOSTS = ('127.0.0.1', 'localhost', '::1')


def _host_name(netloc: Optional[str]) -> Optional[str]:
    """Return the host of ``name[:port]`` or ``[v6]:port``, lowercased, or None if malformed."""
    if not netloc:
        return None
    try:
        name = urlsplit('//' + netloc).hostname
    except ValueError:
        return None
    return name.rstrip('.') if name else None


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class Hosts:
    """
    The names a panel answers to, so that a page of another site cannot drive it.

    DNS rebinding: a page of ``evil.example`` whose name is made to resolve to 127.0.0.1 reaches
    the panel from the user's browser, with ``Host`` and ``Origin`` of ``evil.example``. So a
    request is served only if its ``Host`` names this panel: an IP address (a rebound page
    always has a name), the loopback names, and, served beyond loopback (``served``), that
    address and the host's own names (``own_names``); plus the names the user allows
    (``simclock panel --allow-host``, e.g. a reverse proxy's). A WebSocket that a browser opens
    carries an ``Origin``, which must be ``http://`` and the request's own ``Host``: a page of
    another port, another scheme or another name may not connect.
    """

    def __init__(self, served: str, own_names: Sequence[str] = (),
                 allowed: Sequence[str] = ()):
        names = set(LOOPBACK_NAMES)
        if served not in LOOPBACK_HOSTS:
            names.update([served, *own_names])
        names.update(allowed)
        self.names = frozenset(filter(None, (_host_name(name) for name in names)))

    def allows_host(self, host: Optional[str]) -> bool:
        """Whether a request whose ``Host`` header is ``host`` is for this panel."""
        name = _host_name(host)
        return name is not None and (name in self.names or _is_address(name))

    def allows_origin(self, origin: Optional[str], host: Optional[str]) -> bool:
        """Whether a WebSocket with ``origin`` (None: not from a browser) may connect."""
        if origin is None:
            return True
        parts = origin.split('://', 1)
        return (len(parts) == 2 and parts[0].lower() == 'http' and host is not None
                and parts[1].lower() == host.lower() and self.allows_host(parts[1]))

    def why_not(self, host: Optional[str]) -> str:
        """Say why a request for ``host`` is refused, and how to allow a name."""
        return (f'{host or "a request without a Host"} is not a name of this panel (it answers '
                f'to its IP addresses and {", ".join(sorted(self.names))}); '
                'simclock panel --allow-host NAME adds a name')


class PaceHistory:
    """
    The real-time factor over the last seconds, from /clock as it arrives.

    Each point is simulated over wall time between two samples PLOT_STEP_NS or more apart;
    a sample whose time went back (a reset) starts the measure again, and no point spans it.
    """

    def __init__(self, span_ns: int = PLOT_SPAN_NS, step_ns: int = PLOT_STEP_NS):
        self._span_ns, self._step_ns = span_ns, step_ns
        self._last: Optional[Tuple[int, int]] = None
        #: (wall ns at the end of the point, factor)
        self._points: Deque[Tuple[int, float]] = deque()

    def add(self, wall_ns: int, sim_ns: int) -> None:
        """Take a /clock time received at steady time ``wall_ns``."""
        last = self._last
        if last is None or sim_ns < last[1]:
            self._last = (wall_ns, sim_ns)
            return
        if wall_ns - last[0] >= self._step_ns:
            self._points.append((wall_ns, (sim_ns - last[1]) / (wall_ns - last[0])))
            self._last = (wall_ns, sim_ns)
        while self._points and self._points[0][0] < wall_ns - self._span_ns:
            self._points.popleft()

    def points(self, now_ns: int) -> List[List[float]]:
        """Return [seconds before now, factor] for each point, oldest first."""
        return [[round((now_ns - wall) / NS_PER_SEC, 3), round(factor, 4)]
                for wall, factor in self._points]


def mode_text(status) -> str:
    """Return the mode in words: sync on with its holder, free run with its factor, real time."""
    if status.mode == 'real_time':
        text = 'real time'
    elif status.sync:
        text = 'simulation, sync on' + (f', held by {status.owner!r}' if status.owner else '')
        text += f' (free run would go {_pace_words(status.real_time_factor)})'
    elif status.real_time_factor == 0:
        text = 'simulation, free run as fast as possible'
    else:
        text = f'simulation, free run at {status.real_time_factor:g}x'
    return text + (', paused' if status.paused else '')


def _pace_words(factor: float) -> str:
    return 'as fast as possible' if factor == 0 else f'at {factor:g}x'


def sync_warnings(status) -> Tuple[str, str]:
    """
    Return what turning sync on, and what turning it off, will do now, in words for the page.

    A change of sync is a reset (MORAI's rule); none is made where sync already is so.
    """
    back = 'time goes back to the start'
    if status.sync:
        on = 'sync is already on: nothing changes'
    else:
        on = (f'sync on: {back}' + (', in simulation mode,' if status.mode == 'real_time' else '')
              + ' and advances only by steps')
    if not status.sync:
        off = 'sync is already off: nothing changes'
    else:
        off = (f'sync off: {back} and runs free {_pace_words(status.real_time_factor)}'
               + (f'; {status.owner!r} loses the hold' if status.owner else ''))
    return on, off


def state(status, events: Sequence, now_ns: int, window_ns: int, resets: Sequence,
          bag: Optional[dict]) -> dict:
    """
    Return the state a page shows after a poll, as ``simclock top`` reads it.

    ``status`` and the frame ``events`` kept (:class:`~sim_clock.client.top.RecentEvents`:
    the last ``window_ns`` of the server's steady clock at ``now_ns``, and the frame still
    held), the ``resets`` seen (newest last), the bag's span (:func:`bag_span`) or None.
    """
    recent = [event for event in events if event.end_ns > now_ns - window_ns]
    found = holders(recent)
    return {
        'kind': 'state',
        'frame': status.frame,
        'time_ns': str(status.time_ns),
        'time_text': format_seconds(status.time_ns),
        'epoch': status.epoch,
        'mode': status.mode,
        'sync': status.sync,
        'owner': status.owner,
        'paused': status.paused,
        'real_time_factor': status.real_time_factor,
        'time_step_ns': str(status.time_step_ns),
        'mode_text': mode_text(status),
        'sync_warnings': dict(zip(('on', 'off'), sync_warnings(status))),
        'pace': pace_line(status, recent, window_ns),
        'holding': holding_line(status, events, now_ns),
        'holders': [{'name': holder.name, 'kind': holder.kind, 'frames': len(holder.holds_ns),
                     'p50_ms': holder.p50_ns / 1e6, 'p99_ms': holder.p99_ns / 1e6,
                     'max_ms': holder.max_ns / 1e6, 'missed': holder.missed}
                    for holder in found],
        'resets': [reset_entry(reset) for reset in list(resets)[-RESETS_SHOWN:]][::-1],
        'bag': bag,
    }


def reset_entry(reset) -> dict:
    """Return a reset (a :class:`~sim_clock.client.results.ResetEvent`) as a page lists it."""
    return {'epoch': reset.epoch, 'cause': reset.cause,
            'before': format_seconds(reset.time_before_ns),
            'after': format_seconds(reset.time_after_ns)}


def bag_span(progress, clock_ns: int) -> dict:
    """
    Return a bag player's span in /clock time, from its progress read at /clock ``clock_ns``.

    /clock is the bag's time, or that less the bag's first stamp (``--start-at-zero``): the
    one nearer ``clock_ns`` is the player's (the two are the bag's start apart, years).
    """
    shifted = progress.bag_time_ns - progress.start_ns
    offset = 0 if abs(clock_ns - progress.bag_time_ns) <= abs(clock_ns - shifted) \
        else -progress.start_ns
    return {'start_ns': str(progress.start_ns + offset), 'end_ns': str(progress.end_ns + offset),
            'messages_total': progress.messages_total}


def tick(clock_ns: int, pace: List[List[float]]) -> dict:
    """Return a tick: /clock's time now, and the real-time factor plot."""
    return {'kind': 'tick', 'clock_ns': str(clock_ns), 'clock_text': format_seconds(clock_ns),
            'pace': pace}
