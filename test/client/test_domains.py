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

"""What shows a DDS domain in use, read from tables written as the kernel writes them."""

import os

import pytest
from sim_clock.client.domains import check_free
from sim_clock.client.domains import domain_of_port
from sim_clock.client.domains import DomainIds
from sim_clock.client.domains import DomainInUse
from sim_clock.client.domains import domains_in_use

pytestmark = pytest.mark.fast

UDP_HEADER = ('  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid'
              '  timeout inode ref pointer drops\n')


def _udp_line(number: int, port: int, address: str = '00000000') -> str:
    return (f'{number:4}: {address}:{port:04X} 00000000:0000 07 00000000:00000000 00:00000000 '
            '00000000     0        0 12779 2 0000000000000000 0\n')


def _proc(tmp_path, udp=(), udp6=(), locks='', port_range='32768\t60999\n'):
    proc = tmp_path / 'proc'
    (proc / 'net').mkdir(parents=True)
    (proc / 'sys' / 'net' / 'ipv4').mkdir(parents=True)
    (proc / 'net' / 'udp').write_text(
        UDP_HEADER + ''.join(_udp_line(n, port) for n, port in enumerate(udp)))
    (proc / 'net' / 'udp6').write_text(UDP_HEADER + ''.join(
        _udp_line(n, port, '00000000000000000000000000000000') for n, port in enumerate(udp6)))
    (proc / 'locks').write_text(locks)
    (proc / 'sys' / 'net' / 'ipv4' / 'ip_local_port_range').write_text(port_range)
    shm = tmp_path / 'shm'
    shm.mkdir()
    return str(proc), str(shm)


def _lock_line(number: int, path: str, waiting: bool = False) -> str:
    stat = os.stat(path)
    device = f'{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}'
    arrow = '-> ' if waiting else ''
    return f'{number}: {arrow}FLOCK  ADVISORY  WRITE 8725 {device}:{stat.st_ino} 0 EOF\n'


@pytest.mark.parametrize('port, domain', [
    (7399, None), (7400, 0), (7649, 0), (7650, 1), (16660, 37), (32649, 100),
    (7400 + 250 * 232, 232), (7400 + 250 * 233, None)])
def test_a_port_belongs_to_the_domain_whose_rtps_span_holds_it(port, domain):
    assert domain_of_port(port) == domain


def test_udp_ports_of_a_domain_put_it_in_use_on_ipv4_and_ipv6(tmp_path):
    proc, shm = _proc(tmp_path, udp=[16660, 16661, 53], udp6=[7410 + 250 * 5])
    assert domains_in_use(proc, shm) == {
        5: ['UDP port 8660 bound'], 37: ['UDP port 16660 bound', 'UDP port 16661 bound']}


def test_in_the_ephemeral_range_only_a_domains_first_ports_count(tmp_path):
    """Any program's socket may land on 53650; 7400 + 250 x 185 + 10 is a participant's."""
    first_participant = 7400 + 250 * 185 + 10
    proc, shm = _proc(tmp_path, udp=[53651 + 2, first_participant])
    assert domains_in_use(proc, shm) == {185: [f'UDP port {first_participant} bound']}
    proc_wide, shm_wide = _proc(tmp_path / 'wide', udp=[53653], port_range='60000\t61000\n')
    assert domains_in_use(proc_wide, shm_wide) == {185: ['UDP port 53653 bound']}


def test_a_shared_memory_port_counts_while_a_live_process_holds_its_lock(tmp_path):
    """Fast DDS 2 and 3 names; a port file whose lock nobody holds is what a kill left."""
    proc, shm = _proc(tmp_path)
    held = os.path.join(shm, 'fastrtps_port8161_el')
    held_3 = os.path.join(shm, 'fastdds_port9161_el')
    stale = os.path.join(shm, 'fastrtps_port10161_el')
    for path in (held, held_3, stale, os.path.join(shm, 'fastrtps_port8161')):
        open(path, 'w').close()
    with open(os.path.join(proc, 'locks'), 'w') as locks:
        locks.write(_lock_line(1, held) + _lock_line(2, held_3, waiting=True))
    assert domains_in_use(proc, shm) == {
        3: ['Fast DDS shared-memory port 8161 open'],
        7: ['Fast DDS shared-memory port 9161 open']}


def test_nothing_is_seen_where_proc_cannot_be_read(tmp_path):
    assert domains_in_use(str(tmp_path / 'absent'), str(tmp_path / 'absent')) == {}


def test_a_domain_asked_for_by_name_is_refused_with_what_shows_it_in_use():
    def in_use():
        return {12: ['UDP port 10410 bound'], 1: ['UDP port 7660 bound']}
    with pytest.raises(DomainInUse, match=r'DDS domain 12 is in use on this host: 12 \(UDP port '
                                          r'10410 bound\).*stop that graph.*e\.g\. 2, 3, 4'):
        check_free(12, in_use)
    check_free(13, in_use)


def test_an_allocator_with_every_id_in_use_names_its_ids_as_they_are():
    """A range is said as a range; ids out of order are listed as given."""
    def in_use():
        return {5: ['UDP port 8660 bound'], 6: ['UDP port 8910 bound'], 1: ['UDP port 7660 bound']}
    said = (r'no DDS domain id from 5 to 6 is free on this host: DDS participants are on '
            r'5 \(UDP port 8660 bound\), 6 \(UDP port 8910 bound\); other test runs claim none')
    with pytest.raises(DomainInUse, match=said):
        DomainIds(first=5, ids=[5, 6], in_use=in_use).take()
    said = (r'no DDS domain id among 5, 1 is free on this host: DDS participants are on '
            r'1 \(UDP port 7660 bound\), 5 ')
    with pytest.raises(DomainInUse, match=said):
        DomainIds(first=5, ids=[5, 1], in_use=in_use).take()
