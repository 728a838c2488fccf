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

// libsim_clock_lockstep.so: the preloaded half of the lockstep layer (doc/lockstep-layer.md).
//
// It defines the rmw functions that rcl calls and that say when a process has finished a
// /clock time, and forwards each to the rmw implementation the process has loaded (found by
// the library that defines it, never by RTLD_NEXT: Python loads the ROS libraries with
// RTLD_LOCAL, out of RTLD_NEXT's sight).
//
// - rmw_create_subscription: a subscription to /clock (a node with use_sim_time) starts the
//   agent (lockstep.h) and has it join under the node's full name.
// - rmw_take, rmw_take_with_info: the process took the /clock of time t.
// - rmw_wait: each thread that waits is tracked; a wait that would block (a timeout other than
//   0) first looks with a timeout of 0, and if nothing is ready, the thread is idle until it
//   returns. Once the process has taken a /clock and every thread that waits is idle, the
//   agent says done for that time.
// - rmw_trigger_guard_condition: a guard condition of an idle thread's wait wakes it: that
//   thread is busy again (a timer made due by the new time, an executor's work).
// - Work handed on (rclpy's MultiThreadedExecutor, see "work handed on" below): what a wait
//   found ready is out until the thread waits on it again or a thread takes it (the takes,
//   rmw_take_request, rmw_take_response, and rcl's rcl_timer_call); a thread that never waits
//   is busy from a take until its second trigger of the guard condition it triggered first.
// - rmw_destroy_node: the agent leaves for the node.
//
// Under the next-frame rule (SIM_CLOCK_LOCKSTEP_RULE=next_frame) the layer also holds what
// the process's subscriptions receive: it takes each message itself, serialized, and hands it
// to the process's take (deserialized) only once the frame it belongs to is released. A frame
// t is released when the server's Round of t has come, the /clock of t has, and each
// subscription holds the count the Round says for its topic: then the /clock of t, the first
// messages of each named topic up to its count, and everything of the other topics become
// takeable at once. What the process publishes goes out at once and is counted by topic, for
// the done (rmw_publish, rmw_publish_serialized_message, rmw_publish_loaned_message).
//
// In rounds (SIM_CLOCK_LOCKSTEP_RULE=rounds) it holds both ways: what the process publishes
// is kept (serialized) until the server's next Round, and what it receives is released at
// a new /clock (round 0: everything held) and at each Round once its counts have come, in
// the order of the messages' bytes.
//
// rmw_create_client: a process that makes a client of the server's ~/join takes part on its
// own (sim_clock's participant helper): the layer keeps out of its way.
// rmw_send_request, rmw_take_response: a service call within a frame is part of that frame;
// the process is not idle while an answer is to come (see "services" below).
//
// What it cannot hold it says once on stderr: a timer on the steady or system clock that
// fires (rcl_timer_call), a publish from a thread that neither waits nor runs a callback it
// took, an event callback set on /clock (rmw_subscription_set_on_new_message_callback: an
// EventsExecutor, which never calls rmw_wait).
//
// Until the agent joins, each function only forwards (a thread-local and an atomic load). When
// the server goes, what the layer held is handed to the process (let_go), then it forwards.

#define _GNU_SOURCE  // dladdr, dl_iterate_phdr, RTLD_NOLOAD

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rmw/rmw.h>

#include "lockstep.h"

#define CLOCK_TOPIC "/clock"
#define NS_PER_SEC 1000000000LL
#define LEAVE_TIMEOUT_NS (NS_PER_SEC / 2)  // a courtesy: the server may be gone
#define MAX_THREADS 64    // threads that wait, tracked at once
#define MAX_ENTITIES 256  // subscriptions, publishers, nodes of the process
#define TOPIC_LENGTH 256

#define LOG(...) do {fprintf(stderr, "sim_clock lockstep: " __VA_ARGS__); fputc('\n', stderr);} \
  while (0)

typedef rmw_subscription_t * (* create_subscription_t)(
  const rmw_node_t *, const rosidl_message_type_support_t *, const char *,
  const rmw_qos_profile_t *, const rmw_subscription_options_t *);
typedef rmw_ret_t (* destroy_subscription_t)(rmw_node_t *, rmw_subscription_t *);
typedef rmw_ret_t (* destroy_node_t)(rmw_node_t *);
typedef rmw_ret_t (* take_t)(
  const rmw_subscription_t *, void *, bool *, rmw_subscription_allocation_t *);
typedef rmw_ret_t (* take_with_info_t)(
  const rmw_subscription_t *, void *, bool *, rmw_message_info_t *,
  rmw_subscription_allocation_t *);
typedef rmw_ret_t (* trigger_t)(const rmw_guard_condition_t *);
typedef rmw_ret_t (* wait_t)(
  rmw_subscriptions_t *, rmw_guard_conditions_t *, rmw_services_t *, rmw_clients_t *,
  rmw_events_t *, rmw_wait_set_t *, const rmw_time_t *);
typedef rmw_publisher_t * (* create_publisher_t)(
  const rmw_node_t *, const rosidl_message_type_support_t *, const char *,
  const rmw_qos_profile_t *, const rmw_publisher_options_t *);
typedef rmw_ret_t (* destroy_publisher_t)(rmw_node_t *, rmw_publisher_t *);
typedef rmw_ret_t (* publish_t)(const rmw_publisher_t *, const void *,
  rmw_publisher_allocation_t *);
typedef rmw_ret_t (* publish_loaned_t)(const rmw_publisher_t *, void *,
  rmw_publisher_allocation_t *);
typedef rmw_ret_t (* publish_serialized_t)(const rmw_publisher_t *,
  const rmw_serialized_message_t *, rmw_publisher_allocation_t *);
typedef rmw_ret_t (* take_serialized_t)(const rmw_subscription_t *, rmw_serialized_message_t *,
  bool *, rmw_subscription_allocation_t *);
typedef rmw_ret_t (* take_serialized_with_info_t)(const rmw_subscription_t *,
  rmw_serialized_message_t *, bool *, rmw_message_info_t *, rmw_subscription_allocation_t *);
typedef rmw_ret_t (* deserialize_t)(const rmw_serialized_message_t *,
  const rosidl_message_type_support_t *, void *);
typedef rmw_ret_t (* serialize_t)(const void *, const rosidl_message_type_support_t *,
  rmw_serialized_message_t *);
typedef rmw_client_t * (* create_client_t)(const rmw_node_t *,
  const rosidl_service_type_support_t *, const char *, const rmw_qos_profile_t *);
typedef rmw_ret_t (* count_matched_subscriptions_t)(const rmw_publisher_t *, size_t *);
typedef rmw_ret_t (* count_matched_publishers_t)(const rmw_subscription_t *, size_t *);
typedef rmw_ret_t (* count_subscribers_t)(const rmw_node_t *, const char *, size_t *);
typedef rmw_ret_t (* take_request_t)(const rmw_service_t *, rmw_service_info_t *, void *,
  bool *);
typedef rmw_ret_t (* take_response_t)(const rmw_client_t *, rmw_service_info_t *, void *,
  bool *);
typedef rmw_ret_t (* send_request_t)(const rmw_client_t *, const void *, int64_t *);
typedef rmw_ret_t (* server_is_available_t)(const rmw_node_t *, const rmw_client_t *, bool *);
typedef rmw_ret_t (* destroy_service_t)(rmw_node_t *, rmw_service_t *);
typedef rmw_ret_t (* destroy_client_t)(rmw_node_t *, rmw_client_t *);
typedef rmw_ret_t (* destroy_guard_condition_t)(rmw_guard_condition_t *);
typedef rmw_ret_t (* set_on_new_message_t)(rmw_subscription_t *, rmw_event_callback_t,
  const void *);

// rcl's timers, wrapped too: a timer's call is the take of a worker that runs its callback.
// Declared here, opaque: the layer is built against the rmw headers only.
typedef struct rcl_timer_s rcl_timer_t;
typedef struct rcl_timer_call_info_s rcl_timer_call_info_t;
typedef struct rcl_guard_condition_s rcl_guard_condition_t;
typedef struct rcl_clock_s rcl_clock_t;
typedef rmw_ret_t (* timer_clock_t)(const rcl_timer_t *, rcl_clock_t **);
// rcl_clock_t begins with its rcl_clock_type_t: 1 ROS time, 2 system time, 3 steady time.
#define ROS_TIME 1
#define STEADY_TIME 3
typedef rmw_ret_t (* timer_call_t)(rcl_timer_t *);
typedef rmw_ret_t (* timer_call_with_info_t)(rcl_timer_t *, rcl_timer_call_info_t *);
typedef const rcl_guard_condition_t * (* timer_get_guard_condition_t)(const rcl_timer_t *);
typedef rmw_guard_condition_t * (* guard_condition_get_rmw_handle_t)(
  const rcl_guard_condition_t *);

// The rmw implementation's functions.
static struct
{
  create_subscription_t create_subscription;
  destroy_subscription_t destroy_subscription;
  destroy_node_t destroy_node;
  take_t take;
  take_with_info_t take_with_info;
  trigger_t trigger_guard_condition;
  wait_t wait;
  create_publisher_t create_publisher;
  destroy_publisher_t destroy_publisher;
  publish_t publish;
  publish_loaned_t publish_loaned;
  publish_serialized_t publish_serialized;
  take_serialized_t take_serialized;
  take_serialized_with_info_t take_serialized_with_info;
  deserialize_t deserialize;
  serialize_t serialize;
  create_client_t create_client;
  count_matched_subscriptions_t count_matched_subscriptions;
  count_matched_publishers_t count_matched_publishers;
  count_subscribers_t count_subscribers;
  take_request_t take_request;
  take_response_t take_response;
  send_request_t send_request;
  server_is_available_t server_is_available;
  destroy_service_t destroy_service;
  destroy_client_t destroy_client;
  destroy_guard_condition_t destroy_guard_condition;
  set_on_new_message_t set_on_new_message;
} g_real;
static pthread_once_t g_resolved = PTHREAD_ONCE_INIT;

// rcl's functions (the loaded library that defines rcl_timer_call).
static struct
{
  timer_call_t timer_call;
  timer_call_with_info_t timer_call_with_info;
  timer_get_guard_condition_t timer_get_guard_condition;
  guard_condition_get_rmw_handle_t guard_condition_get_rmw_handle;
  timer_clock_t timer_clock;
} g_rcl;
static pthread_once_t g_rcl_resolved = PTHREAD_ONCE_INIT;

// The agent's functions, once it is loaded.
static struct
{
  lockstep_agent_run_t run;
  lockstep_agent_add_t add;
  lockstep_agent_remove_t remove;
  lockstep_agent_done_t done;
  lockstep_agent_stop_t stop;
  lockstep_agent_again_t again;
  lockstep_agent_forget_t forget;
} g_agent;

// Set on the agent's thread, and around each call into the agent: its rmw calls pass through.
static __thread bool t_agent = false;
// The agent has sent a join (or joined): the waits and takes of the process are tracked.
static atomic_bool g_active = false;
// Default rule: the server is on the graph (and the process takes part through the layer):
// the waits of the process are tracked already, so that a thread that waits when the agent
// joins (a server step may follow at once) is known for what it is, as are the /clock
// subscriptions it waits on. Not before: a process that never meets a server waits as it
// would without the layer. A thread whose wait began before is followed from its next one
// (a server sends its time again while it stands, at publish_rate, which wakes a /clock
// subscription's wait).
static atomic_bool g_tracking = false;
// Next frame and rounds: the layer stopped following the process (the server is gone) while
// it held messages; it hands those over, and what comes after them, until it holds none.
static atomic_bool g_letting_go = false;
// The calling thread has called rmw_wait: it is a waiting thread, never a worker.
static __thread bool t_waited = false;
// Said once: what the layer cannot hold (doc/lockstep-layer.md, "What it does not do yet").
static atomic_bool g_wall_timer_said = false, g_events_said = false, g_outside_said = false;

// What a thread that waits is doing. BUSY: anything but waiting idle. PROBING: in a wait that
// would block, looking whether anything is ready. IDLE: in a wait that found nothing ready.
// WOKEN: a guard condition of its wait was triggered since it looked: it is about to be busy.
typedef enum {SLOT_FREE, SLOT_BUSY, SLOT_PROBING, SLOT_IDLE, SLOT_WOKEN} slot_state_t;

