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
``simclock panel``: one page in the browser that shows the clock live and presses its buttons.

Three parts, each on a thread of its own, meet here:

- :class:`Watch` (ROS): a best-effort ``/clock`` subscription (it never slows a step: flow
  control waits for reliable readers only) and ``~/resets``; while a page is open, the
  server's status and frame events every ``interval`` s, as ``simclock top`` reads them, once
  for all pages. It hands out states and ticks (:mod:`sim_clock.client.panel_model`), and
  says when the server stopped answering and when it answers again.
- :class:`Control` (ROS): carries out the pages' commands in turn on a client of its own, so
  a long step never stops the live view.
- the web server (aiohttp, in the main thread's asyncio loop): the page at ``/`` and its
  WebSocket at ``/ws``, which pushes every update to every open page and takes commands from
  those allowed to send them (:class:`~sim_clock.client.panel_model.Access`).
"""

import asyncio
import json
import os
import queue
import secrets
import signal
import socket
import threading
import time
from typing import Callable
from typing import Dict
from typing import List
from typing import Optional
from typing import Sequence
from typing import Set

from aiohttp import web
from aiohttp import WSCloseCode
from aiohttp import WSMsgType
import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import qos_profile_sensor_data
from rosgraph_msgs.msg import Clock
from sim_clock.client.api import SimClockClient
from sim_clock.client.cli_format import format_step
from sim_clock.client.panel_model import Access
from sim_clock.client.panel_model import BadCommand
from sim_clock.client.panel_model import bag_span
from sim_clock.client.panel_model import Command
from sim_clock.client.panel_model import Hosts
from sim_clock.client.panel_model import LOOPBACK_HOSTS
from sim_clock.client.panel_model import PaceHistory
from sim_clock.client.panel_model import parse_command
from sim_clock.client.panel_model import state
from sim_clock.client.panel_model import tick
from sim_clock.client.panel_model import TICKS_PER_SEC
from sim_clock.client.panel_page import PAGE
from sim_clock.client.results import ResetEvent
from sim_clock.client.results import SimClockError
from sim_clock.client.results import SimClockInterrupted
from sim_clock.client.results import SimClockLate
from sim_clock.client.results import SimClockRefused
from sim_clock.client.top import poll
from sim_clock.client.top import RecentEvents
from sim_clock.core.units import NS_PER_SEC

#: The port served unless --port says (0: any free port).
DEFAULT_PORT = 8765
#: Updates a page has not taken yet, at most: a page that lags loses the oldest.
OUTBOX = 64
#: How long the watch spins between looks at its timers (s).
SPIN_S = 0.01
#: A poll the server has not answered within this (s) fails; the pages are told, at the
#: latest one interval later, that the server stopped answering.
POLL_TIMEOUT_S = 1.2
#: How many resets the watch keeps for the pages (by epoch).
RESETS_KEPT = 100


class Watch(threading.Thread):
    """
    What the pages see: /clock and resets as they come, and a poll of the server per interval.

    ``publish`` is given each update (a dict of :mod:`~sim_clock.client.panel_model`), from
    this thread. It polls only while ``pages_open`` is set, or until a first state is known
    (so that a page that opens is sent one at once): a panel no page looks at reads nothing
    of the server. A poll not answered within :data:`POLL_TIMEOUT_S` (or whose server left
    the graph) is a ``down`` update, repeated at each poll with how long the server has been
    silent; the first poll answered after that is an ``up`` update, and what the pages knew of
    the silent server (its resets, frame events, bag) is forgotten.
    """

    def __init__(self, context, server: str, interval_s: float, window_ns: int,
                 publish: Callable[[dict], None], pages_open: threading.Event,
                 timeout: float):
        super().__init__(name='sim_clock panel watch', daemon=True)
        self._publish, self._pages_open = publish, pages_open
        self._interval_ns = int(interval_s * NS_PER_SEC)
        self._window_ns = window_ns
        self._node = rclpy.create_node(f'sim_clock_panel_{os.getpid()}', context=context,
                                       start_parameter_services=False,
                                       use_global_arguments=False)
        self._executor = SingleThreadedExecutor(context=context)
        self._executor.add_node(self._node)
        self._client = SimClockClient(self._node, server=server, retries=0,
                                      timeout_sec=min(timeout, POLL_TIMEOUT_S))
        self._recent = RecentEvents(window_ns)
        #: epoch -> the reset, of the server that answers now.
        self._resets: Dict[int, ResetEvent] = {}
        #: The steady time of the last answer; whether the server is silent since.
        self._answered_ns = time.monotonic_ns()
        self._down = False
        self._pace = PaceHistory()
        self._clock_ns: Optional[int] = None
        self._clock_changed = False
        self._bag: Optional[dict] = None
        self._bag_known = False
        self._stopping = threading.Event()
        #: The last state and tick, for a page that opens between two of them.
        self.last_state: Optional[dict] = None
        self.last_tick: Optional[dict] = None
        self._node.create_subscription(Clock, '/clock', self._on_clock, qos_profile_sensor_data)
        self._client.on_reset(self._on_reset)

    def _on_reset(self, reset: ResetEvent) -> None:
        # By epoch: a reset that comes again (a late joiner's copy) is listed once.
        self._resets[reset.epoch] = reset
        if len(self._resets) > RESETS_KEPT:
            del self._resets[min(self._resets)]

    def _on_clock(self, msg: Clock) -> None:
        clock_ns = msg.clock.sec * NS_PER_SEC + msg.clock.nanosec
        self._pace.add(time.monotonic_ns(), clock_ns)
        if clock_ns != self._clock_ns:
            self._clock_ns, self._clock_changed = clock_ns, True

    def run(self) -> None:
        next_poll = next_tick = 0
        tick_ns = NS_PER_SEC // TICKS_PER_SEC
        try:
            while not self._stopping.is_set():
                self._executor.spin_once(timeout_sec=SPIN_S)
                now = time.monotonic_ns()
                if self._clock_changed and now >= next_tick:
                    self._clock_changed, next_tick = False, now + tick_ns
                    self.last_tick = tick(self._clock_ns, self._pace.points(now))
                    self._publish(self.last_tick)
                wanted = self._pages_open.is_set() or self.last_state is None
                if wanted and now >= next_poll:
                    next_poll = now + self._interval_ns
                    self._poll()
        except ExternalShutdownException:
            pass  # Ctrl-C: the context is shut down

    def _poll(self) -> None:
        """Read the status and the frame events (as top does); publish the state."""
        try:
            status = self._client.status()
            poll(self._client, self._recent)
            if not self._bag_known:
                self._bag_known = True
                if not self._client.wait_for_services(['get_progress'], 0):
                    self._bag = bag_span(self._client.progress(), status.time_ns)
        except SimClockInterrupted:
            return
        except SimClockError as error:
            self._silent(error)
            return
        self._answered_ns = time.monotonic_ns()
        if self._down:
            self._down = False
            self._publish({'kind': 'up'})
        self.last_state = state(status, self._recent.events, self._recent.now_ns,
                                self._window_ns, [self._resets[e] for e in sorted(self._resets)],
                                self._bag)
        self._publish(self.last_state)

    def _silent(self, error: SimClockError) -> None:
        """Tell the pages the server does not answer; forget what they knew of it."""
        if not self._down and self.last_state is not None:
            self._down = True
            self._resets.clear()
            self._recent = RecentEvents(self._window_ns)
            self._bag, self._bag_known = None, False
        silent_ms = (time.monotonic_ns() - self._answered_ns) // 1_000_000
        update = {'kind': 'down' if self._down else 'waiting', 'silent_ms': silent_ms,
                  'message': str(error)}
        self._publish(update)

    def stop(self) -> None:
        """End the loop, then the client and the node (once; started or not)."""
        self._stopping.set()
        self._client.interrupt()
        if self.ident is not None:
            self.join(timeout=5)
        if self._node is not None:
            self._client.close()
            self._executor.shutdown(timeout_sec=0)
            self._node.destroy_node()
            self._node = None


class Control(threading.Thread):
    """The pages' commands, one at a time, on a client of its own; each answer to its page."""

    def __init__(self, context, server: str, timeout: float):
        super().__init__(name='sim_clock panel control', daemon=True)
        self._client = SimClockClient(context=context, server=server, timeout_sec=timeout)
        self._queue: 'queue.Queue' = queue.Queue()

    def submit(self, command: Command, answer: Callable[[bool, str], None]) -> None:
        """Carry out ``command`` after those before it; ``answer(ok, message)`` when done."""
        self._queue.put((command, answer))

    def run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            command, answer = item
            try:
                message = self._carry_out(command)
                ok = True
            except (SimClockRefused, SimClockLate) as not_done:
                ok, message = False, not_done.reason
            except SimClockError as error:
                ok, message = False, str(error)
            except ExternalShutdownException:
                return
            answer(ok, message)

    def _carry_out(self, command: Command) -> str:
        client, value = self._client, command.value
        if command.action == 'pause':
            return client.pause().message
        if command.action == 'resume':
            return client.resume().message
        if command.action == 'step':
            return 'stepped to ' + format_step(client.step(value))
        if command.action == 'step_until':
            return 'stepped to ' + format_step(client.step_until(value))
        if command.action == 'rate':
            client.set_parameter('real_time_factor', value)
            return f'real_time_factor set to {value:g}'
        if command.action == 'sync':
            return client.set_sync(value).message
        result = client.seek(value)
        return f'sought to {result.time_ns} ns (epoch {result.epoch})'

    def stop(self) -> None:
        """End the loop, the command under way interrupted, then the client (started or not)."""
        self._client.interrupt()
        self._queue.put(None)
        if self.ident is not None:
            self.join(timeout=5)
        self._client.close()


class Pages:
    """The open pages: each update to every one, latest first when a page lags."""

    def __init__(self, loop: asyncio.AbstractEventLoop, pages_open: threading.Event):
        self._loop = loop
        self._pages_open = pages_open
        self._outboxes: Set[asyncio.Queue] = set()

    def publish(self, update: dict) -> None:
        """Send ``update`` to every page (from any thread); nothing once the panel stopped."""
        text = json.dumps(update)
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._send_all, text)

    def _send_all(self, text: str) -> None:
        for outbox in self._outboxes:
            _put_latest(outbox, text)

    def opened(self) -> asyncio.Queue:
        """Return the outbox of a page that opened."""
        outbox: asyncio.Queue = asyncio.Queue(maxsize=OUTBOX)
        self._outboxes.add(outbox)
        self._pages_open.set()
        return outbox

    def closed(self, outbox: asyncio.Queue) -> None:
        """Forget a page that closed; with none left, the watch stops polling."""
        self._outboxes.discard(outbox)
        if not self._outboxes:
            self._pages_open.clear()


