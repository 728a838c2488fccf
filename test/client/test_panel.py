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
``simclock panel`` without ROS: its commands, who may send them, what it shows, its web side.

The model (sim_clock.client.panel_model) is pure; the web side (sim_clock.client.panel's
application) is served in this process by aiohttp's test server, with a fake of the panel's
control and watch: what a page is sent and what it may do. The panel against a real server
in a real browser: test/client/test_panel_in_browser.py.
"""

import asyncio
import dataclasses
import json
import threading

from aiohttp import test_utils
import pytest
from sim_clock.client.panel import make_app
from sim_clock.client.panel import Pages
from sim_clock.client.panel import panel_url
from sim_clock.client.panel_model import Access
from sim_clock.client.panel_model import BadCommand
from sim_clock.client.panel_model import bag_span
from sim_clock.client.panel_model import Command
from sim_clock.client.panel_model import Hosts
from sim_clock.client.panel_model import mode_text
from sim_clock.client.panel_model import PaceHistory
from sim_clock.client.panel_model import parse_command
from sim_clock.client.panel_model import state
from sim_clock.client.panel_model import sync_warnings
from sim_clock.client.results import ResetEvent
from sim_clock.client.results import Status
from sim_clock.core.frame_events import DONE
from sim_clock.core.frame_events import FRAME
from sim_clock.core.frame_events import FrameEventRing
from sim_clock.wire.progress_report import Playback
from sim_clock.wire.progress_report import ProgressReport

pytestmark = pytest.mark.fast

MS = 1_000_000
SEC = 1_000_000_000
STATUS = Status(mode='simulation', sync=True, paused=False, frame=3,
                time_ns=1_700_000_000_123_456_789, epoch=1, owner='', real_time_factor=1.0,
                time_step_ns=10 * MS, publish_rate=100.0)


@pytest.mark.parametrize('request_, command', [
    ({'action': 'pause'}, Command('pause')),
    ({'action': 'resume', 'id': 4}, Command('resume')),
    ({'action': 'step', 'n': 5}, Command('step', 5)),
    ({'action': 'step_until', 'time_ns': '1700000000123456789'},
     Command('step_until', 1_700_000_000_123_456_789)),
    ({'action': 'seek', 'time_ns': 1000}, Command('seek', 1000)),
    ({'action': 'rate', 'factor': 2}, Command('rate', 2.0)),
    ({'action': 'sync', 'on': False}, Command('sync', False)),
])
def test_commands_are_parsed_with_exact_values(request_, command):
    """Each action with its value; times as strings keep every digit."""
    assert parse_command(request_) == command


@pytest.mark.parametrize('request_, reason', [
    ([], 'a command is a JSON object, got list'),
    ({'action': 'explode'}, "unknown action 'explode'; allowed: pause, rate, resume, seek"),
    ({'action': 'step'}, "step needs 'n'"),
    ({'action': 'step', 'n': 0}, 'step needs n, a whole number of frames from 1 to 1000000'),
    ({'action': 'step', 'n': True}, 'got True'),
    ({'action': 'step', 'n': 2.5}, 'got 2.5'),
    ({'action': 'step_until', 'time_ns': '-1'}, 'a /clock time in whole ns'),
    ({'action': 'seek', 'time_ns': 1.5}, 'a /clock time in whole ns'),
    ({'action': 'rate', 'factor': 'fast'}, 'rate needs factor, a number'),
    ({'action': 'sync', 'on': 1}, 'sync needs on, true or false, got 1'),
])
def test_bad_commands_say_what_is_allowed(request_, reason):
    """A request that is not a command is refused, saying why."""
    with pytest.raises(BadCommand) as refused:
        parse_command(request_)
    assert reason in str(refused.value)


def test_who_may_control():
    """Loopback: any page; served to others: the token only; read-only: nobody."""
    assert Access().may_control(None)
    token = Access(token='s3cret')
    assert token.may_control('s3cret')
    assert not token.may_control('s3cre') and not token.may_control(None)
    assert 'token' in token.why_not()
    read_only = Access(read_only=True)
    assert not read_only.may_control(None) and 'read-only' in read_only.why_not()


def test_the_pace_plot_from_clock_as_it_arrives():
    """Simulated over wall time per half second; a reset starts again; old points go."""
    history = PaceHistory(span_ns=2 * SEC, step_ns=SEC // 2)
    for k in range(5):  # twice real time
        history.add(k * SEC // 2, k * SEC)
    assert history.points(2 * SEC) == [[1.5, 2.0], [1.0, 2.0], [0.5, 2.0], [0.0, 2.0]]
    history.add(5 * SEC // 2, 0)  # a reset: no point spans it
    history.add(3 * SEC, SEC // 4)
    assert history.points(3 * SEC)[-1] == [0.0, 0.5]
    assert len(history.points(3 * SEC)) == 4  # the first point is older than 2 s


def test_the_state_says_mode_time_holders_and_resets():
    """Every digit of the time, the mode in words, the holders' figures, resets newest first."""
    ring = FrameEventRing(100)
    ring.record(FRAME, 1, STATUS.time_ns, SEC, count=3)
    ring.record(DONE, 1, STATUS.time_ns, SEC, SEC + 4 * MS, name='planning')
    resets = [ResetEvent(k, 5 * SEC, 0, f'cause {k}', 'simulation', True) for k in range(12)]
    shown = state(STATUS, ring.after(0)[0], SEC + 10 * MS, 5 * SEC, resets, None)
    assert (shown['time_ns'], shown['time_text']) == (
        '1700000000123456789', '1700000000.123456789')
    assert shown['mode_text'] == 'simulation, sync on (free run would go at 1x)'
    assert shown['holding'] == 'holding frame 3: nothing (it went out 10.000 ms ago)'
    assert shown['holders'] == [{'name': 'planning', 'kind': 'participant', 'frames': 1,
                                 'p50_ms': 4.0, 'p99_ms': 4.0, 'max_ms': 4.0, 'missed': 0}]
    assert [reset['epoch'] for reset in shown['resets']] == list(range(11, 1, -1))
    assert shown['resets'][0] == {'epoch': 11, 'cause': 'cause 11', 'before': '5.000000000',
                                  'after': '0.000000000'}
    json.dumps(shown)  # what a page is sent


