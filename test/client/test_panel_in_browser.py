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
``simclock panel`` in a real browser: headless Chromium presses its buttons.

A real clock server (or bag player) and a real ``simclock panel`` run in processes of their
own; Chromium opens the URL the panel prints and is driven through its DevTools protocol
(``test/browser.py``); what the page shows is checked against the server, read by a test
client. ``scripts/setup.sh --test`` installs Chromium; where it could not, these tests skip.
"""

import asyncio
import json
import os
import re
import signal

import aiohttp
from bags import START_NS
from bags import write_test_bag
from browser import Browser
from browser import needs_chromium
from harness import ChildProcess
from harness import executable
from harness import ServerProcess
from harness import stamp_ns
import pytest
from sim_clock.client.panel import network_name

pytestmark = pytest.mark.process


MS = 1_000_000
#: Runs ``simclock`` with the arguments given, as the installed executable does.
SIMCLOCK = """
import runpy
import sys
path = sys.argv[1]
sys.argv = ['simclock', *sys.argv[2:]]
runpy.run_path(path, run_name='__main__')
"""


class Panel:
    """A ``simclock panel`` process and a browser showing its page."""

    def __init__(self, domain_id: int, tmp_path, *args, token: str = None,
                 opened_as: str = '127.0.0.1'):
        # A first contact under load takes seconds (the suite's rule): 60 s, not the default 5.
        self.child = ChildProcess(domain_id, SIMCLOCK, str(tmp_path), args=[
            executable('simclock'), 'panel', '--port', '0', '--timeout', '60', *args])
        self.browser = None
        line = self.child.expect('sim_clock panel of', timeout=60)
        #: The URL printed; the page opens it on loopback, by the name ``opened_as``.
        self.printed = line.split(': ', 1)[1]
        self.port = int(re.match(r'http://(\[[^]]*\]|[^:/]*):(\d+)/', self.printed).group(2))
        self.url = re.sub(r'^http://(\[[^]]*\]|[^:/]*):', f'http://{opened_as}:', self.printed)
        if token is not None:  # open it with another token than the one printed
            self.url = self.url.split('?')[0] + f'?token={token}'
        self.browser = Browser(self.url, str(tmp_path / 'profile'))
        self.browser.wait_for("document.getElementById('connection').textContent === 'live'",
                              'the page to connect')

    def state_count(self) -> int:
        """Return how many states the page has shown."""
        return int(self.browser.evaluate('Number(document.body.dataset.states || 0)'))

    def next_states(self, count: int = 1) -> None:
        """Wait until the page has shown ``count`` more states (a poll each)."""
        seen = self.state_count()
        self.browser.wait_for(f'Number(document.body.dataset.states || 0) >= {seen + count}',
                              f'{count} more states')

    def step_once(self) -> None:
        """Press step 1 once the page may control; wait until it is answered as done."""
        self.browser.wait_for("document.body.dataset.control === 'true'", 'control')
        self.browser.click('step1')
        self.browser.wait_for("document.getElementById('message').className === 'done'",
                              'the step')

    def close(self) -> int:
        """Close the browser; end the panel as Ctrl-C does; return its exit code."""
        if self.browser is not None:
            self.browser.close()
        self.child.stop()
        return self.child.process.returncode


@pytest.fixture
def panels(domain_id, tmp_path):
    """Return a function that starts a panel (with a page open); all closed at the end."""
    started = []

    def start(*args, token=None, folder='panel', opened_as='127.0.0.1'):
        os.makedirs(tmp_path / folder, exist_ok=True)
        panel = Panel(domain_id, tmp_path / folder, *args, token=token, opened_as=opened_as)
        started.append(panel)
        return panel
    yield start
    for panel in started:
        code = panel.close()
        assert code == 0, f'panel exit code {code}:\n{panel.child.output()}'
        assert 'Traceback' not in panel.child.output(), panel.child.output()


@needs_chromium
def test_step_pause_sync_and_a_refused_step(start_server, client, panels, tmp_path):
    """
    Step, refusal, sync and pause as the page shows them.

    Step 5 and see frame 5; a step refused names the holder; sync off asks first, then is a
    reset shown with its cause; free run paused: time stops on the page and on the server.
    """
    start_server({'sync': True, 'time_step': 0.01, 'frame_events': 1000})
    client.status_when_ready()
    panel = panels()
    page = panel.browser
    assert page.evaluate('document.body.dataset.control') == 'true'
    page.set_value('steps', '5')
    page.click('stepN')
    page.wait_for("document.getElementById('message').textContent.startsWith('stepped to')",
                  'the step to be answered')
    page.wait_for("document.getElementById('frame').textContent === '5'", 'frame 5')
    assert client.status().frame == 5
    # The frame beside the time of the same status; /clock now catches up by itself.
    assert page.text('sample_time') == '0.050000000'
    page.wait_for("document.getElementById('time').textContent === '0.050000000'", '0.05 s')
    # Another client holds sync mode: the page's step is refused, in the server's words.
    assert client.sync_mode_cmd('harness_holder', True, 0).result
    page.click('step1')
    page.wait_for("document.getElementById('message').className === 'refused'",
                  'the refusal')
    assert 'harness_holder' in page.text('message'), page.text('message')
    assert client.status().frame == 5
    # Sync off asks first, saying what will happen; confirmed, it is a reset, listed.
    client.set_parameter('real_time_factor', 2.0)
    page.wait_for("document.getElementById('rate').value === '2'", "the server's factor")
    assert 'free run would go at 2x' in page.text('mode')
    page.click('sync_on')
    assert page.text('sync_warning') == 'sync is already on: nothing changes'
    page.click('cancel')
    page.click('sync_off')
    assert page.evaluate("getComputedStyle(document.getElementById('confirm_sync')).display") \
        != 'none'
    assert page.text('sync_warning') == ('sync off: time goes back to the start and runs free '
                                         "at 2x; 'harness_holder' loses the hold")
    client.set_parameter('real_time_factor', 1.0)
    page.wait_for("document.getElementById('rate').value === '1'", "the server's factor")
    epoch = client.status().epoch
    page.click('confirm')
    page.wait_for("document.getElementById('message').className === 'done'", 'sync off')
    status = client.status()
    assert not status.sync and status.epoch == epoch + 1
    page.wait_for(f"document.getElementById('resets').textContent.includes('epoch {epoch + 1}')",
                  'the reset of sync off')
    # Free run at 1x: time moves on the page, then stands still once paused.
    page.wait_for("document.getElementById('time').dataset.ns > '0'", 'time to move')
    page.click('pause')
    page.wait_for("document.getElementById('mode').dataset.paused === 'true'", 'paused')
    frozen = page.text('time')
    panel.next_states(2)
    assert page.text('time') == frozen
    assert client.status().paused
    page.click('resume')
    page.wait_for(f"document.getElementById('time').textContent !== '{frozen}'",
                  'time to move again')


@needs_chromium
def test_a_wrong_token_changes_nothing_and_read_only_presses_nothing(
        start_server, client, panels):
    """
    Who may press the buttons: the token's holder, nobody with --read-only.

    Served to others (--host), a page with a wrong token is read-only: its command is
    refused and the server is unchanged; the printed URL's token controls. --read-only:
    every button disabled.
    """
    start_server({'sync': True})
    client.status_when_ready()
    wrong = panels('--host', '0.0.0.0', token='not-the-token', folder='wrong')
    assert wrong.browser.evaluate('document.body.dataset.control') == 'false'
    assert 'token' in wrong.browser.text('access')
    assert wrong.browser.evaluate("document.getElementById('step1').disabled")
    # The page's own script sends a step all the same: refused, nothing done.
    wrong.browser.evaluate("control = true; send({action: 'step', n: 3})")
    wrong.browser.wait_for("document.getElementById('message').className === 'refused'",
                           'the refusal')
    assert 'nothing was done' in wrong.browser.text('message')
    assert client.status().frame == 0
    right = panels('--host', '0.0.0.0', folder='right')
    # Served on every address, the URL names the host as other machines know it.
    assert right.printed.startswith(f'http://{network_name()}:') and '/?token=' in right.printed
    right.step_once()
    assert client.status().frame == 1
    watching = panels('--read-only', folder='read_only')
    assert watching.browser.evaluate(
        "[...document.querySelectorAll('#controls button')].every((b) => b.disabled)")
    assert 'read-only' in watching.browser.text('access')


@needs_chromium
def test_a_rebound_page_is_refused_and_the_loopback_names_work(start_server, client, panels):
    """
    DNS rebinding: a page of another site whose name resolves to 127.0.0.1 drives nothing.

    Its requests carry its own name in Host and Origin: the page and the WebSocket are refused
    and the clock is unchanged, as for an https Origin. The page opened as localhost and as
    127.0.0.1 steps.
    """
    start_server({'sync': True})
    client.status_when_ready()
    by_name = panels(folder='by_name', opened_as='localhost')
    by_name.step_once()
    assert client.status().frame == 1
    port = by_name.port

    async def rebound():
        async with aiohttp.ClientSession() as session:
            evil = f'evil.example:{port}'
            page = await session.get(f'http://127.0.0.1:{port}/', headers={'Host': evil})
            assert page.status == 403, await page.text()
            for headers in ({'Host': evil, 'Origin': f'http://{evil}'},
                            {'Origin': f'https://127.0.0.1:{port}'}):
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await session.ws_connect(f'http://127.0.0.1:{port}/ws', headers=headers)
                assert refused.value.status == 403
    asyncio.run(rebound())
    panels(folder='by_address', opened_as='127.0.0.1').step_once()
    assert client.status().frame == 2


@needs_chromium
def test_a_server_gone_silent_is_said_and_the_next_one_taken_up(
        start_server, client, panels, domain_id, tmp_path):
    """
    Resets back to back each listed once, in order; a killed server said silent, a new one up.

    Killed (no goodbye on the graph), the server's last state stays greyed, the buttons off,
    and the page counts the seconds since it answered. A server started again is taken up by
    itself: its state shown, what the dead one left (its resets) gone.
    """
    dead = ServerProcess(domain_id, str(tmp_path), {'sync': True})
    client.status_when_ready()
    panel = panels()
    page = panel.browser
    for _ in range(4):
        client.trigger('reset')
    page.wait_for("document.querySelectorAll('#resets li').length === 4", 'four resets')
    listed = page.evaluate("[...document.querySelectorAll('#resets li')]"
                           ".map((li) => li.textContent.split(':')[0])")
    assert listed == ['epoch 4', 'epoch 3', 'epoch 2', 'epoch 1'], listed
    dead.process.kill()
    assert dead.stop() == -9
    page.wait_for("document.body.dataset.down === 'true'", 'the page to say the server is gone')
    assert 'the server stopped answering' in page.text('connection')
    assert page.evaluate("document.body.classList.contains('stale')")
    assert page.evaluate("document.getElementById('step1').disabled")
    start_server({'sync': True})
    page.wait_for("document.body.dataset.down === 'false'", 'the new server taken up')
    page.wait_for("document.getElementById('epoch').textContent === '0'", 'its state')
    assert page.text('connection') == 'live'
    assert page.evaluate("document.querySelectorAll('#resets li').length") == 0
    panel.step_once()
    assert client.status().frame == 1


@needs_chromium
def test_a_bag_scrubbed_to_one_second(start_server, client, panels, tmp_path):
    """A bag player's timeline on the page; the scrubber seeks it to 1.0 s, /clock goes there."""
    path = str(tmp_path / 'bag')
    write_test_bag(path, seconds=2.0)
    start_server({'sync': True, 'time_step': 0.01}, executable=executable('bag_player'),
                 argv=[path, '--no-progress'])
    client.status_when_ready()
    panel = panels()
    page = panel.browser
    page.wait_for("!document.getElementById('bag').hidden", 'the bag timeline')
    assert page.text('bag_span').startswith(f'{START_NS // 10**9}.')
    page.set_value('scrub', '1000')
    page.click('seek')
    page.wait_for("document.getElementById('message').textContent.startsWith('sought to')",
                  'the seek')
    client.wait_for_time(START_NS + 1000 * MS)
    assert stamp_ns(client.status().clock) == START_NS + 1000 * MS
    page.wait_for(f"document.getElementById('time').dataset.ns === '{START_NS + 1000 * MS}'",
                  'the page at 1.0 s')
    # The position under the scrubber follows, though the scrubber still has the focus.
    page.wait_for("document.getElementById('bag_position').textContent.includes('50.00%')",
                  'the position at half the bag')
    # Five presses of the right arrow, as fast as keys repeat: one seek, so one reset.
    epoch = client.status().epoch
    page.press('scrub', 'ArrowRight', 39, times=5)
    page.wait_for(f"document.getElementById('time').dataset.ns === '{START_NS + 1005 * MS}'",
                  'the page at 1.005 s')
    panel.next_states(2)
    assert client.status().epoch == epoch + 1
    assert stamp_ns(client.status().clock) == START_NS + 1005 * MS


