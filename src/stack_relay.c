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

// stack_relay: a deterministic participant written in C against rcl (doc/frames.md, "The wire
// protocol, for a participant in any language").
//
//     stack_relay [--readers N] [--ros-args ...]    (--help: what follows, and exit)
//
// It joins /sim_clock/join as 'relay' (period 0) and relays each std_msgs/String message of
// /stage2 unchanged on /relay, by round: messages are taken serialized and delivered in
// ascending order of their bytes; what it publishes is held and counted until the next round
// starts. It prints 'joined' once it takes part, and 'got /stage2 <clock> <sender's clock>
// <data>' for each message it delivers (sender's clock: the ns after '@' in the data, or -1).
// With --readers N it prints 'matched' once its /relay writer has matched N readers (a message
// sent before its reader matched is lost). SIGINT or SIGTERM: it leaves and ends, within 2 s
// whether the server answers the leave or not (under ros2 launch it stops at the same time).

#define _POSIX_C_SOURCE 200809L  // sigaction, clock_gettime, nanosleep

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rcl/error_handling.h>
#include <rcl/graph.h>
#include <rcl/rcl.h>
#include <rcutils/allocator.h>
#include <rmw/serialized_message.h>
#include <rosgraph_msgs/msg/clock.h>
#include <rosidl_runtime_c/primitives_sequence_functions.h>
#include <rosidl_runtime_c/string_functions.h>
#include <sim_clock/msg/done.h>
#include <sim_clock/msg/round.h>
#include <sim_clock/srv/join.h>
#include <sim_clock/srv/leave.h>
#include <std_msgs/msg/string.h>

#define NAME "relay"
#define INPUT "/stage2"
#define OUTPUT "/relay"
#define NS_PER_SEC 1000000000LL
#define TIMEOUT_NS (10 * NS_PER_SEC)  // for the server, and for a round's messages
#define LEAVE_TIMEOUT_NS (NS_PER_SEC / 2)  // a courtesy: the server may be gone
#define WAIT_NS (100 * 1000000LL)     // longest rcl_wait, so that a signal is seen soon

// Serialized messages, in the order they came: the inbox (/stage2) or what is held (/relay).
typedef struct
{
  rcl_serialized_message_t * items;
  size_t size, capacity;
} queue_t;

static volatile sig_atomic_t g_stop = 0;
static rcl_allocator_t g_alloc;
static rcl_context_t g_context;
static rcl_node_t g_node;
static rcl_subscription_t g_clock_sub, g_rounds_sub, g_input_sub;
static rcl_publisher_t g_done_pub, g_output_pub;
static rcl_client_t g_join, g_leave;
static rcl_wait_set_t g_wait_set;
static rcl_serialized_message_t g_scratch;
static queue_t g_inbox, g_held;
static int64_t g_time = -1;  // the frame's time, ns; -1: none yet
static uint32_t g_round = 0;

static void on_signal(int number) {g_stop = number;}

static int64_t now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

// Print what rcl says went wrong, with `what`; false, for the caller to return.
static bool failed(const char * what)
{
  fprintf(stderr, "stack_relay: %s: %s\n", what, rcl_get_error_string().str);
  rcl_reset_error();
  return false;
}

#define CHECK(call, what) do {if ((call) != RCL_RET_OK) {return failed(what);}} while (0)

static bool push(queue_t * queue, const uint8_t * bytes, size_t length)
{
  if (queue->size == queue->capacity) {
    size_t capacity = queue->capacity ? 2 * queue->capacity : 64;
    void * items = realloc(queue->items, capacity * sizeof(*queue->items));
    if (!items) {
      return false;
    }
    queue->items = items;
    queue->capacity = capacity;
  }
  rcl_serialized_message_t * item = &queue->items[queue->size];
  *item = rmw_get_zero_initialized_serialized_message();
  if (rmw_serialized_message_init(item, length ? length : 1, &g_alloc) != RMW_RET_OK) {
    return false;
  }
  memcpy(item->buffer, bytes, length);
  item->buffer_length = length;
  queue->size++;
  return true;
}

static void clear(queue_t * queue)
{
  for (size_t i = 0; i < queue->size; i++) {
    rmw_serialized_message_fini(&queue->items[i]);
  }
  queue->size = 0;
}

// Serialized bytes compared as Python compares bytes: byte by byte, then the shorter first.
static int by_bytes(const void * a, const void * b)
{
  const rcl_serialized_message_t * x = a, * y = b;
  size_t common = x->buffer_length < y->buffer_length ? x->buffer_length : y->buffer_length;
  int order = memcmp(x->buffer, y->buffer, common);
  return order ? order :
         (x->buffer_length > y->buffer_length) - (x->buffer_length < y->buffer_length);
}

