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

"""The benchmarks run and print their figures (smoke runs, never a timing assertion)."""

import json
import math
import os
import re
import subprocess
import sys

from harness import ROOT
import pytest

pytestmark = pytest.mark.process


#: A line of Fast DDS's own log, which it writes on stdout (its default consumer): e.g.
#: "[RTPS_TRANSPORT_SHM Error] Failed init_port ...: open_and_lock_file failed", logged when
#: the shared-memory port a starting participant tries is held by another process; it then
#: takes the next port and goes on (eProsima/Fast-DDS#2003). A timestamp, maybe coloured,
#: comes before it.
FAST_DDS_LOG = re.compile(r'[\d:. -]*\[[A-Z_]+ (Error|Warning|Info)\]')
COLOURS = re.compile(r'\x1b\[[\d;]*m')


def _fast_dds_log(line: str) -> bool:
    """Whether ``line`` is one of Fast DDS's log (:data:`FAST_DDS_LOG`), coloured or not."""
    return FAST_DDS_LOG.match(COLOURS.sub('', line)) is not None


def _benchmark_lines(script: str, tmp_path, domain_id: int, *arguments) -> list:
    """
    Run ``benchmarks/<script>`` on the test's domain; return its lines (it must end 0).

    Its own lines: those of Fast DDS's log, which its processes write on the same stdout at
    any moment, are left out.
    """
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, 'benchmarks', script), '--domain', str(domain_id),
         *arguments], capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    return [line for line in result.stdout.splitlines() if not _fast_dds_log(line)]


def test_a_line_of_the_fast_dds_log_is_told_from_a_benchmark_line():
    """As Fast DDS writes it, coloured or not; a figure's line is kept."""
    logged = ('\x1b[37;1m2026-11-29 18:22:29.781 \x1b[31;1m[\x1b[37;1mRTPS_TRANSPORT_SHM'
              '\x1b[31;1m Error] \x1b[37mFailed init_port fastrtps_port7003: open_and_lock_file '
              'failed')
    assert _fast_dds_log(logged)
    assert _fast_dds_log('2026-11-29 18:22:29.781 [RTPS_TRANSPORT_SHM Error] Failed init_port')
    assert not _fast_dds_log('ack_timeout 0 s: step p50 812 us, p99 1204 us')
    assert not _fast_dds_log('[gated] 50 frames')


@pytest.mark.slow
def test_replay_benchmark_prints_figures(tmp_path):
    """Both bag sizes get a raw read rate, a replay rate, a ratio and peak RSS figures."""
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, 'benchmarks', 'replay.py'), '--messages', '200',
         '--storage', 'mcap', '--repetitions', '2'],
        capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr
    _, *lines, verdict, cost = result.stdout.splitlines()
    rows = [line.split() for line in lines]
    assert [row[:3] for row in rows] == [['mcap', 'x1', '200'], ['mcap', 'x10', '2000']]
    for row in rows:
        assert len(row) == 18, row  # bag (2 words), messages and 15 figures
        assert all(re.fullmatch(r'[\d,.]+', figure) for figure in row[3:]), row
        ratio, lowest, highest = map(float, row[5:8])
        assert lowest <= highest and ratio > 0
    assert re.fullmatch(r'target: replay at least 0\.5 of the raw read rate for every bag: '
                        r'(met|NOT met) \(lowest ratio of median rates [\d.]+; .*\)', verdict)
    assert re.fullmatch(r'target: a bag whose metadata disagrees with its data read at a cost '
                        r'of at most 1\.1 of the raw read of the bag as written: (met|NOT met) '
                        r'\(highest cost of median rates [\d.]+\)', cost)


@pytest.mark.slow
def test_performance_benchmark_prints_every_figure(tmp_path, domain_id):
    """The smoke run prints every figure with baseline, ratio and target, as a line and JSON."""
    sys.path.insert(0, os.path.join(ROOT, 'benchmarks', 'performance'))
    try:
        from run import FIGURES
    finally:
        sys.path.pop(0)
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, 'benchmarks', 'performance', 'run.py'), '--smoke',
         '--domain', str(domain_id), '--log', str(tmp_path / 'processes.log')],
        capture_output=True, text=True, timeout=600, cwd=str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    objects = [json.loads(line) for line in lines if line.startswith('{')]
    assert [row['name'] for row in objects] == [figure.name for figure in FIGURES]
    for row in objects:
        assert {'name', 'value', 'baseline', 'ratio', 'target', 'unit'} <= set(row), row
        assert math.isfinite(row['value']) and math.isfinite(row['baseline']), row
        # The human-readable line of the same figure.
        assert any(line.startswith(row['name'] + ' ') and 'baseline' in line
                   for line in lines), row['name']


