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

// stack_node_c: a node of the stack of examples/stack_node.py written in plain C on rcl, and
// knowing nothing of sim_clock, for the lockstep layer (doc/lockstep-layer.md): the stack of
// benchmarks/stack.py with nodes whose executor costs next to nothing, unchanged under it.
//
//     stack_node_c ROLE [--readers TOPIC=N ...] [--ros-args ...]    (--help: and exit)
//
// ROLE is perception, planning or control; each does what its role does in stack_node.py,
// with the same topics, QoS, messages ('<role>@<clock ns>|<payload>') and printed lines
// ('got <topic> <its clock> <sender's clock> <data>', 'sent <topic> <its clock>', 'joined',
// 'matched'). It uses simulated time as rclcpp's and rclpy's time sources do: it subscribes to
// /clock (best effort, depth 1) and sets its ROS clock to each time it takes; its 20 ms timer
// runs on that clock. Each turn of its loop waits once (rcl_wait), takes the newest /clock,
// runs its timer if due, then takes every message of its subscriptions in a fixed order.
// SIGINT or SIGTERM: it ends, within 0.1 s.

#define _POSIX_C_SOURCE 200809L  // sigaction

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rcl/rcl.h>
#include <rcl/timer.h>
#include <rosidl_runtime_c/string_functions.h>
#include <std_msgs/msg/string.h>

#include "sim_time_node.h"

#define PERIOD_NS (20 * 1000000LL)  // the roles' timer, as stack_node.py's PERIOD_S
#define WAIT_NS (100 * 1000000LL)  // longest rcl_wait, so that a signal is seen soon
#define MATCH_LOOK_NS (10 * 1000000LL)  // how often the writers' matches are looked at
#define MAX_TOPICS 3  // a role's subscriptions (control's) and writers (at most 2)
#define INBOX_BYTES (1 << 20)

typedef enum {PERCEPTION, PLANNING, CONTROL} role_t;

typedef struct
{
  const char * topic;
  rcl_subscription_t handle;
  bool keep;  // the message's data goes into the inbox
  const char * answer_topic;  // published at once with the data (prefixed), or NULL
  const char * answer_prefix;
} reader_t;

typedef struct
{
  const char * topic;
  rcl_publisher_t handle;
  size_t readers_wanted;  // 'matched' once it has matched this many readers
} writer_t;

static volatile sig_atomic_t g_stop = 0;
static const char * g_role_name;
static role_t g_role;
static sim_time_node_t g_sim = {.program = "stack_node_c"};
static rcl_timer_t g_timer;
static bool g_has_timer;
static rcl_wait_set_t g_wait_set;
static reader_t g_readers[MAX_TOPICS];
static size_t g_reader_count;
static writer_t g_writers[MAX_TOPICS];
static size_t g_writer_count;
static bool g_matched_said;
// The messages kept since the last flush, joined by the role's separator.
static char g_inbox[INBOX_BYTES];
static size_t g_inbox_length;
static size_t g_inbox_count;

static void on_signal(int number) {g_stop = number;}

#define CHECK(call, what) \
  do {if ((call) != RCL_RET_OK) {return sim_time_node_failed(&g_sim, what);}} while (0)

static writer_t * writer(const char * topic)
{
  for (size_t i = 0; i < g_writer_count; ++i) {
    if (strcmp(g_writers[i].topic, topic) == 0) {
      return &g_writers[i];
    }
  }
  return NULL;
}

// Publish '<role>@<clock>|<payload>' on topic and print 'sent <topic> <clock>'.
static bool publish(const char * topic, const char * prefix, const char * payload)
{
  int64_t now = sim_time_node_now(&g_sim);
  size_t size = strlen(g_role_name) + strlen(prefix) + strlen(payload) + 32;
  char * text = malloc(size);
  if (text == NULL) {
    fprintf(stderr, "stack_node_c: out of memory\n");
    return false;
  }
  snprintf(text, size, "%s@%lld|%s%s", g_role_name, (long long)now, prefix, payload);
  std_msgs__msg__String message;
  bool ok = std_msgs__msg__String__init(&message) &&
    rosidl_runtime_c__String__assign(&message.data, text);
  free(text);
  if (!ok) {
    std_msgs__msg__String__fini(&message);
    fprintf(stderr, "stack_node_c: out of memory\n");
    return false;
  }
  rcl_ret_t ret = rcl_publish(&writer(topic)->handle, &message, NULL);
  std_msgs__msg__String__fini(&message);
  CHECK(ret, "publish");
  printf("sent %s %lld\n", topic, (long long)now);
  return true;
}