// What a thread that never waits (a worker of a thread pool: rclpy's MultiThreadedExecutor)
// is doing with what the waiting thread handed it. NONE: nothing the layer knows of. TAKEN:
// it took a message, a request, a response or a timer's call. RUNNING: it has since
// triggered a guard condition (the executor's: the entity may be waited on again), and runs
// the callback until it triggers that guard condition again.
typedef enum {WORK_NONE, WORK_TAKEN, WORK_RUNNING} work_state_t;

typedef struct
{
  slot_state_t state;
  void ** guard_conditions;  // the guard conditions of its wait (their rmw data pointers)
  size_t guard_condition_count, capacity;
  bool waits;  // it has called rmw_wait: a waiting thread, else a worker
  work_state_t work;  // a worker's
  const void * work_guard_condition;  // RUNNING: the guard condition that ends it
  // What its waits found ready (the entities' rmw data pointers) and handed on: out until a
  // wait of the thread is given it again, or a thread takes it, or it is destroyed.
  const void ** out;
  size_t out_count, out_capacity;
} slot_t;

// Everything below is guarded by g_lock.
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static slot_t g_slots[MAX_THREADS];
static bool g_slots_full_said = false;
static const rmw_node_t * g_nodes[MAX_ENTITIES];  // the nodes that subscribed to /clock
static char g_node_names[MAX_ENTITIES][TOPIC_LENGTH];
static bool g_node_added[MAX_ENTITIES];  // handed to the agent (at the process's first wait)
static atomic_bool g_adds_pending = false;
static bool g_helper = false;  // the process takes part through participant.spin itself
static int64_t g_clock_ns = -1;     // the last /clock time the process took
static bool g_clock_pending = false;  // taken since the last done

// A message a subscription received, held by the layer (next frame), with its info.
typedef struct
{
  uint8_t * bytes;
  size_t length;
  rmw_message_info_t info;
} held_t;

// A subscription of the process's nodes.
typedef struct
{
  const rmw_subscription_t * subscription;  // NULL: a free entry
  const void * data;  // what a wait is given for it
  const rmw_node_t * node;
  const rosidl_message_type_support_t * type_support;
  char topic[TOPIC_LENGTH];
  bool clock;       // /clock
  // /clock, default rule: the thread (slot index + 1) whose last wait was given it (0: none),
  // and whether the process took a /clock on it since the last done.
  int waiter;
  bool clock_taken;
  held_t * held;    // next frame: what it received, oldest first
  size_t size, capacity;
  size_t released;  // how many of the first held the process may take
} sub_t;

// A publisher of the process's nodes, and what it published since the last done.
typedef struct
{
  const rmw_publisher_t * publisher;  // NULL: a free entry
  const rmw_node_t * node;
  const rosidl_message_type_support_t * type_support;
  char topic[TOPIC_LENGTH];
  bool counted;  // a topic of the participant's (not ROS's own, nor the server's)
} pub_t;

static sub_t g_subs[MAX_ENTITIES];
static pub_t g_pubs[MAX_ENTITIES];

// A service client of the process's nodes, and how many of its requests await an answer.
// A request sent within a frame is part of that frame: the process is not idle while an
// answer to a followed client is to come (see "services" below).
typedef struct
{
  const rmw_client_t * client;  // NULL: a free entry
  const rmw_node_t * node;
  bool followed;  // neither the server's own services nor an action's get_result
  uint32_t pending;
} client_t;

static client_t g_clients[MAX_ENTITIES];
static uint32_t g_requests_pending = 0;  // the sum of the followed clients' pending
// Next frame: what each topic the process publishes on got since the last done.
static char g_count_topics[MAX_ENTITIES][TOPIC_LENGTH];
static uint32_t g_counts[MAX_ENTITIES];
static size_t g_count_size = 0;
// Next frame: the last Round that came and was not released yet; the frame released last.
static bool g_round_new = false;
static int64_t g_round_ns = -1, g_released_ns = -1;
// Next frame: the time of the last join's answer, until its /clock is released (-1: none).
static int64_t g_join_ns = -1;
static char g_round_topics[MAX_ENTITIES][TOPIC_LENGTH];
static uint32_t g_round_counts[MAX_ENTITIES];
static size_t g_round_size = 0;
static const rmw_guard_condition_t * g_wake = NULL;  // added to every wait of the process
// Rounds: the frame and round under way; the round of the last Round, and whether what the
// process held went out for it; the round the pending done is for; a /clock of the frame's
// time that came again (its done is said again).
static int64_t g_frame_ns = -1;
static uint32_t g_frame_round = 0, g_round_k = 0, g_pending_round = 0;
static bool g_round_sent = false, g_again = false;
// Rounds: what the process published, held until the next round, in the order it published.
typedef struct
{
  const rmw_publisher_t * publisher;
  uint8_t * bytes;
  size_t length;
} out_t;
static out_t * g_out = NULL;
static size_t g_out_size = 0, g_out_capacity = 0;
static char g_server_prefix[TOPIC_LENGTH];  // "<server>/": its topics are not counted (set once)
static bool g_agent_started = false, g_agent_failed = false;
static pthread_t g_agent_thread;
static size_t g_domain_id = 0;
static lockstep_host_t g_host;

// The thread's slot (index + 1; 0: none yet), freed when the thread ends.
static __thread int t_slot = 0;
static pthread_key_t g_slot_key;
static pthread_once_t g_slot_key_once = PTHREAD_ONCE_INIT;

// What a wait that would block was given, kept while it looks with a timeout of 0 (which sets
// every entry that is not ready to NULL), to be given again to the wait that blocks.
static __thread void ** t_saved = NULL;
static __thread size_t t_saved_capacity = 0;

static void full_name(const rmw_node_t * node, char * name, size_t size);

// ---- the rmw implementation -------------------------------------------------------------

typedef struct
{
  char ** names;
  size_t size, capacity;
} names_t;

static int collect_name(struct dl_phdr_info * info, size_t size, void * data)
{
  (void)size;
  names_t * names = data;
  if (!info->dlpi_name || !info->dlpi_name[0]) {
    return 0;
  }
  if (names->size == names->capacity) {
    size_t capacity = names->capacity ? 2 * names->capacity : 64;
    char ** grown = realloc(names->names, capacity * sizeof(*grown));
    if (!grown) {
      return 1;
    }
    names->names = grown;
    names->capacity = capacity;
  }
  char * copy = strdup(info->dlpi_name);
  if (!copy) {
    return 1;
  }
  names->names[names->size++] = copy;
  return 0;
}

// The first loaded library, in load order, that itself defines `symbol` (not this one, nor
// one that merely depends on the one that does). NULL if none.
static void * find_defining(const char * symbol)
{
  Dl_info self;
  if (!dladdr((void *)&find_defining, &self)) {
    return NULL;
  }
  names_t names = {NULL, 0, 0};
  dl_iterate_phdr(collect_name, &names);  // names first: no dlopen under the loader's lock
  void * found = NULL;
  for (size_t i = 0; i < names.size; i++) {
    if (!found && strcmp(names.names[i], self.dli_fname) != 0) {
      void * handle = dlopen(names.names[i], RTLD_LAZY | RTLD_NOLOAD);
      void * defined = handle ? dlsym(handle, symbol) : NULL;
      Dl_info where;
      if (defined && dladdr(defined, &where) && strcmp(where.dli_fname, names.names[i]) == 0) {
        found = handle;
      } else if (handle) {
        dlclose(handle);
      }
    }
    free(names.names[i]);
  }
  free(names.names);
  return found;
}

// The library that defines rmw_wait: rmw_implementation where rcl calls through it (an apt
// install), else the rmw rcl links (the PyPI wheels: rmw_fastrtps_cpp). Or the library named
// by SIM_CLOCK_LOCKSTEP_RMW. NULL if none.
static void * find_rmw(void)
{
  const char * named = getenv("SIM_CLOCK_LOCKSTEP_RMW");
  if (named && named[0]) {
    return dlopen(named, RTLD_LAZY | RTLD_NOLOAD);
  }
  return find_defining("rmw_wait");
}

static void resolve(void)
{
  void * rmw = find_rmw();
  const char * server = getenv("SIM_CLOCK_LOCKSTEP_SERVER");
  snprintf(g_server_prefix, sizeof(g_server_prefix), "%s/",
    server && server[0] ? server : "/sim_clock");
  if (rmw) {
    // A function pointer from dlsym's void *, as POSIX allows.
    *(void **)&g_real.create_subscription = dlsym(rmw, "rmw_create_subscription");
    *(void **)&g_real.destroy_subscription = dlsym(rmw, "rmw_destroy_subscription");
    *(void **)&g_real.destroy_node = dlsym(rmw, "rmw_destroy_node");
    *(void **)&g_real.take = dlsym(rmw, "rmw_take");
    *(void **)&g_real.take_with_info = dlsym(rmw, "rmw_take_with_info");
    *(void **)&g_real.trigger_guard_condition = dlsym(rmw, "rmw_trigger_guard_condition");
    *(void **)&g_real.wait = dlsym(rmw, "rmw_wait");
    *(void **)&g_real.create_publisher = dlsym(rmw, "rmw_create_publisher");
    *(void **)&g_real.destroy_publisher = dlsym(rmw, "rmw_destroy_publisher");
    *(void **)&g_real.publish = dlsym(rmw, "rmw_publish");
    *(void **)&g_real.publish_loaned = dlsym(rmw, "rmw_publish_loaned_message");
    *(void **)&g_real.publish_serialized = dlsym(rmw, "rmw_publish_serialized_message");
    *(void **)&g_real.take_serialized = dlsym(rmw, "rmw_take_serialized_message");
    *(void **)&g_real.take_serialized_with_info =
      dlsym(rmw, "rmw_take_serialized_message_with_info");
    *(void **)&g_real.deserialize = dlsym(rmw, "rmw_deserialize");
    *(void **)&g_real.serialize = dlsym(rmw, "rmw_serialize");
    *(void **)&g_real.create_client = dlsym(rmw, "rmw_create_client");
    *(void **)&g_real.count_matched_subscriptions =
      dlsym(rmw, "rmw_publisher_count_matched_subscriptions");
    *(void **)&g_real.count_matched_publishers =
      dlsym(rmw, "rmw_subscription_count_matched_publishers");
    *(void **)&g_real.count_subscribers = dlsym(rmw, "rmw_count_subscribers");
    *(void **)&g_real.take_request = dlsym(rmw, "rmw_take_request");
    *(void **)&g_real.take_response = dlsym(rmw, "rmw_take_response");
    *(void **)&g_real.send_request = dlsym(rmw, "rmw_send_request");
    *(void **)&g_real.server_is_available = dlsym(rmw, "rmw_service_server_is_available");
    *(void **)&g_real.destroy_service = dlsym(rmw, "rmw_destroy_service");
    *(void **)&g_real.destroy_client = dlsym(rmw, "rmw_destroy_client");
    *(void **)&g_real.destroy_guard_condition = dlsym(rmw, "rmw_destroy_guard_condition");
    *(void **)&g_real.set_on_new_message =
      dlsym(rmw, "rmw_subscription_set_on_new_message_callback");
  }
  if (!g_real.create_subscription || !g_real.destroy_subscription || !g_real.destroy_node ||
    !g_real.take || !g_real.take_with_info || !g_real.trigger_guard_condition || !g_real.wait ||
    !g_real.create_publisher || !g_real.destroy_publisher || !g_real.publish ||
    !g_real.publish_loaned || !g_real.publish_serialized || !g_real.take_serialized ||
    !g_real.take_serialized_with_info || !g_real.deserialize || !g_real.serialize ||
    !g_real.create_client || !g_real.count_matched_subscriptions ||
    !g_real.count_matched_publishers || !g_real.count_subscribers || !g_real.take_request ||
    !g_real.take_response || !g_real.send_request || !g_real.server_is_available ||
    !g_real.destroy_service || !g_real.destroy_client || !g_real.destroy_guard_condition ||
    !g_real.set_on_new_message)
  {
    // rcl called an rmw function, so an implementation is loaded: one this cannot find
    // cannot be called, and the process cannot go on.
    LOG("cannot find the rmw implementation's functions (%s); name its library in "
      "SIM_CLOCK_LOCKSTEP_RMW, e.g. librmw_fastrtps_cpp.so", rmw ? "some are missing" :
      "no loaded library defines rmw_wait");
    abort();
  }
}