@pytest.mark.slow
def test_acked_step_benchmark_prints_both_figures(tmp_path, domain_id):
    """The acknowledged-step probe prints p50 and p99 with and without acknowledgements."""
    lines = _benchmark_lines('acked_step.py', tmp_path, domain_id, '--calls', '20')
    assert re.fullmatch(r'ack_timeout 0 s: step p50 \d+ us, p99 \d+ us', lines[0]), lines
    assert re.fullmatch(r'ack_timeout 5 s: step p50 \d+ us, p99 \d+ us', lines[1]), lines
    assert re.fullmatch(r'acknowledged / published step p50: [\d.]+x \(target <= 1\.5x: '
                        r'(met|NOT met)\)', lines[2]), lines


@pytest.mark.slow
def test_stack_benchmark_prints_its_figures_and_the_bare_barrier(tmp_path):
    """One run of the stack in rounds and one at the next frame: no inversion; the bare rate."""
    stack = os.path.join(ROOT, 'benchmarks', 'stack.py')
    result = subprocess.run([sys.executable, stack, '--runs', '1'], capture_output=True,
                            text=True, timeout=300, cwd=str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r'deterministic: 1 of 1 recordings identical to the first .*runs with an '
                     r'inversion: 0 .*frames/s median \d+', result.stdout), result.stdout
    result = subprocess.run([sys.executable, stack, '--runs', '1', '--mode', 'next_frame',
                             '--no-record'], capture_output=True, text=True, timeout=300,
                            cwd=str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r'next_frame, without the recorder: frames/s median \d+ .*runs with an '
                     r'inversion: 0', result.stdout), result.stdout
    result = subprocess.run([sys.executable, stack, '--bare', '--runs', '1'],
                            capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r'bare barrier, 3 processes: frames/s median \d+', result.stdout)


@pytest.mark.slow
@pytest.mark.parametrize('udp_range, shared_memory', [('SUBNET', False), ('LOCALHOST', True)])
def test_udp_cases_fail_on_shared_memory(tmp_path, domain_id, monkeypatch, udp_range,
                                         shared_memory):
    """
    A UDP case's processes are checked for Fast DDS shared memory, and fail the case on it.

    As the benchmark runs them (discovery beyond localhost), the clock server and a role are on
    UDPv4 alone; with a LOCALHOST range rmw_fastrtps installs shared memory despite
    FASTDDS_BUILTIN_TRANSPORTS=UDPv4, and both the role's result and the stop say so.
    """
    sys.path.insert(0, os.path.join(ROOT, 'benchmarks', 'performance'))
    try:
        import run
    finally:
        sys.path.pop(0)
    monkeypatch.setattr(run, 'UDP_RANGE', udp_range)
    bench = run.Bench(domain_id, str(tmp_path / 'processes.log'))
    bench.udp = True
    try:
        server = bench.server(sync=True)
        caller = bench.role('call-trigger', '--name', 'step_once')  # answered: the server is up
        if shared_memory:
            with pytest.raises(run.SharedMemoryInUse, match='call-trigger .* uses Fast DDS '
                               'shared memory .*/dev/shm/fast'):
                caller.result(run.TIMEOUT)
            with pytest.raises(run.SharedMemoryInUse, match='clock_server .* uses Fast DDS '
                               'shared memory'):
                bench.stop_all()
        else:
            assert caller.result(run.TIMEOUT)['shared_memory'] == []
            assert server.shared_memory() == []
            bench.stop_all()
    finally:
        bench.close()


@pytest.mark.slow
def test_gated_frames_benchmark_prints_both_figures(tmp_path, domain_id):
    """The output-gate benchmark prints frames/s gated and bare, and their ratio."""
    lines = _benchmark_lines('gated_frames.py', tmp_path, domain_id, '--frames', '50',
                             '--steps', '2', '--repeat', '1')
    assert re.fullmatch(r'sim_clock, one gated topic: \d+ frames/s \(runs: \d+\)', lines[0]), lines
    assert re.fullmatch(r'bare rclpy loop, single-threaded executor: \d+ frames/s '
                        r'\(runs: \d+\)', lines[1]), lines
    assert re.fullmatch(r'gated / the faster bare loop: [\d.]+x \(target >= 0\.77x: '
                        r'(met|NOT met)\)', lines[-1]), lines


