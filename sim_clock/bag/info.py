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
What a bag holds, as ``ros2 bag info`` prints it, and what the bag player would do with it.

``bag_player --info BAG`` prints it; no ROS graph is needed.
The figures are the data files' (:class:`~sim_clock.bag.storage.StoredBag`); what
metadata.yaml says otherwise is listed below them, with the topics that would not play and
why (:class:`~sim_clock.bag.reader.LeftOut`).
"""

import datetime
import sys
from typing import List
from typing import Optional
from typing import Sequence

from rosbags.interfaces import Qos
from sim_clock.bag.reader import Bag
from sim_clock.bag.reader import BagError
from sim_clock.bag.reader import TopicFilter
from sim_clock.bag.storage import StoredBag
from sim_clock.core.units import format_seconds

#: The width of the labels, as ``ros2 bag info`` aligns them.
LABEL = 21


def _size(size: int) -> str:
    for unit in ('B', 'KiB', 'MiB', 'GiB'):
        if size < 1024 or unit == 'GiB':
            return f'{size} {unit}' if unit == 'B' else f'{size:.1f} {unit}'
        size /= 1024
    return f'{size} B'


def _stamp(time_ns: int) -> str:
    """Return a time as ``ros2 bag info`` does (UTC here), and in ns."""
    seconds, nanoseconds = divmod(time_ns, 1_000_000_000)
    when = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    return f'{when:%b %d %Y %H:%M:%S}.{nanoseconds:09d} UTC ({time_ns} ns)'


def _qos(profile: Qos) -> str:
    return (f'{profile.reliability.name.lower()}, {profile.durability.name.lower()}, '
            f'{profile.history.name.lower()} {profile.depth}')


def _line(label: str, value: str) -> str:
    return f'{label + ":" if label else "":<{LABEL}}{value}'


def describe_stored(stored: StoredBag) -> List[str]:
    """Return the lines of ``ros2 bag info`` for one bag, as read from its data files."""
    metadata = stored.metadata or {}
    storage_ids = sorted({data_file.storage_id for data_file in stored.files})
    compression = [mode for mode in (
        'file' if any(f.path.endswith('.zstd') for f in stored.files) else '',
        'message' if any(f.message_compression for f in stored.files) else '') if mode]
    lines = [
        _line('Files', ', '.join(data_file.path for data_file in stored.files)),
        _line('Bag size', _size(sum(data_file.size for data_file in stored.files))),
        _line('Storage id', ' and '.join(storage_ids)),
        _line('ROS Distro', str(metadata.get('ros_distro') or 'unknown')),
        _line('Version', str(metadata.get('version', 'no metadata.yaml'))),
    ]
    if stored.message_count:
        first, last = stored.start_time, stored.end_time - 1
        lines += [_line('Duration', f'{format_seconds(last - first)} s'),
                  _line('Start', _stamp(first)), _line('End', _stamp(last))]
    else:
        lines += [_line('Duration', '0 s (no message)')]
    lines += [_line('Messages', str(stored.message_count)),
              _line('Compression', f'zstd ({" and ".join(compression)})' if compression
                    else 'none')]
    label = 'Topic information'
    for topic in stored.topics:
        lines.append(_line(label, f'Topic: {topic.name} | Type: {topic.type_name} | Count: '
                                  f'{topic.message_count} | Serialization Format: '
                                  f'{topic.serialization_format}'))
        label = ''
        qos = '; '.join(map(_qos, topic.offered_qos)) or 'none recorded'
        source = f' (from {topic.qos_source})' if topic.qos_source else ''
        lines.append(_line('', f'    QoS: {qos}{source}'))
    if not stored.topics:
        lines.append(_line(label, 'none'))
    return lines


def describe(bag: Bag) -> List[str]:
    """Return the lines of :func:`describe_stored` for each bag, then the player's view."""
    lines: List[str] = []
    for stored in bag.stored:
        if len(bag.stored) > 1:
            lines.append(f'{stored.path}:')
        lines += describe_stored(stored)
        if stored.notes:
            lines.append('metadata.yaml and the data files disagree (the data is played):')
            lines += [f'  {note}' for note in stored.notes]
    lines.append('bag_player would play:')
    lines.append(f'  {len(bag.topics)} topics, {bag.playing_count} of {bag.message_count} '
                 f'messages, bag time {bag.start_ns} to {bag.end_ns} ns')
    if bag.left_out:
        lines.append('  and leave out:')
        lines += [f'    {entry.count} {entry.reason}' for entry in bag.left_out]
    for type_name, (topics, reason) in bag.skipped.unknown_types.items():
        lines.append(f'  skipped {", ".join(topics)}: {reason}')
    return lines


def print_info(paths: Sequence[str], storage_ids: Optional[Sequence] = None,
               topics: Optional[TopicFilter] = None, out=None) -> int:
    """Print :func:`describe` of the bags; return 0, or 1 with one line if one cannot be read."""
    out = out or sys.stdout
    try:
        bag = Bag(list(paths), topics, storage_ids=storage_ids)
    except BagError as error:
        print(f'cannot read the bag: {error}', file=sys.stderr)
        return 1
    try:
        out.write('\n'.join(describe(bag)) + '\n')
        out.flush()
    finally:
        bag.close()
    return 0
