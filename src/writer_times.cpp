// Copyright 2026 sim_clock maintainers
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

// sim_clock._writer_times: the heartbeat period of one rclpy publisher's Fast DDS writer, set
// while the writer lives (doc/design.md, "Acknowledged steps").
//
// The executables' Fast DDS profile has every writer ask its reliable readers for
// acknowledgements every 1 ms while a sample is unacknowledged. Readers on Fast DDS's defaults
// answer 5 ms later, so a /clock writer that publishes a frame every few milliseconds asks
// every reader every millisecond without end; with 16 participant processes that was a fifth
// of the frames of free run. The server sets its /clock writer's period here when nothing
// waits for acknowledgements of /clock (node/heartbeat.py), and back when something may.
//
// One function, set_heartbeat_period(pointer, period_ns): `pointer` is the address of the
// rcl_publisher_t (rclpy's Publisher.handle.pointer). Returns False when the publisher is not
// one of rmw_fastrtps_cpp (another middleware: nothing to set), True once set; raises
// RuntimeError when Fast DDS refuses the change.

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>

#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/qos/DataWriterQos.hpp>
#include <rcl/publisher.h>
#include <rmw_fastrtps_cpp/get_publisher.hpp>

namespace
{

PyObject * set_heartbeat_period(PyObject *, PyObject * args)
{
  unsigned long long pointer = 0;  // NOLINT(runtime/int): the format's own type
  long long period_ns = 0;  // NOLINT(runtime/int)
  if (!PyArg_ParseTuple(args, "KL", &pointer, &period_ns)) {
    return nullptr;
  }
  if (period_ns <= 0) {
    PyErr_SetString(PyExc_ValueError, "the heartbeat period must be positive");
    return nullptr;
  }
  auto * publisher = reinterpret_cast<rcl_publisher_t *>(static_cast<uintptr_t>(pointer));
  rmw_publisher_t * rmw_publisher = rcl_publisher_get_rmw_handle(publisher);
  if (rmw_publisher == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "the publisher is not valid");
    return nullptr;
  }
  // Null for a publisher of another middleware (its implementation identifier differs).
  eprosima::fastdds::dds::DataWriter * writer = rmw_fastrtps_cpp::get_datawriter(rmw_publisher);
  if (writer == nullptr) {
    Py_RETURN_FALSE;
  }
  eprosima::fastdds::dds::DataWriterQos qos = writer->get_qos();
#if __has_include(<fastdds/config.hpp>)  // Fast DDS 3 (Kilted)
  auto & period = qos.reliable_writer_qos().times.heartbeat_period;
#else  // Fast DDS 2 (Jazzy)
  auto & period = qos.reliable_writer_qos().times.heartbeatPeriod;
#endif
  period.seconds = static_cast<int32_t>(period_ns / 1000000000LL);
  period.nanosec = static_cast<uint32_t>(period_ns % 1000000000LL);
#if __has_include(<fastdds/config.hpp>)
  const bool set = writer->set_qos(qos) == eprosima::fastdds::dds::RETCODE_OK;
#else
  const bool set =
    writer->set_qos(qos) == eprosima::fastrtps::types::ReturnCode_t::RETCODE_OK;
#endif
  if (!set) {
    PyErr_SetString(PyExc_RuntimeError, "Fast DDS refused the writer's new heartbeat period");
    return nullptr;
  }
  Py_RETURN_TRUE;
}

PyMethodDef methods[] = {
  {"set_heartbeat_period", set_heartbeat_period, METH_VARARGS,
    "set_heartbeat_period(pointer, period_ns): set a publisher's Fast DDS heartbeat period"},
  {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {
  PyModuleDef_HEAD_INIT, "_writer_times",
  "The heartbeat period of an rclpy publisher's Fast DDS writer.", -1, methods,
  nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__writer_times(void)
{
  return PyModule_Create(&module);
}
