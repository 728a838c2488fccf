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
// Each function publishes raw, with rcl_publish_serialized_message(): what rclpy's
// Publisher.handle.publish_raw(data) does for one message, without the cost of a Python call
// and of a bytes object per message. A publisher is given by the address of its
// rcl_publisher_t (rclpy's Publisher.handle.pointer); it must stay alive during the call (the
// bag player's and the server's live as long as their node, one thread publishes, and the
// node replaces its publish functions before it destroys them).
//
// A batch of messages is packed:
//   publishers  buffer of uint64: the address of each topic's rcl_publisher_t, by topic index
//   topics      buffer of uint32: the topic index of each message
//   blob        bytes: the serialized messages, one after the other
//   offsets     buffer of uint64: where each message starts in blob, then the end of the last
//   times       buffer of int64: the time of each message in ns, in order (play only)
// Every index, offset and time order is checked before anything is published; a bad argument
// raises ValueError or TypeError and publishes nothing.
//
// A publish rcl fails (Fast DDS 3 refuses a sample it cannot take, after max_blocking_time;
// a shut-down context) raises PublishRefused, a RuntimeError that tells where: `which`, the
// topic index of the message refused, or -1 for /clock; `index`, that message's index in the
// batch (it is not published, nor are those after it); `done`, the frames done before it.
//
// A /clock is rosgraph_msgs/Clock serialized here: the CDR little-endian encapsulation
// header, then sec (int32) and nanosec (uint32), little-endian. The caller checks once that
// rclpy serializes a Clock so (sim_clock.node.publishing.clock_publisher).

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#include <rcl/error_handling.h>
#include <rcl/publisher.h>
#include <rmw/serialized_message.h>

#define NS_PER_SEC 1000000000LL

enum {PUBLISHERS, TOPICS, BLOB, OFFSETS, TIMES, BATCH_BUFFERS};

// What a budget lets the next publish do (see spend()).
enum {STOP, PUBLISH, SKIP};
// The budget of a topic that is not held back (best effort, or free run): any negative value
// other than DROPPED. Exported, with DROPPED and CLOCK_INDEX, as the module's constants: the
// one definition that the Python side (sim_clock.bag.replay, sim_clock.node.flow_control) imports.
#define UNLIMITED (-1)
// The budget of a topic whose samples are not published (and count as played).
#define DROPPED (-2)
// The `which` of /clock in a PublishRefused.
#define CLOCK_INDEX (-1)

// sim_clock._replay.PublishRefused, made when the module is.
static PyObject * PublishRefused = NULL;

static const char * const buffer_names[BATCH_BUFFERS] = {
  "publishers", "topics", "blob", "offsets", "times"};

typedef struct
{
  Py_buffer views[BATCH_BUFFERS];
  int held;
  const uint64_t * publishers;
  const uint32_t * topics;
  const uint8_t * blob;
  const uint64_t * offsets;
  const int64_t * times;
  Py_ssize_t publisher_count;
  Py_ssize_t count;
} Batch;

static void
release_batch(Batch * batch)
{
  while (batch->held > 0) {
    PyBuffer_Release(&batch->views[--batch->held]);
  }
}

// Take the buffers of args[0] to args[buffers - 1]; check their sizes against each other.
static int
get_batch(Batch * batch, PyObject * const * args, int buffers, const char * function)
{
  batch->held = 0;
  for (; batch->held < buffers; ++batch->held) {
    if (PyObject_GetBuffer(args[batch->held], &batch->views[batch->held], PyBUF_SIMPLE) < 0) {
      PyErr_Format(
        PyExc_TypeError, "%s(): %s must support the buffer protocol", function,
        buffer_names[batch->held]);
      release_batch(batch);
      return -1;
    }
  }
  batch->publishers = (const uint64_t *)batch->views[PUBLISHERS].buf;
  batch->topics = (const uint32_t *)batch->views[TOPICS].buf;
  batch->blob = (const uint8_t *)batch->views[BLOB].buf;
  batch->offsets = (const uint64_t *)batch->views[OFFSETS].buf;
  batch->times = buffers > TIMES ? (const int64_t *)batch->views[TIMES].buf : NULL;
  batch->publisher_count = batch->views[PUBLISHERS].len / (Py_ssize_t)sizeof(uint64_t);
  batch->count = batch->views[TOPICS].len / (Py_ssize_t)sizeof(uint32_t);
  if (batch->views[OFFSETS].len != (batch->count + 1) * (Py_ssize_t)sizeof(uint64_t)) {
    PyErr_Format(
      PyExc_ValueError, "%s(): %zd topics need %zd offsets, got %zd bytes of them", function,
      batch->count, batch->count + 1, batch->views[OFFSETS].len);
    release_batch(batch);
    return -1;
  }
  if (batch->times != NULL &&
    batch->views[TIMES].len != batch->count * (Py_ssize_t)sizeof(int64_t))
  {
    PyErr_Format(
      PyExc_ValueError, "%s(): %zd topics need %zd times, got %zd bytes of them", function,
      batch->count, batch->count, batch->views[TIMES].len);
    release_batch(batch);
    return -1;
  }
  return 0;
}