def _put_latest(outbox: asyncio.Queue, text: str) -> None:
    """Queue ``text``; a full outbox lets its oldest update go."""
    if outbox.full():
        outbox.get_nowait()
    outbox.put_nowait(text)


def make_app(pages: Pages, access: Access, control: Control, watch, server: str,
             hosts: Hosts):
    """Return the aiohttp application: the page, and the WebSocket of its updates and commands."""
    async def page(request):
        # No other site may show the page in a frame of its own and lead clicks onto it.
        return web.Response(text=PAGE, content_type='text/html',
                            headers={'Cache-Control': 'no-store', 'X-Frame-Options': 'DENY',
                                     'Content-Security-Policy': "frame-ancestors 'none'"})

    @web.middleware
    async def for_this_panel(request, handler):
        # A page of another site, rebound to this address, names its own host (Hosts).
        if not hosts.allows_host(request.headers.get('Host')):
            return web.Response(status=403, text=hosts.why_not(request.headers.get('Host')))
        return await handler(request)

    async def socket(request):
        origin = request.headers.get('Origin')
        if not hosts.allows_origin(origin, request.headers.get('Host')):
            # Another site's page in the user's browser may not drive the clock.
            return web.Response(status=403, text=f'origin {origin} is not this panel')
        ws = web.WebSocketResponse(heartbeat=10.0)
        await ws.prepare(request)
        sockets.add(ws)
        may = access.may_control(request.query.get('token'))
        outbox = pages.opened()
        _put_latest(outbox, json.dumps({'kind': 'hello', 'control': may, 'server': server,
                                        'why': '' if may else access.why_not()}))
        for last in (watch.last_state, watch.last_tick):
            if last is not None:
                _put_latest(outbox, json.dumps(last))
        sender = asyncio.ensure_future(_send(ws, outbox))
        try:
            async for message in ws:
                if message.type != WSMsgType.TEXT:
                    continue
                _take(message.data, may, access, control, outbox, asyncio.get_running_loop())
        finally:
            sender.cancel()
            sockets.discard(ws)
            pages.closed(outbox)
        return ws

    async def close_pages(app) -> None:
        # Ctrl-C with pages open: each is told the panel goes away, so that the server's
        # shutdown does not wait for their handlers.
        for ws in list(sockets):
            await ws.close(code=WSCloseCode.GOING_AWAY, message=b'the panel stopped')

    sockets: Set[web.WebSocketResponse] = set()
    app = web.Application(middlewares=[for_this_panel])
    app.router.add_get('/', page)
    app.router.add_get('/ws', socket)
    app.on_shutdown.append(close_pages)
    return app


