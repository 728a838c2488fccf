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
The processes of the performance benchmark: bare rclpy baselines and the measuring probes.

Each role runs in a process of its own, started by ``run.py`` as
``python roles.py ROLE [ARGS]`` on the benchmark's domain. A role prints ``ready`` once it
is discovered and running, and its result as one JSON line starting with ``result``.

Baselines, written for the same jobs as the clock server with nothing else in them, on the
executor chosen with ``--executor`` (``events``, rclpy's experimental EventsExecutor, the
default; ``single``, the SingleThreadedExecutor): the run tries both where it matters.

- ``bare-step-server``: a Trigger service that publishes the next Clock in its callback;
- ``bare-publish-loop``: a loop publishing Clock messages as fast as it can;
- ``bare-timer-publisher``: a wall timer publishing the wall time as a Clock message;
- ``bare-paced-publisher``: free run written the obvious way, a wall timer of period
  time_step / real_time_factor adding one time_step per callback.

Probes, the same code whichever server they measure:

- ``step-latency``: one-frame steps until both the response and the new /clock are in;
- ``step-throughput``: ``steps``-frame steps back to back;
- ``status``: polls ``get_status`` at 100 Hz and reports when the frame passes marks;
- ``listener``: subscribes to /clock as rclpy's time source does (a use_sim_time node);
- ``pacing``: records every /clock with its wall arrival time and fits the pace.
"""

import argparse
import json
import os
import re
import signal
import sys
import time
from typing import Optional

import rclpy
from rclpy.clock import Clock
from rclpy.clock import ClockType
from rclpy.executors import SingleThreadedExecutor
from rclpy.experimental import EventsExecutor
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rosgraph_msgs.msg import Clock as ClockMsg
from sim_clock.msg import Done
from sim_clock.srv import GetStatus
from sim_clock.srv import Join
from sim_clock.srv import Leave
from sim_clock.srv import Step
from sim_clock.srv import SyncModeCmd
from sim_clock.wire.names import CLOCK_QOS
from sim_clock.wire.names import SERVICE_QOS
from std_msgs.msg import String
from std_srvs.srv import Trigger

NS_PER_SEC = 1_000_000_000
#: rclpy's TimeSource subscribes so: what every use_sim_time node adds to a /clock publisher.
TIME_SOURCE_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
#: A probe that must see a given /clock keeps every one.
EVERY_CLOCK_QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
BENCH_USER = 'benchmark'
TIMEOUT = 30.0
#: A request safe to repeat is asked again after this long without an answer, in s.
RESEND_S = 2.0


def stamp_ns(stamp) -> int:
    """Return a builtin_interfaces/Time as integer ns."""
    return stamp.sec * NS_PER_SEC + stamp.nanosec


def set_stamp(stamp, time_ns: int) -> None:
    """Write integer ns into a builtin_interfaces/Time."""
    stamp.sec, stamp.nanosec = divmod(time_ns, NS_PER_SEC)


def say(*words) -> None:
    """Tell the orchestrator something, one line."""
    print(*words, flush=True)


#: What Fast DDS's shared-memory transport maps or opens: its port and data segments and their
#: lock files, ``/dev/shm/fastrtps_*`` (Fast DDS 2, Jazzy) or ``/dev/shm/fastdds_*`` (3, Kilted).
SHARED_MEMORY_FILE = re.compile(r'/dev/shm/(sem\.)?fast(rtps|dds)_')


def shared_memory_files(pid='self') -> list:
    """
    Return the Fast DDS shared-memory files process ``pid`` maps or holds open (empty: none).

    What tells that a process's Fast DDS is on shared memory, whatever its environment says:
    under a LOCALHOST discovery range rmw_fastrtps installs it despite
    ``FASTDDS_BUILTIN_TRANSPORTS=UDPv4``.
    """
    found = set()
    try:
        with open(f'/proc/{pid}/maps') as maps:
            for line in maps:
                name = line.split()[-1]
                if SHARED_MEMORY_FILE.match(name):
                    found.add(name)
        fd_dir = f'/proc/{pid}/fd'
        for fd in os.listdir(fd_dir):
            try:
                target = os.readlink(os.path.join(fd_dir, fd))
            except OSError:  # closed meanwhile
                continue
            if SHARED_MEMORY_FILE.match(target):
                found.add(target)
    except FileNotFoundError:  # the process is gone
        pass
    return sorted(found)


def result(**figures) -> None:
    """Hand the role's result to the orchestrator, with the shared memory this process uses."""
    say('result', json.dumps(dict(figures, shared_memory=shared_memory_files())))