#define RESOLVE() pthread_once(&g_resolved, resolve)

static void resolve_rcl(void)
{
  void * rcl = find_defining("rcl_timer_call");
  if (rcl) {
    *(void **)&g_rcl.timer_call = dlsym(rcl, "rcl_timer_call");
    *(void **)&g_rcl.timer_call_with_info = dlsym(rcl, "rcl_timer_call_with_info");
    *(void **)&g_rcl.timer_get_guard_condition = dlsym(rcl, "rcl_timer_get_guard_condition");
    *(void **)&g_rcl.guard_condition_get_rmw_handle =
      dlsym(rcl, "rcl_guard_condition_get_rmw_handle");
    *(void **)&g_rcl.timer_clock = dlsym(rcl, "rcl_timer_clock");
  }
  if (!g_rcl.timer_call || !g_rcl.timer_get_guard_condition ||
    !g_rcl.guard_condition_get_rmw_handle || !g_rcl.timer_clock)
  {
    // The process called rcl_timer_call, so rcl is loaded: one this cannot find cannot be
    // called.
    LOG("cannot find rcl's timer functions (%s)", rcl ? "some are missing" :
      "no loaded library defines rcl_timer_call");
    abort();
  }
}

// ---- threads that wait ------------------------------------------------------------------

static void free_slot(void * value)
{
  size_t index = (size_t)(uintptr_t)value - 1;
  pthread_mutex_lock(&g_lock);
  g_slots[index].state = SLOT_FREE;
  g_slots[index].guard_condition_count = 0;
  g_slots[index].waits = false;
  g_slots[index].work = WORK_NONE;
  g_slots[index].out_count = 0;
  pthread_mutex_unlock(&g_lock);
  free(t_saved);
  t_saved = NULL;
  t_saved_capacity = 0;
}

static void make_slot_key(void)
{
  if (pthread_key_create(&g_slot_key, free_slot) != 0) {
    LOG("cannot track threads (pthread_key_create failed)");
  }
}

// The calling thread's slot, under g_lock; NULL when every slot is taken (the thread is not
// tracked, and then the process may be said done while it works: said once).
static slot_t * my_slot(void)
{
  if (t_slot) {
    return &g_slots[t_slot - 1];
  }
  for (size_t i = 0; i < MAX_THREADS; i++) {
    if (g_slots[i].state == SLOT_FREE) {
      if (pthread_setspecific(g_slot_key, (void *)(uintptr_t)(i + 1)) != 0) {
        return NULL;
      }
      t_slot = (int)i + 1;
      g_slots[i].state = SLOT_BUSY;
      g_slots[i].waits = false;
      g_slots[i].work = WORK_NONE;
      g_slots[i].out_count = 0;
      return &g_slots[i];
    }
  }
  if (!g_slots_full_said) {
    g_slots_full_said = true;
    LOG("more than %d threads wait: the others are not tracked", MAX_THREADS);
  }
  return NULL;
}

// Keep the guard conditions of a wait in the slot, for rmw_trigger_guard_condition.
static bool keep_guard_conditions(slot_t * slot, const rmw_guard_conditions_t * gcs)
{
  size_t count = gcs ? gcs->guard_condition_count : 0;
  if (count > slot->capacity) {
    void ** grown = realloc(slot->guard_conditions, count * sizeof(*grown));
    if (!grown) {
      return false;
    }
    slot->guard_conditions = grown;
    slot->capacity = count;
  }
  if (count) {
    memcpy(slot->guard_conditions, gcs->guard_conditions, count * sizeof(void *));
  }
  slot->guard_condition_count = count;
  return true;
}

// ---- services ----------------------------------------------------------------------------
//
// A service call within a frame is part of that frame: from rmw_send_request until its answer
// is taken (rmw_take_response), the process is not idle. Only a request that a server was
// there to take is awaited (DDS drops one sent before any server matched the client), and only
// while that server is on the graph (one that went away will not answer). Not followed: the
// server's own services (a node that steps the clock from a callback would wait on itself),
// and an action's get_result, whose answer comes when the goal ends, frames later.

// Under g_lock: the entry of a client of the process; NULL if it is not one.
static client_t * find_client(const rmw_client_t * client)
{
  for (size_t i = 0; client && i < MAX_ENTITIES; i++) {
    if (g_clients[i].client == client) {
      return &g_clients[i];
    }
  }
  return NULL;
}

// Under g_lock: forget what a client awaits.
static void forget_requests(client_t * entry)
{
  g_requests_pending -= entry->pending;
  entry->pending = 0;
}

// Under g_lock: whether an answer to a request of the process is still to come. A client
// whose server has left the graph awaits nothing any more (said once).
static bool answers_to_come(void)
{
  static bool gone_said = false;
  for (size_t i = 0; g_requests_pending && i < MAX_ENTITIES; i++) {
    client_t * entry = &g_clients[i];
    bool available = true;
    if (entry->client && entry->pending &&
      g_real.server_is_available(entry->node, entry->client, &available) == RMW_RET_OK &&
      !available)
    {
      if (!gone_said) {
        gone_said = true;
        LOG("the server of %s left with a request of the process unanswered: the frame "
          "waits for it no more", entry->client->service_name);
      }
      forget_requests(entry);
    }
  }
  return g_requests_pending != 0;
}

// Under g_lock: the process has taken a /clock it has not said done for, and every thread
// that waits is idle. Then returns true with the time in *time_ns (the pending mark cleared).
static bool finished(int64_t * time_ns, uint32_t * round)
{
  if (!g_clock_pending || answers_to_come()) {
    return false;
  }
  for (size_t i = 0; i < MAX_THREADS; i++) {
    if (g_slots[i].state == SLOT_BUSY || g_slots[i].state == SLOT_PROBING ||
      g_slots[i].state == SLOT_WOKEN || g_slots[i].work != WORK_NONE || g_slots[i].out_count)
    {
      return false;
    }
  }
  // Default rule: every /clock subscription a thread waits on has taken the new time too.
  // One thread's take is not the process's: another thread, idle in its wait, may be about to
  // wake for the same /clock on its own node's subscription (two executors on two threads).
  bool clock_rule = !g_host.next_frame && !g_host.rounds;
  for (size_t i = 0; clock_rule && i < MAX_ENTITIES; i++) {
    if (g_subs[i].subscription && g_subs[i].clock && g_subs[i].waiter &&
      !g_subs[i].clock_taken)
    {
      return false;
    }
  }
  for (size_t i = 0; clock_rule && i < MAX_ENTITIES; i++) {
    g_subs[i].clock_taken = false;
  }
  g_clock_pending = false;
  *time_ns = g_clock_ns;
  *round = g_pending_round;
  return true;
}

// Say done for `time_ns` (rounds: its round `round`; next frame and rounds: with what the
// process published since the last done).
static void say_done(int64_t time_ns, uint32_t round)
{
  static char topics[MAX_ENTITIES][TOPIC_LENGTH];  // one done at a time: under g_done_lock
  static const char * names[MAX_ENTITIES];
  static uint32_t counts[MAX_ENTITIES];
  static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&done_lock);
  size_t size = 0;
  if (g_host.next_frame || g_host.rounds) {
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < g_count_size; i++) {
      memcpy(topics[i], g_count_topics[i], TOPIC_LENGTH);
      names[i] = topics[i];
      counts[i] = g_counts[i];
      g_counts[i] = 0;
    }
    size = g_count_size;
    pthread_mutex_unlock(&g_lock);
  }
  t_agent = true;
  g_agent.done(time_ns, round, names, counts, size);
  t_agent = false;
  pthread_mutex_unlock(&done_lock);
}

// The arrays of a wait, saved before it looks and given back before it blocks.
typedef struct
{
  size_t * count;
  void *** items;
} array_t;

static bool save(const array_t * arrays, size_t n)
{
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    total += arrays[i].count ? *arrays[i].count : 0;
  }
  if (total > t_saved_capacity) {
    void ** grown = realloc(t_saved, total * sizeof(*grown));
    if (!grown) {
      return false;
    }
    t_saved = grown;
    t_saved_capacity = total;
  }
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    if (arrays[i].count && *arrays[i].count) {
      memcpy(t_saved + at, *arrays[i].items, *arrays[i].count * sizeof(void *));
      at += *arrays[i].count;
    }
  }
  return true;
}

static void restore(const array_t * arrays, size_t n)
{
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    if (arrays[i].count && *arrays[i].count) {
      memcpy(*arrays[i].items, t_saved + at, *arrays[i].count * sizeof(void *));
      at += *arrays[i].count;
    }
  }
}

// ---- work handed on ---------------------------------------------------------------------
//
// An executor whose waiting thread hands what is ready to other threads (rclpy's
// MultiThreadedExecutor: the waiting thread submits a handler per ready entity to a pool, and
// waits again at once) has work in flight while its waiting thread blocks with nothing ready.
// Two rules hold the process's done while it is:
// - Out: what a wait found ready is out, until a wait of the same thread is given it again
//   (rclpy leaves an entity out of its waits while its handler is pending, and while a
//   callback of its mutually exclusive group runs), a thread takes it, or it is destroyed.
//   A waiting thread with anything out is not idle. This covers the hand-over, before the
//   worker has taken anything.
// - Workers: a thread that never waits is busy from a take (a message, a request, a
//   response, a timer's call) through the first guard condition it triggers after it (rclpy:
//   "taken, wait on it again"), until it triggers that guard condition again (rclpy: the
//   callback has ended). A trigger of a worker that took nothing (rclpy: a handler whose
//   callback group was busy) changes nothing.

// Under g_lock: the calling thread's slot if it is a worker (it never waited); NULL if not.
static slot_t * worker_slot(void)
{
  bool known = t_slot != 0;
  slot_t * slot = my_slot();
  if (slot && !known) {
    if (t_waited) {  // it waits (its waits so far were not tracked): busy, since it takes
      slot->waits = true;
    } else {
      slot->state = SLOT_IDLE;  // not a waiting thread: only its work counts
    }
  }
  return slot && !slot->waits ? slot : NULL;
}

// Under g_lock: `entity` (the rmw data pointer of what a wait is given) is out no more.
static void not_out(const void * entity)
{
  for (size_t i = 0; entity && i < MAX_THREADS; i++) {
    slot_t * slot = &g_slots[i];
    for (size_t j = 0; j < slot->out_count; ) {
      if (slot->out[j] == entity) {
        slot->out[j] = slot->out[--slot->out_count];
      } else {
        j++;
      }
    }
  }
}

// Under g_lock: the calling thread took `entity`: it is out no more; a worker now runs it.
static void took(const void * entity)
{
  not_out(entity);
  slot_t * slot = worker_slot();
  if (slot) {
    slot->work = WORK_TAKEN;
  }
}

// The arrays of a wait whose entities can be out: subscriptions, guard conditions, services,
// clients (not events: rclpy's are taken with the waitable that holds them).
#define OUT_ARRAYS 4

// Under g_lock: a wait of the slot's thread is given the entities of `arrays`: none of them
// is out any more.
static void given_again(slot_t * slot, const array_t * arrays)
{
  for (size_t j = 0; j < slot->out_count; ) {
    bool given = false;
    for (size_t i = 0; i < OUT_ARRAYS && !given; i++) {
      for (size_t k = 0; arrays[i].count && k < *arrays[i].count && !given; k++) {
        given = (*arrays[i].items)[k] == slot->out[j];
      }
    }
    if (given) {
      slot->out[j] = slot->out[--slot->out_count];
    } else {
      j++;
    }
  }
}

// Under g_lock: what a wait of the slot's thread found ready (what it left in `arrays`) is out.
static void found_ready(slot_t * slot, const array_t * arrays)
{
  for (size_t i = 0; i < OUT_ARRAYS; i++) {
    for (size_t k = 0; arrays[i].count && k < *arrays[i].count; k++) {
      const void * entity = (*arrays[i].items)[k];
      bool known = entity == NULL;
      for (size_t j = 0; j < slot->out_count && !known; j++) {
        known = slot->out[j] == entity;
      }
      if (known) {
        continue;
      }
      if (slot->out_count == slot->out_capacity) {
        size_t capacity = slot->out_capacity ? 2 * slot->out_capacity : 16;
        const void ** grown = realloc(slot->out, capacity * sizeof(*grown));
        if (!grown) {
          LOG("out of memory: work handed on by a thread is not followed");
          return;
        }
        slot->out = grown;
        slot->out_capacity = capacity;
      }
      slot->out[slot->out_count++] = entity;
    }
  }
}