def test_the_mode_in_words():
    """Sync with its holder, free run with its factor or as fast as possible, paused."""
    held = dataclasses.replace(STATUS, owner='harness', paused=True, real_time_factor=2.0)
    assert mode_text(held) == ("simulation, sync on, held by 'harness' (free run would go at "
                               '2x), paused')
    free = dataclasses.replace(STATUS, sync=False, real_time_factor=2.5)
    assert mode_text(free) == 'simulation, free run at 2.5x'
    assert mode_text(dataclasses.replace(free, real_time_factor=0.0)) == \
        'simulation, free run as fast as possible'
    assert mode_text(dataclasses.replace(STATUS, mode='real_time')) == 'real time'


def test_the_sync_warnings_say_what_will_happen():
    """On and off read differently, name the pace free run takes, and who loses the hold."""
    held = dataclasses.replace(STATUS, owner='harness', real_time_factor=2.0)
    assert sync_warnings(held) == (
        'sync is already on: nothing changes',
        "sync off: time goes back to the start and runs free at 2x; 'harness' loses the hold")
    free = dataclasses.replace(STATUS, sync=False, real_time_factor=0.0)
    assert sync_warnings(free) == (
        'sync on: time goes back to the start and advances only by steps',
        'sync is already off: nothing changes')
    real = dataclasses.replace(STATUS, mode='real_time', sync=False)
    assert sync_warnings(real)[0] == ('sync on: time goes back to the start, in simulation '
                                      'mode, and advances only by steps')
    assert state(held, [], 0, SEC, [], None)['sync_warnings'] == dict(zip(
        ('on', 'off'), sync_warnings(held)))


@pytest.mark.parametrize('clock_ns, start', [(1_700_000_000_500_000_000, 1_700_000_000 * SEC),
                                             (500_000_000, 0)])
