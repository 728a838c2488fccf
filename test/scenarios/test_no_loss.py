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
No loss within steps: a reliable reader that keeps every message gets all of them.

The reader is an rclpy process of its own that keeps all (KEEP_ALL, reliable) and takes one
message per executor turn, far slower than the server publishes. Steps of 1 to 10^4 frames
put out every /clock frame, and a burst of thousands of messages on one topic whose writer
holds 100: flow control (``sim_clock.node.flow_control``) holds each writer to what its readers
have acknowledged, so nothing is overwritten before the reader has it.
"""

import os
import signal
import time

from bags import MS
from bags import RELIABLE_QOS
from bags import START_NS
from harness import ChildProcess
from harness import executable
import pytest
from rosbags.rosbag2 import Writer
from rosbags.typesys import get_typestore
from rosbags.typesys import Stores
from sim_clock.node.flow_control import MAX_WINDOW
from sim_clock.node.flow_control import WAIT_TIMEOUT_NS
from sim_clock.srv import Step

pytestmark = pytest.mark.process

#: A reliable reader that keeps every message of /clock and /burst, and says what it got once
#: told how many distinct frames and burst messages to expect.
READER = """
import struct
import sys
import threading
import time
import rclpy
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from std_msgs.msg import String
rclpy.init()
node = rclpy.create_node('keep_all_reader')
keep_all = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
clocks, burst = [], []
def on_clock(data):
    sec, nanosec = struct.unpack_from('<iI', data, 4)
    t = sec * 1_000_000_000 + nanosec
    if not clocks or clocks[-1] != t:  # an idle republish is not a new frame
        clocks.append(t)
# /burst first: the server's participant learns of it before /clock (one reliable discovery
# channel, in order), so once a /clock has come, its /burst writer has matched this reader.
node.create_subscription(String, '/burst', lambda msg: burst.append(int(msg.data)), keep_all)
node.create_subscription(Clock, '/clock', on_clock, keep_all, raw=True)
expected = []
threading.Thread(target=lambda: expected.append(sys.stdin.readline()), daemon=True).start()
while rclpy.ok() and not clocks:
    rclpy.spin_once(node, timeout_sec=0.1)
print('ready', flush=True)
while rclpy.ok() and not expected:
    rclpy.spin_once(node, timeout_sec=0.1)
frames, messages = map(int, expected[0].split())
# A turn may take a message that adds nothing (an idle republish of the last time, queued
# between two steps' frames): only 5 s without a new frame or burst message ends the wait.
last, last_new = None, time.monotonic()
while rclpy.ok() and (len(set(clocks)) < frames or len(burst) < messages):
    rclpy.spin_once(node, timeout_sec=1.0)
    if (len(clocks), len(burst)) != last:
        last, last_new = (len(clocks), len(burst)), time.monotonic()
    elif time.monotonic() - last_new > 5.0:
        break  # nothing new for 5 s: what is missing is lost
print('clock', ' '.join(map(str, clocks)), flush=True)
print('burst', ' '.join(map(str, burst)), flush=True)
"""

BURST = 3000
STEPS = [1, 10, 100, 1000, 10_000]


def _write_burst_bag(path: str) -> None:
    """/burst: BURST std_msgs/String numbered in order, all at the bag's start."""
    store = get_typestore(Stores.ROS2_JAZZY)
    string_type = store.types['std_msgs/msg/String']
    with Writer(path, version=9) as writer:
        burst = writer.add_connection('/burst', 'std_msgs/msg/String', typestore=store,
                                      offered_qos_profiles=[RELIABLE_QOS])
        for k in range(BURST):
            writer.write(burst, START_NS,
                         store.serialize_cdr(string_type(data=str(k)), 'std_msgs/msg/String'))


def _stepped(client, reader, offset_ns, steps):
    """Step ``steps`` in turn; return the distinct /clock times and burst numbers received."""
    client.wait_for_clock()
    for count in steps:
        response = client.call(Step, 'step', Step.Request(user_id='', steps=count),
                               timeout=120.0)
        assert response.success, response.message
    frames = sum(steps)
    reader.send(f'{frames + 1} {BURST}')  # the frames and time zero, republished while idle
    clocks = [int(t) - offset_ns for t in reader.expect('clock', timeout=180.0).split()]
    burst = [int(k) for k in reader.expect('burst', timeout=30.0).split()]
    return clocks, burst, frames