static bool keep(const char * data)
{
  size_t length = strlen(data);
  if (g_inbox_length + length + 2 > sizeof(g_inbox)) {
    fprintf(stderr, "stack_node_c: the inbox is full\n");
    return false;
  }
  memcpy(g_inbox + g_inbox_length, data, length + 1);
  g_inbox_length += length + 1;  // each kept message ends with its NUL until the flush
  ++g_inbox_count;
  return true;
}

// Publish the inbox's messages joined by separator on topic, and empty it.
static bool flush(const char * topic, char separator)
{
  for (size_t i = 0; i + 1 < g_inbox_length; ++i) {
    if (g_inbox[i] == '\0') {
      g_inbox[i] = separator;
    }
  }
  if (g_inbox_length == 0) {
    g_inbox[0] = '\0';
  }
  bool ok = publish(topic, "", g_inbox);
  g_inbox_length = 0;
  g_inbox_count = 0;
  return ok;
}

static bool on_timer(void)
{
  if (g_role == PERCEPTION) {
    return flush("/stage1", ',');
  }
  char count[32];
  snprintf(count, sizeof(count), "%zu", g_inbox_count);
  return publish("/ping", "", count) && flush("/result", ';');
}

static bool on_message(reader_t * reader, const char * data)
{
  // The sender's clock: after the '@' of '<role>@<clock>|...'; -1 for the bag's data.
  long long sent = -1;
  const char * bar = strchr(data, '|');
  const char * at = strchr(data, '@');
  if (bar != NULL && at != NULL && at < bar) {
    sent = strtoll(at + 1, NULL, 10);
  }
  printf("got %s %lld %lld %s\n", reader->topic, (long long)sim_time_node_now(&g_sim), sent, data);
  if (reader->keep && !keep(data)) {
    return false;
  }
  return reader->answer_topic == NULL ||
         publish(reader->answer_topic, reader->answer_prefix, data);
}

static bool add_writer(const char * topic, const rcl_publisher_options_t * options)
{
  writer_t * slot = &g_writers[g_writer_count++];
  slot->topic = topic;
  slot->handle = rcl_get_zero_initialized_publisher();
  CHECK(rcl_publisher_init(&slot->handle, &g_sim.node,
    ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, String), topic, options), topic);
  return true;
}

static bool add_reader(
  const char * topic, bool keep_it, const char * answer_topic, const char * answer_prefix,
  const rcl_subscription_options_t * options)
{
  reader_t * slot = &g_readers[g_reader_count++];
  *slot = (reader_t){topic, rcl_get_zero_initialized_subscription(), keep_it, answer_topic,
    answer_prefix};
  CHECK(rcl_subscription_init(&slot->handle, &g_sim.node,
    ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, String), topic, options), topic);
  return true;
}