def test_panel_benchmark_prints_its_figures(tmp_path, domain_id):
    """The panel benchmark prints step p50 with no page and two, and the change-to-sight delay."""
    lines = [line for line in _benchmark_lines('panel.py', tmp_path, domain_id, '--calls',
                                               '20', '--repeat', '1', '--samples', '3')
             if not line.startswith('[')]
    assert re.fullmatch(r'step p50, no page open: \d+ us \(runs: \d+\)', lines[0]), lines
    assert re.fullmatch(r'step p50, two pages open: \d+ us \(runs: \d+\)', lines[1]), lines
    assert re.fullmatch(r'apart: [\d.]+% \(target <= 2%: (met|NOT met)\)', lines[2]), lines
    assert re.fullmatch(r'from a step answered to its time on the page: p50 -?[\d.]+ ms, p99 '
                        r'-?[\d.]+ ms \(3 changes\)', lines[3]), lines
    assert re.fullmatch(r'updates a page received while time moved at 1x: [\d.]+ a second',
                        lines[4]), lines


def test_layer_latency_benchmark_prints_both_sides(tmp_path, domain_id):
    """The layer's latency benchmark prints each turn and both p50 side by side, no server."""
    lines = _benchmark_lines('layer_latency.py', tmp_path, domain_id, '--turns', '1',
                             '--messages', '200')
    assert re.fullmatch(r'turn 1 without the layer: p50 [\d.]+ us, p90 [\d.]+ us',
                        lines[0]), lines
    assert re.fullmatch(r'turn 1 under the layer, no server: p50 [\d.]+ us, p90 [\d.]+ us',
                        lines[1]), lines
    assert re.fullmatch(r'publish-to-take p50, median of 1 turns of 200 messages: without the '
                        r'layer [\d.]+ us \| under the layer, no server [\d.]+ us \| ratio '
                        r'[\d.]+', lines[2]), lines
    assert json.loads(lines[3])['turns'] == 1, lines


@pytest.mark.slow
def test_scale_benchmark_prints_each_figure_beside_its_baseline(tmp_path, domain_id):
    """
    The quick run of two cases prints each figure with a baseline and a ratio, and the doc's table.

    Participants as processes and as nodes beside the bare barrier; the server's memory beside
    its own figure at fewer frames. No figure is judged: the sizes are a check's.
    """
    doc = tmp_path / 'doc.md'
    sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))
    try:
        from scale import TABLE_BEGIN
        from scale import TABLE_END
    finally:
        sys.path.pop(0)
    doc.write_text(f'before\n{TABLE_BEGIN}\nold\n{TABLE_END}\nafter\n')
    lines = _benchmark_lines('scale.py', tmp_path, domain_id, '--quick', '--only',
                             'participants', 'server_memory', '--doc', str(doc))
    figure = (r'(?P<case>\w+) \| (?P<size>[^|]+) \| (?P<figure>[^:]+): (?P<value>[\d,.]+) '
              r'(?P<unit>[^ ]+) beside (?P<baseline>[\d,.]+) \((?P<against>[^)]+)\): '
              r'(?P<ratio>[\d.]+)x( \(target ratio [<>]= [\d.]+: (met|NOT met)\))?')
    rows = [match.groupdict() for match in map(re.compile(figure).fullmatch, lines) if match]
    # Each figure is printed as it comes and again in the summary.
    sizes = {(row['case'], row['size']) for row in rows}
    assert {size for case, size in sizes if case == 'participants'} == {
        '1 as processes', '4 as processes', '4 as nodes in 2 processes'}, lines
    for row in rows:
        if row['case'] == 'participants':
            assert row['against'] == 'bare rclpy barrier, the faster executor', row
            assert float(row['value'].replace(',', '')) > 0, row
            assert float(row['baseline'].replace(',', '')) > 0, row
    [memory] = {row['size'] for row in rows if row['case'] == 'server_memory'}
    assert re.fullmatch(r'4 participants joining and leaving \(\d+ times\)', memory), rows
    text = doc.read_text()
    assert text.startswith(f'before\n{TABLE_BEGIN}\n') and text.endswith(f'{TABLE_END}\nafter\n')
    assert 'quick sizes' in text and 'load average' in text
    assert text.count('| participants |') == 3 and text.count('| server_memory |') == 1
