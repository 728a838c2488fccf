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
The one place for rclpy's private API and raw handles, each use with its reason.

Every function here leans on something rclpy does not promise; ``test/test_compat.py`` fails
when rclpy changes under one of them (doc/design.md, "rclpy beyond its public API").
"""

import inspect
from typing import Any
from typing import Callable
from typing import Iterable
from typing import MutableMapping
from typing import Optional

from rcl_interfaces.msg import ParameterEvent
from rclpy.callback_groups import CallbackGroup
from rclpy.exceptions import InvalidHandle
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.node import Node
from rclpy.parameter import Parameter

#: What rclpy raises for ROS arguments rcl cannot parse (``remove_ros_args``, ``rclpy.init``):
#: a type of its C extension, not exported by rclpy's public modules.
ROS_ARGS_ERROR = _rclpy.RCLInvalidROSArgsError


def take_ready(subscription) -> list:
    """
    Take every message waiting for ``subscription``, without waiting; return its callback's args.

    Each item is ``(msg,)``, or ``(msg, info)`` where the callback takes the message info.
    ``Subscription.handle.take_message``: what rclpy's executors (7 and 9 alike) call for a
    subscription their wait set found ready. A take from an empty queue returns None at once,
    in about a microsecond, where a look through the executor costs a wait set of every entity
    of the node (about 200 us). A destroyed subscription gives nothing.
    """
    with_info = takes_message_info(subscription)
    taken = []
    handle = subscription.handle
    try:
        with handle:
            while True:
                item = handle.take_message(subscription.msg_type, subscription.raw)
                if item is None:
                    return taken
                taken.append(tuple(item) if with_info else (item[0],))
    except InvalidHandle:
        return taken


class TakenByOwner(CallbackGroup):
    """
    A callback group whose entities no executor waits on or runs: their owner takes them.

    rclpy's executors build each wait set from the entities whose group ``can_execute``
    (``filter(self.can_execute, node.subscriptions)``, 7 and 9 alike), and their event handlers
    take their subscription's group. A subscription here costs the executor one call of
    :meth:`can_execute` a look, where one in its wait set costs it a handle, an entry and its
    QoS event handlers at every look, and a look for each message: a node with hundreds of
    busy subscriptions spends its time there. Its owner takes what waits with
    :func:`take_ready`, when it chooses.
    """

    def can_execute(self, entity) -> bool:
        """Never: the executor leaves the entity out of its waits."""
        return False

    def beginning_execution(self, entity) -> bool:
        """Never: the executor never runs the entity's callback."""
        return False

    def ending_execution(self, entity) -> None:
        """Nothing began, so nothing ends."""


def drop_pending(subscription) -> int:
    """Take and drop what ``subscription`` holds now, outside the executor; return how many."""
    return len(take_ready(subscription))


def coerce_integer_overrides(node: Node, names: Iterable[str]) -> None:
    """
    Let ``-p name:=2`` start a double parameter as 2.0, as a run-time set does.

    ``Node._parameter_overrides``: declaring a double parameter over an integer override
    raises, and rclpy has no public way to see overrides before declaring.
    """
    overrides = getattr(node, '_parameter_overrides', {})
    for name in names:
        if name in overrides and overrides[name].type_ == Parameter.Type.INTEGER:
            overrides[name] = Parameter(name, Parameter.Type.DOUBLE, float(overrides[name].value))


def replace_parameter_store(node: Node,
                            make: Callable[[dict], MutableMapping]) -> MutableMapping:
    """
    Replace ``node``'s parameter store by ``make(store)``; return the new one.

    ``Node._parameters``: rclpy 7 and 9 keep every declared parameter there, name ->
    ``Parameter``, and read and write it through the mapping protocol only (``[]``, ``in``,
    ``del``, ``keys``, ``items``): what ``get_parameter``, ``get_parameters_by_prefix``,
    ``list_parameters``, the parameter services and a set read, and where a set writes. A
    store that reads some values from elsewhere makes them the node's parameters, with no
    copy; rclpy has no public hook for reads.
    """
    node._parameters = make(node._parameters)
    return node._parameters


def publish_parameter_event(node: Node, event: ParameterEvent) -> None:
    """
    Publish ``event`` on /parameter_events with ``node``'s own writer.

    ``Node._parameter_event_publisher``: where rclpy publishes the event of each set; an event
    of a change that did not come through a set goes out the same way, not from a second
    writer of the node.
    """
    node._parameter_event_publisher.publish(event)