// ---- the agent --------------------------------------------------------------------------

static bool let_go(void);
static void send_held(void);

static void set_active(bool active)
{
  if (active || (!g_host.next_frame && !g_host.rounds)) {
    atomic_store(&g_letting_go, false);
    atomic_store(&g_active, active);
    return;
  }
  // No Round will release what is held: the process gets it now, and what it held to
  // publish goes out, as without the layer.
  pthread_mutex_lock(&g_lock);
  atomic_store(&g_active, false);
  if (g_host.rounds) {
    send_held();
  }
  bool released = let_go();
  const rmw_guard_condition_t * wake = g_wake;
  pthread_mutex_unlock(&g_lock);
  if (released && wake) {
    g_real.trigger_guard_condition(wake);
  }
}

static void set_wake(const void * guard_condition)
{
  pthread_mutex_lock(&g_lock);
  g_wake = guard_condition;
  pthread_mutex_unlock(&g_lock);
}

// Under g_lock: the index of `topic` among the counted topics, added if new; -1 if full.
static int count_index(const char * topic)
{
  for (size_t i = 0; i < g_count_size; i++) {
    if (strcmp(g_count_topics[i], topic) == 0) {
      return (int)i;
    }
  }
  if (g_count_size == MAX_ENTITIES) {
    return -1;
  }
  snprintf(g_count_topics[g_count_size], TOPIC_LENGTH, "%s", topic);
  g_counts[g_count_size] = 0;
  return (int)g_count_size++;
}

static void on_round(int64_t time_ns, uint32_t round, const char * const * topics,
  const uint32_t * counts, size_t size)
{
  pthread_mutex_lock(&g_lock);
  const rmw_guard_condition_t * wake = NULL;
  // Next frame: a Round published again is answered by the agent.
  if (g_host.rounds || time_ns != g_released_ns) {
    g_round_new = true;
    g_round_ns = time_ns;
    g_round_k = round;
    g_round_sent = false;
    g_round_size = 0;
    for (size_t i = 0; i < size && i < MAX_ENTITIES; i++) {
      snprintf(g_round_topics[i], TOPIC_LENGTH, "%s", topics[i]);
      g_round_counts[i] = counts[i];
      g_round_size++;
    }
    wake = g_wake;
  }
  pthread_mutex_unlock(&g_lock);
  if (wake) {
    g_real.trigger_guard_condition(wake);  // the waits of the process look again
  }
}

static void joined_at(int64_t time_ns)
{
  pthread_mutex_lock(&g_lock);
  g_join_ns = time_ns;
  const rmw_guard_condition_t * wake = g_wake;
  pthread_mutex_unlock(&g_lock);
  if (wake) {
    g_real.trigger_guard_condition(wake);  // its /clock may be held already
  }
}

static char ** publisher_topics(size_t * size)
{
  pthread_mutex_lock(&g_lock);
  char ** topics = g_count_size ? calloc(g_count_size, sizeof(char *)) : NULL;
  *size = 0;
  for (size_t i = 0; topics && i < g_count_size; i++) {
    topics[i] = strdup(g_count_topics[i]);
    if (!topics[i]) {
      break;
    }
    *size = i + 1;
  }
  pthread_mutex_unlock(&g_lock);
  return topics;
}

// Whether a topic is the node's own: neither ROS's (/rosout, /parameter_events) nor the
// server's.
static bool own_topic(const char * topic)
{
  return strcmp(topic, "/rosout") != 0 && strcmp(topic, "/parameter_events") != 0 &&
         strncmp(topic, g_server_prefix, strlen(g_server_prefix)) != 0;
}

// Count an endpoint; write it to out while there is room (the count says how many there were).
static void add_endpoint(
  lockstep_endpoint_t * out, size_t capacity, size_t * size, const char * topic, bool writer,
  size_t matched)
{
  if (*size < capacity) {
    snprintf(out[*size].topic, sizeof(out[*size].topic), "%s", topic);
    out[*size].writer = writer;
    out[*size].matched = (uint32_t)matched;
  }
  (*size)++;
}

static size_t endpoints(const char * node_name, lockstep_endpoint_t * out, size_t capacity)
{
  size_t size = 0;
  char name[TOPIC_LENGTH];
  pthread_mutex_lock(&g_lock);
  for (size_t i = 0; i < MAX_ENTITIES; i++) {
    pub_t * pub = &g_pubs[i];
    if (!pub->publisher || !pub->node || !own_topic(pub->topic)) {
      continue;
    }
    full_name(pub->node, name, sizeof(name));
    size_t matched = 0;
    if (strcmp(name, node_name) != 0 ||
      g_real.count_matched_subscriptions(pub->publisher, &matched) != RMW_RET_OK)
    {
      continue;
    }
    add_endpoint(out, capacity, &size, pub->topic, true, matched);
  }
  for (size_t i = 0; i < MAX_ENTITIES; i++) {
    sub_t * sub = &g_subs[i];
    if (!sub->subscription || !own_topic(sub->topic)) {
      continue;
    }
    full_name(sub->node, name, sizeof(name));
    size_t matched = 0;
    if (strcmp(name, node_name) != 0 ||
      g_real.count_matched_publishers(sub->subscription, &matched) != RMW_RET_OK)
    {
      continue;
    }
    add_endpoint(out, capacity, &size, sub->topic, false, matched);
  }
  pthread_mutex_unlock(&g_lock);
  return size;
}

// Whether a node of the process sees the server's ~/done reader (only a sim_clock server
// reads it), through the process's own participant.
static bool server_seen(void)
{
  char topic[TOPIC_LENGTH + sizeof("done")];
  snprintf(topic, sizeof(topic), "%sdone", g_server_prefix);
  bool seen = false;
  pthread_mutex_lock(&g_lock);  // a node is destroyed only once it is out of g_nodes
  for (size_t i = 0; i < MAX_ENTITIES && !seen; i++) {
    size_t count = 0;
    seen = g_nodes[i] &&
      g_real.count_subscribers(g_nodes[i], topic, &count) == RMW_RET_OK && count;
  }
  if (seen && !g_helper && !g_host.next_frame && !g_host.rounds) {
    atomic_store(&g_tracking, true);
  }
  pthread_mutex_unlock(&g_lock);
  return seen;
}

static void * agent_main(void * unused)
{
  (void)unused;
  t_agent = true;
  if (g_agent.run(&g_host, g_domain_id) != 0) {
    LOG("the participant could not start: the process runs without the layer");
  }
  return NULL;
}

static void stop_agent(void)
{
  pthread_mutex_lock(&g_lock);
  bool started = g_agent_started;
  g_agent_started = false;
  pthread_mutex_unlock(&g_lock);
  if (started) {
    atomic_store(&g_active, false);
    t_agent = true;
    g_agent.stop();
    pthread_join(g_agent_thread, NULL);
    t_agent = false;
  }
}

// A fork: the child (one that does not exec) has no agent thread, and a DDS participant it
// cannot use: it takes no part. g_lock is held across the fork, so that the child's is free.
static void before_fork(void) {pthread_mutex_lock(&g_lock);}
static void after_fork(void) {pthread_mutex_unlock(&g_lock);}
static void in_a_child(void)
{
  g_agent_started = false;
  g_agent_failed = true;
  g_helper = true;  // no node of the child joins
  atomic_store(&g_tracking, false);
  atomic_store(&g_active, false);
  atomic_store(&g_adds_pending, false);
  pthread_mutex_unlock(&g_lock);
}

// Under g_lock: load the agent (next to this library) and start its thread; once.
static bool start_agent(size_t domain_id)
{
  if (g_agent_started || g_agent_failed) {
    return g_agent_started;
  }
  g_agent_failed = true;  // until it has started
  Dl_info self;
  if (!dladdr((void *)&start_agent, &self) || !self.dli_fname) {
    LOG("cannot find where it was loaded from");
    return false;
  }
  const char * slash = strrchr(self.dli_fname, '/');
  size_t folder = slash ? (size_t)(slash - self.dli_fname) + 1 : 0;
  size_t length = folder + sizeof(LOCKSTEP_AGENT_LIBRARY);
  char * path = malloc(length);
  if (!path) {
    return false;
  }
  memcpy(path, self.dli_fname, folder);
  memcpy(path + folder, LOCKSTEP_AGENT_LIBRARY, sizeof(LOCKSTEP_AGENT_LIBRARY));
  void * agent = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!agent) {
    LOG("cannot load %s: %s", path, dlerror());
    free(path);
    return false;
  }
  free(path);
  *(void **)&g_agent.run = dlsym(agent, LOCKSTEP_AGENT_RUN);
  *(void **)&g_agent.add = dlsym(agent, LOCKSTEP_AGENT_ADD);
  *(void **)&g_agent.remove = dlsym(agent, LOCKSTEP_AGENT_REMOVE);
  *(void **)&g_agent.done = dlsym(agent, LOCKSTEP_AGENT_DONE);
  *(void **)&g_agent.stop = dlsym(agent, LOCKSTEP_AGENT_STOP);
  *(void **)&g_agent.again = dlsym(agent, LOCKSTEP_AGENT_AGAIN);
  *(void **)&g_agent.forget = dlsym(agent, LOCKSTEP_AGENT_FORGET);
  if (!g_agent.run || !g_agent.add || !g_agent.remove || !g_agent.done || !g_agent.stop ||
    !g_agent.again || !g_agent.forget)
  {
    LOG("%s lacks its functions", LOCKSTEP_AGENT_LIBRARY);
    return false;
  }
  const char * log = getenv("SIM_CLOCK_LOCKSTEP_LOG");
  const char * rule = getenv("SIM_CLOCK_LOCKSTEP_RULE");
  g_host.set_active = set_active;
  g_host.verbose = log && strcmp(log, "1") == 0;
  g_host.next_frame = rule && strcmp(rule, "next_frame") == 0;
  g_host.rounds = rule && strcmp(rule, "rounds") == 0;
  g_host.set_wake = set_wake;
  g_host.on_round = on_round;
  g_host.publisher_topics = publisher_topics;
  g_host.endpoints = endpoints;
  g_host.server_seen = server_seen;
  g_host.joined_at = joined_at;
  if (rule && rule[0] && strcmp(rule, "next_frame") != 0 && strcmp(rule, "rounds") != 0 &&
    strcmp(rule, "participant") != 0)
  {
    LOG("SIM_CLOCK_LOCKSTEP_RULE=%s is not a rule (participant, next_frame or rounds): "
      "participant", rule);
  }
  g_domain_id = domain_id;
  // The agent's thread takes no signal: they stay the process's.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int error = pthread_create(&g_agent_thread, NULL, agent_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (error) {
    LOG("cannot start its thread");
    return false;
  }
  g_agent_failed = false;
  g_agent_started = true;
  atexit(stop_agent);  // after the rmw's own exit handlers were registered: it runs before them
  pthread_atfork(before_fork, after_fork, in_a_child);
  return true;
}

// ---- the rmw functions ------------------------------------------------------------------

// rcutils' allocator, on the C library, for the messages the layer takes itself.
static void * allocate(size_t size, void * state) {(void)state; return malloc(size);}
static void deallocate(void * pointer, void * state) {(void)state; free(pointer);}
static void * reallocate(void * pointer, size_t size, void * state)
{
  (void)state;
  return realloc(pointer, size);
}
static void * zero_allocate(size_t count, size_t size, void * state)
{
  (void)state;
  return calloc(count, size);
}

// The full name of a node, in `name` of `size` bytes.
static void full_name(const rmw_node_t * node, char * name, size_t size)
{
  snprintf(name, size, "%s%s%s", node->namespace_,
    strcmp(node->namespace_, "/") == 0 ? "" : "/", node->name);
}

// Under g_lock: the entry of a subscription of the process; NULL if it is not one.
static sub_t * find_sub(const rmw_subscription_t * subscription)
{
  for (size_t i = 0; i < MAX_ENTITIES; i++) {
    if (g_subs[i].subscription == subscription) {
      return &g_subs[i];
    }
  }
  return NULL;
}

