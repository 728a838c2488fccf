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

// The simulated-time part of the plain C nodes on rcl (sim_time_node.h).

#include "sim_time_node.h"

#include <stdio.h>
#include <string.h>

#include <rcl/error_handling.h>
#include <rcutils/allocator.h>
#include <rosgraph_msgs/msg/clock.h>

#define NS_PER_SEC 1000000000LL

bool sim_time_node_failed(const sim_time_node_t * self, const char * what)
{
  fprintf(stderr, "%s: %s: %s\n", self->program, what, rcl_get_error_string().str);
  rcl_reset_error();
  return false;
}

#define CHECK(call, what) \
  do {if ((call) != RCL_RET_OK) {return sim_time_node_failed(self, what);}} while (0)

bool sim_time_node_init(sim_time_node_t * self, int argc, char ** argv, const char * name)
{
  rcl_allocator_t alloc = rcl_get_default_allocator();
  rcl_init_options_t init_options = rcl_get_zero_initialized_init_options();
  memset(&self->clock, 0, sizeof(self->clock));  // fini skips a clock not made
  self->context = rcl_get_zero_initialized_context();
  self->node = rcl_get_zero_initialized_node();
  self->clock_sub = rcl_get_zero_initialized_subscription();
  CHECK(rcl_init_options_init(&init_options, alloc), "init options");
  rcl_ret_t ret = rcl_init(argc, (const char * const *)argv, &init_options, &self->context);
  CHECK(rcl_init_options_fini(&init_options), "init options");
  CHECK(ret, "init");
  rcl_node_options_t node_options = rcl_node_get_default_options();
  CHECK(rcl_node_init(&self->node, name, "", &self->context, &node_options), "node");
  // use_sim_time by hand: the ROS clock follows /clock.
  CHECK(rcl_ros_clock_init(&self->clock, &alloc), "clock");
  CHECK(rcl_enable_ros_time_override(&self->clock), "clock override");
  rcl_subscription_options_t options = rcl_subscription_get_default_options();
  options.qos = rmw_qos_profile_default;
  options.qos.reliability = RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT;
  options.qos.depth = 1;
  CHECK(rcl_subscription_init(&self->clock_sub, &self->node,
    ROSIDL_GET_MSG_TYPE_SUPPORT(rosgraph_msgs, msg, Clock), "/clock", &options), "/clock");
  return true;
}

bool sim_time_node_take_clock(sim_time_node_t * self)
{
  rosgraph_msgs__msg__Clock clock;
  rmw_message_info_t info = rmw_get_zero_initialized_message_info();
  rcl_ret_t ret;
  while ((ret = rcl_take(&self->clock_sub, &clock, &info, NULL)) == RCL_RET_OK) {
    CHECK(rcl_set_ros_time_override(&self->clock,
      (int64_t)clock.clock.sec * NS_PER_SEC + clock.clock.nanosec), "set the time");
  }
  return ret == RCL_RET_SUBSCRIPTION_TAKE_FAILED || sim_time_node_failed(self, "take /clock");
}

int64_t sim_time_node_now(sim_time_node_t * self)
{
  rcl_time_point_value_t now = 0;
  if (rcl_clock_get_now(&self->clock, &now) != RCL_RET_OK) {
    sim_time_node_failed(self, "clock");
  }
  return now;
}

rcl_ret_t sim_time_node_fini(sim_time_node_t * self)
{
  rcl_ret_t ret = RCL_RET_OK;
  if (rcl_node_is_valid_except_context(&self->node)) {
    ret |= rcl_subscription_fini(&self->clock_sub, &self->node) | rcl_node_fini(&self->node);
  }
  rcl_reset_error();
  if (self->clock.get_now) {
    ret |= rcl_clock_fini(&self->clock);
  }
  if (rcl_context_is_valid(&self->context)) {
    ret |= rcl_shutdown(&self->context);
  }
  ret |= rcl_context_fini(&self->context);
  return ret;
}