// Check messages start to stop (excluded): topic, offsets, and times in order.
static int
check_messages(const Batch * batch, Py_ssize_t start, Py_ssize_t stop, const char * function)
{
  if (start < 0 || start > stop || stop > batch->count) {
    PyErr_Format(
      PyExc_ValueError, "%s(): messages %zd to %zd are not within 0 to %zd", function,
      start, stop, batch->count);
    return -1;
  }
  for (Py_ssize_t i = start; i < stop; ++i) {
    if (batch->topics[i] >= (uint64_t)batch->publisher_count ||
      batch->publishers[batch->topics[i]] == 0 ||
      batch->offsets[i] > batch->offsets[i + 1] ||
      batch->offsets[i + 1] > (uint64_t)batch->views[BLOB].len ||
      (batch->times != NULL && i > start && batch->times[i] < batch->times[i - 1]))
    {
      PyErr_Format(
        PyExc_ValueError, "%s(): message %zd has topic %u of %zd, or bytes %llu to %llu of "
        "%zd, or a time before the one before it", function, i, batch->topics[i],
        batch->publisher_count, (unsigned long long)batch->offsets[i],
        (unsigned long long)batch->offsets[i + 1], batch->views[BLOB].len);
      return -1;
    }
  }
  return 0;
}

// Raise PublishRefused with `text` (a new reference, or NULL with an error set) and where.
static void
refuse(PyObject * text, Py_ssize_t which, Py_ssize_t done, Py_ssize_t index)
{
  if (text == NULL) {
    return;
  }
  PyObject * error = PyObject_CallOneArg(PublishRefused, text);
  Py_DECREF(text);
  if (error == NULL) {
    return;
  }
  const char * names[] = {"which", "done", "index"};
  Py_ssize_t values[] = {which, done, index};
  for (int k = 0; k < 3; ++k) {
    PyObject * number = PyLong_FromSsize_t(values[k]);
    if (number == NULL || PyObject_SetAttrString(error, names[k], number) < 0) {
      Py_XDECREF(number);
      Py_DECREF(error);
      return;
    }
    Py_DECREF(number);
  }
  PyErr_SetObject(PublishRefused, error);
  Py_DECREF(error);
}

// Publish message i of the batch; on a failure raise PublishRefused (`done` frames before it).
static int
publish_message(const Batch * batch, Py_ssize_t i, Py_ssize_t done)
{
  rcl_serialized_message_t message = rmw_get_zero_initialized_serialized_message();
  message.buffer = (uint8_t *)(batch->blob + batch->offsets[i]);
  message.buffer_length = (size_t)(batch->offsets[i + 1] - batch->offsets[i]);
  message.buffer_capacity = message.buffer_length;
  rcl_ret_t ret = rcl_publish_serialized_message(
    (const rcl_publisher_t *)(uintptr_t)batch->publishers[batch->topics[i]], &message, NULL);
  if (ret != RCL_RET_OK) {
    refuse(
      PyUnicode_FromFormat(
        "failed to publish message %zd (topic %u): %s", i, batch->topics[i],
        rcl_get_error_string().str), batch->topics[i], done, i);
    rcl_reset_error();
    return -1;
  }
  return 0;
}

// Whether offset_ns + time_ns is a time of Clock (0 to INT32_MAX s); the sum in *total.
static int
clock_time(long long offset_ns, long long time_ns, long long * total)
{
  return !__builtin_add_overflow(offset_ns, time_ns, total) && *total >= 0 &&
         *total / NS_PER_SEC <= INT32_MAX;
}

// Publish a Clock at `total` ns; on a failure raise PublishRefused (which -1, done, index).
static int
publish_clock_at(uint64_t publisher, long long total, Py_ssize_t done, Py_ssize_t index)
{
  uint32_t sec = (uint32_t)(total / NS_PER_SEC);
  uint32_t nanosec = (uint32_t)(total % NS_PER_SEC);
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
    refuse(
      PyUnicode_FromFormat("failed to publish /clock: %s", rcl_get_error_string().str),
      CLOCK_INDEX, done, index);
    rcl_reset_error();
    return -1;
  }
  return 0;
}