static void drop_held(sub_t * sub, size_t count)
{
  for (size_t i = 0; i < count && i < sub->size; i++) {
    free(sub->held[i].bytes);
  }
  count = count < sub->size ? count : sub->size;
  memmove(sub->held, sub->held + count, (sub->size - count) * sizeof(*sub->held));
  sub->size -= count;
  sub->released = sub->released > count ? sub->released - count : 0;
}

rmw_subscription_t * rmw_create_subscription(
  const rmw_node_t * node, const rosidl_message_type_support_t * type_support,
  const char * topic_name, const rmw_qos_profile_t * qos_policies,
  const rmw_subscription_options_t * subscription_options)
{
  RESOLVE();
  rmw_subscription_t * subscription = g_real.create_subscription(
    node, type_support, topic_name, qos_policies, subscription_options);
  if (!subscription || t_agent || !topic_name || !node || !node->name || !node->namespace_) {
    return subscription;
  }
  bool clock = strcmp(topic_name, CLOCK_TOPIC) == 0;
  pthread_mutex_lock(&g_lock);
  sub_t * sub = find_sub(NULL);
  if (sub) {
    memset(sub, 0, sizeof(*sub));
    sub->subscription = subscription;
    sub->data = subscription->data;
    sub->node = node;
    sub->type_support = type_support;
    sub->clock = clock;
    snprintf(sub->topic, sizeof(sub->topic), "%s", topic_name);
  }
  if (clock && sub) {
    // A node of the process takes part in simulated time: it joins once the process first
    // waits (by then a participant.spin has made its own ~/join client, and the layer keeps
    // out of its way).
    pthread_once(&g_slot_key_once, make_slot_key);
    bool known = false;
    size_t free_node = MAX_ENTITIES;
    for (size_t i = 0; i < MAX_ENTITIES; i++) {
      known |= g_nodes[i] == node;
      free_node = !g_nodes[i] && free_node == MAX_ENTITIES ? i : free_node;
    }
    if (!known && free_node < MAX_ENTITIES) {
      g_nodes[free_node] = node;
      full_name(node, g_node_names[free_node], TOPIC_LENGTH);
      g_node_added[free_node] = false;
    }
    if (start_agent(node->context ? node->context->actual_domain_id : 0) && !g_helper) {
      atomic_store(&g_adds_pending, true);
    }
  }
  pthread_mutex_unlock(&g_lock);
  if (!sub) {
    char name[512];
    full_name(node, name, sizeof(name));
    LOG("more than %d subscriptions: %s on %s is not followed", MAX_ENTITIES, name, topic_name);
  }
  return subscription;
}

// At a wait of the process: hand the agent the nodes that subscribed to /clock since.
static void add_nodes(void)
{
  char names[MAX_ENTITIES][TOPIC_LENGTH];
  size_t size = 0;
  pthread_mutex_lock(&g_lock);
  for (size_t i = 0; i < MAX_ENTITIES && !g_helper; i++) {
    if (g_nodes[i] && !g_node_added[i]) {
      g_node_added[i] = true;
      memcpy(names[size++], g_node_names[i], TOPIC_LENGTH);
    }
  }
  atomic_store(&g_adds_pending, false);
  pthread_mutex_unlock(&g_lock);
  t_agent = true;
  for (size_t i = 0; i < size; i++) {
    g_agent.add(names[i]);
  }
  t_agent = false;
}

rmw_client_t * rmw_create_client(
  const rmw_node_t * node, const rosidl_service_type_support_t * type_support,
  const char * service_name, const rmw_qos_profile_t * qos_policies)
{
  RESOLVE();
  rmw_client_t * client = g_real.create_client(node, type_support, service_name,
      qos_policies);
  size_t prefix = strlen(g_server_prefix);
  if (client && !t_agent && service_name) {
    static const char get_result[] = "/_action/get_result";
    size_t length = strlen(service_name);
    bool action_result = length >= sizeof(get_result) - 1 &&
      strcmp(service_name + length - (sizeof(get_result) - 1), get_result) == 0;
    pthread_mutex_lock(&g_lock);
    client_t * entry = NULL;
    for (size_t i = 0; i < MAX_ENTITIES && !entry; i++) {
      entry = g_clients[i].client ? NULL : &g_clients[i];
    }
    if (entry) {
      *entry = (client_t){client, node,
        strncmp(service_name, g_server_prefix, prefix) != 0 && !action_result, 0};
    }
    pthread_mutex_unlock(&g_lock);
  }
  if (!client || t_agent || !service_name || strncmp(service_name, g_server_prefix, prefix) ||
    strcmp(service_name + prefix, "join") != 0)
  {
    return client;
  }
  // The process calls the server's ~/join itself (sim_clock's participant helper): it takes
  // part on its own; the layer forgets its nodes without leaving, said once.
  char names[MAX_ENTITIES][TOPIC_LENGTH];
  size_t size = 0;
  pthread_mutex_lock(&g_lock);
  bool first = !g_helper;
  g_helper = true;
  atomic_store(&g_tracking, false);
  atomic_store(&g_adds_pending, false);
  for (size_t i = 0; i < MAX_ENTITIES; i++) {
    if (g_nodes[i] && g_node_added[i]) {
      memcpy(names[size++], g_node_names[i], TOPIC_LENGTH);
    }
  }
  bool started = g_agent_started;
  pthread_mutex_unlock(&g_lock);
  if (first) {
    LOG("the process calls %sjoin itself (sim_clock's participant helper): it takes part on "
      "its own, and the layer stays out of its way", g_server_prefix);
  }
  t_agent = true;
  for (size_t i = 0; started && i < size; i++) {
    g_agent.forget(names[i]);
  }
  t_agent = false;
  return client;
}

rmw_ret_t rmw_destroy_subscription(rmw_node_t * node, rmw_subscription_t * subscription)
{
  RESOLVE();
  if (!t_agent) {
    pthread_mutex_lock(&g_lock);
    sub_t * sub = find_sub(subscription);
    if (sub) {
      drop_held(sub, sub->size);
      free(sub->held);
      memset(sub, 0, sizeof(*sub));
    }
    not_out(subscription ? subscription->data : NULL);
    pthread_mutex_unlock(&g_lock);
  }
  return g_real.destroy_subscription(node, subscription);
}

rmw_ret_t rmw_destroy_node(rmw_node_t * node)
{
  RESOLVE();
  if (!t_agent && node) {
    pthread_mutex_lock(&g_lock);
    bool known = false;
    for (size_t i = 0; i < MAX_ENTITIES; i++) {
      if (g_nodes[i] == node) {
        known = true;
        g_nodes[i] = NULL;
      }
    }
    bool started = g_agent_started;
    pthread_mutex_unlock(&g_lock);
    if (known && started && node->name && node->namespace_) {
      char name[512];
      full_name(node, name, sizeof(name));
      t_agent = true;
      g_agent.remove(name, LEAVE_TIMEOUT_NS);
      t_agent = false;
    }
  }
  return g_real.destroy_node(node);
}

rmw_publisher_t * rmw_create_publisher(
  const rmw_node_t * node, const rosidl_message_type_support_t * type_support,
  const char * topic_name, const rmw_qos_profile_t * qos_profile,
  const rmw_publisher_options_t * publisher_options)
{
  RESOLVE();
  rmw_publisher_t * publisher = g_real.create_publisher(
    node, type_support, topic_name, qos_profile, publisher_options);
  if (!publisher || t_agent || !topic_name) {
    return publisher;
  }
  pthread_mutex_lock(&g_lock);
  for (size_t i = 0; i < MAX_ENTITIES; i++) {
    if (!g_pubs[i].publisher) {
      g_pubs[i].publisher = publisher;
      g_pubs[i].node = node;
      g_pubs[i].type_support = type_support;
      snprintf(g_pubs[i].topic, sizeof(g_pubs[i].topic), "%s", topic_name);
      // ROS's own topics and the server's are not the participant's.
      g_pubs[i].counted = own_topic(topic_name);
      if (g_pubs[i].counted) {
        count_index(topic_name);
      }
      break;
    }
  }
  pthread_mutex_unlock(&g_lock);
  return publisher;
}

rmw_ret_t rmw_destroy_publisher(rmw_node_t * node, rmw_publisher_t * publisher)
{
  RESOLVE();
  if (!t_agent) {
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < MAX_ENTITIES; i++) {
      if (g_pubs[i].publisher == publisher) {
        g_pubs[i].publisher = NULL;
      }
    }
    size_t kept = 0;
    for (size_t i = 0; i < g_out_size; i++) {
      if (g_out[i].publisher == publisher) {
        free(g_out[i].bytes);
      } else {
        g_out[kept++] = g_out[i];
      }
    }
    g_out_size = kept;
    pthread_mutex_unlock(&g_lock);
  }
  return g_real.destroy_publisher(node, publisher);
}

// Next frame: a message the process published goes out at once and is counted for the done.
static void published(const rmw_publisher_t * publisher, rmw_ret_t ret)
{
  if (ret != RMW_RET_OK || t_agent || !g_host.next_frame || !atomic_load(&g_active)) {
    return;
  }
  pthread_mutex_lock(&g_lock);
  for (size_t i = 0; i < MAX_ENTITIES; i++) {
    if (g_pubs[i].publisher == publisher) {
      int index = g_pubs[i].counted ? count_index(g_pubs[i].topic) : -1;
      if (index >= 0) {
        g_counts[index]++;
      }
      break;
    }
  }
  pthread_mutex_unlock(&g_lock);
}

// Rounds: hold what the process publishes until the next round (serialized, in the order it
// published), counted by topic. Returns false where it is not held (not in rounds, not a
// publisher of the participant's).
static bool held_back(const rmw_publisher_t * publisher, const void * ros_message,
  const rmw_serialized_message_t * serialized, rmw_ret_t * ret)
{
  if (t_agent || !g_host.rounds || !atomic_load(&g_active)) {
    return false;
  }
  pthread_mutex_lock(&g_lock);
  pub_t * pub = NULL;
  for (size_t i = 0; i < MAX_ENTITIES && !pub; i++) {
    pub = g_pubs[i].publisher == publisher && g_pubs[i].counted ? &g_pubs[i] : NULL;
  }
  int index = pub ? count_index(pub->topic) : -1;
  if (index < 0) {
    pthread_mutex_unlock(&g_lock);
    return false;
  }
  rmw_serialized_message_t message = {
    NULL, 0, 0, {allocate, deallocate, reallocate, zero_allocate, NULL}};
  if (serialized) {
    message.buffer = malloc(serialized->buffer_length ? serialized->buffer_length : 1);
    if (message.buffer) {
      memcpy(message.buffer, serialized->buffer, serialized->buffer_length);
      message.buffer_length = serialized->buffer_length;
    }
    *ret = message.buffer ? RMW_RET_OK : RMW_RET_BAD_ALLOC;
  } else {
    *ret = g_real.serialize(ros_message, pub->type_support, &message);
  }
  if (*ret == RMW_RET_OK && g_out_size == g_out_capacity) {
    size_t capacity = g_out_capacity ? 2 * g_out_capacity : 64;
    out_t * grown = realloc(g_out, capacity * sizeof(*grown));
    if (grown) {
      g_out = grown;
      g_out_capacity = capacity;
    } else {
      *ret = RMW_RET_BAD_ALLOC;
    }
  }
  if (*ret == RMW_RET_OK) {
    g_out[g_out_size++] = (out_t){publisher, message.buffer, message.buffer_length};
    g_counts[index]++;
  } else {
    free(message.buffer);
  }
  pthread_mutex_unlock(&g_lock);
  return true;
}

// A thread that neither waits nor runs a callback it took publishes on a topic of the
// participant's: said once (its messages belong to no frame the layer can tell).
static void outside_said(const rmw_publisher_t * publisher)
{
  if (t_agent || !atomic_load(&g_active) || atomic_load(&g_outside_said)) {
    return;
  }
  char topic[TOPIC_LENGTH] = "";
  pthread_mutex_lock(&g_lock);
  const slot_t * slot = t_slot ? &g_slots[t_slot - 1] : NULL;
  if (!slot || (!slot->waits && slot->work == WORK_NONE)) {
    for (size_t i = 0; i < MAX_ENTITIES; i++) {
      if (g_pubs[i].publisher == publisher && g_pubs[i].counted) {
        memcpy(topic, g_pubs[i].topic, TOPIC_LENGTH);
      }
    }
  }
  pthread_mutex_unlock(&g_lock);
  if (topic[0] && !atomic_exchange(&g_outside_said, true)) {
    LOG("a thread that is not an executor's publishes on %s: the layer cannot tell which "
      "frame that belongs to, and does not wait for it", topic);
  }
}

