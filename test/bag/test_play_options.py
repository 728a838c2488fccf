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

"""The bag player's command line (ros2 bag play's flags), topic filter and merged bags."""

from bags import MS
from bags import START_NS
from bags import write_string_bag
import pytest
from rclpy.qos import DurabilityPolicy
from rclpy.qos import ReliabilityPolicy
from sim_clock.bag.play_options import parse_arguments
from sim_clock.bag.play_options import qos_overrides_from_yaml
from sim_clock.bag.reader import Bag
from sim_clock.bag.reader import BagError
from sim_clock.bag.reader import TopicFilter
from sim_clock.process.arguments import empty_parameter_values
from sim_clock.process.arguments import split_ros_args

pytestmark = pytest.mark.fast


def test_flags_map_onto_parameters_and_options():
    """Each flag lands where the player takes it; seconds become exact ns."""
    options = parse_arguments([
        'a', '-s', 'mcap', '-i', 'b', '-i', 'c', 'sqlite3', '-r', '0.5', '-l', '-p',
        '--clock', '25', '--start-offset', '0.1', '--playback-until-sec', '1700000000.123456789',
        '-d', '1e-9', '--playback-duration', '2.5', '-m', '/a:=/b', 'c:=d', '--log-level',
        'warn', '--topics', '/t', '--services', '/s', '-e', '/r.*', '-x', '/rx',
        '--exclude-topics', '/et', '--exclude-services', '/es', '--disable-keyboard-controls',
        '--read-ahead-queue-size', '5', '--disable-loan-message',
        '--service-requests-source', 'client_introspection'])
    assert options.bags == [('a', 'mcap'), ('b', None), ('c', 'sqlite3')]
    assert options.parameters == {'real_time_factor': 0.5, 'loop': True, 'paused': True,
                                  'publish_rate': 25.0, 'max_clock_rate': 25.0}
    assert (options.start_offset_ns, options.until_ns, options.delay_ns, options.duration_ns) \
        == (100_000_000, 1_700_000_000_123_456_789, 1, 2_500_000_000)
    assert options.ros_arguments() == ['--ros-args', '-r', '/a:=/b', '-r', 'c:=d']
    assert options.log_level == 'warn'
    assert options.keyboard_controls is False and parse_arguments(['a']).keyboard_controls
    assert options.without_effect == [
        '--disable-loan-message (the player publishes serialized data, never loaned messages)',
        '--read-ahead-queue-size (the bag is read ahead in a process of its own, 1 MiB at '
        'most)',
        '--service-requests-source (no service request is published: '
        '--publish-service-requests is refused)']
    assert parse_arguments(['a']).without_effect == []
    assert options.topic_filter == TopicFilter(
        topics=('/t',), services=('/s/_service_event',), regex='/r.*', exclude_topics=('/et',),
        exclude_services=('/es/_service_event',), exclude_regex='/rx')
    # The later of until and start + offset + duration, as rosbag2.
    assert options.last_bag_ns(1_700_000_000 * 10**9) == 1_700_000_002_600_000_000
    bare = parse_arguments(['a', '--clock', '--playback-until-nsec', '-1'])
    assert bare.parameters == {} and bare.until_ns is None and bare.last_bag_ns(5) is None


def test_the_end_of_the_bag_flags():
    """--stay-at-end sets stay_at_end; --wait-for-all-acked takes ms (0: as long as it takes)."""
    options = parse_arguments(['a', '--stay-at-end', '--wait-for-all-acked', '250'])
    assert options.parameters == {'stay_at_end': True}
    assert options.wait_for_all_acked_ns == 250_000_000
    assert parse_arguments(['a', '--wait-for-all-acked', '0']).wait_for_all_acked_ns == 0
    bare = parse_arguments(['a'])
    assert bare.parameters == {} and bare.wait_for_all_acked_ns is None


