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
The recorder's bag on disk: one data file of a fixed name, types and QoS as rosbag2 stores them.

rosbags names the data file after the bag's directory (``out/out.mcap``), and names it again in
``metadata.yaml`` and inside the file; two recordings of the same messages into ``run1`` and
``run2`` would differ in those bytes. The recorder's file is ``recording.mcap`` (or
``recording.db3``) whatever the directory: rosbags writes the bag into ``OUT/recording/``, and
closing moves its files up into ``OUT``. Nothing else in the files depends on the run: rosbags
writes no wall time, its MCAP chunks close at a fixed size (1 MiB) without compression, and
sqlite3 gets the same statements in the same order, so the same page layout.
"""

import os
from typing import Optional

from ament_index_python.packages import get_package_share_directory
from ament_index_python.packages import PackageNotFoundError
from rclpy.qos import QoSProfile
from rosbags.interfaces import Qos
from rosbags.interfaces import QosDurability
from rosbags.interfaces import QosHistory
from rosbags.interfaces import QosLiveliness
from rosbags.interfaces import QosReliability
from rosbags.interfaces import QosTime
from rosbags.rosbag2 import StoragePlugin
from rosbags.rosbag2 import Writer
from rosbags.typesys import get_types_from_msg
from rosbags.typesys import TypesysError
from sim_clock.wire.names import TIME_STEP_KEY

#: The data file's name without its extension, whatever the bag's directory is called.
DATA_NAME = 'recording'
#: The recorder's storage formats by rosbag2's names.
STORAGE_PLUGINS = {'mcap': StoragePlugin.MCAP, 'sqlite3': StoragePlugin.SQLITE3}
_ZERO = QosTime(0, 0)


def create_bag(output: str, storage: str) -> Writer:
    """
    Create the bag directory ``output`` (it must not exist) and return its open writer.

    Raise ``FileExistsError`` if ``output`` exists, ``OSError`` or rosbags' ``WriterError``
    if it cannot be made.
    """
    os.makedirs(output)
    writer = Writer(os.path.join(output, DATA_NAME), version=9,
                    storage_plugin=STORAGE_PLUGINS[storage])
    writer.open()
    return writer


def close_bag(writer: Writer, output: str, time_step_ns: Optional[int] = None) -> None:
    """Close the bag: metadata (with the /clock step, if known) and files, in ``output``."""
    if time_step_ns is not None:
        writer.set_custom_data(TIME_STEP_KEY, str(time_step_ns))
    writer.close()
    staging = str(writer.path)
    for name in sorted(os.listdir(staging)):
        os.replace(os.path.join(staging, name), os.path.join(output, name))
    os.rmdir(staging)


def message_definition(typestore, type_name: str) -> str:
    """
    Return the ``.msg`` text of a type for the bag, or '' if unknown.

    rosbags knows the standard Jazzy types; others are read from the package's installed
    ``share/<package>/msg/<Name>.msg`` (nested types of other packages must be known too).
    """
    if type_name not in typestore.types:
        package, _, name = type_name.split('/')
        try:
            path = os.path.join(get_package_share_directory(package), 'msg', name + '.msg')
            with open(path) as definition:
                typestore.register(get_types_from_msg(definition.read(), type_name))
        except (PackageNotFoundError, OSError, TypesysError, ValueError):
            return ''
    try:
        return typestore.generate_msgdef(type_name, ros_version=2)[0]
    except (KeyError, TypesysError):
        return ''


def typestore_hash(typestore, type_name: str) -> str:
    """Return the RIHS01 hash of a type the typestore knows, or ''."""
    try:
        return typestore.hash_rihs01(type_name)
    except (KeyError, TypesysError):
        return ''


def offered_qos(profile: QoSProfile) -> Qos:
    """Return an rclpy profile as rosbags stores it in the bag's metadata."""
    return Qos(
        history=QosHistory(int(profile.history)), depth=profile.depth,
        reliability=QosReliability(int(profile.reliability)),
        durability=QosDurability(int(profile.durability)),
        deadline=_ZERO, lifespan=_ZERO, liveliness=QosLiveliness(int(profile.liveliness)),
        liveliness_lease_duration=_ZERO, avoid_ros_namespace_conventions=False)


def qos_key(qos: Qos) -> tuple:
    """Return a sort key of a stored profile: the metadata lists them in one order every run."""
    return (qos.reliability.value, qos.durability.value, qos.history.value, qos.depth,
            qos.liveliness.value)