static bool set_up(int argc, char ** argv)
{
  if (!sim_time_node_init(&g_sim, argc, argv, g_role_name)) {
    return false;
  }
  rcl_allocator_t alloc = rcl_get_default_allocator();
  // stack_node.py's QOS: reliable, keep last 1000, volatile.
  rcl_publisher_options_t writer_options = rcl_publisher_get_default_options();
  writer_options.qos.depth = 1000;
  rcl_subscription_options_t reader_options = rcl_subscription_get_default_options();
  reader_options.qos.depth = 1000;
  bool ok = true;
  if (g_role == PERCEPTION) {
    ok = add_writer("/stage1", &writer_options) &&
      add_reader("/chatter", true, NULL, NULL, &reader_options);
  } else if (g_role == PLANNING) {
    ok = add_writer("/stage2", &writer_options) && add_writer("/pong", &writer_options) &&
      add_reader("/stage1", false, "/stage2", "", &reader_options) &&
      add_reader("/ping", false, "/pong", "pong ", &reader_options);
  } else {
    ok = add_writer("/result", &writer_options) && add_writer("/ping", &writer_options) &&
      add_reader("/stage1", true, NULL, NULL, &reader_options) &&
      add_reader("/stage2", true, NULL, NULL, &reader_options) &&
      add_reader("/pong", true, NULL, NULL, &reader_options);
  }
  if (!ok) {
    return false;
  }
  g_has_timer = g_role != PLANNING;
  if (g_has_timer) {
    g_timer = rcl_get_zero_initialized_timer();
    CHECK(rcl_timer_init2(&g_timer, &g_sim.clock, &g_sim.context, PERIOD_NS, NULL, alloc, true),
      "timer");
  }
  g_wait_set = rcl_get_zero_initialized_wait_set();
  CHECK(rcl_wait_set_init(&g_wait_set, 1 + g_reader_count, 0, g_has_timer, 0, 0, 0,
    &g_sim.context, alloc), "wait set");
  return true;
}

// Print 'matched' once every writer has matched as many readers as --readers asked.
static bool say_when_matched(void)
{
  for (size_t i = 0; i < g_writer_count; ++i) {
    size_t count = 0;
    CHECK(rcl_publisher_get_subscription_count(&g_writers[i].handle, &count), "match count");
    if (count < g_writers[i].readers_wanted) {
      return true;
    }
  }
  printf("matched\n");
  g_matched_said = true;
  return true;
}

static bool take_all(reader_t * reader)
{
  std_msgs__msg__String message;
  if (!std_msgs__msg__String__init(&message)) {
    fprintf(stderr, "stack_node_c: out of memory\n");
    return false;
  }
  rmw_message_info_t info = rmw_get_zero_initialized_message_info();
  rcl_ret_t ret;
  bool ok = true;
  while (ok && (ret = rcl_take(&reader->handle, &message, &info, NULL)) == RCL_RET_OK) {
    ok = on_message(reader, message.data.data);
  }
  std_msgs__msg__String__fini(&message);
  if (ok && ret != RCL_RET_SUBSCRIPTION_TAKE_FAILED) {
    return sim_time_node_failed(&g_sim, "take");
  }
  return ok;
}

static bool spin_once(void)
{
  CHECK(rcl_wait_set_clear(&g_wait_set), "wait set");
  CHECK(rcl_wait_set_add_subscription(&g_wait_set, &g_sim.clock_sub, NULL), "wait set");
  for (size_t i = 0; i < g_reader_count; ++i) {
    CHECK(rcl_wait_set_add_subscription(&g_wait_set, &g_readers[i].handle, NULL), "wait set");
  }
  if (g_has_timer) {
    CHECK(rcl_wait_set_add_timer(&g_wait_set, &g_timer, NULL), "wait set");
  }
  rcl_ret_t ret = rcl_wait(&g_wait_set, g_matched_said ? WAIT_NS : MATCH_LOOK_NS);
  if (ret != RCL_RET_TIMEOUT) {
    CHECK(ret, "wait");
  }
  if (!g_matched_said && !say_when_matched()) {
    return false;
  }
  if (ret == RCL_RET_TIMEOUT) {
    fflush(stdout);
    return true;
  }
  if (g_wait_set.subscriptions[0] && !sim_time_node_take_clock(&g_sim)) {
    return false;
  }
  // The timer after the clock, as an executor that wakes for the new time finds it due.
  bool due = false;
  if (g_has_timer) {
    CHECK(rcl_timer_is_ready(&g_timer, &due), "timer");
  }
  if (due) {
    ret = rcl_timer_call(&g_timer);
    if (ret == RCL_RET_OK && !on_timer()) {
      return false;
    }
    if (ret != RCL_RET_OK && ret != RCL_RET_TIMER_CANCELED) {
      return sim_time_node_failed(&g_sim, "timer");
    }
  }
  for (size_t i = 0; i < g_reader_count; ++i) {
    if (g_wait_set.subscriptions[1 + i] && !take_all(&g_readers[i])) {
      return false;
    }
  }
  fflush(stdout);
  return true;
}

