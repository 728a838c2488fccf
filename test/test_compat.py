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

"""rclpy beyond its public API (``sim_clock.compat``): each use still does what we rely on."""

from collections.abc import MutableMapping
import time

from builtin_interfaces.msg import Time
import pytest
from rcl_interfaces.msg import ParameterEvent
import rclpy
from rclpy.exceptions import InvalidHandle
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import qos_profile_parameter_events
from rclpy.task import Future
from rclpy.time_source import TimeSource
from rosgraph_msgs.msg import Clock as ClockMsg
from sim_clock.compat import call_timer
from sim_clock.compat import coerce_integer_overrides
from sim_clock.compat import DeferredReplies
from sim_clock.compat import detach_time_source
from sim_clock.compat import drop_pending
from sim_clock.compat import executor_tasks
from sim_clock.compat import LeanWait
from sim_clock.compat import PinnedHandle
from sim_clock.compat import PinnedHandles
from sim_clock.compat import publish_parameter_event
from sim_clock.compat import publisher_address
from sim_clock.compat import raw_publish
from sim_clock.compat import replace_parameter_store
from sim_clock.compat import take_ready
from sim_clock.compat import TakenByOwner
from sim_clock.compat import takes_message_info
from std_srvs.srv import Trigger

pytestmark = pytest.mark.dds

try:
    from rclpy.experimental import EventsExecutor
except ImportError:
    EventsExecutor = None

EXECUTORS = [pytest.param(SingleThreadedExecutor, id='single-threaded'),
             pytest.param(EventsExecutor, id='events', marks=pytest.mark.skipif(
                 EventsExecutor is None, reason='this rclpy has no EventsExecutor'))]


def test_rclpy_still_has_the_private_api_we_use(context):
    """Node._parameter_overrides maps names to Parameters; Node._time_source is a TimeSource."""
    node = rclpy.create_node(
        'private_api', context=context,
        parameter_overrides=[Parameter('rate', value=2), Parameter('use_sim_time', value=True)])
    assert isinstance(node._parameter_overrides, dict)
    assert node._parameter_overrides['rate'].type_ == Parameter.Type.INTEGER
    assert isinstance(node._time_source, TimeSource)
    coerce_integer_overrides(node, ['rate'])
    assert node.declare_parameter('rate', 1.0).value == 2.0
    time_source = detach_time_source(node)
    assert time_source is node._time_source
    assert not node.get_subscriptions_info_by_topic('/clock')
    assert time_source.ros_time_is_active and node.get_clock().ros_time_is_active
    node.destroy_node()


class _Doubled(MutableMapping):
    """A parameter store that reads every integer doubled: a store of our own at work."""

    def __init__(self, stored):
        self.stored = dict(stored)

    def __getitem__(self, name):
        parameter = self.stored[name]
        if parameter.type_ == Parameter.Type.INTEGER:
            return Parameter(name, value=parameter.value * 2)
        return parameter

    def __setitem__(self, name, parameter):
        self.stored[name] = parameter

    def __delitem__(self, name):
        del self.stored[name]

    def __iter__(self):
        return iter(self.stored)

    def __len__(self):
        return len(self.stored)


def test_a_parameter_store_of_our_own_serves_every_read_and_write(context):
    """Node._parameters replaced: gets, lists, sets, declares and undeclares go through it."""
    node = rclpy.create_node('private_store', context=context)
    node.declare_parameter('count', 1)
    store = replace_parameter_store(node, _Doubled)
    assert node._parameters is store and store.stored['count'].value == 1
    assert node.get_parameter('count').value == 2
    assert node.get_parameter_or('count').value == 2
    assert node.get_parameters_by_prefix('')['count'].value == 2
    assert 'count' in node.list_parameters([], 0).names
    assert node.set_parameters([Parameter('count', value=5)])[0].successful
    assert store.stored['count'].value == 5 and node.get_parameter('count').value == 10
    node.declare_parameter('other', 'x')
    assert store.stored['other'].value == 'x'
    node.undeclare_parameter('other')
    assert 'other' not in store.stored and not node.has_parameter('other')
    events = []
    node.create_subscription(ParameterEvent, '/parameter_events', events.append,
                             qos_profile_parameter_events)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    event = ParameterEvent(node='/private_store')
    deadline = time.monotonic() + 5.0
    while not any(e.node == '/private_store' and not e.changed_parameters for e in events):
        assert time.monotonic() < deadline, 'our parameter event did not arrive'
        publish_parameter_event(node, event)
        executor.spin_once(timeout_sec=0.1)
    executor.shutdown()
    node.destroy_node()