rmw_ret_t rmw_publish(
  const rmw_publisher_t * publisher, const void * ros_message,
  rmw_publisher_allocation_t * allocation)
{
  RESOLVE();
  outside_said(publisher);
  rmw_ret_t ret;
  if (held_back(publisher, ros_message, NULL, &ret)) {
    return ret;
  }
  ret = g_real.publish(publisher, ros_message, allocation);
  published(publisher, ret);
  return ret;
}

rmw_ret_t rmw_publish_loaned_message(
  const rmw_publisher_t * publisher, void * ros_message, rmw_publisher_allocation_t * allocation)
{
  RESOLVE();
  rmw_ret_t ret = g_real.publish_loaned(publisher, ros_message, allocation);
  published(publisher, ret);
  return ret;
}

rmw_ret_t rmw_publish_serialized_message(
  const rmw_publisher_t * publisher, const rmw_serialized_message_t * serialized_message,
  rmw_publisher_allocation_t * allocation)
{
  RESOLVE();
  outside_said(publisher);
  rmw_ret_t ret;
  if (held_back(publisher, NULL, serialized_message, &ret)) {
    return ret;
  }
  ret = g_real.publish_serialized(publisher, serialized_message, allocation);
  published(publisher, ret);
  return ret;
}

// The time of a serialized rosgraph_msgs/msg/Clock (little-endian CDR); -1 if not one.
static int64_t clock_of(const uint8_t * bytes, size_t length)
{
  if (length < 12 || bytes[1] != 1) {
    return -1;
  }
  int32_t sec = (int32_t)((uint32_t)bytes[4] | (uint32_t)bytes[5] << 8 |
    (uint32_t)bytes[6] << 16 | (uint32_t)bytes[7] << 24);
  uint32_t nanosec = (uint32_t)bytes[8] | (uint32_t)bytes[9] << 8 | (uint32_t)bytes[10] << 16 |
    (uint32_t)bytes[11] << 24;
  return (int64_t)sec * NS_PER_SEC + nanosec;
}

// A /clock taken by the process on `sub`: its time is pending until the process is idle.
static void took_clock(sub_t * sub, int64_t time_ns)
{
  g_clock_ns = time_ns;
  g_clock_pending = true;
  sub->clock_taken = true;
}

// Under g_lock, default rule: the /clock subscriptions given to this wait of `slot`'s thread
// are waited on by it; one its last wait held and this one does not is waited on no more (its
// node left the executor; rclpy leaves an entity out while its handler is pending, and then
// it is out: see "work handed on").
static void note_clock_waits(const slot_t * slot, const rmw_subscriptions_t * subscriptions)
{
  int waiter = (int)(slot - g_slots) + 1;
  for (size_t i = 0; i < MAX_ENTITIES; i++) {
    sub_t * sub = &g_subs[i];
    if (!sub->subscription || !sub->clock) {
      continue;
    }
    bool given = false;
    for (size_t k = 0; subscriptions && k < subscriptions->subscriber_count && !given; k++) {
      given = subscriptions->subscribers[k] == sub->data;
    }
    if (given) {
      sub->waiter = waiter;
    } else if (sub->waiter == waiter) {
      sub->waiter = 0;
    }
  }
}

// Under g_lock, next frame: take what each subscription of the process received, into its
// held messages (/clock: the last one only).
static void take_all(void)
{
  for (size_t i = 0; i < MAX_ENTITIES; i++) {
    sub_t * sub = &g_subs[i];
    if (!sub->subscription) {
      continue;
    }
    for (;;) {
      rmw_serialized_message_t message = {
        NULL, 0, 0, {allocate, deallocate, reallocate, zero_allocate, NULL}};
      rmw_message_info_t info;
      memset(&info, 0, sizeof(info));
      bool taken = false;
      rmw_ret_t ret = g_real.take_serialized_with_info(sub->subscription, &message, &taken,
          &info, NULL);
      if (ret != RMW_RET_OK || !taken) {
        free(message.buffer);
        if (ret != RMW_RET_OK) {
          LOG("take on %s failed (%d)", sub->topic, (int)ret);
        }
        break;
      }
      if (sub->clock) {  // only the last time counts: drop those not released
        for (size_t j = sub->released; j < sub->size; j++) {
          free(sub->held[j].bytes);
        }
        sub->size = sub->released;
      }
      if (sub->size == sub->capacity) {
        size_t capacity = sub->capacity ? 2 * sub->capacity : 16;
        held_t * grown = realloc(sub->held, capacity * sizeof(*grown));
        if (!grown) {
          free(message.buffer);
          LOG("out of memory: a message on %s is lost", sub->topic);
          break;
        }
        sub->held = grown;
        sub->capacity = capacity;
      }
      sub->held[sub->size++] = (held_t){message.buffer, message.buffer_length, info};
    }
  }
}

// Under g_lock, next frame: release the /clock of the time the process joined at, alone (its
// messages wait for their frame), on each /clock subscription that holds it: the process is
// at the server's time from its join on, as without the layer, though no Round comes for that
// time before the next frame's (a server that has not sent a frame yet, or one that came
// back from 0). Whether it did. Until a frame is released, that time published again is too.
static bool release_join_time(void)
{
  bool released = false;
  for (size_t i = 0; i < MAX_ENTITIES; i++) {
    sub_t * sub = &g_subs[i];
    if (sub->subscription && sub->clock && sub->size > sub->released &&
      clock_of(sub->held[sub->size - 1].bytes, sub->held[sub->size - 1].length) == g_join_ns)
    {
      drop_held(sub, sub->size - 1);
      sub->released = 1;
      released = true;
    }
  }
  return released;
}

// Under g_lock, next frame: release the frame of the last Round if everything of it is here.
// Returns whether it did.
static bool release(void)
{
  if (g_join_ns >= 0 && release_join_time()) {
    return true;
  }
  if (!g_round_new) {
    return false;
  }
  sub_t * clock = NULL;
  for (size_t i = 0; i < MAX_ENTITIES; i++) {
    sub_t * sub = &g_subs[i];
    if (!sub->subscription) {
      continue;
    }
    if (sub->clock) {
      if (sub->size == 0 ||
        clock_of(sub->held[sub->size - 1].bytes, sub->held[sub->size - 1].length) != g_round_ns)
      {
        return false;  // its /clock has not come yet
      }
      clock = sub;
      continue;
    }
    for (size_t j = 0; j < g_round_size; j++) {
      if (strcmp(g_round_topics[j], sub->topic) == 0 &&
        sub->size - sub->released < g_round_counts[j])
      {
        return false;  // the frame's messages on its topic have not all come
      }
    }
  }
  for (size_t i = 0; i < MAX_ENTITIES; i++) {
    sub_t * sub = &g_subs[i];
    if (!sub->subscription) {
      continue;
    }
    if (sub->clock) {
      drop_held(sub, sub->size - 1);
      sub->released = 1;
      continue;
    }
    size_t count = sub->size - sub->released;  // not a topic of the participants: all of it
    for (size_t j = 0; j < g_round_size; j++) {
      if (strcmp(g_round_topics[j], sub->topic) == 0) {
        count = g_round_counts[j];
      }
    }
    sub->released += count;
  }
  (void)clock;
  g_round_new = false;
  g_released_ns = g_round_ns;
  g_join_ns = -1;
  return true;
}

// Serialized bytes compared as Python compares bytes: byte by byte, then the shorter first.
static int by_bytes(const void * a, const void * b)
{
  const held_t * x = a, * y = b;
  size_t common = x->length < y->length ? x->length : y->length;
  int order = memcmp(x->bytes, y->bytes, common);
  return order ? order : (x->length > y->length) - (x->length < y->length);
}

// Under g_lock: release `count` more of a subscription's held messages, in the order of
// their bytes (doc/frames.md, "What waits, and in which order").
static void release_some(sub_t * sub, size_t count)
{
  size_t from = sub->released;
  sub->released = from + count < sub->size ? from + count : sub->size;
  qsort(sub->held + from, sub->released - from, sizeof(*sub->held), by_bytes);
}

// Under g_lock, rounds: send what the process held, in the order it published it.
static void send_held(void)
{
  for (size_t i = 0; i < g_out_size; i++) {
    rmw_serialized_message_t message = {
      g_out[i].bytes, g_out[i].length, g_out[i].length,
      {allocate, deallocate, reallocate, zero_allocate, NULL}};
    rmw_ret_t ret = g_real.publish_serialized(g_out[i].publisher, &message, NULL);
    if (ret != RMW_RET_OK) {
      LOG("a held message could not be sent (%d)", (int)ret);
    }
    free(g_out[i].bytes);
  }
  g_out_size = 0;
}

// Under g_lock, rounds: start a frame when the /clock of a new time has come (round 0: the
// time and everything that waits), or the round the server's last Round starts once its
// messages have all come (what the process held goes out first). Returns whether it did.
static bool release_rounds(void)
{
  sub_t * clock = NULL;
  for (size_t i = 0; i < MAX_ENTITIES && !clock; i++) {
    clock = g_subs[i].subscription && g_subs[i].clock && g_subs[i].size > g_subs[i].released ?
      &g_subs[i] : NULL;
  }
  if (clock) {
    held_t * last = &clock->held[clock->size - 1];
    int64_t time_ns = clock_of(last->bytes, last->length);
    if (time_ns == g_frame_ns) {  // the frame's time published again
      for (size_t j = clock->released; j < clock->size; j++) {
        free(clock->held[j].bytes);
      }
      clock->size = clock->released;
      g_again = true;
    } else {
      if (g_out_size) {
        LOG("what it published in the last round of %lld ns goes out now, at %lld ns (that "
          "frame was stopped)", (long long)g_frame_ns, (long long)time_ns);
        send_held();
      }
      g_frame_ns = time_ns;
      g_frame_round = 0;
      for (size_t i = 0; i < MAX_ENTITIES; i++) {
        if (g_subs[i].subscription) {
          release_some(&g_subs[i], g_subs[i].size);
        }
      }
      g_clock_ns = time_ns;
      g_pending_round = 0;
      g_clock_pending = true;
      return true;
    }
  }
  if (!g_round_new) {
    return false;
  }
  if (g_round_ns != g_frame_ns || g_round_k != g_frame_round + 1) {
    g_round_new = false;  // not the round that comes next: an old one, another time's
    return false;
  }
  if (!g_round_sent) {
    send_held();
    g_round_sent = true;
  }
  for (size_t i = 0; i < MAX_ENTITIES; i++) {
    sub_t * sub = &g_subs[i];
    for (size_t j = 0; sub->subscription && !sub->clock && j < g_round_size; j++) {
      if (strcmp(g_round_topics[j], sub->topic) == 0 &&
        sub->size - sub->released < g_round_counts[j])
      {
        return false;  // the round's messages on its topic have not all come
      }
    }
  }
  for (size_t i = 0; i < MAX_ENTITIES; i++) {
    sub_t * sub = &g_subs[i];
    if (!sub->subscription || sub->clock) {
      continue;
    }
    size_t count = sub->size - sub->released;  // not a topic of the participants: all of it
    for (size_t j = 0; j < g_round_size; j++) {
      if (strcmp(g_round_topics[j], sub->topic) == 0) {
        count = g_round_counts[j];
      }
    }
    release_some(sub, count);
  }
  g_frame_round = g_round_k;
  g_round_new = false;
  g_clock_ns = g_frame_ns;
  g_pending_round = g_frame_round;
  g_clock_pending = true;
  return true;
}

// Under g_lock: whether a subscription of the process holds a message.
static bool holds_any(void)
{
  bool held = false;
  for (size_t i = 0; i < MAX_ENTITIES && !held; i++) {
    held = g_subs[i].subscription && g_subs[i].size > 0;
  }
  return held;
}

// Under g_lock: release everything held, in the order it came (the layer no longer follows
// the process); whether anything was. The process takes from what is held until none is.
static bool let_go(void)
{
  bool released = false;
  for (size_t i = 0; i < MAX_ENTITIES; i++) {
    sub_t * sub = &g_subs[i];
    if (sub->subscription) {
      released |= sub->released < sub->size;
      sub->released = sub->size;
    }
  }
  atomic_store(&g_letting_go, holds_any());
  return released;
}

