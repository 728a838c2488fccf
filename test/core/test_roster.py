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

"""Expected participants: who is ready, and what the others lack, in words."""

from hypothesis import given
from hypothesis import strategies as st
import pytest
from sim_clock.core.roster import parse_expected
from sim_clock.core.roster import Report
from sim_clock.core.roster import Roster
from sim_clock.core.roster import SERVER
from sim_clock.core.roster import WriterView
from sim_clock.core.rules import Refused

pytestmark = pytest.mark.fast


@pytest.mark.parametrize('value, expected', [
    ('', ()),
    ([], ()),
    (None, ()),
    ('planner', ('/planner',)),
    ("['/perception', 'planning']", ('/perception', '/planning')),
    ('a, /ns/b  c', ('/a', '/ns/b', '/c')),
    (['/robot1/control'], ('/robot1/control',)),
])
def test_names_are_taken_with_or_without_their_slash(value, expected):
    assert parse_expected(value) == expected


@pytest.mark.parametrize('value, reason', [
    ('9lives', 'not a node name'),
    ('a b /a', '/a more than once'),
    ([3], 'not a node name'),
    (3.5, 'must be a list of node names'),
])
def test_a_bad_value_is_refused_naming_why(value, reason):
    with pytest.raises(Refused, match=reason):
        parse_expected(value)


def stack() -> Roster:
    roster = Roster()
    roster.configure(('/perception', '/planning', '/recorder'))
    return roster


PERCEPTION = Report.of(['/stage1'], [2], ['/chatter'], [1])
PLANNING = Report.of(['/stage2'], [1], ['/stage1'], [1])
RECORDER = Report.of([], [], ['/stage1', '/stage2'], [1, 1])


def test_nobody_is_ready_until_everyone_said_which_topics_it_uses():
    roster = stack()
    assert not roster.all_ready and not roster.look()
    assert not roster.report('/perception', PERCEPTION)
    assert roster.missing() == {
        '/perception': 'waits for /planning, /recorder to say which topics they use',
        '/planning': 'not joined, or has not said on ~/ready which topics it uses',
        '/recorder': 'not joined, or has not said on ~/ready which topics it uses'}
    assert not roster.report('planning', PLANNING)
    assert roster.report('recorder', RECORDER)  # the last one: everyone matched everyone
    assert roster.ready == {'/perception', '/planning', '/recorder'} and roster.missing() == {}


def test_each_endpoint_must_match_every_peer_among_the_expected_nodes():
    roster = stack()
    roster.report('/perception', Report.of(['/stage1'], [1], ['/chatter'], [0]))
    roster.report('/planning', PLANNING)
    assert not roster.report('/recorder', Report.of([], [], ['/stage1', '/stage2'], [1, 0]))
    assert roster.missing() == {
        '/perception': 'its writer on /stage1 matched 1 of 2 readers',
        '/recorder': 'its reader on /stage2 matched 0 of 1 writers'}
    assert roster.ready == {'/planning'}
    # /chatter: written by nobody expected, so its reader waits for nothing... until the
    # server says it writes /chatter itself (a bag's topic).
    roster.report('/perception', PERCEPTION)
    roster.report('/recorder', RECORDER)
    assert roster.look({'/chatter': [WriterView(1, ('/perception',))]})
    assert not roster.look({'/chatter': [WriterView(0, ('/perception',))]})
    assert roster.missing({'/chatter': [WriterView(0, ('/perception',))]}) == {
        SERVER: 'its writer on /chatter matched 0 of the 1 readers it sees'}
    two = [WriterView(1, ('/perception',))] * 2
    assert not roster.look({'/chatter': two})  # two writers: its reader needs both
    assert roster.missing({'/chatter': two}) == {
        '/perception': 'its reader on /chatter matched 1 of 2 writers'}


def test_a_reader_nobody_expects_does_not_stand_in_for_an_expected_one():
    """
    The server's writer is checked by name: the test client's match is not the recorder's.

    The recorder says its reader matched the server's writer; the writer's one match is the
    test client's reader.
    """
    roster = Roster()
    roster.configure(('/recorder',))
    roster.report('/recorder', Report.of([], [], ['/clock'], [1]))
    client_only = {'/clock': [WriterView(1, ('/test_client',))]}
    assert not roster.look(client_only)
    assert roster.missing(client_only) == {
        SERVER: 'its writer on /clock does not see 1 of the 1 readers of /recorder yet'}
    seen_not_matched = {'/clock': [WriterView(1, ('/recorder', '/test_client'))]}
    assert not roster.look(seen_not_matched)
    assert roster.missing(seen_not_matched) == {
        SERVER: 'its writer on /clock matched 1 of the 2 readers it sees'}
    assert roster.look({'/clock': [WriterView(2, ('/recorder', '/test_client'))]})
    # A node with two readers of /clock (its time source's and its own): both seen.
    roster.report('/recorder', Report.of([], [], ['/clock', '/clock'], [1, 1]))
    assert not roster.look({'/clock': [WriterView(2, ('/recorder', '/test_client'))]})
    assert roster.look({'/clock': [WriterView(3, ('/recorder', '/test_client', '/recorder'))]})


