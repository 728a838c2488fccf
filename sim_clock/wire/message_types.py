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

"""Message classes by type name, without rclpy: the bag's read-ahead process uses it too."""

import importlib

from rosidl_generator_py.import_type_support_impl import UnsupportedTypeSupport

#: The kinds of interface whose modules hold message classes.
INTERFACE_KINDS = ('msg', 'srv', 'action')


def get_message(type_name: str):
    """
    Return the Python class of a ROS message type such as ``std_msgs/msg/String``.

    The lookup of ``rosidl_runtime_py.utilities.get_message`` (not on PyPI), with the type
    support loaded too, so that a class that imports but cannot be published is refused here.
    The messages that services and actions define are message types too: a service's
    recorded events (``std_srvs/srv/Trigger_Event``, on ``/name/_service_event``), its
    request and response, an action's feedback (``pkg/action/Name_FeedbackMessage``); a
    service or action itself is not. Raise :class:`LookupError` naming the type when it is not
    available.
    """
    parts = type_name.split('/')
    if len(parts) == 2:
        parts = [parts[0], 'msg', parts[1]]
    if len(parts) != 3 or not all(parts) or parts[1] not in INTERFACE_KINDS:
        raise LookupError(f'{type_name!r} is not a message type name (package/msg/Name, or '
                          'a message of a service or action: package/srv/Name_Event)')
    package, kind, name = parts
    try:
        module = importlib.import_module(f'{package}.{kind}')
        message_class = getattr(module, name)
    except (ImportError, AttributeError) as error:
        raise LookupError(f'message type {type_name!r} is not importable ({error})') from None
    if not hasattr(message_class, 'get_fields_and_field_types'):
        raise LookupError(f'{type_name!r} is a {kind} type, not a message type')
    # rclpy loads the type support when a publisher is created; failing then would be too late.
    metaclass = type(message_class)
    importer = getattr(metaclass, '__import_type_support__', None)
    if importer is None:
        raise LookupError(f'{type_name!r} is not a ROS message class')
    try:
        importer()
    except (ImportError, UnsupportedTypeSupport) as error:
        raise LookupError(f'type support of {type_name!r} failed to load ({error})') from None
    if getattr(metaclass, '_TYPE_SUPPORT', None) is None:
        raise LookupError(f'type support of {type_name!r} is missing')
    return message_class
