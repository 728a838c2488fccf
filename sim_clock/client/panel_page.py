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
The control panel's page: its HTML, style and script, served by ``simclock panel``.

Everything the page needs is here: it loads nothing from elsewhere. The script opens a
WebSocket to ``/ws`` (with the URL's token, if any), shows each ``state`` and ``tick`` the
panel pushes, and sends the buttons' commands (:func:`sim_clock.client.panel_model.
parse_command`). Times are kept as strings of integer nanoseconds and converted with BigInt,
so no digit is lost. The elements tests and users look for have ids.
"""

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.2em; background: #f7f7f5; color: #222; }
h1 { font-size: 1.2em; margin: 0 0 .6em 0; }
section { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: .7em 1em;
          margin-bottom: .8em; }
#time { font: 600 2.2em ui-monospace, monospace; }
.row { display: flex; flex-wrap: wrap; gap: .5em 1.5em; align-items: baseline; }
.label { color: #666; font-size: .85em; }
button { font-size: 1em; padding: .3em .8em; }
button:disabled { opacity: .45; }
input[type=number], input[type=text] { width: 7em; font-size: 1em; }
#message { min-height: 1.3em; font-family: ui-monospace, monospace; }
#message.refused { color: #b00020; }
#message.done { color: #1b5e20; }
#confirm_sync { display: none; color: #8a4b00; }
table { border-collapse: collapse; font-size: .9em; }
td, th { padding: .15em .7em; text-align: right; }
td:first-child, th:first-child { text-align: left; }
#resets li { font-family: ui-monospace, monospace; font-size: .9em; }
#scrub { width: 100%; }
#access { color: #8a4b00; }
#connection.down { color: #b00020; }
body.stale section { opacity: .5; }
"""

BODY = """
<h1>sim_clock panel: <span id="server"></span> <span id="connection">connecting</span></h1>
<section>
  <div class="row">
    <div><div class="label">/clock now (s)</div><div id="time">waiting</div></div>
  </div>
  <div class="row" id="sample">
    <div><div class="label">frame</div><div id="frame">waiting</div></div>
    <div><div class="label">at (s)</div><div id="sample_time">for the</div></div>
    <div><div class="label">epoch</div><div id="epoch">server's</div></div>
    <div><div class="label">mode</div><div id="mode">first answer</div></div>
  </div>
  <div id="pace" class="label"></div>
  <canvas id="plot" width="600" height="90"></canvas>
</section>
<section id="controls">
  <div id="access"></div>
  <div class="row">
    <button id="pause">pause</button> <button id="resume">resume</button>
    <button id="step1">step 1</button>
    <span><input id="steps" type="number" min="1" value="10">
      <button id="stepN">step N</button></span>
    <span><input id="until" type="text" placeholder="seconds">
      <button id="step_until">step until</button></span>
  </div>
  <div class="row" style="margin-top:.5em">
    <span><input id="rate" type="number" min="0" step="0.1" value="1">
      <button id="set_rate">set real-time factor</button></span>
    <button id="sync_on">sync on</button> <button id="sync_off">sync off</button>
    <span id="confirm_sync"><span id="sync_warning"></span>:
      <button id="confirm">go on</button> <button id="cancel">cancel</button></span>
  </div>
  <div id="message"></div>
</section>
<section id="bag" hidden>
  <div class="label">bag: <span id="bag_span"></span></div>
  <input id="scrub" type="range" min="0" max="0" step="1" value="0">
  <div class="row"><span id="bag_position"></span> <button id="seek">seek here</button></div>
</section>
<section>
  <div id="holding"></div>
  <table><thead><tr><th>holder</th><th>kind</th><th>frames</th><th>p50 ms</th><th>p99 ms</th>
  <th>max ms</th></tr></thead><tbody id="holders"></tbody></table>
</section>
<section><div class="label">resets, newest first</div><ul id="resets"></ul></section>
"""

SCRIPT = r"""
'use strict';
const $ = (id) => document.getElementById(id);
const token = new URLSearchParams(location.search).get('token') || '';
const NS = 1000000000n;
let socket = null, control = false, sent = 0, bag = null, pendingSync = null;
let lastState = null, silentSince = null, seekTimer = null, scrubbing = false;
// A seek goes out once the scrubber has rested this long: a drag or a run of arrow keys is
// one seek, so one reset.
const SEEK_REST_MS = 400;

function secondsToNs(text) {
  // "12.5" -> 12500000000n, exactly (no float).
  const match = /^\s*(\d+)(?:\.(\d{0,9}))?\s*$/.exec(text);
  if (!match) return null;
  return BigInt(match[1]) * NS + BigInt((match[2] || '').padEnd(9, '0'));
}
function nsToSeconds(ns) {
  const value = BigInt(ns), whole = value / NS, part = value % NS;
  return whole.toString() + '.' + part.toString().padStart(9, '0');
}
function say(text, kind) {
  const message = $('message');
  message.textContent = text;
  message.className = kind || '';
}
function send(command) {
  if (!socket || socket.readyState !== WebSocket.OPEN) { say('not connected', 'refused'); return; }
  command.id = ++sent;
  socket.send(JSON.stringify(command));
}
function setControls() {
  const may = control && silentSince === null;
  for (const button of document.querySelectorAll('#controls button, #seek')) {
    button.disabled = !may;
  }
}
function drawPlot(points) {
  const canvas = $('plot'), g = canvas.getContext('2d');
  g.clearRect(0, 0, canvas.width, canvas.height);
  g.fillStyle = '#888'; g.font = '11px sans-serif';
  if (!points.length) { g.fillText('real-time factor: no /clock movement yet', 4, 14); return; }
  const top = Math.max(1.2, ...points.map((p) => p[1])) * 1.1, span = 30;
  g.fillText('real-time factor, last 30 s (max ' + top.toFixed(2) + 'x)', 4, 12);
  g.strokeStyle = '#ccc'; g.beginPath();
  const one = canvas.height - canvas.height * (1 / top);
  g.moveTo(0, one); g.lineTo(canvas.width, one); g.stroke();
  g.strokeStyle = '#1565c0'; g.lineWidth = 2; g.beginPath();
  points.forEach((p, k) => {
    const x = canvas.width * (1 - p[0] / span), y = canvas.height - canvas.height * (p[1] / top);
    if (k === 0) g.moveTo(x, y); else g.lineTo(x, y);
  });
  g.stroke();
}
function showTime(clockNs, text) {
  $('time').textContent = text;
  $('time').dataset.ns = clockNs;
  if (bag) {
    const at = BigInt(clockNs) - BigInt(bag.start_ns);
    const span = BigInt(bag.end_ns) - BigInt(bag.start_ns);
    // The scrubber stays where the user put it until the seek it asks for has gone out.
    if (!scrubbing && seekTimer === null) $('scrub').value = (at / 1000000n).toString();
    const percent = span > 0n ? Number(at * 10000n / span) / 100 : 100;
    $('bag_position').textContent = nsToSeconds(clockNs) + ' s, ' + percent.toFixed(2) +
      '% of the bag';
  }
}
function showSilence() {
  if (silentSince === null) return;
  const seconds = ((Date.now() - silentSince) / 1000).toFixed(0);
  $('connection').textContent = lastState === null
    ? 'waiting for the server (' + seconds + ' s)'
    : 'the server stopped answering ' + seconds + ' s ago';
  $('connection').className = 'down';
}
function silent(m) {
  if (silentSince === null) silentSince = Date.now() - m.silent_ms;
  document.body.classList.toggle('stale', lastState !== null);
  document.body.dataset.down = 'true';
  setControls(); showSilence();
}
function answering() {
  // What was shown belonged to the server that went silent: the new one's state follows.
  silentSince = null;
  document.body.classList.remove('stale');
  document.body.dataset.down = 'false';
  $('connection').textContent = 'live'; $('connection').className = '';
  $('resets').innerHTML = ''; say('');
  bag = null; $('bag').hidden = true;
  setControls();
}
setInterval(showSilence, 500);
function showState(s) {
  lastState = s;
  if (silentSince !== null) answering();
  document.body.dataset.states = Number(document.body.dataset.states || 0) + 1;
  $('frame').textContent = s.frame;
  $('sample_time').textContent = s.time_text;
  if (document.activeElement !== $('rate')) $('rate').value = s.real_time_factor;
  $('epoch').textContent = s.epoch;
  $('mode').textContent = s.mode_text;
  $('mode').dataset.paused = s.paused;
  $('pace').textContent = s.pace;
  $('holding').textContent = s.holding;
  if (!$('time').dataset.ns) showTime(s.time_ns, s.time_text);
  if (pendingSync !== null) {
    $('sync_warning').textContent = s.sync_warnings[pendingSync ? 'on' : 'off'];
  }
  $('holders').innerHTML = '';
  for (const h of s.holders) {
    const row = document.createElement('tr');
    for (const cell of [h.name, h.kind + (h.missed ? ', ' + h.missed + ' missed' : ''), h.frames,
                        h.p50_ms.toFixed(2), h.p99_ms.toFixed(2), h.max_ms.toFixed(2)]) {
      const td = document.createElement('td'); td.textContent = cell; row.appendChild(td);
    }
    $('holders').appendChild(row);
  }
  $('resets').innerHTML = '';
  for (const r of s.resets) {
    const li = document.createElement('li');
    li.textContent = 'epoch ' + r.epoch + ': ' + r.before + ' s -> ' + r.after + ' s (' +
      r.cause + ')';
    $('resets').appendChild(li);
  }
  if (s.bag && !bag) {
    bag = s.bag;
    $('bag').hidden = false;
    $('bag_span').textContent = nsToSeconds(bag.start_ns) + ' s to ' + nsToSeconds(bag.end_ns) +
      ' s, ' + bag.messages_total + ' messages';
    $('scrub').max = ((BigInt(bag.end_ns) - BigInt(bag.start_ns)) / 1000000n).toString();
    showTime(s.time_ns, s.time_text);
  }
}
function connect() {
  const scheme = location.protocol === 'https:' ? 'wss://' : 'ws://';
  const query = token ? '?token=' + encodeURIComponent(token) : '';
  socket = new WebSocket(scheme + location.host + '/ws' + query);
  socket.onopen = () => {
    if (silentSince !== null) return;
    $('connection').textContent = 'live'; $('connection').className = '';
  };
  socket.onclose = () => {
    $('connection').textContent = 'disconnected: retrying';
    $('connection').className = 'down';
    control = false; setControls();
    setTimeout(connect, 1000);
  };
  socket.onmessage = (event) => {
    const m = JSON.parse(event.data);
    if (m.kind === 'hello') {
      control = m.control; setControls();
      document.body.dataset.control = m.control;
      $('server').textContent = m.server;
      $('access').textContent = m.control ? '' : m.why;
    } else if (m.kind === 'state') {
      showState(m);
    } else if (m.kind === 'down' || m.kind === 'waiting') {
      silent(m);
    } else if (m.kind === 'up') {
      answering();
    } else if (m.kind === 'tick') {
      showTime(m.clock_ns, m.clock_text);
      drawPlot(m.pace);
    } else if (m.kind === 'result') {
      say((m.ok ? '' : 'refused: ') + m.message, m.ok ? 'done' : 'refused');
    }
  };
}
$('pause').onclick = () => send({action: 'pause'});
$('resume').onclick = () => send({action: 'resume'});
$('step1').onclick = () => send({action: 'step', n: 1});
$('stepN').onclick = () => send({action: 'step', n: Number($('steps').value)});
$('step_until').onclick = () => {
  const ns = secondsToNs($('until').value);
  if (ns === null) { say('step until takes seconds, e.g. 12.5', 'refused'); return; }
  send({action: 'step_until', time_ns: ns.toString()});
};
$('set_rate').onclick = () => send({action: 'rate', factor: Number($('rate').value)});
function askSync(on) {
  pendingSync = on;
  $('sync_warning').textContent = lastState ? lastState.sync_warnings[on ? 'on' : 'off']
    : (on ? 'sync on' : 'sync off') + ': time goes back to the start';
  $('confirm_sync').style.display = 'inline';
}
$('sync_on').onclick = () => askSync(true);
$('sync_off').onclick = () => askSync(false);
$('confirm').onclick = () => {
  $('confirm_sync').style.display = 'none';
  send({action: 'sync', on: pendingSync});
  pendingSync = null;
};
$('cancel').onclick = () => { $('confirm_sync').style.display = 'none'; pendingSync = null; };
$('seek').onclick = () => {
  if (seekTimer !== null) { clearTimeout(seekTimer); seekTimer = null; }
  if (!bag) return;
  const at = BigInt(bag.start_ns) + BigInt($('scrub').value) * 1000000n;
  send({action: 'seek', time_ns: at.toString()});
};
function scrubMoved() {
  // Each move restarts the wait: the seek goes out once, where the scrubber comes to rest.
  if (seekTimer !== null) clearTimeout(seekTimer);
  seekTimer = setTimeout(() => { seekTimer = null; if (!scrubbing) $('seek').onclick(); },
                         SEEK_REST_MS);
}
$('scrub').oninput = scrubMoved;
$('scrub').onchange = scrubMoved;
$('scrub').onpointerdown = () => { scrubbing = true; };
$('scrub').onpointerup = () => { scrubbing = false; scrubMoved(); };
setControls();
connect();
"""

PAGE = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>sim_clock panel</title>
<style>{STYLE}</style></head>
<body>{BODY}<script>{SCRIPT}</script></body></html>
"""
