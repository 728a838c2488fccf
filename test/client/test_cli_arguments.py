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

"""The simclock command line's arguments: each command parsed, each bad value refused (exit 2)."""

import argparse

import pytest
from sim_clock.client.cli_arguments import add_arguments
from sim_clock.client.cli_arguments import check_arguments
from sim_clock.client.cli_arguments import DEFAULT_TIMEOUT
from sim_clock.core.rules import MAX_STEPS_PER_CALL
from sim_clock.wire.names import DEFAULT_SERVER

pytestmark = pytest.mark.fast


def parse(*argv):
    """Return the parsed arguments of a simclock command line."""
    parser = argparse.ArgumentParser(prog='simclock')
    add_arguments(parser)
    return parser.parse_args(argv)


def refused(capsys, *argv) -> str:
    """Return what argparse says refusing ``argv``, checking it exits with 2."""
    with pytest.raises(SystemExit) as exit_info:
        parse(*argv)
    assert exit_info.value.code == 2
    return capsys.readouterr().err


def test_the_options_default_and_go_before_or_after_the_command():
    """--server and --timeout: defaults, before the command, or after it (which wins)."""
    args = parse('status')
    assert (args.server, args.timeout, args.watch, args.interval) == (
        DEFAULT_SERVER, DEFAULT_TIMEOUT, False, 1.0)
    assert parse('--server', '/a', 'status').server == '/a'
    assert parse('--server', '/a', 'status', '--server', '/b').server == '/b'
    assert parse('--timeout', '2', 'pause', '--timeout', '0.5').timeout == 0.5


def test_step_takes_frames_a_target_frame_or_a_time():
    """N frames (1 by default), --to a frame, --until exact seconds; one of them."""
    assert parse('step').frames is None
    assert parse('step', '5').frames == 5
    assert parse('step', str(MAX_STEPS_PER_CALL)).frames == MAX_STEPS_PER_CALL
    assert parse('step', '--to', '0').to == 0
    assert parse('step', '--until', '0.1').until == 100_000_000
    assert parse('step', '--until', '12.000000001').until == 12_000_000_001
    assert parse('step', '--user-id', 'alice').user_id == 'alice'


@pytest.mark.parametrize('argv, said', [
    (('step', '0'), 'a whole number of frames from 1 to'),
    (('step', str(MAX_STEPS_PER_CALL + 1)), 'a whole number of frames from 1 to'),
    (('step', '1.5'), 'a whole number of frames'),
    (('step', '--to', '-1'), 'a frame number, 0 or more'),
    (('step', '3', '--to', '5'), 'not allowed with argument'),
    (('step', '--until', 'soon'), 'step: error: argument --until'),
    (('--timeout', '0', 'status'), 'expected seconds, more than 0'),
    (('--timeout', 'nan', 'status'), 'expected a finite number'),
    (('--timeout', 'x', 'status'), 'expected a number'),
    (('rate', '-1'), 'rate: error: argument factor'),
    (('rate', 'inf'), 'expected a finite number'),
    (('sync', 'maybe'), "invalid choice: 'maybe'"),
    (('mode', 'fast'), "invalid choice: 'fast'"),
    (('resets', '--count', '-1'), 'a whole number, 0 (never end) or more'),
    (('trace', '--frames', '5'), 'the following arguments are required: --out'),
    (('trace', '--out', 'f', '--frames', '5', '--follow', '2'), 'not allowed with argument'),
    (('status', '--interval', '0'), 'expected seconds, more than 0'),
    (('nothing',), "invalid choice: 'nothing'"),
    ((), 'the following arguments are required: COMMAND'),
])
def test_a_bad_value_is_refused_saying_what_is_allowed(capsys, argv, said):
    """Exit with 2 (argparse), and a line that says what the argument takes."""
    assert said in refused(capsys, *argv)


def test_each_command_parses_its_own_arguments():
    """The positional values of each command, as the commands read them."""
    assert parse('sync', 'on').state == 'on'
    assert parse('rate', '0').factor == 0.0 and parse('rate', '2.5').factor == 2.5
    assert parse('mode', 'real_time').mode == 'real_time'
    assert parse('seek', '1.25').time == 1_250_000_000
    assert parse('resets').count == 0 and parse('resets', '--count', '3').count == 3
    assert parse('progress', '--follow').follow
    assert (parse('diff', 'a', 'b').bag_a, parse('diff', 'a', 'b').bag_b) == ('a', 'b')
    trace = parse('trace', '--out', 't.json', '--frames', '10')
    assert (trace.out, trace.frames, trace.follow) == ('t.json', 10, None)
    assert parse('report', 't.json', '--html', 'r.html').html == 'r.html'
    top = parse('top', '--once')
    assert top.once and top.interval > 0 and top.window > 0


def test_user_id_applies_to_step_and_sync_only():
    """--user-id before any command parses, and check_arguments refuses it where it is void."""
    assert check_arguments(parse('--user-id', 'alice', 'step')) == ''
    assert check_arguments(parse('sync', 'on', '--user-id', 'alice')) == ''
    assert check_arguments(parse('status')) == ''
    problem = check_arguments(parse('--user-id', 'alice', 'pause'))
    assert problem == '--user-id applies to step and sync only, not to pause'


def test_user_id_after_a_command_that_takes_none_is_an_error(capsys):
    """After the command, only step and sync know --user-id."""
    assert 'unrecognized arguments: --user-id' in refused(capsys, 'reset', '--user-id', 'a')