// Under g_lock: release what the rule lets the process take now; whether anything was.
static bool release_held(void)
{
  if (!atomic_load(&g_active)) {
    return let_go();
  }
  return g_host.rounds ? release_rounds() : release();
}

// Under g_lock: give the process the next message it may take from a held subscription:
// into ros_message (deserialized) or serialized; false if there is none.
static rmw_ret_t take_held(
  sub_t * sub, void * ros_message, rmw_serialized_message_t * serialized, bool * taken,
  rmw_message_info_t * message_info)
{
  *taken = false;
  if (sub->released == 0) {
    return RMW_RET_OK;
  }
  held_t * held = &sub->held[0];
  rmw_ret_t ret = RMW_RET_OK;
  if (serialized) {
    if (serialized->buffer_capacity < held->length) {
      uint8_t * grown = serialized->allocator.reallocate(serialized->buffer, held->length,
          serialized->allocator.state);
      if (!grown) {
        return RMW_RET_BAD_ALLOC;
      }
      serialized->buffer = grown;
      serialized->buffer_capacity = held->length;
    }
    memcpy(serialized->buffer, held->bytes, held->length);
    serialized->buffer_length = held->length;
  } else {
    rmw_serialized_message_t view = {
      held->bytes, held->length, held->length,
      {allocate, deallocate, reallocate, zero_allocate, NULL}};
    ret = g_real.deserialize(&view, sub->type_support, ros_message);
  }
  if (ret == RMW_RET_OK) {
    if (message_info) {
      *message_info = held->info;
    }
    if (sub->clock) {
      took_clock(sub, clock_of(held->bytes, held->length));
    }
    *taken = true;
  }
  drop_held(sub, 1);
  if (atomic_load(&g_letting_go) && !atomic_load(&g_active)) {
    atomic_store(&g_letting_go, holds_any());
  }
  return ret;
}

// The process took a message: from what the layer holds (next frame), else from the rmw.
static rmw_ret_t take(
  const rmw_subscription_t * subscription, void * ros_message,
  rmw_serialized_message_t * serialized, bool * taken, rmw_message_info_t * message_info,
  rmw_subscription_allocation_t * allocation)
{
  if (!t_agent && atomic_load(&g_active) && subscription) {
    pthread_mutex_lock(&g_lock);
    took(subscription->data);
    pthread_mutex_unlock(&g_lock);
  }
  if (!t_agent && (g_host.next_frame || g_host.rounds) &&
    (atomic_load(&g_active) || atomic_load(&g_letting_go)) && taken)
  {
    pthread_mutex_lock(&g_lock);
    sub_t * sub = find_sub(subscription);
    if (sub) {
      rmw_ret_t ret = take_held(sub, ros_message, serialized, taken, message_info);
      pthread_mutex_unlock(&g_lock);
      return ret;
    }
    pthread_mutex_unlock(&g_lock);
  }
  rmw_ret_t ret;
  if (serialized) {
    ret = message_info ?
      g_real.take_serialized_with_info(subscription, serialized, taken, message_info,
      allocation) : g_real.take_serialized(subscription, serialized, taken, allocation);
  } else {
    ret = message_info ?
      g_real.take_with_info(subscription, ros_message, taken, message_info, allocation) :
      g_real.take(subscription, ros_message, taken, allocation);
  }
  if (ret == RMW_RET_OK && taken && *taken && !t_agent && atomic_load(&g_active) &&
    !serialized && ros_message)
  {
    pthread_mutex_lock(&g_lock);
    sub_t * sub = find_sub(subscription);
    if (sub && sub->clock) {
      // rosgraph_msgs/msg/Clock: builtin_interfaces/Time {int32 sec; uint32 nanosec}, the
      // same layout in the C and the C++ message.
      int32_t sec;
      uint32_t nanosec;
      memcpy(&sec, ros_message, sizeof(sec));
      memcpy(&nanosec, (const char *)ros_message + sizeof(sec), sizeof(nanosec));
      took_clock(sub, (int64_t)sec * NS_PER_SEC + nanosec);
    }
    pthread_mutex_unlock(&g_lock);
  }
  return ret;
}

rmw_ret_t rmw_take(
  const rmw_subscription_t * subscription, void * ros_message, bool * taken,
  rmw_subscription_allocation_t * allocation)
{
  RESOLVE();
  return take(subscription, ros_message, NULL, taken, NULL, allocation);
}

rmw_ret_t rmw_take_with_info(
  const rmw_subscription_t * subscription, void * ros_message, bool * taken,
  rmw_message_info_t * message_info, rmw_subscription_allocation_t * allocation)
{
  RESOLVE();
  return take(subscription, ros_message, NULL, taken, message_info, allocation);
}

rmw_ret_t rmw_take_serialized_message(
  const rmw_subscription_t * subscription, rmw_serialized_message_t * serialized_message,
  bool * taken, rmw_subscription_allocation_t * allocation)
{
  RESOLVE();
  return take(subscription, NULL, serialized_message, taken, NULL, allocation);
}

rmw_ret_t rmw_take_serialized_message_with_info(
  const rmw_subscription_t * subscription, rmw_serialized_message_t * serialized_message,
  bool * taken, rmw_message_info_t * message_info, rmw_subscription_allocation_t * allocation)
{
  RESOLVE();
  return take(subscription, NULL, serialized_message, taken, message_info, allocation);
}

// Under the layer: the calling thread took what a wait was given as `entity`.
static void took_entity(const void * entity)
{
  if (!t_agent && atomic_load(&g_active)) {
    pthread_mutex_lock(&g_lock);
    took(entity);
    pthread_mutex_unlock(&g_lock);
  }
}

rmw_ret_t rmw_take_request(
  const rmw_service_t * service, rmw_service_info_t * request_header, void * ros_request,
  bool * taken)
{
  RESOLVE();
  took_entity(service ? service->data : NULL);
  return g_real.take_request(service, request_header, ros_request, taken);
}

rmw_ret_t rmw_send_request(
  const rmw_client_t * client, const void * ros_request, int64_t * sequence_id)
{
  RESOLVE();
  if (t_agent || !client || !atomic_load(&g_active)) {
    return g_real.send_request(client, ros_request, sequence_id);
  }
  pthread_mutex_lock(&g_lock);
  client_t * entry = find_client(client);
  bool available = false;
  if (entry && entry->followed &&
    g_real.server_is_available(entry->node, client, &available) == RMW_RET_OK && available)
  {
    // Counted before it goes: its answer may be taken by another thread before this one
    // returns from the send.
    entry->pending++;
    g_requests_pending++;
  }
  pthread_mutex_unlock(&g_lock);
  rmw_ret_t ret = g_real.send_request(client, ros_request, sequence_id);
  if (ret != RMW_RET_OK && available) {
    pthread_mutex_lock(&g_lock);
    entry = find_client(client);
    if (entry && entry->pending) {
      entry->pending--;
      g_requests_pending--;
    }
    pthread_mutex_unlock(&g_lock);
  }
  return ret;
}

rmw_ret_t rmw_take_response(
  const rmw_client_t * client, rmw_service_info_t * request_header, void * ros_response,
  bool * taken)
{
  RESOLVE();
  took_entity(client ? client->data : NULL);
  rmw_ret_t ret = g_real.take_response(client, request_header, ros_response, taken);
  if (ret == RMW_RET_OK && taken && *taken && !t_agent) {
    pthread_mutex_lock(&g_lock);
    client_t * entry = find_client(client);
    if (entry && entry->pending) {
      entry->pending--;
      g_requests_pending--;
    }
    pthread_mutex_unlock(&g_lock);
  }
  return ret;
}

// A timer's call: what a wait was given for it is its guard condition. A timer on the steady
// or the system clock fires on wall time, between frames too: said once.
static void took_timer(const rcl_timer_t * timer)
{
  if (!t_agent && timer && atomic_load(&g_active)) {
    rcl_clock_t * clock = NULL;
    int type = ROS_TIME;
    if (g_rcl.timer_clock(timer, &clock) == RMW_RET_OK && clock) {
      memcpy(&type, clock, sizeof(type));
    }
    if (type != ROS_TIME && !atomic_exchange(&g_wall_timer_said, true)) {
      LOG("a timer on the %s clock fires on wall time, between frames too: the layer does not "
        "hold it to the frames (it says done while such a timer is still to come)",
        type == STEADY_TIME ? "steady" : "system");
    }
    const rcl_guard_condition_t * guard_condition = g_rcl.timer_get_guard_condition(timer);
    const rmw_guard_condition_t * handle = guard_condition ?
      g_rcl.guard_condition_get_rmw_handle(guard_condition) : NULL;
    took_entity(handle ? handle->data : NULL);
  }
}

rmw_ret_t rcl_timer_call(rcl_timer_t * timer)
{
  pthread_once(&g_rcl_resolved, resolve_rcl);
  took_timer(timer);
  return g_rcl.timer_call(timer);
}

rmw_ret_t rcl_timer_call_with_info(rcl_timer_t * timer, rcl_timer_call_info_t * call_info)
{
  pthread_once(&g_rcl_resolved, resolve_rcl);
  if (!g_rcl.timer_call_with_info) {
    LOG("cannot find rcl_timer_call_with_info in the rcl that defines rcl_timer_call");
    abort();
  }
  took_timer(timer);
  return g_rcl.timer_call_with_info(timer, call_info);
}

rmw_ret_t rmw_subscription_set_on_new_message_callback(
  rmw_subscription_t * subscription, rmw_event_callback_t callback, const void * user_data)
{
  RESOLVE();
  bool clock = false;
  if (!t_agent && callback) {
    pthread_mutex_lock(&g_lock);
    const sub_t * sub = find_sub(subscription);
    clock = sub && sub->clock;
    pthread_mutex_unlock(&g_lock);
  }
  // On /clock: a node that takes part in simulated time is spun so.
  if (clock && !atomic_exchange(&g_events_said, true)) {
    LOG("a subscription of the process is taken on an event callback (an EventsExecutor), "
      "not through rmw_wait: the layer cannot tell when such an executor is idle; its nodes "
      "join only once the process waits in rmw_wait, and no frame waits for what it runs");
  }
  return g_real.set_on_new_message(subscription, callback, user_data);
}

// An entity destroyed is out no more.
static void destroyed(const void * entity)
{
  if (!t_agent && entity) {
    pthread_mutex_lock(&g_lock);
    not_out(entity);
    pthread_mutex_unlock(&g_lock);
  }
}

rmw_ret_t rmw_destroy_service(rmw_node_t * node, rmw_service_t * service)
{
  RESOLVE();
  destroyed(service ? service->data : NULL);
  return g_real.destroy_service(node, service);
}

rmw_ret_t rmw_destroy_client(rmw_node_t * node, rmw_client_t * client)
{
  RESOLVE();
  destroyed(client ? client->data : NULL);
  if (!t_agent && client) {
    pthread_mutex_lock(&g_lock);
    client_t * entry = find_client(client);
    if (entry) {
      forget_requests(entry);
      entry->client = NULL;
    }
    pthread_mutex_unlock(&g_lock);
  }
  return g_real.destroy_client(node, client);
}

rmw_ret_t rmw_destroy_guard_condition(rmw_guard_condition_t * guard_condition)
{
  RESOLVE();
  destroyed(guard_condition ? guard_condition->data : NULL);
  return g_real.destroy_guard_condition(guard_condition);
}

rmw_ret_t rmw_trigger_guard_condition(const rmw_guard_condition_t * guard_condition)
{
  RESOLVE();
  bool done = false;
  int64_t time_ns = 0;
  uint32_t round = 0;
  if (!t_agent && guard_condition && atomic_load(&g_active)) {
    pthread_mutex_lock(&g_lock);
    // A worker's first trigger after a take: its callback runs until it triggers that guard
    // condition again (see "work handed on").
    slot_t * self = t_slot ? &g_slots[t_slot - 1] : NULL;
    if (self && !self->waits && self->work == WORK_TAKEN) {
      self->work = WORK_RUNNING;
      self->work_guard_condition = guard_condition->data;
    } else if (self && !self->waits && self->work == WORK_RUNNING &&
      self->work_guard_condition == guard_condition->data)
    {
      self->work = WORK_NONE;
      done = true;
    }
    for (size_t i = 0; i < MAX_THREADS; i++) {
      slot_t * slot = &g_slots[i];
      if (slot->state != SLOT_PROBING && slot->state != SLOT_IDLE) {
        continue;
      }
      for (size_t j = 0; j < slot->guard_condition_count; j++) {
        if (slot->guard_conditions[j] == guard_condition->data) {
          slot->state = SLOT_WOKEN;
          break;
        }
      }
    }
    done = done && finished(&time_ns, &round);
    pthread_mutex_unlock(&g_lock);
  }
  rmw_ret_t ret = g_real.trigger_guard_condition(guard_condition);
  if (done) {  // a worker's callback ended, and no thread of the process is busy
    say_done(time_ns, round);
  }
  return ret;
}