@pytest.mark.parametrize('argv, says', [
    (['a', '-r', '0'], '-r/--rate (the real_time_factor parameter): a number more than 0 '
                       "(1.0: the recorded pace); got '0'\n"),
    (['a', '-r', '-1'], '-r/--rate (the real_time_factor parameter): a number more than 0 '
                        "(1.0: the recorded pace); got '-1'\n"),
    (['a', '-r', '1e9'], '-r/--rate (the real_time_factor parameter): real_time_factor must '
                         'be between'),
    (['a', '--clock', '-3'], '--clock (the publish_rate and max_clock_rate parameters): a rate '
                             "in Hz, more than 0; got '-3'\n"),
    (['a', '--clock', '20000'], '--clock (the publish_rate and max_clock_rate parameters): '
                                'publish_rate must be between'),
    (['a', '-d', '0'], '-d/--delay must be more than 0 s'),
    (['a', '--start-offset', '-1'], '--start-offset must be 0 s or more'),
    (['a', '--start-offset', 'nan'], '--start-offset takes seconds'),
    (['a', '--playback-until-sec', 'x'], '--playback-until-sec takes seconds'),
    (['a', '--playback-until-sec', '1', '--playback-until-nsec', '1'], 'not allowed with'),
    (['a', '-e', '(', ], '-e/--regex takes a regular expression'),
    (['a', '-m', '/a'], '-m/--remap takes rules FROM:=TO'),
    (['-i', 'a', 'zip'], 'storage id must be one of sqlite3, mcap'),
    (['-i', 'a', 'mcap', 'x'], '-i/--input takes a bag and at most a storage id'),
    ([], 'a bag is required'),
    (['-s', 'mcap', '-i', 'a'], '-s/--storage names the storage of BAG'),
    (['a', '--storage-config-file', 'f'], '--storage-config-file is not supported: rosbags'),
    (['a', '--clock-topics', '/x'], '--clock-topics is not supported'),
    (['a', '--wait-for-all-acked', '-1'], '--wait-for-all-acked must be 0 or more'),
    (['a', '--follow-clock', '--wait-for-all-acked', '0'],
     '--wait-for-all-acked do not apply with --follow-clock'),
    (['a', '--follow-clock', '--stay-at-end'], '--stay-at-end do not apply with --follow-clock'),
    (['a', '--publish-service-requests'], '--publish-service-requests is not supported'),
    (['a', '--qos-profile-overrides-path', '/no/such/file'],
     '--qos-profile-overrides-path: cannot read'),
    (['a', '--log-level', 'loud'], "invalid choice: 'loud'"),
])
def test_bad_values_are_usage_errors_naming_the_flag(argv, says, capsys):
    """A bad value or a refused flag: exit code 2, a message that names the flag and why."""
    with pytest.raises(SystemExit) as exit_:
        parse_arguments(argv)
    assert exit_.value.code == 2
    assert says in capsys.readouterr().err


def test_ros_arguments_split_and_empty_parameter_values():
    """-m's rules stay the player's; ``-p name:=`` is the empty string; -- ends ROS args."""
    own, ros = split_ros_args(['prog', 'bag', '-m', '/a:=/b', '--ros-args', '-p', 'x:=',
                               '-r', 'c:=d', '--', '-l', '--ros-args', '--param', 'y:='])
    assert own == ['prog', 'bag', '-m', '/a:=/b', '-l']
    assert ros == ['prog', '--ros-args', '-p', 'x:=', '-r', 'c:=d', '--ros-args', '--param',
                   'y:=']
    assert empty_parameter_values(ros) == [
        'prog', '--ros-args', '-p', "x:=''", '-r', 'c:=d', '--ros-args', '--param', "y:=''"]
    assert empty_parameter_values(['prog', '-p', 'x:=']) == ['prog', '-p', 'x:=']


@pytest.mark.parametrize('selection, plays', [
    (TopicFilter(), {'/a', '/b', '/s/_service_event'}),
    (TopicFilter(topics=('/a',)), {'/a', '/s/_service_event'}),  # topics do not limit services
    (TopicFilter(services=('/s/_service_event',)), {'/a', '/b', '/s/_service_event'}),
    (TopicFilter(topics=('/a',), regex='/b'), {'/a', '/b'}),
    (TopicFilter(regex='/.'), {'/a', '/b'}),  # matches whole names only
    (TopicFilter(exclude_topics=('/a',), topics=('/a', '/b')), {'/b', '/s/_service_event'}),
    (TopicFilter(exclude_regex='.*_event', regex='.*'), {'/a', '/b'}),
    (TopicFilter(exclude_services=('/s/_service_event',)), {'/a', '/b'}),
])
def test_topic_filter_as_rosbag2_selects(selection, plays):
    """rosbag2's allow_topic: exclusions first, then names or regex (either), else all."""
    assert {name for name in ('/a', '/b', '/s/_service_event') if selection.allows(name)} == plays


