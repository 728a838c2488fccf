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

"""A bag player's --delay ends at a change of ``paused``, by a service or by a set."""

from bags import write_test_bag
import pytest
from rclpy.parameter import Parameter
from sim_clock.bag.player import BagPlayer
from sim_clock.bag.reader import Bag
from sim_clock.core.units import NS_PER_SEC

pytestmark = pytest.mark.process


@pytest.fixture
def delayed(context, tmp_path):
    """Return a bag player held by a 60 s delay, in this process."""
    path = str(tmp_path / 'bag')
    write_test_bag(path, 'sqlite3')
    bag = Bag(path)
    player = BagPlayer(bag, show_progress=False, delay_ns=60 * NS_PER_SEC, context=context)
    yield player
    player.node.destroy_node()
    bag.close()


def test_the_delay_holds_time_until_it_is_over(delayed):
    """Paused by the delay, and its timer set."""
    assert delayed.node.get_parameter('paused').value is True
    assert delayed._delay_timer is not None


def test_a_resume_by_service_ends_the_delay(delayed):
    """~/resume: time runs, and the delay does not pause or resume it again later."""
    assert delayed.node.control.resume().success
    assert delayed._delay_timer is None
    assert delayed.node.get_parameter('paused').value is False


@pytest.mark.parametrize('paused', [False, True])
def test_a_set_of_paused_ends_the_delay_even_to_the_value_it_has(delayed, paused):
    """ros2 param set paused, false or true: the delay is over, paused as set."""
    [result] = delayed.node.set_parameters([Parameter('paused', value=paused)])
    assert result.successful
    assert delayed._delay_timer is None
    assert delayed.node.timeline.status().paused is paused