async def _send(ws, outbox: asyncio.Queue) -> None:
    while True:
        text = await outbox.get()
        await ws.send_str(text)


def _take(data: str, may: bool, access: Access, control: Control, outbox: asyncio.Queue,
          loop: asyncio.AbstractEventLoop) -> None:
    """Answer a page's message: refused (not allowed, not a command), or carried out."""
    try:
        request = json.loads(data)
    except ValueError:
        request = None
    ident = request.get('id', 0) if isinstance(request, dict) else 0

    def answer(ok: bool, message: str) -> None:
        text = json.dumps({'kind': 'result', 'id': ident, 'ok': ok, 'message': message})
        loop.call_soon_threadsafe(_put_latest, outbox, text)
    if not may:
        answer(False, f'{access.why_not()}; nothing was done')
        return
    try:
        command = parse_command(request)
    except BadCommand as bad:
        answer(False, str(bad))
        return
    control.submit(command, answer)


def panel_url(host: str, port: int, token: Optional[str], own_name: str = '') -> str:
    """
    Return the URL to open: the host served (an IPv6 one bracketed), and the token.

    Served on every address (``0.0.0.0``, ``::``), which no browser can open, the URL names
    the host by ``own_name`` (its name on the network).
    """
    if host in ('0.0.0.0', '::', '') and own_name:
        host = own_name
    shown = f'[{host}]' if ':' in host else host
    return f'http://{shown}:{port}/' + (f'?token={token}' if token else '')