@pytest.mark.parametrize('executor_class', EXECUTORS)
def test_pending_messages_are_dropped_outside_the_executor(context, executor_class):
    """drop_pending takes what a raw subscription holds; the executor then takes only later."""
    node = rclpy.create_node('drop', context=context)
    publisher = node.create_publisher(ClockMsg, '/drop', 10)
    taken = []
    subscription = node.create_subscription(ClockMsg, '/drop', taken.append, 10, raw=True)
    executor = executor_class(context=context)
    executor.add_node(node)
    for _ in range(3):
        publisher.publish(ClockMsg())
    deadline = time.monotonic() + 10.0
    dropped = 0
    while dropped < 3 and time.monotonic() < deadline:  # polled: the executor must not take
        dropped += drop_pending(subscription)
    assert dropped == 3
    publisher.publish(ClockMsg())
    while not taken and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)
    for _ in range(5):
        executor.spin_once(timeout_sec=0.01)
    assert len(taken) == 1 and isinstance(taken[0], bytes)
    executor.shutdown()
    node.destroy_node()


def test_the_message_info_type_of_a_subscription_is_read(context):
    """takes_message_info follows rclpy's choice, made from the callback's signature."""
    node = rclpy.create_node('info', context=context)
    plain = node.create_subscription(ClockMsg, '/a', lambda msg: None, 1)
    with_info = node.create_subscription(ClockMsg, '/a', lambda msg, info: None, 1)
    assert not takes_message_info(plain) and takes_message_info(with_info)
    plain.callback = lambda msg, info: None
    assert takes_message_info(plain)
    node.destroy_node()


@pytest.mark.parametrize('pin', [
    lambda publishers, destroyed=None: PinnedHandles(publishers, destroyed),
    lambda publishers, destroyed=None: PinnedHandle(publishers[0], destroyed)],
    ids=['PinnedHandles', 'PinnedHandle'])
def test_a_held_publisher_outlives_its_destruction_until_released(context, pin):
    """A publisher whose address C uses lives until it is let go; one destroyed raises."""
    node = rclpy.create_node('held', context=context)
    publisher = node.create_publisher(ClockMsg, '/held_clock', 1)
    assert publisher_address(publisher) != 0
    raw_publish(publisher)(b'\x00\x01\x00\x00' + bytes(8))  # a Clock of 0, as C lays it out
    with pin([publisher]):
        node.destroy_publisher(publisher)
        publisher.handle.pointer  # still valid: destruction waits for the release
    with pytest.raises(InvalidHandle):
        with pin([publisher]):
            pass
    with pytest.raises(RuntimeError, match='gone'):
        with pin([publisher], lambda: RuntimeError('gone')):
            pass
    node.destroy_node()


def test_pinned_handles_let_go_of_those_entered_when_one_is_destroyed(context):
    """Of two publishers, the live one is released when the other one is found destroyed."""
    node = rclpy.create_node('held_two', context=context)
    live = node.create_publisher(ClockMsg, '/held_live', 1)
    gone = node.create_publisher(ClockMsg, '/held_gone', 1)
    node.destroy_publisher(gone)
    with pytest.raises(InvalidHandle):
        with PinnedHandles([live, gone]):
            pass
    node.destroy_publisher(live)  # released: destroyed at once
    with pytest.raises(InvalidHandle):
        with PinnedHandles([live]):
            pass
    node.destroy_node()


@pytest.mark.parametrize('executor_class', EXECUTORS)
def test_a_deferred_reply_is_sent_later_and_an_early_one_at_once(context, executor_class):
    """A held response goes out when released, after its callback returned; on each executor."""
    node = rclpy.create_node('deferred', context=context)
    released = []

    def on_request(request, response):
        def answer(message):
            response.message = message
        release = replies.defer(response, answer)
        if len(released) == 0:
            released.append(release)  # answered by the timer below
        else:
            release('at once')
        return response
    service = node.create_service(Trigger, 'deferred', on_request)
    replies = DeferredReplies(service)
    fired = []

    def answer_later():
        if released and not fired:
            fired.append(time.monotonic())
            released[0]('later')
    node.create_timer(0.2, answer_later)
    client = node.create_client(Trigger, 'deferred')
    executor = executor_class(context=context)
    executor.add_node(node)
    try:
        deadline = time.monotonic() + 10.0
        while not client.service_is_ready() and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
        for expected in ('later', 'at once'):
            future = client.call_async(Trigger.Request())
            deadline = time.monotonic() + 10.0
            while not future.done() and time.monotonic() < deadline:
                executor.spin_once(timeout_sec=0.05)
            assert future.done(), f'no answer {expected!r} within 10 s'
            assert future.result().message == expected
        assert fired and replies.pending == 0
    finally:
        executor.shutdown()
        node.destroy_node()


