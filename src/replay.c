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

// sim_clock._replay: the publish loops of the bag player and of /clock, in C.
//
// publish(publishers, topics, blob, offsets, start, stop) publishes the messages start to stop
// (excluded) of a packed batch, in order, each raw on the rcl publisher of its topic:
//   publishers  buffer of uint64: the address of each topic's rcl_publisher_t
//               (rclpy's Publisher.handle.pointer), by topic index
//   topics      buffer of uint32: the topic index of each message
//   blob        bytes: the serialized messages, one after the other
//   offsets     buffer of uint64: where each message starts in blob, then the end of the last
// It is what a Python loop of Publisher.handle.publish_raw(data) does, without the per-message
// cost of the Python call and of making a bytes object for each message. Every index and
// offset is checked against the buffers' sizes first; a bad argument raises ValueError and
// publishes nothing. The publishers must stay alive during the call (the bag player's live as
// long as its node, and one thread publishes).

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#include <rcl/error_handling.h>
#include <rcl/publisher.h>
#include <rmw/serialized_message.h>

static int
get_buffer(PyObject * object, Py_buffer * view, const char * name)
{
  if (PyObject_GetBuffer(object, view, PyBUF_SIMPLE) < 0) {
    PyErr_Format(PyExc_TypeError, "publish(): %s must support the buffer protocol", name);
    return -1;
  }
  return 0;
}

static PyObject *
replay_publish(PyObject * module, PyObject * const * args, Py_ssize_t nargs)
{
  (void)module;
  if (nargs != 6) {
    PyErr_Format(
      PyExc_TypeError, "publish() takes 6 arguments (publishers, topics, blob, offsets, "
      "start, stop), got %zd", nargs);
    return NULL;
  }
  Py_ssize_t start = PyLong_AsSsize_t(args[4]);
  Py_ssize_t stop = PyLong_AsSsize_t(args[5]);
  if ((start == -1 || stop == -1) && PyErr_Occurred()) {
    return NULL;
  }
  Py_buffer views[4];
  const char * names[4] = {"publishers", "topics", "blob", "offsets"};
  int held = 0;
  PyObject * result = NULL;
  for (; held < 4; ++held) {
    if (get_buffer(args[held], &views[held], names[held]) < 0) {
      goto done;
    }
  }
  const uint64_t * publishers = (const uint64_t *)views[0].buf;
  const uint32_t * topics = (const uint32_t *)views[1].buf;
  const uint8_t * blob = (const uint8_t *)views[2].buf;
  const uint64_t * offsets = (const uint64_t *)views[3].buf;
  Py_ssize_t publisher_count = views[0].len / (Py_ssize_t)sizeof(uint64_t);
  Py_ssize_t count = views[1].len / (Py_ssize_t)sizeof(uint32_t);
  if (views[3].len != (count + 1) * (Py_ssize_t)sizeof(uint64_t)) {
    PyErr_Format(
      PyExc_ValueError, "publish(): %zd topics need %zd offsets, got %zd bytes of them",
      count, count + 1, views[3].len);
    goto done;
  }
  if (start < 0 || start > stop || stop > count) {
    PyErr_Format(
      PyExc_ValueError, "publish(): messages %zd to %zd are not within 0 to %zd",
      start, stop, count);
    goto done;
  }
  for (Py_ssize_t i = start; i < stop; ++i) {
    if (topics[i] >= (uint64_t)publisher_count || offsets[i] > offsets[i + 1] ||
      offsets[i + 1] > (uint64_t)views[2].len)
    {
      PyErr_Format(
        PyExc_ValueError, "publish(): message %zd has topic %u of %zd, or bytes %llu to %llu "
        "of %zd", i, topics[i], publisher_count, (unsigned long long)offsets[i],
        (unsigned long long)offsets[i + 1], views[2].len);
      goto done;
    }
  }
  rcl_serialized_message_t message = rmw_get_zero_initialized_serialized_message();
  for (Py_ssize_t i = start; i < stop; ++i) {
    message.buffer = (uint8_t *)(blob + offsets[i]);
    message.buffer_length = (size_t)(offsets[i + 1] - offsets[i]);
    message.buffer_capacity = message.buffer_length;
    rcl_ret_t ret = rcl_publish_serialized_message(
      (const rcl_publisher_t *)(uintptr_t)publishers[topics[i]], &message, NULL);
    if (ret != RCL_RET_OK) {
      PyErr_Format(
        PyExc_RuntimeError, "failed to publish message %zd (topic %u): %s", i, topics[i],
        rcl_get_error_string().str);
      rcl_reset_error();
      goto done;
    }
  }
  result = Py_None;
  Py_INCREF(result);
done:
  while (held > 0) {
    PyBuffer_Release(&views[--held]);
  }
  return result;
}