def detach_time_source(node: Node):
    """
    Take ``node``'s time source off /clock; return it (None: the node has none).

    ``Node._time_source``: with use_sim_time the time source subscribes the node to /clock and
    applies each message as it arrives. A clock server would queue one event per frame it
    publishes itself; a participant must apply a time only once the data before it is taken.
    Detached, the time source still gives the node's clocks ROS time, set by
    :meth:`~rclpy.time_source.TimeSource.clock_callback`.
    """
    time_source = getattr(node, '_time_source', None)
    if time_source is not None:
        time_source.detach_node()
    return time_source


def takes_message_info(subscription) -> bool:
    """
    Whether ``subscription``'s callback takes the message info too (``callback(msg, info)``).

    ``Subscription._callback_type``: rclpy decides it from the callback's signature when the
    callback is set, and says it nowhere public.
    """
    return subscription._callback_type is subscription.CallbackType.WithMessageInfo


class LeanWait:
    """
    Wait on the entities of some nodes as an executor would, less their waitables.

    ``_rclpy.WaitSet``: rclpy's executors build one over every entity of their nodes at each
    look, waitables included, and every publisher and subscription brings its QoS event
    handlers as waitables (a dozen for a small node): about 200 us a look, where this one
    costs the wait itself (about 80 us with Fast DDS). :meth:`wait` says whether something
    other than a subscription is ready (a timer, a service, a client's answer, a guard
    condition), for the executor to run; subscriptions are left for :func:`take_ready`.
    """

    def __init__(self, context):
        self._context = context

    def wait(self, nodes, timeout_ns: int, subscriptions=None) -> bool:
        """
        Wait up to ``timeout_ns`` (-1: no limit) for an entity; True: one not a subscription.

        ``subscriptions``: these instead of the nodes' own.
        """
        kinds = (('subscriptions', 'add_subscription'), ('timers', 'add_timer'),
                 ('clients', 'add_client'), ('services', 'add_service'),
                 ('guards', 'add_guard_condition'))
        entities = {kind: [entity for node in nodes for entity in getattr(node, kind)]
                    for kind, _ in kinds}
        if subscriptions is not None:
            entities['subscriptions'] = list(subscriptions)
        handles = []
        try:
            for kind, _ in kinds:
                for entity in entities[kind]:
                    entity.handle.__enter__()
                    handles.append(entity.handle)
            context = self._context.handle
            with context:
                wait_set = _rclpy.WaitSet(
                    len(entities['subscriptions']), len(entities['guards']),
                    len(entities['timers']), len(entities['clients']),
                    len(entities['services']), 0, context)
                wait_set.clear_entities()
                for kind, add in kinds:
                    for entity in entities[kind]:
                        getattr(wait_set, add)(entity.handle)
                wait_set.wait(timeout_ns)
                return any(wait_set.get_ready_entities(kind)
                           for kind in ('timer', 'client', 'service', 'guard_condition'))
        except InvalidHandle:
            return True  # something was destroyed meanwhile: let the executor sort it out
        finally:
            for handle in reversed(handles):
                handle.__exit__(None, None, None)


def call_timer(executor, timer) -> bool:
    """
    Run ``timer``'s callback now, as ``executor`` runs one it found ready; False: not run.

    ``Executor._take_timer``: rclpy 7 and 9 call the rcl timer there (which sets its next
    call) and return what runs the callback (9 hands it its ``TimerInfo`` where it asks for
    one). Not for a coroutine callback, which only the executor can resume, nor a destroyed
    timer. Without this, running a timer costs a look of the executor (about 200 us).
    """
    if inspect.iscoroutinefunction(timer.callback):
        return False
    execute = executor._take_timer(timer)
    if execute is None:
        return False
    coroutine = execute()
    try:
        coroutine.send(None)
    except StopIteration:
        return True
    coroutine.close()
    raise RuntimeError(f'timer callback {timer.callback!r} awaited: make it a coroutine function')


def executor_tasks(executor) -> int:
    """
    Return how many tasks ``executor`` has yet to finish (coroutines, ``create_task``).

    ``Executor._tasks``: rclpy 7 and 9 keep there, as ``(task, entity, node)``, every task and
    every callback it ran, until its next look at what is ready; they say it nowhere public.
    """
    return sum(1 for task, *_ in list(getattr(executor, '_tasks', ())) if not task.done())


