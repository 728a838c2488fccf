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
The bag player's command line: ``ros2 bag play``'s flags, each mapped onto what the player does.

Names, short forms and meanings are those of rosbag2's Jazzy ``ros2 bag play``
(``ros2bag/verb/play.py``); doc/bags.md has the table. Everything is checked here, before any
ROS entity exists: a bad value ends with a usage error (exit code 2) that names the flag and
what it allows. Seconds are converted once, exactly, from the text given (a decimal), to
integer nanoseconds.
"""

import argparse
from dataclasses import dataclass
from dataclasses import field
import decimal
import re
from typing import Dict
from typing import List
from typing import Optional
from typing import Tuple

from rclpy.duration import Duration
from rclpy.qos import InvalidQoSProfileException
from rclpy.qos import QoSDurabilityPolicy
from rclpy.qos import QoSHistoryPolicy
from rclpy.qos import QoSLivelinessPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import QoSReliabilityPolicy
from sim_clock.bag.reader import SERVICE_EVENT_SUFFIX
from sim_clock.bag.reader import TopicFilter
from sim_clock.core.rules import max_clock_rate_from_float
from sim_clock.core.rules import publish_period_from_rate
from sim_clock.core.rules import real_time_factor_from_float
from sim_clock.core.rules import Refused
from sim_clock.core.units import NS_PER_SEC
import yaml

#: The storage ids a bag may be given with (rosbags reads these two).
STORAGE_IDS = ('sqlite3', 'mcap')
#: ``--clock`` without a value: rosbag2 then publishes /clock at 40 Hz.
ROSBAG2_CLOCK_HZ = 40.0
LOG_LEVELS = ('debug', 'info', 'warn', 'error', 'fatal')

#: Flags of ``ros2 bag play`` that the player refuses, and why (said in the error).
REFUSED = {
    'storage_config_file': (
        '--storage-config-file', 'rosbags reads the bag, not a rosbag2 storage plugin, so '
        'plugin settings (sqlite3 pragmas, MCAP reader options) have nothing to apply to'),
    'clock_topics': (
        '--clock-topics', "/clock follows frames of time_step, each frame's messages before "
        'its /clock; for a /clock at every message of a topic, set time_step finer'),
    'clock_topics_all': (
        '--clock-topics-all', "/clock follows frames of time_step, each frame's messages "
        'before its /clock; for a /clock at every message, set time_step finer'),
    'publish_service_requests': (
        '--publish-service-requests', 'the player publishes recorded service events as the '
        'topics they are; it does not call services'),
}


def _seconds_ns(flag: str, text: str) -> int:
    """Return seconds written as ``text`` in integer ns, exactly (a decimal, to the nearest ns)."""
    try:
        seconds = decimal.Decimal(text.strip())
    except decimal.InvalidOperation:
        seconds = None
    if seconds is None or not seconds.is_finite():
        raise argparse.ArgumentTypeError(f'{flag} takes seconds (a finite number), got {text!r}')
    return int((seconds * NS_PER_SEC).to_integral_value(rounding=decimal.ROUND_HALF_EVEN))


def _positive_seconds(flag: str):
    def parse(text: str) -> int:
        time_ns = _seconds_ns(flag, text)
        if time_ns <= 0:
            raise argparse.ArgumentTypeError(f'{flag} must be more than 0 s, got {text!r}')
        return time_ns
    parse.__name__ = 'seconds'
    return parse


def _not_negative_seconds(flag: str):
    def parse(text: str) -> int:
        time_ns = _seconds_ns(flag, text)
        if time_ns < 0:
            raise argparse.ArgumentTypeError(f'{flag} must be 0 s or more, got {text!r}')
        return time_ns
    parse.__name__ = 'seconds'
    return parse


def _positive_number(what: str, check, allowed: str):
    """
    Return an argument type: a number more than 0 that ``check`` (a parameter's) accepts.

    A refusal says ``what`` (the flag and its parameter), then ``allowed`` or the parameter's
    own reason, then the text given.
    """
    def parse(text: str) -> float:
        try:
            value = float(text)
            if not value > 0:
                raise Refused('')
            check(value)
        except (ValueError, Refused) as error:
            reason = getattr(error, 'reason', '') or allowed
            raise argparse.ArgumentTypeError(f'{what}: {reason}; got {text!r}') from None
        return value
    return parse


_rate = _positive_number(
    '-r/--rate (the real_time_factor parameter)', real_time_factor_from_float,
    'a number more than 0 (1.0: the recorded pace)')


def _clock_rate(rate_hz: float) -> None:
    """Refuse a --clock rate that publish_rate or max_clock_rate would refuse."""
    publish_period_from_rate(rate_hz)
    max_clock_rate_from_float(rate_hz)


_clock_hz = _positive_number(
    '--clock (the publish_rate and max_clock_rate parameters)', _clock_rate,
    'a rate in Hz, more than 0')


def _regex(flag: str):
    def parse(text: str) -> str:
        try:
            re.compile(text)
        except re.error as error:
            raise argparse.ArgumentTypeError(
                f'{flag} takes a regular expression: {error} in {text!r}') from None
        return text
    parse.__name__ = 'regex'
    return parse


def _remap(text: str) -> str:
    source, separator, target = text.partition(':=')
    if not (separator and source and target) or ':=' in target:
        raise argparse.ArgumentTypeError(
            f'-m/--remap takes rules FROM:=TO (e.g. /chatter:=/talk), got {text!r}')
    return text


def _integer(flag: str, lowest: Optional[int] = None):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f'{flag} takes an integer, got {text!r}') from None
        if lowest is not None and value < lowest:
            raise argparse.ArgumentTypeError(f'{flag} must be {lowest} or more, got {text!r}')
        return value
    parse.__name__ = 'integer'
    return parse


#: What each key of a QoS override may hold, as rosbag2's ``interpret_dict_as_qos_profile``.
_QOS_POLICIES = {
    'history': QoSHistoryPolicy, 'reliability': QoSReliabilityPolicy,
    'durability': QoSDurabilityPolicy, 'liveliness': QoSLivelinessPolicy}
_QOS_DURATIONS = ('deadline', 'lifespan', 'liveliness_lease_duration')
_QOS_VALUES = ('depth', 'avoid_ros_namespace_conventions')


def qos_overrides_from_yaml(text: str) -> Dict[str, QoSProfile]:
    """
    Return the QoS profiles by topic of rosbag2's overrides file; raise ValueError naming a fault.

    The format of ``ros2 bag play --qos-profile-overrides-path``: a mapping of topic names to
    profiles; a profile maps ``history``, ``reliability``, ``durability``, ``liveliness`` to
    rclpy's short names (``keep_last``, ``best_effort``, ``transient_local``, ...), ``depth``
    and ``avoid_ros_namespace_conventions`` to values, ``deadline``, ``lifespan`` and
    ``liveliness_lease_duration`` to ``{sec: S, nsec: N}``. Keys left out take rclpy's defaults.
    """
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ValueError(f'not YAML: {error}') from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ValueError('must map topic names to QoS profiles')
    profiles = {}
    for topic, policies in loaded.items():
        if not isinstance(policies, dict):
            raise ValueError(f'topic {topic!r}: a profile must be a mapping of policies')
        values = {}
        for key, value in policies.items():
            if key in _QOS_POLICIES:
                try:
                    values[key] = _QOS_POLICIES[key].get_from_short_key(str(value))
                except KeyError:
                    allowed = ', '.join(p.short_key for p in _QOS_POLICIES[key])
                    raise ValueError(f'topic {topic!r}: {key} must be one of {allowed}, '
                                     f'got {value!r}') from None
            elif key in _QOS_DURATIONS:
                if not (isinstance(value, dict) and set(value) == {'sec', 'nsec'}
                        and all(isinstance(v, int) and not isinstance(v, bool)
                                for v in value.values())):
                    raise ValueError(f'topic {topic!r}: {key} must be {{sec: S, nsec: N}} '
                                     f'(integers), got {value!r}')
                ns = value['sec'] * NS_PER_SEC + value['nsec']
                if ns < 0:
                    raise ValueError(f'topic {topic!r}: {key} may not be negative')
                values[key] = Duration(nanoseconds=ns)
            elif key in _QOS_VALUES:
                wanted = bool if key == 'avoid_ros_namespace_conventions' else int
                if not isinstance(value, wanted) or (wanted is int and (
                        isinstance(value, bool) or value < 0)):
                    raise ValueError(f'topic {topic!r}: {key} must be a '
                                     f'{"bool" if wanted is bool else "integer >= 0"}, '
                                     f'got {value!r}')
                values[key] = value
            else:
                raise ValueError(f'topic {topic!r}: unexpected key {key!r}; keys are '
                                 f'{", ".join([*_QOS_POLICIES, *_QOS_DURATIONS, *_QOS_VALUES])}')
        try:
            profiles[str(topic)] = QoSProfile(**values)
        except (InvalidQoSProfileException, TypeError, ValueError) as error:
            raise ValueError(f'topic {topic!r}: {error}') from None
    return profiles


@dataclass
class PlayOptions:
    """What the command line asks of the player, checked and in integer nanoseconds."""

    #: The bags and the storage each must be (None: any), in the order given.
    bags: List[Tuple[str, Optional[str]]]
    topic_filter: TopicFilter = TopicFilter()
    #: Parameters the flags set, applied as the node's parameter overrides (over --ros-args).
    parameters: Dict[str, object] = field(default_factory=dict)
    #: Where playback starts, from the bag's first stamp.
    start_offset_ns: int = 0
    #: ``--playback-until-*``: the last bag time that plays (None: no limit).
    until_ns: Optional[int] = None
    #: ``--playback-duration``: how long after the start (offset included) playback ends.
    duration_ns: Optional[int] = None
    #: Wall time between the start and the first frame that plays by itself.
    delay_ns: int = 0
    #: ``--wait-for-all-acked``: at the end, how long to wait for every reader's
    #: acknowledgements before the player ends (0: as long as it takes; None: the default).
    wait_for_all_acked_ns: Optional[int] = None
    #: Topic remappings FROM:=TO, applied to the player node only.
    remaps: List[str] = field(default_factory=list)
    qos_overrides: Dict[str, QoSProfile] = field(default_factory=dict)
    log_level: Optional[str] = None
    start_at_zero: bool = False
    show_progress: bool = True
    #: ``--follow-clock``: play along another node's /clock, publishing none.
    follow_clock: bool = False
    #: Read the keys of the user's terminal (not ``--disable-keyboard-controls``).
    keyboard_controls: bool = True
    #: The flags of ros2 bag play given that do nothing here, each with why (said once).
    without_effect: List[str] = field(default_factory=list)
    #: ``--strict``: exit code 3 when messages were left out that nobody chose to leave out.
    strict: bool = False
    #: ``--info``: print what the bags hold and how they would play, then end.
    info: bool = False

    def last_bag_ns(self, bag_start_ns: int) -> Optional[int]:
        """
        Return the last bag time that plays, or None: the later of until and start + duration.

        As rosbag2 (``configure_play_until_timestamp``): either limit alone ends playback; with
        both, the later one. ``start`` is the bag's first stamp plus the start offset.
        """
        limits = [self.until_ns] if self.until_ns is not None else []
        if self.duration_ns is not None:
            limits.append(bag_start_ns + self.start_offset_ns + self.duration_ns)
        return max(limits) if limits else None

    def ros_arguments(self) -> List[str]:
        """Return the node's own ROS arguments: the remappings of -m/--remap."""
        arguments = []
        for rule in self.remaps:
            arguments += ['-r', rule]
        return ['--ros-args', *arguments] if arguments else []


def make_parser() -> argparse.ArgumentParser:
    """Return the parser of the bag player's command line."""
    parser = argparse.ArgumentParser(
        prog='bag_player',
        description="Replay rosbag2 bags (sqlite3 or MCAP) as the clock server: the bags' "
                    'time is /clock, in every clock mode. The flags of ros2 bag play are '
                    'taken with the same meaning (doc/bags.md); parameters as for '
                    'clock_server, plus loop: --ros-args -p sync:=true -p time_step:=0.001. '
                    'A flag that sets a parameter wins over --ros-args -p.')
    parser.add_argument('bag', nargs='?', help='rosbag2 directory, or a .mcap or .db3 file')
    parser.add_argument('-s', '--storage', choices=STORAGE_IDS,
                        help='the storage of BAG (default: found from its files)')
    parser.add_argument(
        '-i', '--input', action='append', nargs='+', metavar=('uri', 'storage_id'), default=[],
        help='a bag (and its storage id); repeat for several, merged by time into one '
             'timeline (at one stamp: the bag given first, first; BAG comes before them)')
    parser.add_argument('-r', '--rate', type=_rate,
                        help='playback rate: sets real_time_factor (> 0)')
    parser.add_argument('--topics', nargs='+', default=[], metavar='topic',
                        help='topics to play (with -e: or matching it)')
    parser.add_argument('--services', nargs='+', default=[], metavar='service',
                        help='services whose recorded events play (their _service_event '
                             'topics)')
    parser.add_argument('-e', '--regex', type=_regex('-e/--regex'), default='',
                        help='play topics that this regular expression matches whole')
    parser.add_argument('-x', '--exclude-regex', type=_regex('-x/--exclude-regex'), default='',
                        help='do not play topics that this regular expression matches whole')
    parser.add_argument('--exclude-topics', nargs='+', default=[], metavar='topic',
                        help='topics not to play')
    parser.add_argument('--exclude-services', nargs='+', default=[], metavar='service',
                        help='services whose events not to play')
    parser.add_argument('--qos-profile-overrides-path', metavar='FILE',
                        help='YAML of QoS profiles by topic, as for ros2 bag play')
    parser.add_argument('-l', '--loop', action='store_true',
                        help='sets loop: at the end, start again from the start')
    parser.add_argument('-m', '--remap', nargs='+', default=[], type=_remap,
                        metavar='FROM:=TO', help='topic remappings of the player node')
    parser.add_argument('--storage-config-file', metavar='FILE', help='refused (rosbags reads)')
    clock = parser.add_mutually_exclusive_group()
    clock.add_argument('--clock', nargs='?', type=_clock_hz, const=True, metavar='HZ',
                       help='/clock is always published; HZ sets publish_rate and '
                            'max_clock_rate: at most HZ a second while playing in free run '
                            '(messages still go out at their stamps), HZ in real-time mode '
                            'and while time stands still')
    clock.add_argument('--clock-topics', nargs='+', metavar='topic', help='refused')
    clock.add_argument('--clock-topics-all', action='store_true', default=None,
                       help='refused')
    parser.add_argument('-d', '--delay', type=_positive_seconds('-d/--delay'),
                        help='wall time to wait before playback starts, in s (> 0)')
    parser.add_argument('--playback-duration', metavar='SEC',
                        help='play this long from the start (offset included), in s; '
                             'negative: no limit')
    until = parser.add_mutually_exclusive_group()
    until.add_argument('--playback-until-sec', metavar='SEC',
                       help='last bag time that plays, in s since the epoch (as stamped); '
                            'negative or 0: no limit')
    until.add_argument('--playback-until-nsec', type=_integer('--playback-until-nsec'),
                       metavar='NSEC', help='as --playback-until-sec, in ns')
    parser.add_argument('--disable-keyboard-controls', action='store_true',
                        help='read no keys (space, arrows) from the terminal')
    parser.add_argument('-p', '--start-paused', action='store_true',
                        help='sets paused: start paused')
    parser.add_argument('--start-offset', type=_not_negative_seconds('--start-offset'),
                        default=0, metavar='SEC',
                        help="start this many seconds after the bag's first stamp; resets and "
                             'loops go back there')
    parser.add_argument('--wait-for-all-acked', type=_integer('--wait-for-all-acked', 0),
                        metavar='TIMEOUT',
                        help='at the end of the bag, wait up to TIMEOUT ms (0: as long as it '
                             'takes; default 2000) for every reliable reader to acknowledge '
                             'every message before the player ends')
    parser.add_argument('--stay-at-end', action='store_true',
                        help='sets stay_at_end: in free run and real time, pause at the end of '
                             'the bag and keep serving instead of ending (sync mode always '
                             'stays)')
    parser.add_argument('--disable-loan-message', action='store_true',
                        help='accepted: the player publishes serialized data, never loans')
    parser.add_argument('--read-ahead-queue-size', type=_integer('--read-ahead-queue-size'),
                        metavar='N', help='accepted, without effect: the bag is read ahead in '
                                          'a process of its own, 1 MiB at most')
    parser.add_argument('--publish-service-requests', action='store_true', default=None,
                        help='refused')
    parser.add_argument('--service-requests-source',
                        choices=['service_introspection', 'client_introspection'],
                        help='accepted, without effect (--publish-service-requests is refused)')
    parser.add_argument('--log-level', choices=LOG_LEVELS,
                        help="the node's log level (as --ros-args --log-level)")
    parser.add_argument('--start-at-zero', action='store_true',
                        help="/clock starts at zero instead of the bag's first timestamp")
    parser.add_argument('--no-progress', action='store_true',
                        help='no progress line on a terminal, nor every 5 s in the log '
                             '(~/get_progress still answers)')
    parser.add_argument('--follow-clock', action='store_true',
                        help='publish no /clock: play each message once the /clock of another '
                             'node reaches its stamp, as a participant where that node is a '
                             'sim_clock server (doc/bags.md, "Following another clock")')
    parser.add_argument('--strict', action='store_true',
                        help='exit code 3 if a message of the bag was left out for another '
                             'reason than the selection, the offset, the limits or /clock '
                             '(a type not installed, a read error, the player stopped before '
                             'it)')
    parser.add_argument('--info', action='store_true',
                        help='print what the bags hold (as ros2 bag info) and what this player '
                             'would do with it, then end')
    return parser


#: Flags of ros2 bag play taken for scripts' sake that have no effect here: (flag, why).
WITHOUT_EFFECT = {
    'disable_loan_message': ('--disable-loan-message',
                             'the player publishes serialized data, never loaned messages'),
    'read_ahead_queue_size': ('--read-ahead-queue-size',
                              'the bag is read ahead in a process of its own, 1 MiB at most'),
    'service_requests_source': ('--service-requests-source',
                                'no service request is published: --publish-service-requests '
                                'is refused'),
}


def parse_arguments(argv: List[str]) -> PlayOptions:
    """Parse the command line (without ROS arguments); exit 2 with a usage error if bad."""
    parser = make_parser()
    args = parser.parse_args(argv)
    for name, (flag, why) in REFUSED.items():
        if getattr(args, name) is not None:
            parser.error(f'{flag} is not supported: {why}')
    bags = []
    if args.bag is not None:
        bags.append((args.bag, args.storage))
    elif args.storage is not None:
        parser.error('-s/--storage names the storage of BAG, and no BAG is given '
                     '(with -i: -i BAG STORAGE_ID)')
    for given in args.input:
        if len(given) > 2:
            parser.error(f'-i/--input takes a bag and at most a storage id, got {given}')
        if len(given) == 2 and given[1] not in STORAGE_IDS:
            parser.error(f'-i/--input: storage id must be one of {", ".join(STORAGE_IDS)}, '
                         f'got {given[1]!r}')
        bags.append((given[0], given[1] if len(given) == 2 else None))
    if not bags:
        parser.error('a bag is required: BAG, or -i/--input BAG [STORAGE_ID] (repeatable)')
    parameters = {}
    if args.rate is not None:
        parameters['real_time_factor'] = args.rate
    if args.loop:
        parameters['loop'] = True
    if args.start_paused:
        parameters['paused'] = True
    if args.stay_at_end:
        parameters['stay_at_end'] = True
    if args.clock is not None and args.clock is not True:
        parameters['publish_rate'] = parameters['max_clock_rate'] = args.clock
    options = PlayOptions(
        bags=bags,
        topic_filter=TopicFilter(
            topics=tuple(args.topics),
            services=tuple(s + SERVICE_EVENT_SUFFIX for s in args.services),
            regex=args.regex, exclude_topics=tuple(args.exclude_topics),
            exclude_services=tuple(s + SERVICE_EVENT_SUFFIX for s in args.exclude_services),
            exclude_regex=args.exclude_regex),
        parameters=parameters, start_offset_ns=args.start_offset,
        delay_ns=args.delay or 0,
        wait_for_all_acked_ns=(None if args.wait_for_all_acked is None
                               else args.wait_for_all_acked * 1_000_000),
        remaps=list(args.remap), log_level=args.log_level,
        start_at_zero=args.start_at_zero, show_progress=not args.no_progress,
        follow_clock=args.follow_clock, keyboard_controls=not args.disable_keyboard_controls,
        without_effect=[f'{flag} ({why})' for name, (flag, why) in WITHOUT_EFFECT.items()
                        if getattr(args, name) not in (None, False)],
        strict=args.strict, info=args.info)
    if args.follow_clock:
        _check_following(parser, args)
    # As rosbag2: a negative (or zero) limit is none.
    if args.playback_until_sec is not None:
        until_ns = _argument(parser, _seconds_ns, '--playback-until-sec',
                             args.playback_until_sec)
        options.until_ns = until_ns if until_ns > 0 else None
    if args.playback_until_nsec is not None and args.playback_until_nsec > 0:
        options.until_ns = args.playback_until_nsec
    if args.playback_duration is not None:
        duration_ns = _argument(parser, _seconds_ns, '--playback-duration',
                                args.playback_duration)
        options.duration_ns = duration_ns if duration_ns >= 0 else None
    if args.qos_profile_overrides_path is not None:
        path = args.qos_profile_overrides_path
        try:
            with open(path) as overrides:
                options.qos_overrides = qos_overrides_from_yaml(overrides.read())
        except OSError as error:
            parser.error(f'--qos-profile-overrides-path: cannot read {path!r}: '
                         f'{error.strerror}')
        except ValueError as error:
            parser.error(f'--qos-profile-overrides-path: {path!r}: {error}')
    return options


#: Flags of a timeline the player owns: with --follow-clock the followed source owns time.
TIMELINE_FLAGS = (
    ('rate', '-r/--rate'), ('loop', '-l/--loop'), ('start_paused', '-p/--start-paused'),
    ('clock', '--clock'), ('start_offset', '--start-offset'), ('delay', '-d/--delay'),
    ('remap', '-m/--remap'), ('qos_profile_overrides_path', '--qos-profile-overrides-path'),
    ('stay_at_end', '--stay-at-end'))


def _check_following(parser, args) -> None:
    """Refuse with --follow-clock the flags of a timeline of the player's own."""
    given = [flag for name, flag in TIMELINE_FLAGS
             if getattr(args, name) not in (None, False, [], 0)]
    if args.wait_for_all_acked is not None:  # 0 is a value of it: as long as it takes
        given.append('--wait-for-all-acked')
    if given:
        parser.error(f'{", ".join(given)} do not apply with --follow-clock: the followed '
                     '/clock owns time (its source paces, pauses and loops it); topic '
                     'selection, several bags, --playback-* and --start-at-zero do '
                     '(remap with --ros-args -r)')


def _argument(parser, convert, flag, text):
    try:
        return convert(flag, text)
    except argparse.ArgumentTypeError as error:
        parser.error(str(error))
