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
Headless Chromium driven through its DevTools protocol, for the tests of pages in a browser.

Chromium (Debian's package) opens the page with ``--remote-debugging-port=0`` and says on
stderr which port it took; the page's target is then driven over that WebSocket with
aiohttp's client: ``Runtime.evaluate`` runs the page's own script (clicks, reads of the DOM)
and ``Page.captureScreenshot`` takes its picture.
"""

import asyncio
import base64
import itertools
import json
import re
import select
import shutil
import subprocess
import threading
import time

import aiohttp
import pytest

CHROMIUM = shutil.which('chromium')
#: The mark of a test that needs Chromium: it skips, saying why, where the set-up could not
#: install it.
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason='chromium is not on PATH: scripts/setup.sh --test installs it '
                             "with apt-get (Debian's package 'chromium'); it could not here")
#: A cold start of Chromium on a loaded two-core machine takes seconds; this bounds a hang.
START_TIMEOUT = 120.0
#: What Chromium prints on stderr once its DevTools endpoint is up.
LISTENING = re.compile(r'DevTools listening on ws://[^:]+:(\d+)/')
#: Waits in the page: how long a condition may take by default (s).
WAIT = 30.0


class Browser:
    """One headless Chromium showing ``url``, its page driven by the DevTools protocol."""

    def __init__(self, url: str, profile: str, width: int = 1280, height: int = 1100):
        """Start Chromium on a blank page, connect to it, then open ``url``."""
        self._loop = asyncio.new_event_loop()
        self._ids = itertools.count(1)
        self.process = subprocess.Popen(
            [CHROMIUM, '--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars',
             '--no-first-run', f'--user-data-dir={profile}', '--remote-debugging-port=0',
             f'--window-size={width},{height}', 'about:blank'],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            port = self._devtools_port()
            # What Chromium says from now on is kept, so that its pipe never fills.
            self.said = []
            threading.Thread(target=lambda: self.said.extend(self.process.stderr),
                             daemon=True).start()
            self._session = self._run(self._open_session())
            self._socket = self._run(self._connect(port, url))
            self._run(self._navigate(url))
        except BaseException:
            self.close()
            raise

    def _run(self, coroutine):
        return self._loop.run_until_complete(coroutine)

    async def _open_session(self):
        return aiohttp.ClientSession()

    def _devtools_port(self) -> int:
        """Read Chromium's stderr until it says where DevTools listens; return the port."""
        deadline = time.monotonic() + START_TIMEOUT
        said = []
        while True:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f'chromium did not start in {START_TIMEOUT} s: {said}'
            if not select.select([self.process.stderr], [], [], remaining)[0]:
                continue
            line = self.process.stderr.readline().decode(errors='replace')
            if not line:
                raise AssertionError(f'chromium ended ({self.process.wait()}): {said}')
            said.append(line.strip())
            found = LISTENING.search(line)
            if found:
                return int(found.group(1))

    async def _connect(self, port: int, url: str):
        """Return the WebSocket of the page's target (the tab that opened ``url``)."""
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            async with self._session.get(f'http://127.0.0.1:{port}/json/list') as answer:
                targets = await answer.json(content_type=None)
            pages = [target for target in targets if target.get('type') == 'page']
            if pages:
                return await self._session.ws_connect(pages[0]['webSocketDebuggerUrl'],
                                                      max_msg_size=0)
            assert time.monotonic() < deadline, f'no page target of {url}: {targets}'
            await asyncio.sleep(0.05)

    async def _navigate(self, url: str) -> None:
        """Open ``url`` in the page; return once its load event fired (its script ran)."""
        await self._call('Page.enable', {})
        await self._call('Page.navigate', {'url': url})
        while True:
            message = await asyncio.wait_for(self._socket.receive(), START_TIMEOUT)
            assert message.type == aiohttp.WSMsgType.TEXT, message
            if json.loads(message.data).get('method') == 'Page.loadEventFired':
                return

    def call(self, method: str, **params):
        """Call a DevTools method of the page; return its result (fail on its error)."""
        return self._run(self._call(method, params))

    async def _call(self, method: str, params: dict):
        ident = next(self._ids)
        await self._socket.send_str(json.dumps({'id': ident, 'method': method, 'params': params}))
        while True:
            message = await asyncio.wait_for(self._socket.receive(), START_TIMEOUT)
            assert message.type == aiohttp.WSMsgType.TEXT, message
            answer = json.loads(message.data)
            if answer.get('id') == ident:
                assert 'error' not in answer, answer['error']
                return answer['result']

    def evaluate(self, expression: str):
        """Return the value of a JavaScript expression in the page (a promise awaited)."""
        result = self.call('Runtime.evaluate', expression=expression, returnByValue=True,
                           awaitPromise=True)
        assert 'exceptionDetails' not in result, result['exceptionDetails']
        return result['result'].get('value')

    def wait_for(self, condition: str, what: str, timeout: float = WAIT):
        """
        Wait in the page until the JavaScript ``condition`` is truthy; return its value.

        The page checks it at each animation frame or every 20 ms, whichever comes first; a
        timeout fails naming ``what`` and the page's text.
        """
        value = self.evaluate(
            '(() => new Promise((done) => { const end = Date.now() + %d;'
            ' const check = () => { let v; try { v = (%s); } catch (e) { v = null; }'
            ' if (v) done(v); else if (Date.now() > end) done(null);'
            ' else setTimeout(check, 20); }; check(); }))()' % (timeout * 1000, condition))
        if not value:
            text = self.evaluate('document.body.innerText')
            raise AssertionError(f'timed out after {timeout} s waiting for {what}; the page '
                                 f'says:\n{text}')
        return value

    def text(self, element_id: str) -> str:
        """Return the text of the element of that id."""
        return self.evaluate(f'document.getElementById({json.dumps(element_id)}).textContent')

    def click(self, element_id: str) -> None:
        """Click the element of that id, as a user does (it must be enabled)."""
        enabled = self.evaluate(
            f'(() => {{ const e = document.getElementById({json.dumps(element_id)});'
            ' if (e.disabled) return false; e.click(); return true; })()')
        assert enabled, f'{element_id} is disabled'

    def press(self, element_id: str, key: str, code: int, times: int = 1) -> None:
        """Focus the element of that id and press ``key`` (virtual key ``code``) on it."""
        self.evaluate(f'document.getElementById({json.dumps(element_id)}).focus()')
        for _ in range(times):
            for kind in ('rawKeyDown', 'keyUp'):
                self.call('Input.dispatchKeyEvent', type=kind, key=key, code=key,
                          windowsVirtualKeyCode=code, nativeVirtualKeyCode=code)

    def set_value(self, element_id: str, value: str) -> None:
        """Type ``value`` into the input of that id."""
        self.evaluate(f'document.getElementById({json.dumps(element_id)}).value = '
                      f'{json.dumps(value)}')

    def screenshot(self, path: str) -> None:
        """Write a PNG of the page as shown."""
        data = self.call('Page.captureScreenshot', format='png')['data']
        with open(path, 'wb') as png:
            png.write(base64.b64decode(data))

    def close(self) -> None:
        """End the browser and the connection."""
        for closing in (getattr(self, '_socket', None), getattr(self, '_session', None)):
            if closing is not None:
                self._run(closing.close())
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._loop.close()