// Take every /stage2 message that has come into the inbox.
static bool take_input(void)
{
  for (;;) {
    rmw_message_info_t info = rmw_get_zero_initialized_message_info();
    rcl_ret_t ret = rcl_take_serialized_message(&g_input_sub, &g_scratch, &info, NULL);
    if (ret == RCL_RET_SUBSCRIPTION_TAKE_FAILED) {
      return true;
    }
    CHECK(ret, "take " INPUT);
    if (!push(&g_inbox, g_scratch.buffer, g_scratch.buffer_length)) {
      return failed("out of memory");
    }
  }
}

// The string of a serialized std_msgs/String (CDR: 4 bytes of header, uint32 length with the
// NUL, then the characters), as printed on a 'got' line; NULL if it is not that.
static const char * text_of(const rcl_serialized_message_t * msg)
{
  const uint8_t * b = msg->buffer;
  if (msg->buffer_length < 9 || b[1] != 1) {  // little-endian CDR only
    return NULL;
  }
  uint32_t length = b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 | (uint32_t)b[7] << 24;
  if (length < 1 || length > msg->buffer_length - 8 || b[8 + length - 1] != '\0') {
    return NULL;
  }
  return (const char *)b + 8;
}

// Deliver the inbox in ascending order of bytes: each message relayed, held until next round.
static bool deliver(void)
{
  qsort(g_inbox.items, g_inbox.size, sizeof(*g_inbox.items), by_bytes);
  for (size_t i = 0; i < g_inbox.size; i++) {
    const rcl_serialized_message_t * msg = &g_inbox.items[i];
    const char * text = text_of(msg);
    const char * at = text ? strchr(text, '@') : NULL;
    long long sent = at ? strtoll(at + 1, NULL, 10) : -1;
    printf("got " INPUT " %lld %lld %s\n", (long long)g_time, sent, text ? text : "?");
    if (!push(&g_held, msg->buffer, msg->buffer_length)) {
      return failed("out of memory");
    }
  }
  fflush(stdout);
  clear(&g_inbox);
  return true;
}

// Send what the last round held, in the order it was published.
static bool release(void)
{
  for (size_t i = 0; i < g_held.size; i++) {
    CHECK(rcl_publish_serialized_message(&g_output_pub, &g_held.items[i], NULL),
      "publish " OUTPUT);
  }
  clear(&g_held);
  return true;
}

// Done(name, time, rounds=true, round, topics, counts) for the round under way.
static bool publish_done(void)
{
  // rosidl's __init leaves fields without a default as they are (here next): zero them first.
  sim_clock__msg__Done done;
  memset(&done, 0, sizeof(done));
  if (!sim_clock__msg__Done__init(&done)) {
    return failed("Done");
  }
  bool ok = rosidl_runtime_c__String__assign(&done.name, NAME);
  done.time.sec = (int32_t)(g_time / NS_PER_SEC);
  done.time.nanosec = (uint32_t)(g_time % NS_PER_SEC);
  done.rounds = true;
  done.round = g_round;
  if (ok && g_held.size) {
    ok = rosidl_runtime_c__String__Sequence__init(&done.topics, 1) &&
      rosidl_runtime_c__String__assign(&done.topics.data[0], OUTPUT) &&
      rosidl_runtime_c__uint32__Sequence__init(&done.counts, 1);
    if (ok) {
      done.counts.data[0] = (uint32_t)g_held.size;
    }
  }
  rcl_ret_t ret = ok ? rcl_publish(&g_done_pub, &done, NULL) : RCL_RET_BAD_ALLOC;
  sim_clock__msg__Done__fini(&done);
  CHECK(ret, "publish done");
  return true;
}

// Wait up to `timeout_ns` for the client, or else the input alone, or else any subscription.
static void wait_for(const rcl_client_t * client, bool input, int64_t timeout_ns)
{
  rcl_ret_t ret = rcl_wait_set_clear(&g_wait_set);
  if (ret == RCL_RET_OK) {
    ret = client ? rcl_wait_set_add_client(&g_wait_set, client, NULL) :
      input ? rcl_wait_set_add_subscription(&g_wait_set, &g_input_sub, NULL) :
      rcl_wait_set_add_subscription(&g_wait_set, &g_input_sub, NULL) |
      rcl_wait_set_add_subscription(&g_wait_set, &g_clock_sub, NULL) |
      rcl_wait_set_add_subscription(&g_wait_set, &g_rounds_sub, NULL);
  }
  if (ret != RCL_RET_OK || ((ret = rcl_wait(&g_wait_set, timeout_ns)) != RCL_RET_OK &&
    ret != RCL_RET_TIMEOUT))
  {
    failed("wait");
  }
}

