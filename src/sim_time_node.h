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

// The part of a plain C node on rcl that takes part in simulated time as rclcpp's and rclpy's
// time sources do, shared by plain_rcl_node and stack_node_c (neither knows of sim_clock):
// its context and node, its ROS clock with the time overridden (0 until the first /clock),
// and a /clock subscription (best effort, depth 1) whose every time it takes sets that clock.

#ifndef SIM_TIME_NODE_H_
#define SIM_TIME_NODE_H_

#include <stdbool.h>
#include <stdint.h>

#include <rcl/rcl.h>
#include <rcl/time.h>

typedef struct
{
  const char * program;  // named in every error it prints
  rcl_context_t context;
  rcl_node_t node;
  rcl_clock_t clock;
  rcl_subscription_t clock_sub;
} sim_time_node_t;

// Print '<program>: <what>: <rcl's error>' on stderr, reset the error; return false.
bool sim_time_node_failed(const sim_time_node_t * self, const char * what);

// Initialize rcl with argc and argv (--ros-args among them), the node named name, its clock
// and its /clock subscription; false (said) on an error.
bool sim_time_node_init(sim_time_node_t * self, int argc, char ** argv, const char * name);

// Take every /clock waiting and set the clock to each; false (said) on an error.
bool sim_time_node_take_clock(sim_time_node_t * self);

// The clock's time now, in ns (0, said, on an error).
int64_t sim_time_node_now(sim_time_node_t * self);

// After the caller's own entities: the /clock subscription, the node, the clock, the context
// (one not made is skipped). Returns the bits of every rcl_ret_t.
rcl_ret_t sim_time_node_fini(sim_time_node_t * self);

#endif  // SIM_TIME_NODE_H_
