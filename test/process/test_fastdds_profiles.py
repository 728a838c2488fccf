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
Fast DDS 3: a clock server and a ``simclock`` run without the type lookup service's threads.

That service's reply thread could crash a process as it deleted its participant (doc/design.md,
"Fast DDS type lookup"); the executables' profile turns it off. Fast DDS names its threads
(``dds.tls.request``, ``dds.tls.replies``), so a process's ``/proc/PID/task/*/comm`` shows
whether it runs.
"""

import os
import signal
import subprocess

from harness import executable
import pytest
from sim_clock.process.fastdds_profiles import fast_dds_major

pytestmark = [pytest.mark.process, pytest.mark.skipif(
    fast_dds_major() != 3, reason='Fast DDS 2 starts no type lookup service unless asked')]

#: How Fast DDS 3 names the type lookup service's threads.
TYPE_LOOKUP_THREADS = 'dds.tls.'


def threads(pid: int) -> list:
    """Return the names of the threads of process ``pid``."""
    names = []
    for task in os.listdir(f'/proc/{pid}/task'):
        try:
            with open(f'/proc/{pid}/task/{task}/comm') as comm:
                names.append(comm.read().strip())
        except FileNotFoundError:
            pass  # a thread that ended meanwhile
    return sorted(names)


def test_the_clock_server_has_no_type_lookup(start_server, client):
    """Once it answers, its participant is up: its threads, and none of the type lookup's."""
    server = start_server()
    client.status_when_ready()
    names = threads(server.process.pid)
    assert any(name.startswith('dds.') for name in names), names
    assert not [name for name in names if name.startswith(TYPE_LOOKUP_THREADS)], names


def test_simclock_has_no_type_lookup(client, domain_id):
    """While it waits for a server that is not there, seen in the graph: the same."""
    process = subprocess.Popen(
        [executable('simclock'), 'status', '--server', '/nobody', '--timeout', '30'],
        env=dict(os.environ, ROS_DOMAIN_ID=str(domain_id)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # Its node in the graph: its participant was made and enabled, with every thread.
        nodes = client.node.get_node_names_and_namespaces
        client.spin_until(lambda: any(name.startswith('sim_clock_client') for name, _ in nodes()),
                          "simclock's node in the graph")
        names = threads(process.pid)
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
    assert any(name.startswith('dds.') for name in names), names
    assert not [name for name in names if name.startswith(TYPE_LOOKUP_THREADS)], names