// Call a service of the server; false if it does not answer within `timeout_ns`.
static bool call(rcl_client_t * client, const void * request, void * response,
  int64_t timeout_ns)
{
  int64_t deadline = now_ns() + timeout_ns, sequence;
  bool available = false;
  // Once stopped, a server that is gone is not waited for.
  CHECK(rcl_service_server_is_available(&g_node, client, &available), "service");
  while (!available && !g_stop && now_ns() < deadline) {
    struct timespec pause = {0, 20 * 1000000L};
    nanosleep(&pause, NULL);
    CHECK(rcl_service_server_is_available(&g_node, client, &available), "service");
  }
  if (!available) {
    fprintf(stderr, "stack_relay: no %s service%s\n", rcl_client_get_service_name(client),
      g_stop ? " (stopped)" : "");
    return false;
  }
  CHECK(rcl_send_request(client, request, &sequence), "send a request");
  while (now_ns() < deadline) {
    rmw_request_id_t header;
    wait_for(client, false, WAIT_NS);
    rcl_ret_t ret = rcl_take_response(client, &header, response);
    if (ret == RCL_RET_OK && header.sequence_number == sequence) {
      return true;
    }
    if (ret != RCL_RET_OK && ret != RCL_RET_CLIENT_TAKE_FAILED) {
      return failed("take a response");
    }
    // Once stopped, a server that leaves the graph (it stops too) is not waited for.
    if (g_stop) {
      CHECK(rcl_service_server_is_available(&g_node, client, &available), "service");
      if (!available) {
        fprintf(stderr, "stack_relay: %s went away (stopped)\n",
          rcl_client_get_service_name(client));
        return false;
      }
    }
  }
  fprintf(stderr, "stack_relay: %s did not answer\n", rcl_client_get_service_name(client));
  return false;
}

static bool join(void)
{
  sim_clock__srv__Join_Request request;
  sim_clock__srv__Join_Response response;
  memset(&request, 0, sizeof(request));  // period_ns 0: every frame (__init leaves it as is)
  memset(&response, 0, sizeof(response));
  sim_clock__srv__Join_Request__init(&request);
  sim_clock__srv__Join_Response__init(&response);
  bool ok = rosidl_runtime_c__String__assign(&request.name, NAME) &&
    rosidl_runtime_c__String__assign(&request.node, rcl_node_get_fully_qualified_name(&g_node))
    && call(&g_join, &request, &response, TIMEOUT_NS);
  if (ok && !response.success) {
    fprintf(stderr, "stack_relay: join refused: %s\n", response.message.data);
    ok = false;
  }
  sim_clock__srv__Join_Request__fini(&request);
  sim_clock__srv__Join_Response__fini(&response);
  return ok;
}

static void leave(void)
{
  sim_clock__srv__Leave_Request request;
  sim_clock__srv__Leave_Response response;
  memset(&request, 0, sizeof(request));
  memset(&response, 0, sizeof(response));
  sim_clock__srv__Leave_Request__init(&request);
  sim_clock__srv__Leave_Response__init(&response);
  if (rosidl_runtime_c__String__assign(&request.name, NAME) &&
    call(&g_leave, &request, &response, LEAVE_TIMEOUT_NS) && !response.success)
  {
    fprintf(stderr, "stack_relay: leave: %s\n", response.message.data);
  }
  sim_clock__srv__Leave_Request__fini(&request);
  sim_clock__srv__Leave_Response__fini(&response);
}

// A new time: round 0 delivers what waits; a time published again is answered again.
static bool take_clock(int64_t time)
{
  if (time == g_time) {
    return publish_done();
  }
  if (g_held.size) {
    fprintf(stderr, "stack_relay: what it published in the last round of %lld ns goes out "
      "now, at %lld ns (that frame was stopped)\n", (long long)g_time, (long long)time);
    if (!release()) {
      return false;
    }
  }
  g_time = time;
  g_round = 0;
  return deliver() && publish_done();
}

