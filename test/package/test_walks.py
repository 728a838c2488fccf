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
The walks of doc/design.md ("One frame, walked") are the code's, and no longer than counted.

A clock server in this process, its service and subscription callbacks called as the executor
calls them, every call of the package's code traced: each function a walk names is called, in
the walk's order, and the doc names each of them in that section.
"""

import os
import re
import sys

from bags import write_test_bag
import pytest
from rclpy.parameter import Parameter
from sim_clock.bag.player import BagPlayer
from sim_clock.bag.reader import Bag
from sim_clock.core.units import NS_PER_MS
from sim_clock.core.units import split_ns
from sim_clock.msg import Done
from sim_clock.node.server import ClockServer
from sim_clock.srv import Join
from sim_clock.srv import Step

pytestmark = pytest.mark.process

DESIGN = os.path.join(os.path.dirname(__file__), '..', '..', 'doc', 'design.md')
PACKAGE = os.sep + 'sim_clock' + os.sep
#: The package's generated interface code (the messages' properties), not counted.
GENERATED = tuple(PACKAGE + folder + os.sep for folder in ('msg', 'srv', 'action'))

#: A step nothing waits for, as doc/design.md walks it: from the callback to the response.
STEP_WALK = [
    'ControlServices._on_step', 'DeferredReplies.defer', 'StepRunner.step',
    'Core.nothing_to_wait_for',
    'Timeline.step', 'Timeline.check_step', 'Timeline._advance', 'Frames.publish',
    'ClockSink.publish_frames', 'Writers.publish', 'FrameEventRing.record_frames',
    'Ticker.published', 'FrameTimeline.step', 'FrameEventRing.record', 'fill_step',
]
#: A free-run frame with one participant, from its done to the next frame out.
FREE_RUN_WALK = [
    'Participants._on_done', 'Barrier.done', 'Participants._released', 'FrameEngine.released',
    'StepRunner.wake', 'FreeRun.tick', 'Timeline.release_lapsed_holder', 'FreeRun._held',
    'Frames.run_length', 'Hold.frames_until_awaited', 'Frames.limit', 'Timeline.poll',
    'Frames.publish', 'ClockSink.publish_frames', 'Ticker.published',
    'Participants.frame_out', 'Hold.published',
]

#: A bag frame, stepped, a participant due at the last frame of the run: the step's callback
#: to its wait for the participant's done.
BAG_WALK = [
    'ControlServices._on_step', 'DeferredReplies.defer', 'StepRunner.step',
    'Core.nothing_to_wait_for', 'StepRunner.queue', 'StepRunner._resume', 'StepRunner._run_step',
    'Timeline.check_step', 'StepRunner._finished', 'Frames.run_length',
    'Hold.frames_until_awaited', 'Timeline.step', 'Frames.publish',
    'BagFrames.publish_frames', 'Cursor.play', 'paced.<locals>.flowing', 'Cursor.play',
    'Writers.publish', 'BagFrames._publish_acknowledged', 'Acknowledgements.wait_now',
    'BagFrames._progressed', 'Participants.frame_out', 'Hold.published',
    'StepRunner._finished', 'Hold.overdue',
]


#: The most distinct functions of the package each walk calls (its generated message code
#: left out; lambdas and nested functions each count): the counts of this version, so that a
#: change that lengthens a path fails here. doc/performance.md gives them beside the targets.
MOST_FUNCTIONS = {'step': 24, 'free_run': 33, 'bag': 50}


class Walked(list):
    """The qualified names of the package's functions a call ran, in call order."""

    #: How many distinct functions of the package (lambdas and nested ones each their own).
    functions = 0


def _traced(call) -> Walked:
    """Return the package's functions ``call()`` ran (:class:`Walked`), in call order."""
    names, codes = Walked(), set()

    def profile(frame, event, arg):
        filename = frame.f_code.co_filename
        if event == 'call' and PACKAGE in filename and not any(
                folder in filename for folder in GENERATED):
            names.append(frame.f_code.co_qualname)
            codes.add(frame.f_code)
    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    names.functions = len(codes)
    return names


def _listed(names: Walked) -> str:
    """Say how many functions a walk ran, and each (sorted, once): where a bound was passed."""
    return f'{names.functions} functions:\n' + '\n'.join(sorted(set(names)))


def _missing_in_order(walk: list, names: list) -> list:
    """Return the functions of ``walk`` not found in ``names`` in the walk's order."""
    missing, position = [], 0
    for function in walk:
        try:
            position = names.index(function, position) + 1
        except ValueError:
            missing.append(function)
    return missing


def _callback(entities, name: str):
    """Return the callback of the service or subscription of ``entities`` named ``name``."""
    return next(entity.callback for entity in entities
                if getattr(entity, 'service_name', None) == name
                or getattr(entity, 'topic_name', None) == name)


