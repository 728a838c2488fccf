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
A frame timeline written here, event by event, as a server records it (FrameEventRing).

Epoch 0: one step of 10 frames of 10 ms, held by two participants and a gate; ``/slow``
takes 20 ms at frame 7, the gate's message never comes at frame 9, frame 3 waits for
acknowledgements. Then a reset, and epoch 1: a step of 3 frames held by ``/planning`` only.
Steady times start at an odd number of ns, so that every conversion must be exact.

:class:`Page` reads a report page (as written, or as a browser's DOM dumps it) into elements.
"""

from html.parser import HTMLParser

from sim_clock.core.frame_events import ACK
from sim_clock.core.frame_events import DONE
from sim_clock.core.frame_events import FRAME
from sim_clock.core.frame_events import FrameEventRing
from sim_clock.core.frame_events import GATE
from sim_clock.core.frame_events import RESET
from sim_clock.core.frame_events import STEP

US = 1_000
MS = 1_000_000
#: The steady time of the first event: 1234.567891234 s of the server's CLOCK_MONOTONIC.
T0 = 1_234_567_891_234
#: The holders, slowest first (p99, then max), as the report must order them.
HOLDERS = [('/slow', 'participant'), ('/cmd', 'gate'), ('/planning', 'participant')]
#: Frames recorded, resets recorded.
FRAMES, RESETS = 13, 1


def planning_ns(frame: int) -> int:
    """Return how long /planning holds frame ``frame`` of epoch 0 (2.9 ms at frame 5)."""
    return 2_900_003 if frame == 5 else 1_500_003


def slow_ns(frame: int) -> int:
    """Return how long /slow holds frame ``frame`` (20 ms at frame 7, else 0.5 ms)."""
    return 20 * MS + 11 if frame == 7 else 500 * US + 7


def synthetic_run():
    """Return the events of the run described above, in the order recorded."""
    ring = FrameEventRing(1000)
    now = T0
    step_start = now
    for frame in range(1, 11):
        sim_ns = frame * 10 * MS
        ring.record(FRAME, 0, sim_ns, now, count=frame)
        holds = [(DONE, '/planning', planning_ns(frame), True),
                 (DONE, '/slow', slow_ns(frame), True)]
        if frame % 2 == 1:
            holds.append((GATE, '/cmd', 5 * MS if frame == 9 else 1 * MS + 1, frame != 9))
        end = now
        for kind, name, held, success in sorted(holds, key=lambda hold: hold[2]):
            ring.record(kind, 0, sim_ns, now, now + held, name=name, count=0, success=success)
            end = max(end, now + held)
        if frame == 3:
            ring.record(ACK, 0, sim_ns, end, end + 200 * US + 1, name='/a,/b')
            end += 200 * US + 1
        now = end + 100 * US
    ring.record(STEP, 0, 100 * MS, step_start, now, name='step', count=10,
                detail='tester: stepped 10 frames')
    now += 1 * MS
    ring.record(RESET, 1, 0, now, count=100 * MS, detail='~/reset by "tester" <operator>')
    now += 1 * MS
    step_start = now
    for frame in range(1, 4):
        sim_ns = frame * 10 * MS
        ring.record(FRAME, 1, sim_ns, now, count=frame)
        ring.record(DONE, 1, sim_ns, now, now + 1 * MS, name='/planning')
        now += 2 * MS
    ring.record(STEP, 1, 30 * MS, step_start, now, name='step', count=3, success=False,
                detail='tester: ünïcode & "quotes"')
    return ring.after(0)[0]


class Element:
    """An element of a parsed page: its tag, attributes, text, and the ids it lies within."""

    def __init__(self, tag: str, attrs: dict, within: tuple):
        self.tag = tag
        self.attrs = attrs
        self.within = within
        self.text = ''
        self.children = []

    @property
    def classes(self) -> list:
        """Return its class names."""
        return (self.attrs.get('class') or '').split()


class Page(HTMLParser):
    """A page's elements in document order (the report as written, or as a browser's DOM)."""

    VOID = {'meta', 'br', 'img', 'input', 'link', 'hr', 'source', 'wbr'}

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.elements = []
        self._open = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        ids = tuple(element.attrs['id'] for element in self._open if 'id' in element.attrs)
        element = Element(tag, dict(attrs), ids)
        if self._open:
            self._open[-1].children.append(element)
        self.elements.append(element)
        if tag not in self.VOID:
            self._open.append(element)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in self.VOID:
            self._open.pop()

    def handle_endtag(self, tag):
        for index in range(len(self._open) - 1, -1, -1):
            if self._open[index].tag == tag:
                del self._open[index:]
                return

    def handle_data(self, data):
        for element in self._open:
            element.text += data

    def find(self, tag: str, within: str = '', cls: str = '') -> list:
        """Return the ``tag`` elements inside the element of id ``within``, of class ``cls``."""
        return [element for element in self.elements if element.tag == tag
                and (not within or within in element.within)
                and (not cls or cls in element.classes)]

    def by_id(self, element_id: str) -> Element:
        """Return the element of that id."""
        return next(element for element in self.elements
                    if element.attrs.get('id') == element_id)


#: How long SLOW_PARTICIPANT works in its slow frames, in the tests that start it: longer than
#: any stall of a loaded machine seen in a frame held by a participant with no work (29 ms, on
#: a machine running a suite beside), so that one such stall cannot make the participant that
#: works look the slower (holders rank by p99, which with 50 frames is the longest hold).
SLOW_WORK_NS = 100 * MS


def check_worked_holds(holds: dict, worked: dict) -> None:
    """
    Check a participant's holds against the work it timed in its slow frames.

    ``holds``: frame time -> the hold the server recorded; ``worked``: frame time -> the work
    the participant timed in that frame (a sleep lasts longer on a loaded machine). Each hold
    of a worked frame holds its work: the done came after the work, and the hold starts when
    the server's publish of the frame returned (``Frames.publish``), a little after its
    /clock left, so the participant may start working a few microseconds before the hold does
    (2.8 us seen in a run): at least 90% of the work, a margin no scheduling delay of the
    server between the send and its stamp comes near. The rest of a hold, taking /clock and
    saying done (after work also the messages that came meanwhile, such as the idle
    republishes), is the machine's latency, up to several ms under load and not the server's to
    decide, so it is bounded by the frames' own evidence only: in the median, the frames without
    work hold less than half the work.
    """
    assert all(holds[time_ns] >= work * 9 // 10 for time_ns, work in worked.items()), (
        holds, worked)
    other = sorted(hold for time_ns, hold in holds.items() if time_ns not in worked)
    assert other[len(other) // 2] < min(worked.values()) // 2, (other, worked)


#: A participant (sim_clock.client.participant) with a use_sim_time timer due every 10 ms that
#: works WORK seconds at one firing in ten and times it, printing 'worked <time ns> <ns>'
#: (argv: name, WORK; 0 never works). It prints 'joined' once the server's done reader has
#: matched its writer (a done sent before would be lost).
SLOW_PARTICIPANT = """
import sys, time
import rclpy
from rclpy.parameter import Parameter
from sim_clock.client.participant import Participant
name, work = sys.argv[1], float(sys.argv[2])
rclpy.init()
node = rclpy.create_node(name, parameter_overrides=[Parameter('use_sim_time', value=True)])
fired = []
def tick():
    fired.append(node.get_clock().now().nanoseconds)
    if len(fired) % 10 == 0 and work:
        start = time.monotonic_ns()
        time.sleep(work)  # the work of a slow node under test, one frame in ten
        print('worked', fired[-1], time.monotonic_ns() - start, flush=True)
node.create_timer(0.01, tick)
participant = Participant(node, name=name, period_sec=0.01)
while participant._done.get_subscription_count() < 1:
    participant.executor.spin_once(timeout_sec=0.05)
print('joined', flush=True)
try:
    while rclpy.ok():
        participant.spin_once()
except KeyboardInterrupt:
    pass
participant.close()
rclpy.try_shutdown()
"""