static const char USAGE[] =
  "usage: stack_node_c ROLE [--readers TOPIC=N ...] [--ros-args ...]\n"
  "\n"
  "A node of the stack of examples/stack_node.py (ROLE: perception, planning or control) in\n"
  "plain C on rcl, knowing nothing of sim_clock (doc/lockstep-layer.md). Its ROS clock follows\n"
  "/clock. Prints 'joined' once it runs and 'matched' once each writer named by --readers has\n"
  "matched that many readers.\n"
  "\n"
  "options:\n"
  "  -h, --help          show this help and exit\n"
  "  --readers TOPIC=N   print 'matched' once these writers have matched N readers each\n";

static bool parse_readers(const char * item)
{
  const char * equals = strchr(item, '=');
  if (equals == NULL) {
    return false;
  }
  char * end = NULL;
  long count = strtol(equals + 1, &end, 10);
  if (count < 0 || count > 1000 || *end != '\0' || end == equals + 1) {
    return false;
  }
  for (size_t i = 0; i < g_writer_count; ++i) {
    if (strncmp(g_writers[i].topic, item, (size_t)(equals - item)) == 0 &&
      g_writers[i].topic[equals - item] == '\0')
    {
      g_writers[i].readers_wanted = (size_t)count;
    }
  }
  return true;  // a topic the role does not write is no writer of its to wait for
}

int main(int argc, char ** argv)
{
  int first_ros_argument = argc;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--ros-args") == 0) {
      first_ros_argument = i;
      break;
    }
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(USAGE, stdout);
      return 0;
    }
  }
  static const char * const roles[] = {"perception", "planning", "control"};
  bool known = false;
  for (int r = 0; first_ros_argument > 1 && r < 3; ++r) {
    if (strcmp(argv[1], roles[r]) == 0) {
      g_role = (role_t)r;
      g_role_name = roles[r];
      known = true;
    }
  }
  if (!known) {
    fprintf(stderr, "%sstack_node_c: error: ROLE must be perception, planning or control, "
      "not '%s'\n", USAGE, first_ros_argument > 1 ? argv[1] : "");
    return 2;
  }
  struct sigaction action = {.sa_handler = on_signal};
  sigaction(SIGINT, &action, NULL);
  sigaction(SIGTERM, &action, NULL);
  bool ok = set_up(argc, argv);
  for (int i = 2; ok && i < first_ros_argument; ++i) {
    if (strcmp(argv[i], "--readers") == 0) {
      continue;
    }
    if (!parse_readers(argv[i])) {
      fprintf(stderr, "%sstack_node_c: error: unrecognized argument '%s' (--readers takes "
        "TOPIC=N)\n", USAGE, argv[i]);
      ok = false;
    }
  }
  if (ok) {
    printf("joined\n");
    fflush(stdout);
  }
  while (ok && !g_stop) {
    ok = spin_once();
  }
  // Its entities (one not made is skipped by rcl), then the node, the clock, the context.
  rcl_ret_t ret = rcl_wait_set_fini(&g_wait_set);
  if (g_has_timer) {
    ret |= rcl_timer_fini(&g_timer);
  }
  if (rcl_node_is_valid_except_context(&g_sim.node)) {
    for (size_t i = 0; i < g_reader_count; ++i) {
      ret |= rcl_subscription_fini(&g_readers[i].handle, &g_sim.node);
    }
    for (size_t i = 0; i < g_writer_count; ++i) {
      ret |= rcl_publisher_fini(&g_writers[i].handle, &g_sim.node);
    }
  }
  ret |= sim_time_node_fini(&g_sim);
  if (ret != RCL_RET_OK) {
    sim_time_node_failed(&g_sim, "fini");
  }
  return ok || g_stop ? 0 : 1;
}