def test_the_bag_span_in_clock_time(clock_ns, start):
    """/clock is the bag's time, or that from 0 (--start-at-zero): the span follows it."""
    progress = ProgressReport(bag_time_ns=1_700_000_000_500_000_000,
                              start_ns=1_700_000_000 * SEC, end_ns=1_700_000_002 * SEC,
                              percent=25.0, messages_out=5, messages_total=20, rate=1.0,
                              time_left=1.5, epoch=0, playback=Playback.PLAYING)
    assert bag_span(progress, clock_ns) == {
        'start_ns': str(start), 'end_ns': str(start + 2 * SEC), 'messages_total': 20}


def test_the_url_printed():
    """The host as served, an IPv6 one bracketed; every address: the host's name; the token."""
    assert panel_url('127.0.0.1', 8765, None) == 'http://127.0.0.1:8765/'
    assert panel_url('fe80::1', 80, 'abc') == 'http://[fe80::1]:80/?token=abc'
    assert panel_url('0.0.0.0', 8766, 'abc', 'lab-pc.example') == (
        'http://lab-pc.example:8766/?token=abc')
    assert panel_url('::', 8766, None, 'lab-pc') == 'http://lab-pc:8766/'


@pytest.mark.parametrize('served, host, allowed', [
    ('127.0.0.1', '127.0.0.1:8765', True),
    ('127.0.0.1', 'localhost:8765', True),
    ('127.0.0.1', 'LOCALHOST.:8765', True),
    ('127.0.0.1', '[::1]:8765', True),
    ('127.0.0.1', 'evil.example:8765', False),  # a rebound name
    ('127.0.0.1', 'lab-pc:8765', False),  # the host's name: only when served beyond loopback
    ('127.0.0.1', None, False),
    ('127.0.0.1', '', False),
    ('127.0.0.1', '[bad:8765', False),
    ('0.0.0.0', 'lab-pc:8766', True),
    ('0.0.0.0', 'lab-pc.example:8766', True),
    ('0.0.0.0', '192.168.1.20:8766', True),
    ('0.0.0.0', 'evil.example:8766', False),
    ('0.0.0.0', 'proxy.example', True),  # allowed by name
])
def test_a_request_is_served_only_for_a_name_of_the_panel(served, host, allowed):
    hosts = Hosts(served, own_names=['lab-pc', 'lab-pc.example'], allowed=['proxy.example'])
    assert hosts.allows_host(host) is allowed


@pytest.mark.parametrize('origin, host, allowed', [
    (None, '127.0.0.1:8765', True),  # not a browser
    ('http://127.0.0.1:8765', '127.0.0.1:8765', True),
    ('http://localhost:8765', 'localhost:8765', True),
    ('http://evil.example:8765', 'evil.example:8765', False),  # DNS rebinding
    ('https://127.0.0.1:8765', '127.0.0.1:8765', False),
    ('http://127.0.0.1:9000', '127.0.0.1:8765', False),  # a page on another port
    ('http://evil.example', '127.0.0.1:8765', False),
    ('null', '127.0.0.1:8765', False),
])
def test_a_websocket_origin_must_be_the_panel_itself_over_http(origin, host, allowed):
    assert Hosts('127.0.0.1').allows_origin(origin, host) is allowed


def test_a_refused_host_is_told_the_names_served_and_how_to_add_one():
    why = Hosts('127.0.0.1').why_not('evil.example:8765')
    assert why == ('evil.example:8765 is not a name of this panel (it answers to its IP '
                   'addresses and localhost); simclock panel --allow-host NAME adds a name')


class FakeControl:
    """The panel's control thread: records each command and answers it at once."""

    def __init__(self):
        self.commands = []

    def submit(self, command, answer):
        self.commands.append(command)
        answer(True, f'done: {command.action}')


class FakeWatch:
    """The panel's watch: the last state and tick it had."""

    last_state = {'kind': 'state', 'frame': 7}
    last_tick = None


def _serve(access: Access, exchange):
    """Serve the panel's application here; run ``exchange(client, pages, control)``."""
    async def run():
        loop = asyncio.get_running_loop()
        pages_open = threading.Event()
        pages, control = Pages(loop, pages_open), FakeControl()
        app = make_app(pages, access, control, FakeWatch(), '/sim_clock', Hosts('127.0.0.1'))
        async with test_utils.TestClient(test_utils.TestServer(app)) as client:
            await exchange(client, pages, control, pages_open)
    asyncio.run(run())


