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
The names and QoS profiles that the server, the client, the recorder and the tests share.

``/clock`` is the only global name; everything else lives under the node's name. Why each
profile is what it is: doc/design.md, "QoS".
"""

#: The clock server's default node name: its services are ``/sim_clock/...``.
NODE_NAME = 'sim_clock'
#: The full name of the default server, as clients address it.
DEFAULT_SERVER = '/' + NODE_NAME
#: The recorder's node name.
RECORDER_NODE_NAME = 'sim_clock_recorder'
#: The key of the recorder's bag metadata (``custom_data``) holding the step between successive
#: /clock times, in ns, where it never changed: what ``simclock diff`` counts frames by.
TIME_STEP_KEY = 'sim_clock.time_step_ns'
CLOCK_TOPIC = '/clock'
DIAGNOSTICS_TOPIC = '/diagnostics'
#: Every reset is announced on this topic, under the server's name (``sim_clock/msg/Reset``).
RESETS_TOPIC = '~/resets'
#: The std_srvs services act as this user: they may step only while nobody holds sync mode.
ANONYMOUS_USER = ''


def _profiles() -> dict:
    from rclpy.qos import DurabilityPolicy
    from rclpy.qos import HistoryPolicy
    from rclpy.qos import QoSProfile
    from rclpy.qos import ReliabilityPolicy

    def reliable(depth: int, transient_local: bool = False) -> QoSProfile:
        """Return a reliable profile that keeps the last ``depth``; volatile unless told."""
        return QoSProfile(
            history=HistoryPolicy.KEEP_LAST, depth=depth,
            reliability=ReliabilityPolicy.RELIABLE,
            durability=(DurabilityPolicy.TRANSIENT_LOCAL if transient_local
                        else DurabilityPolicy.VOLATILE))

    return {
        #: /clock: reliable (matches reliable subscribers and the best-effort time sources
        #: alike), volatile, and deep enough to repair a long step's burst (doc/design.md,
        #: "/clock QoS").
        'CLOCK_QOS': reliable(10_000),
        #: Every service of ours, client and server side: reliable, keep last 1000, as rclpy's
        #: parameter services, so answers survive a busy client (doc/design.md, "Services").
        'SERVICE_QOS': reliable(1000),
        #: The participants' done topic, both sides: reliable, so no participant's answer is
        #: lost.
        'DONE_QOS': reliable(1000),
        #: ~/resets: reliable and transient local with depth 1, so that a node that starts late
        #: learns of the last reset (its epoch says whether it missed others).
        'RESET_QOS': reliable(1, transient_local=True),
        #: ~/resets, read by clients: as RESET_QOS, deep enough that resets back to back are
        #: each taken (a depth of 1 kept only the last of those that came between two spins).
        'RESET_READER_QOS': reliable(100, transient_local=True),
        #: ~/ready, written by each expected node: reliable and transient local, depth 1, so
        #: that a server that starts later gets each node's last report.
        'READY_QOS': reliable(1, transient_local=True),
        #: ~/ready, read by the server: as READY_QOS, deep enough for a stack's reports at once.
        'READY_READER_QOS': reliable(1000, transient_local=True),
    }


def __getattr__(name: str):
    """
    Return a QoS profile of ours (``CLOCK_QOS``, ``READY_QOS``, ...), made on first use.

    Lazily, so that the names alone load no rclpy: the bag read-ahead process imports them.
    """
    if name in ('CLOCK_QOS', 'SERVICE_QOS', 'DONE_QOS', 'RESET_QOS', 'RESET_READER_QOS',
                'READY_QOS', 'READY_READER_QOS'):
        globals().update(_profiles())
        return globals()[name]
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
