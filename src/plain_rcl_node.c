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

// plain_rcl_node: a plain ROS 2 node in C on rcl that knows nothing of sim_clock, for the
// lockstep layer (doc/lockstep-layer.md), whose test runs it unchanged under the layer.
//
//     plain_rcl_node [--period-ms N] [--work-ms W] [--ros-args ...]    (--help: and exit)
//
// It uses simulated time as rclcpp's and rclpy's time sources do: it subscribes to /clock
// (best effort, depth 1) and sets its ROS clock to each time it takes. A timer of N ms (10 by
// default) on that clock prints 'fired <clock ns>' each time it runs, then works W ms (0 by
// default: a slow node). It prints 'ready' once its entities exist. SIGINT or SIGTERM: it ends, within 0.1 s.

#define _POSIX_C_SOURCE 200809L  // sigaction, nanosleep

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rcl/error_handling.h>
#include <rcl/rcl.h>
#include <rcl/time.h>
#include <rcl/timer.h>
#include <rcutils/allocator.h>
#include <rosgraph_msgs/msg/clock.h>

#define NS_PER_SEC 1000000000LL
#define WAIT_NS (100 * 1000000LL)  // longest rcl_wait, so that a signal is seen soon

static volatile sig_atomic_t g_stop = 0;
static rcl_context_t g_context;
static rcl_node_t g_node;
static rcl_subscription_t g_clock_sub;
static rcl_clock_t g_clock;
static rcl_timer_t g_timer;
static rcl_wait_set_t g_wait_set;
static int64_t g_work_ns = 0;

static void on_signal(int number) {g_stop = number;}

static bool failed(const char * what)
{
  fprintf(stderr, "plain_rcl_node: %s: %s\n", what, rcl_get_error_string().str);
  rcl_reset_error();
  return false;
}

#define CHECK(call, what) do {if ((call) != RCL_RET_OK) {return failed(what);}} while (0)

static void on_timer(rcl_timer_t * timer, int64_t last_call_time)
{
  (void)timer;
  (void)last_call_time;
  rcl_time_point_value_t now = 0;
  if (rcl_clock_get_now(&g_clock, &now) != RCL_RET_OK) {
    failed("clock");
    return;
  }
  printf("fired %lld\n", (long long)now);
  fflush(stdout);
  struct timespec work = {(time_t)(g_work_ns / NS_PER_SEC), (long)(g_work_ns % NS_PER_SEC)};
  nanosleep(&work, NULL);  // the work of a slow node under test
}

static bool set_up(int argc, char ** argv, int64_t period_ns)
{
  rcl_allocator_t alloc = rcl_get_default_allocator();
  rcl_init_options_t init_options = rcl_get_zero_initialized_init_options();
  CHECK(rcl_init_options_init(&init_options, alloc), "init options");
  g_context = rcl_get_zero_initialized_context();
  rcl_ret_t ret = rcl_init(argc, (const char * const *)argv, &init_options, &g_context);
  CHECK(rcl_init_options_fini(&init_options), "init options");
  CHECK(ret, "init");
  g_node = rcl_get_zero_initialized_node();
  rcl_node_options_t node_options = rcl_node_get_default_options();
  CHECK(rcl_node_init(&g_node, "plain_c", "", &g_context, &node_options), "node");
  // use_sim_time by hand: the ROS clock follows /clock.
  CHECK(rcl_ros_clock_init(&g_clock, &alloc), "clock");
  CHECK(rcl_enable_ros_time_override(&g_clock), "clock override");
  rcl_subscription_options_t sub_options = rcl_subscription_get_default_options();
  sub_options.qos = rmw_qos_profile_default;
  sub_options.qos.reliability = RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT;
  sub_options.qos.depth = 1;
  g_clock_sub = rcl_get_zero_initialized_subscription();
  CHECK(rcl_subscription_init(&g_clock_sub, &g_node,
    ROSIDL_GET_MSG_TYPE_SUPPORT(rosgraph_msgs, msg, Clock), "/clock", &sub_options), "/clock");
  g_timer = rcl_get_zero_initialized_timer();
  CHECK(rcl_timer_init2(&g_timer, &g_clock, &g_context, period_ns, on_timer, alloc, true),
    "timer");
  g_wait_set = rcl_get_zero_initialized_wait_set();
  CHECK(rcl_wait_set_init(&g_wait_set, 1, 0, 1, 0, 0, 0, &g_context, alloc), "wait set");
  return true;
}

