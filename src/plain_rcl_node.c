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

#include <rcl/rcl.h>
#include <rcl/timer.h>

#include "sim_time_node.h"

#define NS_PER_SEC 1000000000LL
#define WAIT_NS (100 * 1000000LL)  // longest rcl_wait, so that a signal is seen soon

static volatile sig_atomic_t g_stop = 0;
static sim_time_node_t g_sim = {.program = "plain_rcl_node"};
static rcl_timer_t g_timer;
static rcl_wait_set_t g_wait_set;
static int64_t g_work_ns = 0;

static void on_signal(int number) {g_stop = number;}

#define CHECK(call, what) \
  do {if ((call) != RCL_RET_OK) {return sim_time_node_failed(&g_sim, what);}} while (0)

static void on_timer(rcl_timer_t * timer, int64_t last_call_time)
{
  (void)timer;
  (void)last_call_time;
  printf("fired %lld\n", (long long)sim_time_node_now(&g_sim));
  fflush(stdout);
  struct timespec work = {(time_t)(g_work_ns / NS_PER_SEC), (long)(g_work_ns % NS_PER_SEC)};
  nanosleep(&work, NULL);  // the work of a slow node under test
}

static bool set_up(int argc, char ** argv, int64_t period_ns)
{
  if (!sim_time_node_init(&g_sim, argc, argv, "plain_c")) {
    return false;
  }
  rcl_allocator_t alloc = rcl_get_default_allocator();
  g_timer = rcl_get_zero_initialized_timer();
  CHECK(rcl_timer_init2(&g_timer, &g_sim.clock, &g_sim.context, period_ns, on_timer, alloc,
    true), "timer");
  g_wait_set = rcl_get_zero_initialized_wait_set();
  CHECK(rcl_wait_set_init(&g_wait_set, 1, 0, 1, 0, 0, 0, &g_sim.context, alloc), "wait set");
  return true;
}

static bool spin_once(void)
{
  CHECK(rcl_wait_set_clear(&g_wait_set), "wait set");
  CHECK(rcl_wait_set_add_subscription(&g_wait_set, &g_sim.clock_sub, NULL), "wait set");
  CHECK(rcl_wait_set_add_timer(&g_wait_set, &g_timer, NULL), "wait set");
  rcl_ret_t ret = rcl_wait(&g_wait_set, WAIT_NS);
  if (ret == RCL_RET_TIMEOUT) {
    return true;
  }
  CHECK(ret, "wait");
  if (g_wait_set.subscriptions[0] && !sim_time_node_take_clock(&g_sim)) {
    return false;
  }
  if (g_wait_set.timers[0]) {
    ret = rcl_timer_call(&g_timer);
    if (ret != RCL_RET_OK && ret != RCL_RET_TIMER_CANCELED) {
      return sim_time_node_failed(&g_sim, "timer");
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
  // Its entities (one not made is skipped by rcl), then the node, the clock, the context.
  rcl_ret_t ret = rcl_wait_set_fini(&g_wait_set) | rcl_timer_fini(&g_timer);
  ret |= sim_time_node_fini(&g_sim);
  if (ret != RCL_RET_OK) {
    sim_time_node_failed(&g_sim, "fini");
  }
  return ok || g_stop ? 0 : 1;
}