def test_a_bag_step_of_any_size_loses_nothing_at_a_keep_all_reader(
        start_server, client, domain_id, tmp_path):
    """Every frame of steps of 1 to 10^4 frames and a 3000-message burst arrive, in order."""
    path = str(tmp_path / 'burst')
    _write_burst_bag(path)
    start_server({'sync': True, 'time_step': 0.001}, argv=[path],
                 executable=executable('bag_player'))
    reader = ChildProcess(domain_id, READER, str(tmp_path))
    try:
        reader.expect('ready', timeout=60.0)
        clocks, burst, frames = _stepped(client, reader, START_NS, STEPS)
    finally:
        reader.stop()
    assert burst == list(range(BURST))
    assert clocks[-frames:] == [k * MS for k in range(1, frames + 1)]


def test_a_clock_step_beyond_the_history_loses_nothing(start_server, client, domain_id,
                                                       tmp_path):
    """/clock alone: a step of 3 x 10^4 frames (3 times its history) arrives whole, in order."""
    start_server({'sync': True, 'time_step': 0.001})
    reader = ChildProcess(domain_id, READER.replace('len(burst) < messages', 'False'),
                          str(tmp_path))
    try:
        reader.expect('ready', timeout=60.0)
        clocks, _, frames = _stepped(client, reader, 0, [30_000])
    finally:
        reader.stop()
    assert clocks[-frames:] == [k * MS for k in range(1, frames + 1)]


def test_a_frozen_reader_paces_the_windows_and_every_reader_gets_every_frame(
        start_server, client, domain_id, tmp_path):
    """
    A reader that acknowledges nothing, still matched: each window waits for it, no more.

    Its topic's other readers cannot be told from it (rclpy says whether all acknowledged), so
    every window waits WAIT_TIMEOUT_NS for it, and this test's reader gets every frame. Frozen
    for less than its lease (two waits), it stays matched and gets every frame too once it
    takes again; then the windows go out as fast as they are acknowledged.
    """
    server = start_server({'sync': True, 'time_step': 0.001})
    reader = ChildProcess(domain_id, READER.replace('len(burst) < messages', 'False'),
                          str(tmp_path))
    # The rest of the first window, a whole one, and a frame: two waits; then 3000 frames.
    frozen = [2 * MAX_WINDOW, 3000]
    try:
        reader.expect('ready', timeout=60.0)
        client.wait_for_clock()
        assert client.step('', 1).success  # the first window's wait, the reader live
        os.kill(reader.pid, signal.SIGSTOP)
        try:
            durations, answers = [], []
            for steps in frozen:
                started = time.monotonic()
                response = client.call(Step, 'step', Step.Request(user_id='', steps=steps),
                                       timeout=60.0)
                durations.append(time.monotonic() - started)
                answers.append(response.message)  # what each step waited for, if it failed
                assert response.success, response.message
                if len(durations) == 1:
                    os.kill(reader.pid, signal.SIGCONT)  # well within its lease (20 s)
        finally:
            os.kill(reader.pid, signal.SIGCONT)
        frames = 1 + sum(frozen)
        reader.send(f'{frames + 1} 0')
        clocks = [int(t) for t in reader.expect('clock', timeout=180.0).split()]
    finally:
        reader.stop()
    wait_s = WAIT_TIMEOUT_NS / 1e9
    assert durations[0] >= 2 * wait_s, (durations, answers)  # each window waited for it
    # Taking again, it is waited for as any reader: less than a whole wait per window (this
    # test's reader holds each window too, which on a loaded machine took up to 3.5 s a step).
    assert durations[1] < frozen[1] // MAX_WINDOW * wait_s, (durations, answers)
    assert 'stalled reliable readers of: /clock' in server.log()
    assert clocks[-frames:] == [k * MS for k in range(1, frames + 1)]
    client.wait_for_time(frames * MS)
    assert client.distinct_times_since_reset() == [k * MS for k in range(frames + 1)]