// publish_clock(publisher, offset_ns, time_ns): publish rosgraph_msgs/Clock at
// offset_ns + time_ns on the rcl publisher at address `publisher`, serialized here: the CDR
// little-endian encapsulation header, then sec (int32) and nanosec (uint32), little-endian.
// The caller checks once that rclpy serializes a Clock so (sim_clock.server.clock_publisher).
static PyObject *
replay_publish_clock(PyObject * module, PyObject * const * args, Py_ssize_t nargs)
{
  (void)module;
  if (nargs != 3) {
    PyErr_Format(
      PyExc_TypeError, "publish_clock() takes 3 arguments (publisher, offset_ns, time_ns), "
      "got %zd", nargs);
    return NULL;
  }
  uint64_t publisher = PyLong_AsUnsignedLongLong(args[0]);
  if (publisher == (uint64_t)-1 && PyErr_Occurred()) {
    return NULL;
  }
  long long offset_ns = PyLong_AsLongLong(args[1]);
  if (offset_ns == -1 && PyErr_Occurred()) {
    return NULL;
  }
  long long time_ns = PyLong_AsLongLong(args[2]);
  if (time_ns == -1 && PyErr_Occurred()) {
    return NULL;
  }
  long long total;
  if (publisher == 0 || __builtin_add_overflow(offset_ns, time_ns, &total) || total < 0 ||
    total / 1000000000LL > INT32_MAX)
  {
    PyErr_Format(
      PyExc_ValueError, "publish_clock(): %lld + %lld ns is not a time of Clock "
      "(0 to %d s), or the publisher is null", offset_ns, time_ns, INT32_MAX);
    return NULL;
  }
  uint32_t sec = (uint32_t)(total / 1000000000LL);
  uint32_t nanosec = (uint32_t)(total % 1000000000LL);
  uint8_t buffer[12] = {
    0x00, 0x01, 0x00, 0x00,
    (uint8_t)sec, (uint8_t)(sec >> 8), (uint8_t)(sec >> 16), (uint8_t)(sec >> 24),
    (uint8_t)nanosec, (uint8_t)(nanosec >> 8), (uint8_t)(nanosec >> 16),
    (uint8_t)(nanosec >> 24)};
  rcl_serialized_message_t message = rmw_get_zero_initialized_serialized_message();
  message.buffer = buffer;
  message.buffer_length = sizeof(buffer);
  message.buffer_capacity = sizeof(buffer);
  rcl_ret_t ret = rcl_publish_serialized_message(
    (const rcl_publisher_t *)(uintptr_t)publisher, &message, NULL);
  if (ret != RCL_RET_OK) {
    PyErr_Format(PyExc_RuntimeError, "failed to publish /clock: %s", rcl_get_error_string().str);
    rcl_reset_error();
    return NULL;
  }
  Py_RETURN_NONE;
}

static PyMethodDef replay_methods[] = {
  {"publish", (PyCFunction)(void (*)(void))replay_publish, METH_FASTCALL,
    "publish(publishers, topics, blob, offsets, start, stop): publish messages start to stop "
    "of a packed batch, raw, each on the rcl publisher of its topic."},
  {"publish_clock", (PyCFunction)(void (*)(void))replay_publish_clock, METH_FASTCALL,
    "publish_clock(publisher, offset_ns, time_ns): publish a Clock at offset_ns + time_ns, "
    "serialized here, on the rcl publisher at that address."},
  {NULL, NULL, 0, NULL}
};

static struct PyModuleDef replay_module = {
  PyModuleDef_HEAD_INIT, "_replay", "The publish loops of the bag player and of /clock, in C.",
  -1, replay_methods,
  NULL, NULL, NULL, NULL
};

PyMODINIT_FUNC
PyInit__replay(void)
{
  return PyModule_Create(&replay_module);
}