async def _until(condition, what: str, timeout: float = 10.0) -> None:
    """Let the loop run until ``condition()`` holds; fail naming ``what`` after ``timeout`` s."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f'timed out waiting for {what}'
        await asyncio.sleep(0.01)


async def _receive(ws, kind: str) -> dict:
    """Return the next message of ``kind`` the page is sent."""
    while True:
        message = json.loads(await asyncio.wait_for(ws.receive_str(), 10))
        if message['kind'] == kind:
            return message


def test_a_page_is_told_what_it_may_do_and_sent_the_last_state():
    """The page itself; then hello (control or why not) and the last state, at once."""
    async def exchange(client, pages, control, pages_open):
        page = await client.get('/')
        assert page.status == 200 and '<title>sim_clock panel</title>' in await page.text()
        # Never inside another site's frame (clickjacking).
        assert page.headers['X-Frame-Options'] == 'DENY'
        assert page.headers['Content-Security-Policy'] == "frame-ancestors 'none'"
        ws = await client.ws_connect('/ws')
        hello = await _receive(ws, 'hello')
        assert pages_open.is_set()  # the watch polls while a page is open
        assert hello == {'kind': 'hello', 'control': True, 'server': '/sim_clock', 'why': ''}
        assert (await _receive(ws, 'state'))['frame'] == 7
        pages.publish({'kind': 'tick', 'clock_ns': '10'})
        assert (await _receive(ws, 'tick'))['clock_ns'] == '10'
        await ws.send_str(json.dumps({'action': 'step', 'n': 2, 'id': 9}))
        assert await _receive(ws, 'result') == {'kind': 'result', 'id': 9, 'ok': True,
                                                'message': 'done: step'}
        assert control.commands == [Command('step', 2)]
        await ws.send_str(json.dumps({'action': 'step', 'n': -2, 'id': 10}))
        refused = await _receive(ws, 'result')
        assert not refused['ok'] and 'step needs n' in refused['message']
        await ws.close()
        # A closed page costs the server nothing: with none open, the watch stops polling.
        await _until(lambda: not pages_open.is_set(), 'the panel to see the page closed')
    _serve(Access(), exchange)


def test_a_page_without_the_token_changes_nothing():
    """Its commands are refused, saying why; nothing reaches the control."""
    async def exchange(client, pages, control, pages_open):
        ws = await client.ws_connect('/ws?token=wrong')
        hello = await _receive(ws, 'hello')
        assert not hello['control'] and 'token' in hello['why']
        await ws.send_str(json.dumps({'action': 'pause', 'id': 1}))
        refused = await _receive(ws, 'result')
        assert not refused['ok'] and 'nothing was done' in refused['message']
        assert control.commands == []
        good = await client.ws_connect('/ws?token=right')
        assert (await _receive(good, 'hello'))['control']
    _serve(Access(token='right'), exchange)


def test_another_sites_page_may_not_connect():
    """A WebSocket from a page of another origin is refused (403) before it opens."""
    async def exchange(client, pages, control, pages_open):
        answer = await client.get('/ws', headers={'Origin': 'http://evil.example'})
        assert answer.status == 403
        assert not pages_open.is_set()
    _serve(Access(), exchange)


def test_a_page_of_a_rebound_name_gets_neither_the_page_nor_the_socket():
    """DNS rebinding: Host and Origin both of the other site's name; nothing is served."""
    async def exchange(client, pages, control, pages_open):
        rebound = {'Host': f'evil.example:{client.server.port}',
                   'Origin': f'http://evil.example:{client.server.port}'}
        page = await client.get('/', headers={'Host': rebound['Host']})
        assert page.status == 403 and '--allow-host' in await page.text()
        socket = await client.get('/ws', headers=rebound)
        assert socket.status == 403
        assert not pages_open.is_set() and control.commands == []
        ws = await client.ws_connect(
            '/ws', headers={'Origin': f'http://127.0.0.1:{client.server.port}'})
        assert (await _receive(ws, 'hello'))['control']
    _serve(Access(), exchange)