static bool spin_once(void)
{
  CHECK(rcl_wait_set_clear(&g_wait_set), "wait set");
  CHECK(rcl_wait_set_add_subscription(&g_wait_set, &g_clock_sub, NULL), "wait set");
  CHECK(rcl_wait_set_add_timer(&g_wait_set, &g_timer, NULL), "wait set");
  rcl_ret_t ret = rcl_wait(&g_wait_set, WAIT_NS);
  if (ret == RCL_RET_TIMEOUT) {
    return true;
  }
  CHECK(ret, "wait");
  if (g_wait_set.subscriptions[0]) {
    rosgraph_msgs__msg__Clock clock;
    rmw_message_info_t info = rmw_get_zero_initialized_message_info();
    while ((ret = rcl_take(&g_clock_sub, &clock, &info, NULL)) == RCL_RET_OK) {
      CHECK(rcl_set_ros_time_override(&g_clock,
        (int64_t)clock.clock.sec * NS_PER_SEC + clock.clock.nanosec), "set the time");
    }
    if (ret != RCL_RET_SUBSCRIPTION_TAKE_FAILED) {
      return failed("take /clock");
    }
  }
  if (g_wait_set.timers[0]) {
    ret = rcl_timer_call(&g_timer);
    if (ret != RCL_RET_OK && ret != RCL_RET_TIMER_CANCELED) {
      return failed("timer");
    }
  }
  return true;
}

static const char USAGE[] =
  "usage: plain_rcl_node [--period-ms N] [--work-ms W] [--ros-args ...]\n"
  "\n"
  "A plain ROS 2 node in C that knows nothing of sim_clock (doc/lockstep-layer.md): its ROS\n"
  "clock follows /clock, and a timer of N ms (10 by default) on it prints 'fired <clock ns>'.\n"
  "After each firing it works W ms. Prints 'ready' once it runs.\n"
  "\n"
  "options:\n"
  "  -h, --help     show this help and exit\n"
  "  --period-ms N  the timer's period in ms of simulated time\n"
  "  --work-ms W    how long each firing works, in ms of wall time\n";

int main(int argc, char ** argv)
{
  int64_t period_ns = 10 * 1000000LL;
  for (int i = 1; i < argc && strcmp(argv[i], "--ros-args") != 0; ++i) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(USAGE, stdout);
      return 0;
    }
    bool period = strcmp(argv[i], "--period-ms") == 0, work = strcmp(argv[i], "--work-ms") == 0;
    if ((period || work) && i + 1 < argc) {
      char * end = NULL;
      long value = strtol(argv[++i], &end, 10);
      if (value >= (period ? 1 : 0) && value <= 3600000 && *end == '\0') {
        *(period ? &period_ns : &g_work_ns) = value * 1000000LL;
        continue;
      }
    }
    fprintf(stderr, "%splain_rcl_node: error: unrecognized argument '%s'\n", USAGE, argv[i]);
    return 2;
  }
  struct sigaction action = {.sa_handler = on_signal};
  sigaction(SIGINT, &action, NULL);
  sigaction(SIGTERM, &action, NULL);
  bool ok = set_up(argc, argv, period_ns);
  if (ok) {
    printf("ready\n");
    fflush(stdout);
  }
  while (ok && !g_stop) {
    ok = spin_once();
  }
  // The entities (one not made is skipped by rcl), then the node, the clock, the context.
  rcl_ret_t ret = rcl_wait_set_fini(&g_wait_set) | rcl_timer_fini(&g_timer);
  if (rcl_node_is_valid_except_context(&g_node)) {
    ret |= rcl_subscription_fini(&g_clock_sub, &g_node) | rcl_node_fini(&g_node);
  }
  rcl_reset_error();
  if (g_clock.get_now) {
    ret |= rcl_clock_fini(&g_clock);
  }
  if (rcl_context_is_valid(&g_context)) {
    ret |= rcl_shutdown(&g_context);
  }
  ret |= rcl_context_fini(&g_context);
  if (ret != RCL_RET_OK) {
    failed("fini");
  }
  return ok || g_stop ? 0 : 1;
}
