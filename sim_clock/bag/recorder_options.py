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

"""The recorder's command line, as ``ros2 bag record`` users expect it."""

import argparse
from typing import List
from typing import Optional
from typing import Tuple

from rclpy.exceptions import InvalidNodeNameException
from rclpy.exceptions import InvalidTopicNameException
from rclpy.expand_topic_name import expand_topic_name
from rclpy.validate_full_topic_name import validate_full_topic_name
from sim_clock.core.rules import Refused
from sim_clock.core.rules import seconds_to_ns
from sim_clock.wire.message_types import get_message
from sim_clock.wire.names import CLOCK_TOPIC
from sim_clock.wire.names import DEFAULT_SERVER
from sim_clock.wire.names import RECORDER_NODE_NAME as NODE_NAME

#: The type of /clock and of clock views: never recorded by --all.
CLOCK_TYPE = 'rosgraph_msgs/msg/Clock'
#: The storage formats the recorder writes (rosbag2's names), the first the default.
STORAGES = ('mcap', 'sqlite3')


def is_recorded_by_all(topic: str, type_name: str, server: str) -> bool:
    """
    Whether ``--all`` records ``topic``: every topic but the clocks and the server's own.

    Left out: topics of the /clock type (``/clock`` and the server's clock views), those under
    the server's name (``/sim_clock/...``) and hidden ones (a name part starting with ``_``),
    which ``ros2 bag record --all`` leaves out too.
    """
    if type_name == CLOCK_TYPE or topic == CLOCK_TOPIC:
        return False
    if topic.startswith(server.rstrip('/') + '/'):
        return False
    return not any(part.startswith('_') for part in topic.split('/'))


def _topic_name(text: str) -> str:
    """Return a topic name given on the command line as a full name, or raise ValueError."""
    try:
        name = expand_topic_name(text, NODE_NAME, '/')
        validate_full_topic_name(name)
    except (InvalidTopicNameException, InvalidNodeNameException, ValueError) as error:
        raise ValueError(
            f'{text!r} is not a valid topic name ({error}); a topic name is made of letters, '
            "digits and '_', in parts separated by '/', such as /scan or robot1/odom") from None
    return name


def _topic_and_type(text: str) -> Tuple[str, Optional[str]]:
    """
    Return (full topic name, type or None) of ``TOPIC`` or ``TOPIC:TYPE``, or raise ValueError.

    A type given is checked here, before anything is created: it must load (its Python class
    and type support installed), since the recorder subscribes with it at once.
    """
    name, colon, type_name = text.partition(':')
    name = _topic_name(name)
    if not colon:
        return name, None
    try:
        message_class = get_message(type_name)
    except LookupError as error:
        raise ValueError(
            f'{text!r}: {error}; give TOPIC:TYPE with an installed message type, such as '
            '/chatter:std_msgs/msg/String, or the topic alone') from None
    module = message_class.__module__.split('.')[0]
    return name, f'{module}/msg/{message_class.__name__}'


def parse_arguments(argv: List[str]) -> argparse.Namespace:
    """
    Parse the command line (without ROS arguments) as ``ros2 bag record`` users expect.

    Topics accumulate: positional ones, ``-t a b`` and ``-t a -t b`` add up; ``--all`` records
    every topic but the clocks and the server's own. A topic may carry its type
    (``/scan:sensor_msgs/msg/LaserScan``): ``options.types`` maps such topics to their types.
    Bad arguments end the program with a usage error (exit code 2) before anything is created.
    """
    parser = argparse.ArgumentParser(
        prog='recorder',
        description='Record topics raw into a bag (MCAP or sqlite3) stamped with simulated '
                    'time (/clock).',
        epilog='examples: recorder out /scan /odom;  recorder out -t /scan -t /odom --until 2;'
               '  recorder out -t /chatter:std_msgs/msg/String;  recorder out --all -s sqlite3')
    parser.add_argument('output', help='bag directory to create (must not exist)')
    parser.add_argument('positional_topics', nargs='*', default=[], metavar='TOPIC[:TYPE]',
                        help='topics to record (as with -t)')
    parser.add_argument('-t', '--topics', nargs='+', action='extend', default=[],
                        metavar='TOPIC[:TYPE]',
                        help='topics to record; may be given several times; with its type '
                             '(/chatter:std_msgs/msg/String) a topic is subscribed at once, '
                             'before any publisher appears')
    parser.add_argument('-a', '--all', action='store_true',
                        help='record every topic, also those that appear later, but /clock, '
                             "clock views and the server's own (under --server)")
    parser.add_argument('--server', default=DEFAULT_SERVER, metavar='NODE',
                        help='the clock server whose topics --all leaves out '
                             '(default: %(default)s)')
    parser.add_argument('--until', type=float, metavar='SEC',
                        help='stop once /clock reaches this simulated time, in seconds')
    parser.add_argument('-s', '--storage', choices=STORAGES, default=STORAGES[0],
                        help='storage format of the bag (default: %(default)s)')
    parser.add_argument('--hold-frames', action='store_true',
                        help='join the clock server (--server) as a participant: each frame '
                             'waits until the recorder has taken the /clock of the frame and '
                             'every message that came before it, so a stack faster than the '
                             'recorder waits for it instead of losing messages')
    options = parser.parse_intermixed_args(argv)
    given = options.positional_topics + options.topics
    if options.all and given:
        parser.error(f'give topics or --all, not both (topics given: {" ".join(given)})')
    if not options.all and not given:
        parser.error('no topic to record: name topics (TOPIC ..., -t TOPIC ...) or give --all')
    options.types = {}
    try:
        named = [_topic_and_type(topic) for topic in given]
    except ValueError as error:
        parser.error(str(error))
    for name, type_name in named:
        if type_name and options.types.setdefault(name, type_name) != type_name:
            parser.error(f'{name} is given two types, {options.types[name]} and {type_name}; '
                         'give one')
    options.topics = list(dict.fromkeys(name for name, _ in named))
    options.until_ns = None
    if options.until is not None:
        try:
            options.until_ns = seconds_to_ns(options.until, '--until')
        except Refused as refused:
            parser.error(refused.reason)
        if options.until_ns < 0:
            parser.error(f'--until must be 0 or more simulated seconds, got {options.until!r}')
    return options