def test_a_node_writer_that_names_its_readers_is_checked_by_name():
    """
    Perception's writer on /stage1 matched 2 (the count the others need), one of them an echo.

    Named, it is not ready until it sees /recorder's reader and matched all it sees; a report
    without names (or with names that do not add up) is checked by count, as before.
    """
    def perception(matched, seen):
        return Report.of(['/stage1'], [matched], ['/chatter'], [0],
                         [len(seen)], list(seen))
    roster = stack()
    roster.report('/planning', PLANNING)
    roster.report('/recorder', RECORDER)
    assert not roster.report('/perception', perception(2, ('/echo', '/planning')))
    assert roster.missing() == {
        '/perception': 'its writer on /stage1 does not see 1 of the 1 readers of /recorder yet'}
    assert not roster.report('/perception', perception(2, ('/echo', '/planning', '/recorder')))
    assert roster.missing() == {
        '/perception': 'its writer on /stage1 matched 2 of the 3 readers it sees'}
    assert roster.report('/perception', perception(3, ('/echo', '/planning', '/recorder')))
    # Counts only: two matches are enough, whoever they are.
    assert roster.report('/perception', Report.of(['/stage1'], [2], ['/chatter'], [0]))
    assert Report.of(['/stage1'], [2], [], [], [2], ['/planning']).seen == ()
    assert Report.of(['/a', '/b'], [1, 2], [], [], [1, 2], ['/x', '/y', '/z']).seen == (
        ('/x',), ('/y', '/z'))


@given(st.lists(st.sampled_from(['/a', '/b', '/x']), max_size=5), st.integers(0, 5),
       st.integers(0, 2), st.integers(0, 2))
def test_a_server_writer_is_ready_iff_it_sees_and_matched_every_expected_reader(
        seen, matched, readers_a, readers_b):
    """Against a model: each expected reader among those seen, and every one seen matched."""
    roster = Roster()
    roster.configure(('/a', '/b'))
    roster.report('/a', Report.of([], [], ['/clock'] * readers_a, [1] * readers_a))
    roster.report('/b', Report.of([], [], ['/clock'] * readers_b, [1] * readers_b))
    writers = {'/clock': [WriterView(matched, tuple(seen))]}
    model = (seen.count('/a') >= readers_a and seen.count('/b') >= readers_b
             and matched >= len(seen))
    assert roster.look(writers) == model
    assert (SERVER in roster.missing(writers)) == (not model)


def test_a_node_that_leaves_must_say_it_is_ready_again():
    roster = stack()
    for name, report in (('/perception', PERCEPTION), ('/planning', PLANNING),
                         ('/recorder', RECORDER)):
        roster.report(name, report)
    assert roster.all_ready
    roster.forget('planning')
    assert not roster.all_ready and not roster.look()
    assert roster.report('/planning', PLANNING)


def test_nothing_expected_is_always_ready_and_others_change_nothing():
    roster = Roster()
    assert roster.all_ready and roster.look({'/chatter': [WriterView(0, ('/x',))]})
    assert roster.report('/stranger', Report.of(['/x'], [0], [], []))
    assert roster.missing() == {}


@given(st.lists(st.tuples(st.sampled_from(['/a', '/b', '/c']),
                          st.lists(st.sampled_from(['/t1', '/t2']), max_size=2),
                          st.lists(st.sampled_from(['/t1', '/t2']), max_size=2),
                          st.integers(0, 3)), max_size=8))
def test_ready_means_every_count_covers_what_the_others_hold(reports):
    """Against a model: a node is ready iff all reported and each count covers its peers."""
    roster = Roster()
    roster.configure(('/a', '/b', '/c'))
    said = {}
    for name, publications, subscriptions, count in reports:
        report = Report.of(publications, [count] * len(publications),
                           subscriptions, [count] * len(subscriptions))
        said[name] = report
        roster.report(name, report)
    if set(said) != {'/a', '/b', '/c'}:
        assert not roster.all_ready
        return
    readers = {t: sum(1 for r in said.values() for topic, _ in r.readers if topic == t)
               for t in ('/t1', '/t2')}
    writers = {t: sum(1 for r in said.values() for topic, _ in r.writers if topic == t)
               for t in ('/t1', '/t2')}
    model = {name for name, report in said.items()
             if all(n >= readers[t] for t, n in report.writers)
             and all(n >= writers[t] for t, n in report.readers)}
    assert roster.ready == model
    assert roster.all_ready == (model == {'/a', '/b', '/c'})