// Next frame: the subscriptions a wait was given, as the process sees them: each one the layer
// holds is ready when it has a message the process may take, whatever the middleware says.
// The wait itself is given the layer's guard condition too (a Round came) and wakes on a held
// subscription's new message; neither is ever said ready to the process. Returns whether
// anything is ready for the process.
static bool as_the_process_sees(
  rmw_subscriptions_t * subscriptions, rmw_guard_conditions_t * guard_conditions,
  rmw_services_t * services, rmw_clients_t * clients, rmw_events_t * events,
  void * const * asked)
{
  bool ready = false;
  for (size_t i = 0; subscriptions && i < subscriptions->subscriber_count; i++) {
    pthread_mutex_lock(&g_lock);
    sub_t * sub = NULL;
    for (size_t j = 0; j < MAX_ENTITIES && !sub; j++) {
      sub = g_subs[j].subscription && g_subs[j].data == asked[i] ? &g_subs[j] : NULL;
    }
    if (sub) {
      subscriptions->subscribers[i] = sub->released ? asked[i] : NULL;
    }
    pthread_mutex_unlock(&g_lock);
    ready |= subscriptions->subscribers[i] != NULL;
  }
  for (size_t i = 0; guard_conditions && i < guard_conditions->guard_condition_count; i++) {
    ready |= guard_conditions->guard_conditions[i] != NULL;
  }
  for (size_t i = 0; services && i < services->service_count; i++) {
    ready |= services->services[i] != NULL;
  }
  for (size_t i = 0; clients && i < clients->client_count; i++) {
    ready |= clients->clients[i] != NULL;
  }
  for (size_t i = 0; events && i < events->event_count; i++) {
    ready |= events->events[i] != NULL;
  }
  return ready;
}

static int64_t monotonic_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

// Take what the process's subscriptions received and release what the rule lets it take now.
// A release wakes every other thread's wait (they look again); a /clock of the frame's time
// that came again (rounds) has the last done said again.
static void take_and_release(slot_t * self)
{
  pthread_mutex_lock(&g_lock);
  take_all();
  bool released = release_held();
  const rmw_guard_condition_t * wake = released ? g_wake : NULL;
  if (released) {
    for (size_t i = 0; i < MAX_THREADS; i++) {
      if (&g_slots[i] != self && g_slots[i].waits && (g_slots[i].state == SLOT_PROBING ||
        g_slots[i].state == SLOT_IDLE))
      {
        g_slots[i].state = SLOT_WOKEN;
      }
    }
  }
  bool again = g_again;
  int64_t time_ns = g_frame_ns;
  g_again = false;
  pthread_mutex_unlock(&g_lock);
  if (wake) {
    g_real.trigger_guard_condition(wake);
  }
  if (again) {
    t_agent = true;
    g_agent.again(time_ns);
    t_agent = false;
  }
}

// One wait of the process under the next-frame rule or in rounds (see as_the_process_sees).
static rmw_ret_t wait_next_frame(
  rmw_subscriptions_t * subscriptions, rmw_guard_conditions_t * guard_conditions,
  rmw_services_t * services, rmw_clients_t * clients, rmw_events_t * events,
  rmw_wait_set_t * wait_set, const rmw_time_t * wait_timeout, slot_t * slot,
  const array_t * arrays, size_t n)
{
  bool blocking = !wait_timeout || wait_timeout->sec || wait_timeout->nsec;
  int64_t deadline = wait_timeout ?
    monotonic_ns() + (int64_t)wait_timeout->sec * NS_PER_SEC + (int64_t)wait_timeout->nsec : 0;
  size_t subscriber_count = subscriptions ? subscriptions->subscriber_count : 0;
  void ** asked = subscriber_count ? malloc(subscriber_count * sizeof(void *)) : NULL;
  size_t gc_count = guard_conditions ? guard_conditions->guard_condition_count : 0;
  void ** gcs = malloc((gc_count + 1) * sizeof(void *));
  if ((subscriber_count && !asked) || !gcs) {
    free(asked);
    free(gcs);
    return RMW_RET_BAD_ALLOC;
  }
  if (subscriber_count) {
    memcpy(asked, subscriptions->subscribers, subscriber_count * sizeof(void *));
  }
  rmw_guard_conditions_t with_wake = {0, gcs};
  rmw_ret_t ret;
  for (bool look = true;; look = !look) {
    restore(arrays, n);
    take_and_release(slot);
    pthread_mutex_lock(&g_lock);
    const rmw_guard_condition_t * wake = g_wake;
    if (slot) {
      slot->state = look ? SLOT_PROBING : slot->state;
    }
    pthread_mutex_unlock(&g_lock);
    if (gc_count) {
      memcpy(gcs, guard_conditions->guard_conditions, gc_count * sizeof(void *));
    }
    with_wake.guard_condition_count = gc_count;
    if (wake) {
      gcs[with_wake.guard_condition_count++] = wake->data;
    }
    // First a look (timeout 0); then, if nothing is ready and it would block, the wait.
    rmw_time_t zero = {0, 0};
    const rmw_time_t * timeout = &zero;
    rmw_time_t left;
    if (!look) {
      timeout = wait_timeout;
      if (wait_timeout) {
        int64_t remaining = deadline - monotonic_ns();
        remaining = remaining > 0 ? remaining : 0;
        left = (rmw_time_t){(uint64_t)(remaining / NS_PER_SEC),
          (uint64_t)(remaining % NS_PER_SEC)};
        timeout = &left;
      }
    }
    ret = g_real.wait(subscriptions, &with_wake, services, clients, events, wait_set,
        timeout);
    if (ret != RMW_RET_OK && ret != RMW_RET_TIMEOUT) {
      break;
    }
    if (gc_count) {
      memcpy(guard_conditions->guard_conditions, gcs, gc_count * sizeof(void *));
    }
    take_and_release(slot);
    if (as_the_process_sees(subscriptions, guard_conditions, services, clients, events, asked)) {
      ret = RMW_RET_OK;
      break;
    }
    ret = RMW_RET_TIMEOUT;
    if (!blocking || (!look && wait_timeout && monotonic_ns() >= deadline)) {
      break;
    }
    if (look) {  // nothing for the process: it is idle while it waits
      int64_t time_ns = 0;
      uint32_t round = 0;
      pthread_mutex_lock(&g_lock);
      bool done = false;
      if (slot && slot->state == SLOT_PROBING) {
        slot->state = SLOT_IDLE;
        done = finished(&time_ns, &round);
      }
      pthread_mutex_unlock(&g_lock);
      if (done) {
        say_done(time_ns, round);
      }
    }
  }
  if (slot) {
    pthread_mutex_lock(&g_lock);
    slot->state = SLOT_BUSY;
    pthread_mutex_unlock(&g_lock);
  }
  free(asked);
  free(gcs);
  return ret;
}

static rmw_ret_t wait_participant(
  rmw_subscriptions_t * subscriptions, rmw_guard_conditions_t * guard_conditions,
  rmw_services_t * services, rmw_clients_t * clients, rmw_events_t * events,
  rmw_wait_set_t * wait_set, const rmw_time_t * wait_timeout, slot_t * slot,
  const array_t * arrays, size_t n);

rmw_ret_t rmw_wait(
  rmw_subscriptions_t * subscriptions, rmw_guard_conditions_t * guard_conditions,
  rmw_services_t * services, rmw_clients_t * clients, rmw_events_t * events,
  rmw_wait_set_t * wait_set, const rmw_time_t * wait_timeout)
{
  RESOLVE();
  t_waited = true;
  if (!t_agent && atomic_load(&g_adds_pending)) {
    add_nodes();
  }
  bool active = atomic_load(&g_active);
  if (t_agent || (!active && !atomic_load(&g_tracking) && !atomic_load(&g_letting_go))) {
    return g_real.wait(subscriptions, guard_conditions, services, clients, events, wait_set,
             wait_timeout);
  }
  array_t arrays[] = {
    {subscriptions ? &subscriptions->subscriber_count : NULL,
      subscriptions ? &subscriptions->subscribers : NULL},
    {guard_conditions ? &guard_conditions->guard_condition_count : NULL,
      guard_conditions ? &guard_conditions->guard_conditions : NULL},
    {services ? &services->service_count : NULL, services ? &services->services : NULL},
    {clients ? &clients->client_count : NULL, clients ? &clients->clients : NULL},
    {events ? &events->event_count : NULL, events ? &events->events : NULL},
  };
  size_t n = sizeof(arrays) / sizeof(arrays[0]);
  bool blocking = !wait_timeout || wait_timeout->sec || wait_timeout->nsec;
  pthread_mutex_lock(&g_lock);
  slot_t * slot = my_slot();
  bool saved = save(arrays, n);
  bool tracked = slot && saved && blocking && keep_guard_conditions(slot, guard_conditions);
  if (slot) {
    slot->state = tracked ? SLOT_PROBING : SLOT_BUSY;
    slot->waits = true;
    slot->work = WORK_NONE;
    given_again(slot, arrays);
    if (!g_host.next_frame && !g_host.rounds) {
      note_clock_waits(slot, subscriptions);
    }
  }
  pthread_mutex_unlock(&g_lock);
  rmw_ret_t ret = RMW_RET_BAD_ALLOC;
  if (g_host.next_frame || g_host.rounds) {
    if (saved) {
      ret = wait_next_frame(subscriptions, guard_conditions, services, clients, events,
          wait_set, wait_timeout, tracked ? slot : NULL, arrays, n);
    }
  } else {
    ret = wait_participant(subscriptions, guard_conditions, services, clients, events,
        wait_set, wait_timeout, tracked ? slot : NULL, arrays, n);
  }
  if (slot && ret == RMW_RET_OK && active) {  // before it joined, nothing is taken as work
    pthread_mutex_lock(&g_lock);
    found_ready(slot, arrays);
    pthread_mutex_unlock(&g_lock);
  }
  return ret;
}

// One wait of the process under the default rule: a wait that would block first looks.
static rmw_ret_t wait_participant(
  rmw_subscriptions_t * subscriptions, rmw_guard_conditions_t * guard_conditions,
  rmw_services_t * services, rmw_clients_t * clients, rmw_events_t * events,
  rmw_wait_set_t * wait_set, const rmw_time_t * wait_timeout, slot_t * slot,
  const array_t * arrays, size_t n)
{
  if (!slot) {
    return g_real.wait(subscriptions, guard_conditions, services, clients, events, wait_set,
             wait_timeout);
  }
  // Would it block? Look with a timeout of 0 first.
  const rmw_time_t zero = {0, 0};
  rmw_ret_t ret = g_real.wait(subscriptions, guard_conditions, services, clients, events,
      wait_set, &zero);
  if (ret != RMW_RET_TIMEOUT) {  // something is ready (or an error): busy
    pthread_mutex_lock(&g_lock);
    slot->state = SLOT_BUSY;
    pthread_mutex_unlock(&g_lock);
    return ret;
  }
  restore(arrays, n);
  int64_t time_ns = 0;
  uint32_t round = 0;
  pthread_mutex_lock(&g_lock);
  bool done = false;
  if (slot->state == SLOT_PROBING) {  // not woken while it looked
    slot->state = SLOT_IDLE;
    done = finished(&time_ns, &round);
  }
  pthread_mutex_unlock(&g_lock);
  if (done) {
    say_done(time_ns, round);
  }
  ret = g_real.wait(subscriptions, guard_conditions, services, clients, events, wait_set,
      wait_timeout);
  pthread_mutex_lock(&g_lock);
  slot->state = SLOT_BUSY;
  pthread_mutex_unlock(&g_lock);
  return ret;
}
