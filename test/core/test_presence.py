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

"""The rule by which participants whose node has gone from the graph are dropped."""

from hypothesis import given
from hypothesis import strategies as st
import pytest
from sim_clock.core.presence import Presence

pytestmark = pytest.mark.fast

S = 1_000_000_000


def test_a_node_seen_then_missing_is_gone_at_once():
    presence = Presence()
    presence.joined('p', 0)
    assert presence.gone({'p': '/n'}, ['/n'], 0, 1) == []
    assert presence.gone({'p': '/n'}, [], 5, 2) == [('p', 'dropped: its node /n left the graph')]


def test_a_node_never_seen_is_gone_after_the_grace_once_every_done_writer_is_named():
    presence = Presence()
    presence.joined('p', 0)
    assert presence.gone({'p': '/n'}, ['/other'], 0, 2 * S) == []          # within the grace
    assert presence.gone({'p': '/n'}, [], 1, 3 * S) == []                   # a writer unnamed
    assert presence.gone({'p': '/n'}, [], 0, 3 * S) == [
        ('p', 'dropped: its node /n never appeared in the graph in the 2 s after it joined')]


def test_a_node_that_appears_late_is_kept_and_watched_from_then():
    presence = Presence()
    presence.joined('p', 0)
    assert presence.gone({'p': '/n'}, [], 2, 60 * S) == []
    assert presence.gone({'p': '/n'}, ['/n'], 0, 61 * S) == []
    assert presence.gone({'p': '/n'}, ['/n'], 0, 62 * S) == []
    assert [why for _, why in presence.gone({'p': '/n'}, [], 0, 63 * S)] == [
        'dropped: its node /n left the graph']


def test_a_left_participant_joining_again_gets_a_new_grace():
    presence = Presence()
    presence.joined('p', 0)
    presence.left('p')
    presence.joined('p', 10 * S)
    assert presence.gone({'p': '/n'}, [], 0, 11 * S) == []


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3)), max_size=30))
def test_a_present_node_is_never_dropped(looks):
    """Whatever the graph showed before, a node listed now is never gone now."""
    presence = Presence()
    presence.joined('p', 0)
    for step, (listed, unnamed) in enumerate(looks):
        out = presence.gone({'p': '/n'}, ['/n'] if listed else [], unnamed, step * S)
        assert not (listed and out)
        if out:
            presence.left('p')
            presence.joined('p', step * S)