def _wait_for(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, 'not in time'
        time.sleep(0.001)  # polled on purpose: nothing may take but take_ready


def test_take_ready_takes_everything_waiting_as_the_callback_args(context):
    """Messages arrive in order, as (msg,) or (msg, info); an empty or destroyed one gives []."""
    node = rclpy.create_node('take_ready', context=context)
    publisher = node.create_publisher(ClockMsg, '/take_ready', 10)
    plain = node.create_subscription(ClockMsg, '/take_ready', lambda msg: None, 10)
    with_info = node.create_subscription(ClockMsg, '/take_ready', lambda msg, info: None, 10)
    _wait_for(lambda: publisher.get_subscription_count() == 2)
    assert take_ready(plain) == []
    for sec in range(3):
        publisher.publish(ClockMsg(clock=Time(sec=sec)))
    got, got_info = [], []
    _wait_for(lambda: got.extend(take_ready(plain)) or got_info.extend(take_ready(with_info))
              or (len(got) == 3 and len(got_info) == 3))
    assert [item[0].clock.sec for item in got] == [0, 1, 2] and {len(i) for i in got} == {1}
    assert [item[0].clock.sec for item in got_info] == [0, 1, 2]
    assert all('source_timestamp' in info for _, info in got_info)
    node.destroy_subscription(plain)
    assert take_ready(plain) == []
    node.destroy_node()


def test_an_executor_leaves_what_its_owner_takes_in_the_queue(context):
    """A subscription TakenByOwner is never run by the executor; take_ready gets it all."""
    node = rclpy.create_node('taken_by_owner', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    publisher = node.create_publisher(ClockMsg, '/taken_by_owner', 10)
    ran = []
    owned = node.create_subscription(ClockMsg, '/taken_by_owner', ran.append, 10,
                                     callback_group=TakenByOwner())
    plain = node.create_subscription(ClockMsg, '/taken_by_owner', ran.append, 10)
    _wait_for(lambda: publisher.get_subscription_count() == 2)
    for sec in range(3):
        publisher.publish(ClockMsg(clock=Time(sec=sec)))
    # The executor runs the plain subscription's three messages, and nothing of the other.
    deadline = time.monotonic() + 10.0
    while len(ran) < 3 and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.1)
    executor.spin_once(timeout_sec=0.1)
    assert [msg.clock.sec for msg in ran] == [0, 1, 2]
    got = []
    _wait_for(lambda: got.extend(take_ready(owned)) or len(got) >= 3)
    assert [item[0].clock.sec for item in got] == [0, 1, 2]
    node.destroy_subscription(plain)
    executor.shutdown()
    node.destroy_node()


def test_executor_tasks_counts_the_unfinished_ones(context):
    """A task waiting on a future counts until it is done; finished callbacks never count."""
    node = rclpy.create_node('tasks', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    future = Future()

    async def waits():
        await future
    assert executor_tasks(executor) == 0
    executor.create_task(waits)
    executor.spin_once(timeout_sec=0.1)
    assert executor_tasks(executor) == 1
    future.set_result(None)
    executor.spin_once(timeout_sec=0.1)
    assert executor_tasks(executor) == 0
    executor.shutdown()
    node.destroy_node()


def test_a_lean_wait_wakes_on_a_message_and_says_when_the_executor_has_work(context):
    """False for a message or a timeout; True for a due timer or a service request."""
    node = rclpy.create_node('lean', context=context)
    publisher = node.create_publisher(ClockMsg, '/lean', 10)
    subscription = node.create_subscription(ClockMsg, '/lean', lambda msg: None, 10)
    lean = LeanWait(context)
    start = time.monotonic()
    assert lean.wait([node], 50_000_000) is False
    assert time.monotonic() - start >= 0.04
    _wait_for(lambda: publisher.get_subscription_count() == 1)
    publisher.publish(ClockMsg())
    start = time.monotonic()
    assert lean.wait([node], 10_000_000_000) is False
    assert time.monotonic() - start < 5.0
    start = time.monotonic()  # other subscriptions given: the message waiting wakes nothing
    assert lean.wait([node], 100_000_000, subscriptions=[]) is False
    assert time.monotonic() - start >= 0.09 and len(take_ready(subscription)) == 1
    timer = node.create_timer(0.01, lambda: None)
    assert lean.wait([node], 10_000_000_000) is True
    node.destroy_timer(timer)
    service = node.create_service(Trigger, '/lean_trigger', lambda request, response: response)
    client = node.create_client(Trigger, '/lean_trigger')
    assert client.wait_for_service(timeout_sec=10.0)
    client.call_async(Trigger.Request())
    assert lean.wait([node], 10_000_000_000) is True
    node.destroy_client(client)
    node.destroy_service(service)
    node.destroy_node()


def test_call_timer_runs_a_due_timer_once_as_the_executor_would(context):
    """The callback runs now and the timer's next call moves on; a coroutine is left alone."""
    node = rclpy.create_node('call_timer', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    calls = []
    timer = node.create_timer(0.05, lambda: calls.append(1))
    _wait_for(lambda: timer.time_until_next_call() <= 0)
    assert call_timer(executor, timer) and calls == [1]
    assert timer.time_until_next_call() > 0

    async def coroutine():
        calls.append(2)
    waiting = node.create_timer(0.001, coroutine)
    assert not call_timer(executor, waiting) and calls == [1]
    executor.shutdown()
    node.destroy_node()