static int
check_arguments(Py_ssize_t nargs, Py_ssize_t expected, const char * usage)
{
  if (nargs != expected) {
    PyErr_Format(PyExc_TypeError, "%s takes %zd arguments, got %zd", usage, expected, nargs);
    return -1;
  }
  return 0;
}

// What the budget of entry `which` lets the next message do: PUBLISH (taking one off a
// positive budget), STOP (a budget of 0) or SKIP (DROPPED); see play().
static int
spend(int64_t * budgets, Py_ssize_t which)
{
  if (budgets == NULL) {
    return PUBLISH;
  }
  if (budgets[which] == DROPPED) {
    return SKIP;
  }
  if (budgets[which] < 0) {
    return PUBLISH;
  }
  if (budgets[which] == 0) {
    return STOP;
  }
  --budgets[which];
  return PUBLISH;
}

// Give back what spend() took for a message that was not published.
static void
refund(int64_t * budgets, Py_ssize_t which)
{
  if (budgets != NULL && budgets[which] >= 0) {
    ++budgets[which];
  }
}

// publish(publishers, topics, blob, offsets, start, stop): publish messages start to stop
// (excluded) of a packed batch, in order, each on the publisher of its topic. A refused
// publish raises PublishRefused (done 0) and publishes none after it.
static PyObject *
replay_publish(PyObject * module, PyObject * const * args, Py_ssize_t nargs)
{
  (void)module;
  if (check_arguments(
      nargs, 6, "publish(publishers, topics, blob, offsets, start, stop)") < 0)
  {
    return NULL;
  }
  Py_ssize_t start = PyLong_AsSsize_t(args[4]);
  if (start == -1 && PyErr_Occurred()) {
    return NULL;
  }
  Py_ssize_t stop = PyLong_AsSsize_t(args[5]);
  if (stop == -1 && PyErr_Occurred()) {
    return NULL;
  }
  Batch batch;
  if (get_batch(&batch, args, TIMES, "publish") < 0) {
    return NULL;
  }
  PyObject * result = NULL;
  if (check_messages(&batch, start, stop, "publish") == 0) {
    Py_ssize_t i = start;
    while (i < stop && publish_message(&batch, i, 0) == 0) {
      ++i;
    }
    if (i == stop) {
      result = Py_NewRef(Py_None);
    }
  }
  release_batch(&batch);
  return result;
}