def percentile(values: list, fraction: float) -> float:
    """Return the nearest-rank percentile of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


EXECUTORS = {'events': EventsExecutor, 'single': SingleThreadedExecutor}


class Role:
    """One node on the chosen executor; spin until a condition or a signal."""

    def __init__(self, name: str, executor: str = 'events'):
        self.node = rclpy.create_node(name, start_parameter_services=False)
        self.executor = EXECUTORS[executor]()
        self.executor.add_node(self.node)
        self.steady = Clock(clock_type=ClockType.STEADY_TIME)
        #: How long a wait or a call takes at most unless told (s): more where dozens of
        #: processes start at once.
        self.timeout = TIMEOUT

    def spin_until(self, condition, what: str, timeout: Optional[float] = None) -> None:
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while not condition():
            if time.monotonic() > deadline:
                raise SystemExit(f'benchmark role: timed out waiting for {what}')
            self.executor.spin_once(timeout_sec=0.05)

    def wait_for_service(self, client) -> None:
        self.spin_until(client.service_is_ready, f'service {client.srv_name}')

    def wait_for_subscribers(self, publisher, count: int) -> None:
        self.spin_until(lambda: publisher.get_subscription_count() >= count,
                        f'{count} subscriber(s) of {publisher.topic_name}')

    def call(self, client, request, resend_s: float = 0.0):
        """
        Return the answer to ``request``; with ``resend_s``, ask again each ``resend_s``.

        Only for a request safe to make twice. A server may not yet have matched a new
        client's answer reader when the client sees the service (beside a loaded machine, more
        than the 2 s our Fast DDS profile waits for it): that first answer is lost, not late.
        """
        deadline = time.monotonic() + self.timeout
        while True:
            future = client.call_async(request)
            again = time.monotonic() + (resend_s or self.timeout)
            while not future.done() and time.monotonic() < min(again, deadline):
                self.executor.spin_once(timeout_sec=0.05)
            if future.done():
                return future.result()
            client.remove_pending_request(future)
            if time.monotonic() >= deadline:
                raise SystemExit(f'benchmark role: timed out waiting for an answer from '
                                 f'{client.srv_name}')

    def introduce(self, server: str) -> None:
        """
        Ask ``server``'s get_status until answered, from a client made after all the others.

        A node's endpoints reach the server in the order it made them (one reliable discovery
        channel): once this answer comes, every client made before has its answers matched,
        so none of their first answers is lost.
        """
        status = self.node.create_client(GetStatus, f'{server}/get_status',
                                         qos_profile=SERVICE_QOS)
        self.wait_for_service(status)
        self.call(status, GetStatus.Request(), resend_s=RESEND_S)
        self.node.destroy_client(status)

    def spin_forever(self) -> None:
        """
        Spin until SIGINT.

        One event at a time: EventsExecutor.spin() of rclpy 7.1.6 busy-loops on one core and
        never serves a request from another process, while spin_once() works.
        """
        spin_once = self.executor.spin_once
        while self.node.context.ok():
            spin_once(timeout_sec=1.0)


# -- baselines -----------------------------------------------------------------------------


def bare_step_server(args) -> None:
    """Serve the floor of a stepped clock: Trigger in, next Clock out, then the response."""
    role = Role('bare_step', args.executor)
    publisher = role.node.create_publisher(ClockMsg, '/clock', CLOCK_QOS)
    msg = ClockMsg()
    state = {'time_ns': 0}

    def step(request, response):
        state['time_ns'] += args.time_step_ns
        set_stamp(msg.clock, state['time_ns'])
        publisher.publish(msg)
        response.success = True
        return response

    role.node.create_service(Trigger, '/bare_step/step', step, qos_profile=SERVICE_QOS)
    say('ready')
    role.spin_forever()


def participant(args) -> None:
    """
    Take part in a clock (ours, or the bare barrier's): say done for each new /clock at once.

    With ``--server bare`` it joins nothing. ``--frames``: report the rate over that many
    frames after ``--warmup``, as ``fps``. ``--nodes K``: K nodes in this process, one
    executor, each with its own /clock subscription, done publisher and (ours) join; the rate
    is the first node's. ``--topics N``: the first node also publishes a String on each of
    ``/scale/t0`` to ``/scale/t{N-1}`` at every new frame, before its done, and is ready once
    each has ``--readers`` reader(s).
    """
    role = Role(f'participant_{os.getpid()}', args.executor)
    role.timeout = args.timeout  # dozens of processes start at once
    nodes = [role.node] + [
        rclpy.create_node(f'participant_{os.getpid()}_{k}', start_parameter_services=False)
        for k in range(1, args.nodes)]
    for node in nodes[1:]:
        role.executor.add_node(node)
    done_topic = '/bare_barrier/done' if args.server == 'bare' else f'{args.server}/done'
    state = {'last': None, 'count': 0, 'start': 0.0, 'fps': None, 'again': 0, 'measured': 0}
    data = [role.node.create_publisher(String, f'/scale/t{k}', EVERY_CLOCK_QOS)
            for k in range(args.topics)]
    payload = String(data='x' * 64)

    def answer(node, first: bool):
        done = node.create_publisher(Done, done_topic, EVERY_CLOCK_QOS)
        msg = Done(name=node.get_fully_qualified_name())

        def on_clock(clock_msg):
            new = first and clock_msg.clock != state['last']
            if new:  # not the same time republished while idle
                for publisher in data:
                    publisher.publish(payload)
            msg.time = clock_msg.clock
            done.publish(msg)  # again for a time republished: a done lost before matching
            if first and not new and state['start'] and state['fps'] is None:
                state['again'] += 1  # a republish within the frames measured
            if new:
                state['last'] = clock_msg.clock
                state['count'] += 1
                if state['count'] == args.warmup:
                    state['start'] = time.perf_counter()
                elif state['count'] == args.warmup + args.frames:
                    state['fps'] = args.frames / (time.perf_counter() - state['start'])

        node.create_subscription(ClockMsg, '/clock', on_clock, EVERY_CLOCK_QOS)

    for index, node in enumerate(nodes):
        answer(node, index == 0)
    for publisher in data:
        role.wait_for_subscribers(publisher, args.readers)
    if args.server != 'bare':
        joins = [node.create_client(Join, f'{args.server}/join', qos_profile=SERVICE_QOS)
                 for node in nodes]
        for join in joins:
            role.wait_for_service(join)
        role.introduce(args.server)
        for node, join in zip(nodes, joins):
            name = node.get_fully_qualified_name()
            response = role.call(join, Join.Request(name=name, node=name, period_ns=0))
            if not response.success:
                raise SystemExit(f'benchmark role: join refused: {response.message}')
    say('ready')
    role.spin_until(lambda: state['fps'] is not None, f'{args.frames} frames',
                    timeout=args.timeout)
    # republished: the times that came again within the frames measured, a frame's /clock
    # published again while the frame waited (each answered with a done once more).
    result(fps=state['fps'], republished=state['again'] / args.frames)
    role.spin_forever()


def churn(args) -> None:
    """
    Join and leave again and again, until SIGINT; say ``cycle N`` after each leave.

    ``--nodes`` nodes join, say done for ``--frames`` frames, leave, and the clock runs
    without them for ``--duration`` s.
    """
    role = Role(f'churn_{os.getpid()}', args.executor)
    nodes = [role.node] + [
        rclpy.create_node(f'churn_{os.getpid()}_{k}', start_parameter_services=False)
        for k in range(1, args.nodes)]
    for node in nodes[1:]:
        role.executor.add_node(node)
    # Dones go out for the nodes whose join was answered, until they leave: between two
    # cycles free run goes as fast as it can, and the /clock queued then (up to the reader's
    # depth) is taken at the next join; answering each of those for every node, joined or
    # not, once kept the process busy for seconds with its join answers queued behind.
    state = {'joined': [], 'frames': 0, 'last': None}
    dones = []
    for node in nodes:
        done = node.create_publisher(Done, f'{args.server}/done', EVERY_CLOCK_QOS)
        dones.append((done, Done(name=node.get_fully_qualified_name())))

    def on_clock(clock_msg):
        if not state['joined']:
            return
        for done, msg in state['joined']:
            msg.time = clock_msg.clock
            done.publish(msg)
        if clock_msg.clock != state['last']:
            state['last'] = clock_msg.clock
            state['frames'] += 1

    role.node.create_subscription(ClockMsg, '/clock', on_clock, EVERY_CLOCK_QOS)
    joins = [(node.get_fully_qualified_name(),
              node.create_client(Join, f'{args.server}/join', qos_profile=SERVICE_QOS),
              node.create_client(Leave, f'{args.server}/leave', qos_profile=SERVICE_QOS))
             for node in nodes]
    for _, join, leave in joins:
        role.wait_for_service(join)
        role.wait_for_service(leave)
    role.introduce(args.server)
    say('ready')
    cycle = 0
    while role.node.context.ok():
        for (name, join, _), answer in zip(joins, dones):
            role.call(join, Join.Request(name=name, node=name, period_ns=0))
            state['joined'].append(answer)
        state['frames'] = 0  # held by all of them from here
        role.spin_until(lambda: state['frames'] >= args.frames, 'the frames held')
        for name, _, leave in joins:
            role.call(leave, Leave.Request(name=name))
            state['joined'].pop(0)
        cycle += 1
        say('cycle', cycle)
        rest = time.monotonic() + args.duration
        while role.node.context.ok() and time.monotonic() < rest:
            role.executor.spin_once(timeout_sec=0.05)


def call_trigger(args) -> None:
    """Call the server's std_srvs Trigger service ``--name`` once (resume, pause, ...)."""
    role = Role('trigger_caller', args.executor)
    client = role.node.create_client(Trigger, f'{args.server}/{args.name}',
                                     qos_profile=SERVICE_QOS)
    role.wait_for_service(client)
    role.introduce(args.server)
    response = role.call(client, Trigger.Request())
    result(success=response.success, message=response.message)


def bare_barrier(args) -> None:
    """
    Run the floor of a participant barrier: publish a Clock, wait for the Done messages, repeat.

    ``subscribers``: how many participants say done for each frame.
    Reports the frame rate over ``frames`` frames after ``warmup``.
    """
    role = Role('bare_barrier', args.executor)
    publisher = role.node.create_publisher(ClockMsg, '/clock', CLOCK_QOS)
    msg = ClockMsg()
    state = {'frame': 0, 'done': set()}

    def on_done(done_msg):
        if stamp_ns(done_msg.time) == state['frame'] * args.time_step_ns:
            state['done'].add(done_msg.name)

    subscription = role.node.create_subscription(
        Done, '/bare_barrier/done', on_done, EVERY_CLOCK_QOS)
    role.wait_for_subscribers(publisher, args.subscribers)
    role.spin_until(lambda: subscription.get_publisher_count() >= args.subscribers,
                    f'{args.subscribers} done publisher(s)')
    say('ready')
    start = 0.0
    spin_once = role.executor.spin_once
    for frame in range(1, args.warmup + args.frames + 1):
        if frame == args.warmup + 1:
            start = time.perf_counter()
        state['frame'], state['done'] = frame, set()
        set_stamp(msg.clock, frame * args.time_step_ns)
        publisher.publish(msg)
        sent = time.perf_counter()
        while len(state['done']) < args.subscribers:
            spin_once(timeout_sec=0.1)
            if len(state['done']) < args.subscribers and time.perf_counter() - sent > 0.1:
                publisher.publish(msg)  # as the server republishes: a done may have been lost
                sent = time.perf_counter()
    result(fps=args.frames / (time.perf_counter() - start))


def _rss_kib() -> int:
    with open('/proc/self/status') as status:
        for line in status:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return 0


def bare_publish_loop(args) -> None:
    """Publish ``frames`` Clock messages as fast as possible; report the rate and RSS."""
    role = Role('bare_publish_loop', args.executor)
    publisher = role.node.create_publisher(ClockMsg, '/clock', CLOCK_QOS)
    role.wait_for_subscribers(publisher, args.subscribers)
    msg = ClockMsg()
    publish = publisher.publish
    warmup = args.frames // 11
    rss_start = 0
    start = 0.0
    for frame in range(1, args.frames + 1):
        set_stamp(msg.clock, frame * args.time_step_ns)
        publish(msg)
        if frame == warmup:
            rss_start = _rss_kib()
            start = time.perf_counter()
    elapsed = time.perf_counter() - start
    result(fps=(args.frames - warmup) / elapsed, rss_start_kib=rss_start,
           rss_end_kib=_rss_kib(), frames=args.frames - warmup)


def bare_timer_publisher(args) -> None:
    """Publish the wall time since start as a Clock on a wall timer at ``rate`` Hz."""
    role = Role('bare_timer_publisher', args.executor)
    publisher = role.node.create_publisher(ClockMsg, '/clock', CLOCK_QOS)
    msg = ClockMsg()
    origin = time.monotonic_ns()

    def tick():
        set_stamp(msg.clock, time.monotonic_ns() - origin)
        publisher.publish(msg)

    role.node.create_timer(1.0 / args.rate, tick, clock=role.steady)
    say('ready')
    role.spin_forever()


def bare_paced_publisher(args) -> None:
    """Free run the obvious way: one time_step per timer callback of the scaled period."""
    role = Role('bare_paced_publisher', args.executor)
    publisher = role.node.create_publisher(ClockMsg, '/clock', CLOCK_QOS)
    msg = ClockMsg()
    state = {'time_ns': 0}

    def tick():
        state['time_ns'] += args.time_step_ns
        set_stamp(msg.clock, state['time_ns'])
        publisher.publish(msg)

    role.node.create_timer(
        args.time_step_ns / NS_PER_SEC / args.real_time_factor, tick, clock=role.steady)
    say('ready')
    role.spin_forever()


# -- probes --------------------------------------------------------------------------------


def _acquire(role: Role, server: str) -> None:
    client = role.node.create_client(
        SyncModeCmd, f'{server}/sync_mode_cmd', qos_profile=SERVICE_QOS)
    role.wait_for_service(client)
    role.introduce(server)
    response = role.call(client, SyncModeCmd.Request(
        user_id=BENCH_USER, start_sync_mode=True, time_step=1))
    if not response.result:
        raise SystemExit(f'benchmark role: sync mode refused: {response.message}')


def step_latency(args) -> None:
    """Time one-frame steps until the client has the response and the new /clock."""
    role = Role('step_latency_probe', args.executor)
    latest = {'time_ns': -1}

    def on_clock(msg):
        latest['time_ns'] = stamp_ns(msg.clock)

    role.node.create_subscription(ClockMsg, '/clock', on_clock, EVERY_CLOCK_QOS)
    if args.server == 'bare':
        client = role.node.create_client(
            Trigger, '/bare_step/step', qos_profile=SERVICE_QOS)
        request = Trigger.Request()
    else:
        client = role.node.create_client(Step, f'{args.server}/step', qos_profile=SERVICE_QOS)
        request = Step.Request(user_id=BENCH_USER, steps=1)
        _acquire(role, args.server)  # introduces this node's step client, too
    role.wait_for_service(client)
    # The first step tells where time is; every later one must bring exactly one frame more.
    # Asked again if its answer is lost: a frame more is nothing here.
    role.call(client, request, resend_s=RESEND_S)
    role.spin_until(lambda: latest['time_ns'] >= 0, 'the first /clock')
    say('ready')
    latencies = []
    spin_once = role.executor.spin_once
    for _ in range(args.warmup + args.calls):
        expected = latest['time_ns'] + args.time_step_ns
        start = time.perf_counter_ns()
        future = client.call_async(request)
        deadline = time.monotonic() + TIMEOUT
        while not (future.done() and latest['time_ns'] >= expected):
            if time.monotonic() > deadline:
                raise SystemExit('benchmark role: a step got no answer or no /clock')
            spin_once(timeout_sec=0.1)
        latencies.append(time.perf_counter_ns() - start)
    measured = latencies[args.warmup:]
    result(p50_us=percentile(measured, 0.50) / 1e3, p99_us=percentile(measured, 0.99) / 1e3,
           calls=len(measured))


def step_throughput(args) -> None:
    """Frames per second of back-to-back ``steps``-frame steps."""
    role = Role('step_throughput_probe', args.executor)
    client = role.node.create_client(Step, f'{args.server}/step', qos_profile=SERVICE_QOS)
    _acquire(role, args.server)  # introduces this node's step client, too
    request = Step.Request(user_id=BENCH_USER, steps=args.steps)
    role.wait_for_service(client)
    role.call(client, request, resend_s=RESEND_S)  # a warm-up: frames more are nothing here
    say('ready')
    start = time.perf_counter()
    for _ in range(args.calls):
        response = role.call(client, request)
        if not response.success:
            raise SystemExit(f'benchmark role: step refused: {response.message}')
    elapsed = time.perf_counter() - start
    result(fps=args.calls * args.steps / elapsed, calls=args.calls)


def status(args) -> None:
    """
    Poll get_status at 100 Hz; say ``mark N`` when the frame passes each mark.

    The result: the latency of every call made from the first mark to the last (with no
    marks: of ``calls`` calls), and the frame rate between the answer that passed the first mark
    and the one that passed the last (the next answer, when a single one passed them all).
    """
    role = Role('status_probe', args.executor)
    client = role.node.create_client(
        GetStatus, f'{args.server}/get_status', qos_profile=SERVICE_QOS)
    role.wait_for_service(client)
    role.call(client, GetStatus.Request(), resend_s=RESEND_S)  # a lost first answer: not timed
    marks = list(args.marks)
    state = {'pending': None, 'sent': 0, 'latencies': [], 'seen': [], 'done': False}
    request = GetStatus.Request()

    def answered(future):
        latency = time.perf_counter_ns() - state['sent']
        state['pending'] = None
        response = future.result()
        now = time.perf_counter()
        if state['seen'] or not args.marks:
            state['latencies'].append(latency)
        passed = bool(marks) and response.frame >= marks[0]
        while marks and response.frame >= marks[0]:
            say('mark', marks.pop(0))
        if passed or state['seen']:
            state['seen'].append((now, response.frame))
        # The rate needs two answers: when one answer passed every mark, wait for the next.
        state['done'] = (not marks and len(state['seen']) > 1 if args.marks
                         else len(state['latencies']) >= args.calls)
        if args.window and state['seen']:
            # Or a wall-time window from the first mark: the rate over that window.
            state['done'] = len(state['seen']) > 1 and now - state['seen'][0][0] >= args.window

    def poll():
        if state['pending'] is None:
            state['sent'] = time.perf_counter_ns()
            state['pending'] = client.call_async(request)
            state['pending'].add_done_callback(answered)

    role.node.create_timer(0.01, poll, clock=role.steady)
    say('ready')
    role.spin_until(lambda: state['done'], 'the last mark or call', timeout=args.timeout)
    fps = 0.0
    if len(state['seen']) > 1:
        (t0, f0), (t1, f1) = state['seen'][0], state['seen'][-1]
        if t1 > t0:
            fps = (f1 - f0) / (t1 - t0)
    latencies = state['latencies'] or [0]
    result(fps=fps, p50_us=percentile(latencies, 0.50) / 1e3,
           p99_us=percentile(latencies, 0.99) / 1e3, calls=len(state['latencies']))


def listener(args) -> None:
    """
    Take a use_sim_time node's share of /clock: rclpy's TimeSource subscription.

    With ``--reliable``, a reliable reader instead (a recorder's, a participant's), which
    acknowledges what the server's heartbeats ask for.
    """
    role = Role('clock_listener', args.executor)
    count = {'n': 0}

    def on_clock(msg):
        count['n'] += 1

    role.node.create_subscription(ClockMsg, '/clock', on_clock,
                                  EVERY_CLOCK_QOS if args.reliable else TIME_SOURCE_QOS)
    say('ready')
    role.spin_forever()


def sim_time_node(args) -> None:
    """
    Be a node of a simulated system: use_sim_time and a 10 ms timer, on the default executor.

    What each /clock message costs such a node is its TimeSource's subscription callback (in
    Python, rclpy#1378) and the timer's wake-ups; the benchmark adds up the CPU of many.
    ``--nodes K``: K such nodes in this process, on one executor.
    """
    fired = {'n': 0}
    executor = SingleThreadedExecutor()
    nodes = []
    for k in range(args.nodes):
        node = rclpy.create_node(f'sim_time_node_{k}', start_parameter_services=False,
                                 parameter_overrides=[Parameter('use_sim_time', value=True)])
        node.create_timer(0.01, lambda: fired.__setitem__('n', fired['n'] + 1))
        executor.add_node(node)
        nodes.append(node)
    say('ready')
    while nodes[0].context.ok():
        executor.spin_once(timeout_sec=1.0)


def pacing(args) -> None:
    """
    Record the wall arrival time of every /clock for ``duration`` s; fit the pace.

    The error over a window [0, T] is simulated time elapsed over real_time_factor times
    wall time elapsed, minus 1, for T = a quarter, a half and all of the run: an error that
    comes from a bounded lag shrinks as T grows, an error of the pacing itself does not.
    """
    role = Role('pacing_probe', args.executor)
    samples = []
    arrival = time.monotonic_ns

    def on_clock(msg):
        samples.append((arrival(), stamp_ns(msg.clock)))

    # As a use_sim_time node samples it: the newest /clock, whenever the probe gets to it.
    role.node.create_subscription(ClockMsg, '/clock', on_clock, TIME_SOURCE_QOS)
    role.spin_until(lambda: len(samples) > 10, 'a running /clock')
    say('ready')
    del samples[:]
    duration_ns = int(args.duration * NS_PER_SEC)
    role.spin_until(
        lambda: samples and samples[-1][0] - samples[0][0] >= duration_ns,
        f'{args.duration} s of /clock', timeout=args.duration * 3 + TIMEOUT)
    wall0, sim0 = samples[0]
    errors = {}
    for fraction in (0.25, 0.5, 1.0):
        limit = wall0 + int(duration_ns * fraction)
        wall1, sim1 = max((s for s in samples if s[0] <= limit), key=lambda s: s[0])
        errors[fraction] = (sim1 - sim0) / (args.real_time_factor * (wall1 - wall0)) - 1.0
    result(error=errors[1.0], error_quarter=errors[0.25], error_half=errors[0.5],
           samples=len(samples))


ROLES = {
    'bare-step-server': bare_step_server,
    'bare-publish-loop': bare_publish_loop,
    'bare-barrier': bare_barrier,
    'participant': participant,
    'churn': churn,
    'call-trigger': call_trigger,
    'bare-timer-publisher': bare_timer_publisher,
    'bare-paced-publisher': bare_paced_publisher,
    'step-latency': step_latency,
    'step-throughput': step_throughput,
    'status': status,
    'listener': listener,
    'sim-time-node': sim_time_node,
    'pacing': pacing,
}


def parse_arguments(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('role', choices=sorted(ROLES))
    parser.add_argument('--executor', choices=sorted(EXECUTORS), default='events')
    parser.add_argument('--server', default='/sim_clock',
                        help="the clock server's node name, or 'bare'")
    parser.add_argument('--time-step-ns', type=int, default=1_000_000)
    parser.add_argument('--real-time-factor', type=float, default=1.0)
    parser.add_argument('--rate', type=float, default=100.0)
    parser.add_argument('--frames', type=int, default=1_100_000)
    parser.add_argument('--subscribers', type=int, default=1)
    parser.add_argument('--nodes', type=int, default=1,
                        help='participant, churn, sim-time-node: nodes in this process')
    parser.add_argument('--topics', type=int, default=0,
                        help='participant: topics the first node publishes on at every frame')
    parser.add_argument('--readers', type=int, default=1,
                        help='participant: readers each of those topics waits for')
    parser.add_argument('--calls', type=int, default=1000)
    parser.add_argument('--warmup', type=int, default=100)
    parser.add_argument('--steps', type=int, default=1000)
    parser.add_argument('--marks', type=int, nargs='*', default=[])
    parser.add_argument('--duration', type=float, default=10.0)
    parser.add_argument('--window', type=float, default=0.0,
                        help='status: the rate over this many seconds from the first mark')
    parser.add_argument('--timeout', type=float, default=300.0)
    parser.add_argument('--name', default='resume', help='call-trigger: the service')
    parser.add_argument('--reliable', action='store_true',
                        help='listener: a reliable /clock reader (default: best effort)')
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_arguments(sys.argv[1:] if argv is None else argv)
    # rclpy's SIGINT handler (chained to this one) shuts the context down and so ends the
    # role; Python's own would raise KeyboardInterrupt inside a callback.
    signal.signal(signal.SIGINT, lambda signum, frame: None)
    rclpy.init()
    try:
        ROLES[args.role](args)
    finally:
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