def _walked_in_doc() -> str:
    with open(DESIGN) as design:
        text = design.read()
    return text[text.index('## One frame, walked'):text.index('## Participants')]


def test_a_step_nothing_waits_for_goes_the_way_the_doc_walks_it(context):
    """
    Three frames answered within the callback, through each function the walk names.

    The second such step is walked: the first makes what is made once (a response's field
    plan, the /clock layout check).
    """
    server = ClockServer(context=context, parameter_overrides=[
        Parameter('sync', value=True), Parameter('time_step', value=0.001)])
    try:
        on_step = _callback(server.services, '/sim_clock/step')
        assert on_step(Step.Request(steps=3), Step.Response()).frame == 3
        responses = []
        names = _traced(lambda: responses.append(on_step(Step.Request(steps=3),
                                                         Step.Response())))
        assert responses[0].success and responses[0].frame == 6, responses
        assert _missing_in_order(STEP_WALK, names) == [], names
        assert names.functions <= MOST_FUNCTIONS['step'], _listed(names)
    finally:
        server.destroy_node()


def test_a_done_sends_the_next_free_run_frame_the_way_the_doc_walks_it(context):
    """From the participant's done to the next frame out, in the done's own callback."""
    server = ClockServer(context=context, parameter_overrides=[
        Parameter('real_time_factor', value=0.0), Parameter('time_step', value=0.001)])
    try:
        joined = _callback(server.services, '/sim_clock/join')(
            Join.Request(name='planner'), Join.Response())
        assert joined.success, joined.message
        server.engine.free_run.tick()  # its first frame goes out: the participant is awaited
        frame = server.timeline.frame
        done = Done(name='planner')
        done.time.sec, done.time.nanosec = split_ns(server.axes.to_clock(server.timeline.time_ns))
        names = _traced(lambda: _callback(server.subscriptions, '/sim_clock/done')(done))
        assert server.timeline.frame == frame + 1
        assert _missing_in_order(FREE_RUN_WALK, names) == [], names
        assert names.functions <= MOST_FUNCTIONS['free_run'], _listed(names)
    finally:
        server.destroy_node()


def test_a_bag_frame_goes_the_way_the_doc_walks_it(context, tmp_path):
    """A run of frames of a bag: all but the last through the C loop, the last in lockstep."""
    path = str(tmp_path / 'bag')
    write_test_bag(path, 'sqlite3')
    bag = Bag(path)
    player = BagPlayer(bag, show_progress=False, start_at_zero=True, context=context,
                       parameter_overrides=[Parameter('sync', value=True),
                                            Parameter('time_step', value=0.01)])
    try:
        server = player.node
        joined = _callback(server.services, '/sim_clock/join')(
            Join.Request(name='planner', period_ns=100 * NS_PER_MS), Join.Response())
        assert joined.success, joined.message
        on_step = _callback(server.services, '/sim_clock/step')
        on_step(Step.Request(steps=1), Step.Response())  # frame 1: the participant's first
        done = Done(name='planner')
        done.time.sec, done.time.nanosec = split_ns(10 * NS_PER_MS)
        _callback(server.subscriptions, '/sim_clock/done')(done)
        names = _traced(lambda: on_step(Step.Request(steps=10), Step.Response()))
        # Frames 2 to 11 out, the participant due at 11: the step waits for its done.
        assert server.timeline.frame == 11
        assert _missing_in_order(BAG_WALK, names) == [], names
        assert names.functions <= MOST_FUNCTIONS['bag'], _listed(names)
    finally:
        player.node.destroy_node()
        player.reader.close()
        bag.close()


def test_the_doc_names_each_function_of_the_walks():
    """Each function the tests above follow is named in doc/design.md's walks, as it is."""
    walked = _walked_in_doc()
    named = set(re.findall(r'`([^`]+)`', walked))
    # Each dotted name in backticks, and each of its dotted tails: `compat.DeferredReplies.defer`
    # names DeferredReplies.defer and hold. Topics and services (`~/step`) name no function.
    dotted = [part for name in named if not name.startswith(('~', '/'))
              for part in re.split(r'[^\w.]+', name) if part]
    words = {'.'.join(parts[i:]) for parts in (name.split('.') for name in dotted)
             for i in range(len(parts))}
    # A method by its class and name; a private one may go by its name alone (`_take_all`),
    # in the walk of its class; a nested function by the function that makes it.
    functions = [function.split('.<locals>.')[0]
                 for function in STEP_WALK + FREE_RUN_WALK + BAG_WALK]
    unnamed = [function for function in functions if function not in words
               and not (function.split('.')[-1].startswith('_')
                        and function.split('.')[-1] in words)]
    assert unnamed == []