// publish_clock(publisher, offset_ns, time_ns): publish a Clock at offset_ns + time_ns. A
// refused publish raises PublishRefused (which -1, done 0, index 0).
static PyObject *
replay_publish_clock(PyObject * module, PyObject * const * args, Py_ssize_t nargs)
{
  (void)module;
  if (check_arguments(nargs, 3, "publish_clock(publisher, offset_ns, time_ns)") < 0) {
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
  if (publisher == 0 || !clock_time(offset_ns, time_ns, &total)) {
    PyErr_Format(
      PyExc_ValueError, "publish_clock(): %lld + %lld ns is not a time of Clock "
      "(0 to %d s), or the publisher is null", offset_ns, time_ns, INT32_MAX);
    return NULL;
  }
  if (publish_clock_at(publisher, total, 0, 0) < 0) {
    return NULL;
  }
  Py_RETURN_NONE;
}

// play(publishers, topics, blob, offsets, times, index, first_ns, step_ns, count, bag_offset_ns,
//      clock_publisher, clock_offset_ns, final, budgets, clock_times) -> (frames_done, index)
// The frames first_ns + k * step_ns, k = 0 .. count - 1, in turn: each publishes the messages
// of the batch from `index` on stamped up to bag_offset_ns plus its time, then its /clock at
// clock_offset_ns plus its time. Unless `final` (no batch follows this one), play stops at
// the first frame that uses the batch up, before its /clock: the frame may have messages in
// the next batch. Return the frames done (their /clock published) and the next index.
// `clock_times`: None (every frame's /clock goes out), or a buffer of int64 in ascending
// order, the times of the frames whose /clock goes out (the /clock rate cap of free run:
// the others publish their messages only).
// `budgets` (flow control): None, or a writable buffer of int64, one per topic and then one
// for /clock: how many more messages each may publish. Play stops before a publish whose
// budget is 0 (the caller waits for acknowledgements, refills, and calls again from where it
// stopped), takes one off a positive budget per publish, skips the messages of a DROPPED one
// (-2: not published, played all the same), and leaves another negative one alone (no limit).
// A refused publish raises PublishRefused; its message's budget is given back.
static PyObject *
replay_play(PyObject * module, PyObject * const * args, Py_ssize_t nargs)
{
  (void)module;
  if (check_arguments(
      nargs, 15, "play(publishers, topics, blob, offsets, times, index, first_ns, step_ns, "
      "count, bag_offset_ns, clock_publisher, clock_offset_ns, final, budgets, "
      "clock_times)") < 0)
  {
    return NULL;
  }
  // Each conversion is checked before the next: no C API call runs with an error set.
  Py_ssize_t index, count;
  long long first_ns, step_ns, bag_offset_ns, clock_offset_ns;
  uint64_t clock_publisher;
  int final;
  if (((index = PyLong_AsSsize_t(args[5])) == -1 && PyErr_Occurred()) ||
    ((first_ns = PyLong_AsLongLong(args[6])) == -1 && PyErr_Occurred()) ||
    ((step_ns = PyLong_AsLongLong(args[7])) == -1 && PyErr_Occurred()) ||
    ((count = PyLong_AsSsize_t(args[8])) == -1 && PyErr_Occurred()) ||
    ((bag_offset_ns = PyLong_AsLongLong(args[9])) == -1 && PyErr_Occurred()) ||
    ((clock_publisher = PyLong_AsUnsignedLongLong(args[10])) == (uint64_t)-1 &&
    PyErr_Occurred()) ||
    ((clock_offset_ns = PyLong_AsLongLong(args[11])) == -1 && PyErr_Occurred()) ||
    (final = PyObject_IsTrue(args[12])) < 0)
  {
    return NULL;
  }
  long long last_ns, last_clock, last_bag;
  if (count < 0 || step_ns <= 0 || clock_publisher == 0 ||
    (count > 0 &&
    (__builtin_mul_overflow((long long)(count - 1), step_ns, &last_ns) ||
    __builtin_add_overflow(first_ns, last_ns, &last_ns) ||
    !clock_time(clock_offset_ns, first_ns, &last_clock) ||
    !clock_time(clock_offset_ns, last_ns, &last_clock) ||
    __builtin_add_overflow(bag_offset_ns, first_ns, &last_bag) ||
    __builtin_add_overflow(bag_offset_ns, last_ns, &last_bag))))
  {
    PyErr_Format(
      PyExc_ValueError, "play(): %zd frames of %lld ns from %lld ns (bag offset %lld ns, "
      "clock offset %lld ns) are not all times of Clock, or the clock publisher is null",
      count, step_ns, first_ns, bag_offset_ns, clock_offset_ns);
    return NULL;
  }
  Batch batch;
  if (get_batch(&batch, args, BATCH_BUFFERS, "play") < 0) {
    return NULL;
  }
  Py_buffer budget_view = {0};
  int64_t * budgets = NULL;
  if (args[13] != Py_None) {
    if (PyObject_GetBuffer(args[13], &budget_view, PyBUF_WRITABLE) < 0) {
      PyErr_SetString(PyExc_TypeError, "play(): budgets must be None or a writable buffer");
      release_batch(&batch);
      return NULL;
    }
    if (budget_view.len != (batch.publisher_count + 1) * (Py_ssize_t)sizeof(int64_t)) {
      PyErr_Format(
        PyExc_ValueError, "play(): %zd publishers and /clock need %zd budgets, got %zd bytes "
        "of them", batch.publisher_count, batch.publisher_count + 1, budget_view.len);
      PyBuffer_Release(&budget_view);
      release_batch(&batch);
      return NULL;
    }
    budgets = (int64_t *)budget_view.buf;
  }
  Py_buffer clock_view = {0};
  const int64_t * clock_times = NULL;
  Py_ssize_t clock_count = 0;
  if (args[14] != Py_None) {
    if (PyObject_GetBuffer(args[14], &clock_view, PyBUF_SIMPLE) < 0 ||
      clock_view.len % (Py_ssize_t)sizeof(int64_t) != 0)
    {
      if (clock_view.obj != NULL) {
        PyBuffer_Release(&clock_view);
      }
      PyErr_Clear();
      PyErr_SetString(
        PyExc_TypeError, "play(): clock_times must be None or a buffer of int64");
      goto release_budgets;
    }
    clock_times = (const int64_t *)clock_view.buf;
    clock_count = clock_view.len / (Py_ssize_t)sizeof(int64_t);
    for (Py_ssize_t k = 1; k < clock_count; ++k) {
      if (clock_times[k] <= clock_times[k - 1]) {
        PyErr_Format(
          PyExc_ValueError, "play(): clock time %zd (%lld ns) is not after the one before it",
          k, (long long)clock_times[k]);
        PyBuffer_Release(&clock_view);
        goto release_budgets;
      }
    }
  }
  PyObject * result = NULL;
  if (check_messages(&batch, index, batch.count, "play") == 0) {
    Py_ssize_t done = 0, next_clock = 0;
    int failed = 0, spent = 0;
    for (; done < count; ++done) {
      long long time_ns = first_ns + (long long)done * step_ns;
      long long up_to_ns = bag_offset_ns + time_ns;
      while (index < batch.count && batch.times[index] <= up_to_ns) {
        uint32_t topic = batch.topics[index];
        int go = spend(budgets, topic);
        if (go == STOP) {
          spent = 1;
          break;
        }
        if (go == PUBLISH && publish_message(&batch, index, done) < 0) {
          refund(budgets, topic);
          failed = 1;
          break;
        }
        ++index;
      }
      if (failed || spent || (index == batch.count && !final)) {
        break;
      }
      if (clock_times != NULL) {  // only the frames of clock_times publish their /clock
        while (next_clock < clock_count && clock_times[next_clock] < time_ns) {
          ++next_clock;
        }
        if (next_clock == clock_count || clock_times[next_clock] != time_ns) {
          continue;
        }
      }
      int go = spend(budgets, batch.publisher_count);
      if (go == STOP) {
        break;
      }
      if (go == PUBLISH &&
        publish_clock_at(clock_publisher, clock_offset_ns + time_ns, done, index) < 0)
      {
        refund(budgets, batch.publisher_count);
        failed = 1;
        break;
      }
    }
    if (!failed) {
      result = Py_BuildValue("(nn)", done, index);
    }
  }
  if (clock_times != NULL) {
    PyBuffer_Release(&clock_view);
  }
  if (budgets != NULL) {
    PyBuffer_Release(&budget_view);
  }
  release_batch(&batch);
  return result;
release_budgets:
  if (budgets != NULL) {
    PyBuffer_Release(&budget_view);
  }
  release_batch(&batch);
  return NULL;
}

static PyMethodDef replay_methods[] = {
  {"publish", (PyCFunction)(void (*)(void))replay_publish, METH_FASTCALL,
    "publish(publishers, topics, blob, offsets, start, stop): publish messages start to stop "
    "of a packed batch, raw, each on the rcl publisher of its topic."},
  {"publish_clock", (PyCFunction)(void (*)(void))replay_publish_clock, METH_FASTCALL,
    "publish_clock(publisher, offset_ns, time_ns): publish a Clock at offset_ns + time_ns, "
    "serialized here, on the rcl publisher at that address."},
  {"play", (PyCFunction)(void (*)(void))replay_play, METH_FASTCALL,
    "play(publishers, topics, blob, offsets, times, index, first_ns, step_ns, count, "
    "bag_offset_ns, clock_publisher, clock_offset_ns, final, budgets, clock_times) -> "
    "(frames_done, index): play frames of a packed batch, each its messages then its /clock, until the "
    "batch is used up (unless final), a budget is spent, or the frames are done; a refused "
    "publish raises PublishRefused (which, done, index)."},
  {NULL, NULL, 0, NULL}
};

static struct PyModuleDef replay_module = {
  PyModuleDef_HEAD_INIT, "_replay", "The publish loops of the bag player and of /clock, in C.",
  -1, replay_methods, NULL, NULL, NULL, NULL
};

PyMODINIT_FUNC
PyInit__replay(void)
{
  PyObject * module = PyModule_Create(&replay_module);
  if (module == NULL) {
    return NULL;
  }
  PublishRefused = PyErr_NewExceptionWithDoc(
    "sim_clock._replay.PublishRefused",
    "A publish rcl failed. which: the topic index of the message (-1: /clock); index: the "
    "message's index in its batch; done: the frames done before it.", PyExc_RuntimeError, NULL);
  if (PublishRefused == NULL ||
    PyModule_AddObjectRef(module, "PublishRefused", PublishRefused) < 0 ||
    PyModule_AddIntConstant(module, "DROPPED", DROPPED) < 0 ||
    PyModule_AddIntConstant(module, "UNLIMITED", UNLIMITED) < 0 ||
    PyModule_AddIntConstant(module, "CLOCK_INDEX", CLOCK_INDEX) < 0)
  {
    Py_DECREF(module);
    return NULL;
  }
  return module;
}