def test_ctrl_c_with_a_page_open_ends_the_panel_at_once(
        start_server, client, domain_id, tmp_path):
    """
    Ctrl-C while a page is connected: the page is told the panel goes away, exit 0 at once.

    Without closing the pages first, the web server's shutdown waited for their handlers: 17 s.
    The bound of 10 s tells the two apart on a loaded machine.
    """
    start_server({'sync': True})
    client.status_when_ready()
    panel = ChildProcess(domain_id, SIMCLOCK, str(tmp_path),
                         args=[executable('simclock'), 'panel', '--port', '0', '--timeout', '60'])
    try:
        url = panel.expect('sim_clock panel of', timeout=60).split(': ', 1)[1]
        loop = asyncio.new_event_loop()

        async def page_open_at_ctrl_c():
            async with aiohttp.ClientSession() as session:
                async with session.ws_connect(url.replace('http://', 'ws://') + 'ws') as ws:
                    hello = json.loads((await ws.receive(timeout=30)).data)
                    assert hello['kind'] == 'hello', hello
                    panel.process.send_signal(signal.SIGINT)
                    while True:  # updates sent before the Ctrl-C, then the close
                        closing = await ws.receive(timeout=30)
                        if closing.type != aiohttp.WSMsgType.TEXT:
                            return closing.type, ws.close_code
        kind, code = loop.run_until_complete(page_open_at_ctrl_c())
        loop.close()
        assert kind == aiohttp.WSMsgType.CLOSE and code == aiohttp.WSCloseCode.GOING_AWAY
        assert panel.process.wait(10) == 0, panel.output()
    finally:
        panel.stop()
    assert 'Traceback' not in panel.output(), panel.output()