def own_names() -> List[str]:
    """Return this host's names on the network: its host name and its fully qualified one."""
    return sorted({name for name in (socket.gethostname(), socket.getfqdn()) if name})


def network_name() -> str:
    """Return the name other machines know this host by: its full name, else its host name."""
    full = socket.getfqdn()
    return full if '.' in full and not full.startswith('localhost') else socket.gethostname()


def run_panel(context, server: str, *, host: str, port: int, read_only: bool,
              interval_s: float, window_ns: int, timeout: float, out,
              allow_hosts: Sequence[str] = ()) -> int:
    """
    Serve the panel until Ctrl-C; print its URL first. Return the exit code.

    Served on ``host`` (loopback unless asked): on any other host, control needs the token the
    URL carries, and a page without it is read-only. Requests are served only for the names
    of :class:`~sim_clock.client.panel_model.Hosts`, with ``allow_hosts`` added.
    """
    loopback = host in LOOPBACK_HOSTS
    names = own_names()
    hosts = Hosts(host, names, allow_hosts)
    token = None if read_only or loopback else secrets.token_urlsafe(16)
    access = Access(read_only=read_only, token=token)
    pages_open = threading.Event()
    loop = asyncio.new_event_loop()
    pages = Pages(loop, pages_open)
    watch = Watch(context, server, interval_s, window_ns, pages.publish, pages_open, timeout)
    control = Control(context, server, timeout)
    runner = web.AppRunner(make_app(pages, access, control, watch, server, hosts),
                           handle_signals=False, access_log=None)
    try:
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, host, port)
        loop.run_until_complete(site.start())
        bound = runner.addresses[0][1]
        watch.start()
        control.start()
        mode = 'read-only' if read_only else (
            'control with the token in the URL' if token else 'control from this host')
        print(f'sim_clock panel of {server} ({mode}): '
              f'{panel_url(host, bound, token, network_name())}',
              file=out, flush=True)
        loop.run_forever()
    except KeyboardInterrupt:
        pass
    finally:
        _stop(watch, control, runner, loop)
    return 0


def _stop(watch: Watch, control: Control, runner, loop: asyncio.AbstractEventLoop) -> None:
    """
    End the panel whole after Ctrl-C.

    Its threads first (they hand their updates to the loop), then the web server and the loop.
    One Ctrl-C stops it: a second (a terminal's and launch's, 1 to 10 ms apart) is ignored
    from here on, and one that came before it was ignored only starts the stop again.
    """
    while True:
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            watch.stop()
            control.stop()
            if not loop.is_closed():
                loop.run_until_complete(runner.cleanup())
                loop.close()
            return
        except KeyboardInterrupt:
            continue