// Round k + 1: send what is held, wait for the count announced on the input, deliver, done.
static bool take_round(const sim_clock__msg__Round * msg)
{
  int64_t time = (int64_t)msg->time.sec * NS_PER_SEC + msg->time.nanosec;
  if (time != g_time || msg->round != g_round + 1) {
    return true;  // not the round that comes next: an old one, or one of another time
  }
  g_round = msg->round;
  if (!release()) {
    return false;
  }
  size_t expected = 0;
  for (size_t i = 0; i < msg->topics.size && i < msg->counts.size; i++) {
    if (strcmp(msg->topics.data[i].data, INPUT) == 0) {
      expected = msg->counts.data[i];
    }
  }
  int64_t deadline = now_ns() + TIMEOUT_NS;
  while (g_inbox.size < expected && !g_stop) {
    if (now_ns() > deadline) {
      fprintf(stderr, "stack_relay: round %u of %lld ns: not all messages arrived on " INPUT
        "; delivering what came\n", g_round, (long long)g_time);
      break;
    }
    wait_for(NULL, true, WAIT_NS);
    if (!take_input()) {
      return false;
    }
  }
  return deliver() && publish_done();
}

// Take what came, in the order of the rule: the input, the new times, then the rounds.
static bool spin_once(sim_clock__msg__Round * round)
{
  wait_for(NULL, false, WAIT_NS);
  if (!take_input()) {
    return false;
  }
  rmw_message_info_t info;
  rcl_ret_t ret;
  rosgraph_msgs__msg__Clock clock;
  while ((ret = rcl_take(&g_clock_sub, &clock, &info, NULL)) == RCL_RET_OK) {
    if (!take_clock((int64_t)clock.clock.sec * NS_PER_SEC + clock.clock.nanosec)) {
      return false;
    }
  }
  if (ret != RCL_RET_SUBSCRIPTION_TAKE_FAILED) {
    return failed("take /clock");
  }
  while ((ret = rcl_take(&g_rounds_sub, round, &info, NULL)) == RCL_RET_OK) {
    if (!take_round(round)) {
      return false;
    }
  }
  return ret == RCL_RET_SUBSCRIPTION_TAKE_FAILED || failed("take a round");
}

static const char USAGE[] =
  "usage: stack_relay [--readers N] [--ros-args ...]\n"
  "\n"
  "A deterministic participant in C (doc/frames.md): joins /sim_clock/join as '" NAME "' and\n"
  "relays each std_msgs/String of " INPUT " on " OUTPUT ", by round. Prints 'joined' once it\n"
  "takes part and 'got " INPUT " <clock> <sender's clock> <data>' per message delivered.\n"
  "\n"
  "options:\n"
  "  -h, --help   show this help and exit\n"
  "  --readers N  print 'matched' once its " OUTPUT " writer has matched N readers\n";

// Read the arguments before --ros-args into *readers; return -1 to go on, else the exit code
// (0 after --help, 2 for a usage error), having printed why. No ROS entity exists yet.
static int parse_arguments(int argc, char ** argv, size_t * readers)
{
  for (int i = 1; i < argc && strcmp(argv[i], "--ros-args") != 0; ++i) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(USAGE, stdout);
      return 0;
    }
    if (strcmp(argv[i], "--readers") == 0 && i + 1 < argc) {
      const char * value = argv[++i];
      char * end = NULL;
      *readers = (size_t)strtoul(value, &end, 10);
      if (value[0] >= '0' && value[0] <= '9' && *end == '\0') {
        continue;
      }
      fprintf(stderr, "%sstack_relay: error: argument --readers: expected a whole number of 0 "
        "or more, got '%s'\n", USAGE, value);
      return 2;
    }
    fprintf(stderr, "%sstack_relay: error: unrecognized argument '%s' (--readers N or --help)\n",
      USAGE, argv[i]);
    return 2;
  }
  return -1;
}