def test_qos_overrides_in_rosbag2_format():
    """Short names and {sec, nsec}; a bad key or value is named."""
    profiles = qos_overrides_from_yaml(
        '/x:\n  history: keep_last\n  depth: 3\n  reliability: best_effort\n'
        '  durability: transient_local\n  deadline: {sec: 1, nsec: 5}\n')
    [(topic, profile)] = profiles.items()
    assert topic == '/x' and profile.depth == 3
    assert profile.reliability == ReliabilityPolicy.BEST_EFFORT
    assert profile.durability == DurabilityPolicy.TRANSIENT_LOCAL
    assert profile.deadline.nanoseconds == 1_000_000_005
    for text, says in (('/x: {history: keep_last, depth: 1, colour: red}', 'unexpected key'),
                       ('/x: {reliability: sometimes, depth: 1}', 'reliability must be one of'),
                       ('/x: {depth: -1}', 'depth must be'),
                       ('[1, 2]', 'must map topic names'),
                       ('/x: {depth: 1, lifespan: 3}', 'lifespan must be {sec: S, nsec: N}')):
        with pytest.raises(ValueError, match=says):
            qos_overrides_from_yaml(text)


def test_bags_merge_by_time_the_first_given_first_at_one_stamp(tmp_path):
    """Two bags (sqlite3 and MCAP) stream as one, ties in the order given; until cuts."""
    first, second = str(tmp_path / 'first'), str(tmp_path / 'second')
    write_string_bag(first, [(START_NS + k * 10 * MS, '/t', f'f{k}') for k in range(3)])
    write_string_bag(second, [(START_NS + 5 * MS, '/t', 's0'), (START_NS + 10 * MS, '/t', 's1'),
                              (START_NS + 30 * MS, '/u', 'u')], 'mcap')
    for order in ((first, second), (second, first)):
        storages = ['sqlite3', 'mcap'] if order[0] == first else ['mcap', 'sqlite3']
        bag = Bag(list(order), storage_ids=storages)
        try:
            stamps = [(t - START_NS) // MS for _, t, _ in bag.messages(0)]
            assert stamps == [0, 5, 10, 10, 20, 30]
            texts = [bytes(data[8:10]) for _, t, data in bag.messages(0)
                     if t == START_NS + 10 * MS]
            assert texts == ([b'f1', b's1'] if order[0] == first else [b's1', b'f1'])
            assert [t.name for t in bag.topics] == ['/t', '/u']
            assert [t.message_count for t in bag.topics] == [5, 1]
            assert (bag.start_ns, bag.end_ns) == (START_NS, START_NS + 30 * MS)
            bag.end_at(START_NS + 10 * MS)
            assert len(list(bag.messages(0))) == 4 and bag.end_ns == START_NS + 10 * MS
        finally:
            bag.close()
    with pytest.raises(BagError, match='stored as sqlite3, not as the mcap given with it'):
        Bag([first, second], storage_ids=['mcap', None])


def test_follow_clock_takes_selection_and_limits_and_refuses_a_timeline_of_its_own(capsys):
    """With --follow-clock the followed /clock owns time: -r, -l, --start-offset ... refused."""
    options = parse_arguments(['b', '--follow-clock', '--topics', '/a', '--start-at-zero',
                               '--playback-until-nsec', '5'])
    assert options.follow_clock and options.start_at_zero and options.until_ns == 5
    assert not parse_arguments(['b']).follow_clock
    for flags in (['-r', '2'], ['-l'], ['--start-offset', '1'], ['-d', '1'], ['--clock'],
                  ['-m', '/a:=/b']):
        with pytest.raises(SystemExit) as exit_:
            parse_arguments(['b', '--follow-clock', *flags])
        assert exit_.value.code == 2
        assert 'do not apply with --follow-clock' in capsys.readouterr().err, flags