def publisher_address(publisher) -> int:
    """
    Return the address of ``publisher``'s ``rcl_publisher_t``, for C code that publishes.

    ``Publisher.handle.pointer``: the one way to reach rcl from Python. Use it only inside
    :class:`PinnedHandles`, which keeps the publisher from being destroyed meanwhile. 0: none.
    """
    return getattr(publisher.handle, 'pointer', 0) or 0


def raw_publish(publisher) -> Callable[[bytes], None]:
    """
    Return the function that publishes serialized bytes on ``publisher`` as they are.

    ``Publisher.handle.publish_raw``: ``Publisher.publish`` takes bytes too, but checks and
    converts on every call; the handle's method is what it calls in the end.
    """
    return publisher.handle.publish_raw


class PinnedHandle:
    """
    :class:`PinnedHandles` of a single publisher: the /clock sink's, entered for every step.

    The same contract in fewer steps: no loop, no count of what was entered.
    """

    __slots__ = ('_handle', '_destroyed')

    def __init__(self, publisher, destroyed: Optional[Callable[[], Exception]] = None):
        self._handle = publisher.handle
        self._destroyed = destroyed

    def __enter__(self) -> None:
        try:
            self._handle.__enter__()
        except InvalidHandle:
            if self._destroyed is None:
                raise
            raise self._destroyed() from None

    def __exit__(self, *exc_info) -> None:
        self._handle.__exit__(None, None, None)


class PinnedHandles:
    """
    Pin the handles of ``publishers`` while C code publishes through their addresses.

    As ``Publisher.publish`` does (``with self.handle:``): a publisher destroyed meanwhile is
    destroyed only once released, and one destroyed before raises ``InvalidHandle`` here, or
    what ``destroyed()`` returns if given. A class rather than a generator: it is entered for
    every batch of frames of free run.
    """

    __slots__ = ('_handles', '_entered', '_destroyed')

    def __init__(self, publishers: Iterable,
                 destroyed: Optional[Callable[[], Exception]] = None):
        self._handles = tuple(publisher.handle for publisher in publishers)
        self._entered = 0
        self._destroyed = destroyed

    def __enter__(self) -> None:
        entered = 0
        try:
            for handle in self._handles:
                handle.__enter__()
                entered += 1
        except InvalidHandle:
            self._entered = entered
            self.__exit__(None, None, None)
            if self._destroyed is None:
                raise
            raise self._destroyed() from None
        self._entered = entered

    def __exit__(self, *exc_info) -> None:
        handles, entered = self._handles, self._entered
        self._entered = 0
        for handle in reversed(handles[:entered]):
            handle.__exit__(None, None, None)


class DeferredReplies:
    """
    Answer some requests of a service later than its callback returns, on any executor.

    A callback that cannot answer yet calls :meth:`defer` on its response and returns it; the
    executor's ``Service.send_response(response, header)`` then keeps the header instead of
    sending, and the reply :meth:`defer` returned fills the response and sends it. A
    response released before the callback returns goes out as usual. ``Service.send_response``
    is public; replacing it on the one instance is what lets a plain ``(request, response)``
    callback, which never sees the request's header, answer later (rclpy's executors, its
    EventsExecutor included, call it by attribute).
    """

    _DEFERRED = object()

    def __init__(self, service):
        self._send = service.send_response
        self._pending = {}
        service.send_response = self._send_response

    def defer(self, response, fill: Callable[[Any], None]) -> Callable[[Any], None]:
        """
        Keep ``response`` back; return the reply that sends it (call it once).

        The reply, given the answer, fills the response by ``fill(answer)``, then sends it.
        """
        key = id(response)
        self._pending[key] = self._DEFERRED

        def release(answer) -> None:
            fill(answer)
            header = self._pending.pop(key, self._DEFERRED)
            if header is not self._DEFERRED:
                self._send(response, header)
        return release

    @property
    def pending(self) -> int:
        """Return how many responses are deferred."""
        return len(self._pending)

    def _send_response(self, response, header) -> None:
        key = id(response)
        if self._pending.get(key) is self._DEFERRED:
            self._pending[key] = header  # sent by release()
            return
        self._send(response, header)