static bool set_up(int argc, char ** argv)
{
  rcl_init_options_t init_options = rcl_get_zero_initialized_init_options();
  CHECK(rcl_init_options_init(&init_options, g_alloc), "init options");
  g_context = rcl_get_zero_initialized_context();
  rcl_ret_t ret = rcl_init(argc, (const char * const *)argv, &init_options, &g_context);
  CHECK(rcl_init_options_fini(&init_options), "init options");
  CHECK(ret, "init");
  rcl_node_options_t node_options = rcl_node_get_default_options();
  CHECK(rcl_node_init(&g_node, "stack_relay", "", &g_context, &node_options), "node");
  rmw_qos_profile_t qos = rmw_qos_profile_default;  // reliable, volatile
  qos.depth = 1000;
  rcl_subscription_options_t sub_options = rcl_subscription_get_default_options();
  sub_options.qos = qos;
  rcl_publisher_options_t pub_options = rcl_publisher_get_default_options();
  pub_options.qos = qos;
  rcl_client_options_t client_options = rcl_client_get_default_options();
  client_options.qos.depth = 1000;  // every client of a service receives every response
  CHECK(rcl_subscription_init(&g_clock_sub, &g_node,
    ROSIDL_GET_MSG_TYPE_SUPPORT(rosgraph_msgs, msg, Clock), "/clock", &sub_options), "/clock");
  CHECK(rcl_subscription_init(&g_rounds_sub, &g_node,
    ROSIDL_GET_MSG_TYPE_SUPPORT(sim_clock, msg, Round), "/sim_clock/rounds", &sub_options),
    "rounds");
  CHECK(rcl_subscription_init(&g_input_sub, &g_node,
    ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, String), INPUT, &sub_options), INPUT);
  CHECK(rcl_publisher_init(&g_done_pub, &g_node,
    ROSIDL_GET_MSG_TYPE_SUPPORT(sim_clock, msg, Done), "/sim_clock/done", &pub_options), "done");
  CHECK(rcl_publisher_init(&g_output_pub, &g_node,
    ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, String), OUTPUT, &pub_options), OUTPUT);
  CHECK(rcl_client_init(&g_join, &g_node, ROSIDL_GET_SRV_TYPE_SUPPORT(sim_clock, srv, Join),
    "/sim_clock/join", &client_options), "join");
  CHECK(rcl_client_init(&g_leave, &g_node, ROSIDL_GET_SRV_TYPE_SUPPORT(sim_clock, srv, Leave),
    "/sim_clock/leave", &client_options), "leave");
  CHECK(rcl_wait_set_init(&g_wait_set, 3, 0, 0, 1, 0, 0, &g_context, g_alloc), "wait set");
  if (rmw_serialized_message_init(&g_scratch, 256, &g_alloc) != RMW_RET_OK) {
    return failed("serialized message");
  }
  return true;
}

int main(int argc, char ** argv)
{
  size_t readers = 0, matched = 0;
  int code = parse_arguments(argc, argv, &readers);
  if (code >= 0) {
    return code;
  }
  g_alloc = rcl_get_default_allocator();  // the rcl entities are static: zero-initialized
  struct sigaction action = {.sa_handler = on_signal};
  sigaction(SIGINT, &action, NULL);
  sigaction(SIGTERM, &action, NULL);

  bool ok = set_up(argc, argv) && join(), joined = ok;
  // A round started before the server's writer matched this reader would be lost.
  int64_t deadline = now_ns() + TIMEOUT_NS;
  size_t publishers = 0, subscribers = 0;
  while (ok && !g_stop && (publishers < 1 || subscribers < 1)) {
    ok = rcl_subscription_get_publisher_count(&g_rounds_sub, &publishers) == RCL_RET_OK &&
      rcl_publisher_get_subscription_count(&g_done_pub, &subscribers) == RCL_RET_OK;
    if (ok && now_ns() > deadline) {
      fprintf(stderr, "stack_relay: the server did not match its rounds and done topics\n");
      ok = false;
    }
    struct timespec pause = {0, 10 * 1000000L};
    nanosleep(&pause, NULL);
  }
  if (ok && !g_stop) {
    printf("joined\n");
    fflush(stdout);
  }
  sim_clock__msg__Round round;
  memset(&round, 0, sizeof(round));
  sim_clock__msg__Round__init(&round);
  while (ok && !g_stop) {
    ok = spin_once(&round);
    if (ok && readers && matched < readers &&
      rcl_publisher_get_subscription_count(&g_output_pub, &matched) == RCL_RET_OK &&
      matched >= readers)
    {
      printf("matched\n");
      fflush(stdout);
    }
  }
  sim_clock__msg__Round__fini(&round);
  if (joined) {
    leave();
  }
  clear(&g_inbox);
  clear(&g_held);
  free(g_inbox.items);
  free(g_held.items);
  if (g_scratch.buffer) {
    rmw_serialized_message_fini(&g_scratch);
  }
  // The entities (in any order; one not made is skipped by rcl), then the node, the context.
  rcl_ret_t ret = rcl_wait_set_fini(&g_wait_set) | rcl_client_fini(&g_leave, &g_node) |
    rcl_client_fini(&g_join, &g_node) | rcl_publisher_fini(&g_output_pub, &g_node) |
    rcl_publisher_fini(&g_done_pub, &g_node) | rcl_subscription_fini(&g_input_sub, &g_node) |
    rcl_subscription_fini(&g_rounds_sub, &g_node) | rcl_subscription_fini(&g_clock_sub, &g_node);
  ret |= rcl_node_fini(&g_node);
  if (rcl_context_is_valid(&g_context)) {
    ret |= rcl_shutdown(&g_context);
  }
  ret |= rcl_context_fini(&g_context);
  if (joined && ret != RCL_RET_OK) {
    failed("fini");
  }
  rcl_reset_error();
  return ok || g_stop ? 0 : 1;
}
