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

// libsim_clock_lockstep_agent.so: the participant half of the lockstep layer
// (doc/lockstep-layer.md), opened by libsim_clock_lockstep.so once a node of the process
// subscribes to /clock.
//
// On a thread of its own it makes an rcl context (on the process's domain) and a hidden node,
// and follows the wire protocol of a participant (doc/frames.md, "The wire protocol"): for
// each node of the process that subscribed to /clock it calls ~/join once the server's ~/join
// is on the graph (name: the node's full name; node: the agent's own, which the server has
// discovered by then, where the process's node may not be yet, and which goes when the
// process goes; period 0; next frame: next_frame and the topics the process publishes on),
// and joins again when a server comes back. It says done when the preloaded half says the
// process has finished a time (or a round), and hands it the server's Rounds (next frame,
// rounds). It calls ~/leave when the node is destroyed or the process exits (half a second at
// most: the server may be gone). Until a server is first on the graph it makes nothing: a
// DDS participant of its own (its threads, its discovery) would cost a process that never
// meets a server a share of its latency. The host looks for the server through the process's
// own participant, every LOOK_FOR_SERVER_NS.

#define _POSIX_C_SOURCE 200809L  // clock_gettime, pthread_condattr_setclock

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rcl/error_handling.h>
#include <rcl/graph.h>
#include <rcl/rcl.h>
#include <rcutils/allocator.h>
#include <rosidl_runtime_c/primitives_sequence_functions.h>
#include <rosidl_runtime_c/string_functions.h>
#include <sim_clock/msg/done.h>
#include <sim_clock/msg/ready.h>
#include <sim_clock/msg/round.h>
#include <sim_clock/srv/join.h>
#include <sim_clock/srv/leave.h>

#include "lockstep.h"

#define NS_PER_SEC 1000000000LL
#define WAIT_NS (NS_PER_SEC / 5)       // longest wait: a join's answer that is lost is asked again
#define LOOK_NS (NS_PER_SEC / 20)      // joined: how often the counts of Ready are looked at
#define MAX_ENDPOINTS 256
#define JOIN_AGAIN_NS (2 * NS_PER_SEC)  // asked again after so long without an answer
#define LEAVE_TIMEOUT_NS (NS_PER_SEC / 2)
#define LOOK_FOR_SERVER_NS (NS_PER_SEC / 10)  // before the context is made
#define MAX_MEMBERS 64
#define NAME_LENGTH 512

#define LOG(...) do {fprintf(stderr, "sim_clock lockstep: " __VA_ARGS__); fputc('\n', stderr);} \
  while (0)
#define SAY(...) do {if (g_host->verbose) {LOG(__VA_ARGS__);}} while (0)

// A node of the process, as a participant.
typedef enum
{
  MEMBER_FREE,
  MEMBER_NEW,       // to join once the server is there
  MEMBER_JOINING,   // join sent
  MEMBER_JOINED,
  MEMBER_TO_LEAVE,  // leave asked for by the process
  MEMBER_LEAVING,   // leave sent
  MEMBER_GONE,      // left, refused, or left without an answer
} member_state_t;

typedef struct
{
  char name[NAME_LENGTH];
  member_state_t state;
  int64_t sequence;  // of the request sent
  int64_t sent_ns;   // when it was sent (monotonic)
  int64_t deadline_ns;  // leaving: when to give up
  // What its last Ready said (ready_size SIZE_MAX: none said since it joined).
  lockstep_endpoint_t * ready;
  size_t ready_size;
} member_t;

static const lockstep_host_t * g_host;
static rcl_allocator_t g_alloc;
static rcl_context_t g_context;
static rcl_node_t g_node;
static rcl_client_t g_join, g_leave;
static rcl_publisher_t g_done;
static rcl_publisher_t g_ready_pub;  // ~/ready: reliable, transient local, depth 1
static char g_server[NAME_LENGTH];  // the server's node name
static rcl_subscription_t g_rounds;  // next frame
static rcl_guard_condition_t g_wake;
static rcl_guard_condition_t g_process_wake;  // next frame: in every wait of the process
static rcl_wait_set_t g_wait_set;

// Guarded by g_lock; g_changed is signalled when a member is gone.
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_changed;
static member_t g_members[MAX_MEMBERS];
static bool g_ready = false;   // the entities exist: g_done and g_wake may be used
static bool g_stop = false;
static bool g_active = false;  // said to the host
// The last done said: published on a join's answer if the process finished a frame past the
// join before the answer came; at the next frame and in rounds, answered again for a Round of
// its time published again, with what it published (round, topics, counts).
static int64_t g_done_ns = -1;
static uint32_t g_done_round = 0;
static rosidl_runtime_c__String__Sequence g_done_topics;
static rosidl_runtime_c__uint32__Sequence g_done_counts;

static int64_t now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

static bool failed(const char * what)
{
  LOG("%s: %s", what, rcl_get_error_string().str);
  rcl_reset_error();
  return false;
}

#define CHECK(call, what) do {if ((call) != RCL_RET_OK) {return failed(what);}} while (0)

// Under g_lock: wake the agent's thread.
static void wake(void)
{
  if (g_ready && rcl_trigger_guard_condition(&g_wake) != RCL_RET_OK) {
    failed("wake the participant");
  }
}

// ~/ready: reliable, transient local, depth 1, as every node that says Ready.
static bool make_ready_publisher(void)
{
  rcl_publisher_options_t options = rcl_publisher_get_default_options();
  options.qos = rmw_qos_profile_default;
  options.qos.depth = 1;
  options.qos.durability = RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL;
  char topic[sizeof(g_server) + sizeof("/ready")];
  snprintf(topic, sizeof(topic), "%s/ready", g_server);
  return rcl_publisher_init(&g_ready_pub, &g_node,
           ROSIDL_GET_MSG_TYPE_SUPPORT(sim_clock, msg, Ready), topic, &options) == RCL_RET_OK;
}

static bool set_up(size_t domain_id)
{
  g_alloc = rcl_get_default_allocator();
  rcl_init_options_t init_options = rcl_get_zero_initialized_init_options();
  CHECK(rcl_init_options_init(&init_options, g_alloc), "init options");
  rcl_ret_t ret = rcl_init_options_set_domain_id(&init_options, domain_id);
  g_context = rcl_get_zero_initialized_context();
  if (ret == RCL_RET_OK) {
    ret = rcl_init(0, NULL, &init_options, &g_context);
  }
  CHECK(rcl_init_options_fini(&init_options), "init options");
  CHECK(ret, "init");
  // Hidden (a leading underscore), one per process. Its context was given no arguments: the
  // process's remappings are not its own.
  char name[64];
  snprintf(name, sizeof(name), "_sim_clock_lockstep_%ld", (long)getpid());
  rcl_node_options_t node_options = rcl_node_get_default_options();
  node_options.enable_rosout = false;
  g_node = rcl_get_zero_initialized_node();
  CHECK(rcl_node_init(&g_node, name, "", &g_context, &node_options), "node");
  const char * server = getenv("SIM_CLOCK_LOCKSTEP_SERVER");
  if (!server || !server[0]) {
    server = "/sim_clock";
  }
  snprintf(g_server, sizeof(g_server), "%s", server);
  char topic[NAME_LENGTH];
  rcl_client_options_t client_options = rcl_client_get_default_options();
  client_options.qos.depth = 1000;  // every client of a service receives every response
  g_join = rcl_get_zero_initialized_client();
  snprintf(topic, sizeof(topic), "%s/join", server);
  CHECK(rcl_client_init(&g_join, &g_node, ROSIDL_GET_SRV_TYPE_SUPPORT(sim_clock, srv, Join),
    topic, &client_options), "join");
  g_leave = rcl_get_zero_initialized_client();
  snprintf(topic, sizeof(topic), "%s/leave", server);
  CHECK(rcl_client_init(&g_leave, &g_node, ROSIDL_GET_SRV_TYPE_SUPPORT(sim_clock, srv, Leave),
    topic, &client_options), "leave");
  rcl_publisher_options_t pub_options = rcl_publisher_get_default_options();
  pub_options.qos = rmw_qos_profile_default;  // reliable, volatile
  pub_options.qos.depth = 1000;
  g_done = rcl_get_zero_initialized_publisher();
  snprintf(topic, sizeof(topic), "%s/done", server);
  CHECK(rcl_publisher_init(&g_done, &g_node, ROSIDL_GET_MSG_TYPE_SUPPORT(sim_clock, msg, Done),
    topic, &pub_options), "done");
  g_ready_pub = rcl_get_zero_initialized_publisher();
  if (!make_ready_publisher()) {
    return failed("ready");
  }
  g_wake = rcl_get_zero_initialized_guard_condition();
  CHECK(rcl_guard_condition_init(&g_wake, &g_context,
    rcl_guard_condition_get_default_options()), "guard condition");
  g_rounds = rcl_get_zero_initialized_subscription();
  g_process_wake = rcl_get_zero_initialized_guard_condition();
  if (g_host->next_frame || g_host->rounds) {
    rcl_subscription_options_t sub_options = rcl_subscription_get_default_options();
    sub_options.qos = pub_options.qos;  // reliable, volatile, keep last 1000
    snprintf(topic, sizeof(topic), "%s/rounds", server);
    CHECK(rcl_subscription_init(&g_rounds, &g_node,
      ROSIDL_GET_MSG_TYPE_SUPPORT(sim_clock, msg, Round), topic, &sub_options), "rounds");
    CHECK(rcl_guard_condition_init(&g_process_wake, &g_context,
      rcl_guard_condition_get_default_options()), "guard condition");
    g_host->set_wake(rcl_guard_condition_get_rmw_handle(&g_process_wake));
  }
  g_wait_set = rcl_get_zero_initialized_wait_set();
  CHECK(rcl_wait_set_init(&g_wait_set, 1, 2, 0, 2, 0, 0, &g_context, g_alloc), "wait set");
  return true;
}

// Under g_lock: the server is gone. The last Ready its writer keeps (transient local) would
// reach a server that comes next before the node has joined it, and tell it the node is
// ready: the writer is made again, empty; each node says Ready again once it has joined.
static void forget_ready(void)
{
  if (rcl_publisher_fini(&g_ready_pub, &g_node) != RCL_RET_OK) {
    failed("ready writer");
  }
  g_ready_pub = rcl_get_zero_initialized_publisher();
  if (!make_ready_publisher()) {
    failed("ready writer");
  }
}

static void tear_down(void)
{
  // Each one not made is skipped by rcl (zero-initialized); then the node and the context.
  if (g_host->next_frame || g_host->rounds) {
    g_host->set_wake(NULL);
  }
  rcl_ret_t ret = rcl_wait_set_fini(&g_wait_set) | rcl_guard_condition_fini(&g_wake) |
    rcl_guard_condition_fini(&g_process_wake);
  if (rcl_node_is_valid_except_context(&g_node)) {
    ret |= rcl_publisher_fini(&g_done, &g_node) | rcl_publisher_fini(&g_ready_pub, &g_node) |
      rcl_client_fini(&g_leave, &g_node) |
      rcl_client_fini(&g_join, &g_node) | rcl_subscription_fini(&g_rounds, &g_node);
    ret |= rcl_node_fini(&g_node);
  }
  rosidl_runtime_c__String__Sequence__fini(&g_done_topics);
  rosidl_runtime_c__uint32__Sequence__fini(&g_done_counts);
  rcl_reset_error();  // is_valid says why not, when it is not
  if (rcl_context_is_valid(&g_context)) {
    ret |= rcl_shutdown(&g_context);
  }
  ret |= rcl_context_fini(&g_context);
  if (ret != RCL_RET_OK) {
    failed("fini");
  }
  rcl_reset_error();
}

// Under g_lock: send a join or a leave for the member.
static void send(member_t * member, bool join)
{
  bool ok;
  int64_t sequence = 0;
  if (join) {
    sim_clock__srv__Join_Request request;
    memset(&request, 0, sizeof(request));  // period_ns 0: every frame (__init leaves it)
    ok = sim_clock__srv__Join_Request__init(&request) &&
      rosidl_runtime_c__String__assign(&request.name, member->name) &&
      rosidl_runtime_c__String__assign(&request.node,
      rcl_node_get_fully_qualified_name(&g_node));
    if (ok && g_host->next_frame) {
      // Every topic the process publishes on: each Round names them, so that no reader
      // takes their messages before their frame.
      size_t size = 0;
      char ** topics = g_host->publisher_topics(&size);
      request.next_frame = true;
      ok = rosidl_runtime_c__String__Sequence__init(&request.topics, size);
      for (size_t i = 0; i < size; i++) {
        ok = ok && rosidl_runtime_c__String__assign(&request.topics.data[i], topics[i]);
        free(topics[i]);
      }
      free(topics);
    }
    ok = ok && (rcl_send_request(&g_join, &request, &sequence) == RCL_RET_OK || failed("join"));
    sim_clock__srv__Join_Request__fini(&request);
  } else {
    sim_clock__srv__Leave_Request request;
    memset(&request, 0, sizeof(request));
    ok = sim_clock__srv__Leave_Request__init(&request) &&
      rosidl_runtime_c__String__assign(&request.name, member->name) &&
      (rcl_send_request(&g_leave, &request, &sequence) == RCL_RET_OK || failed("leave"));
    sim_clock__srv__Leave_Request__fini(&request);
  }
  member->sent_ns = now_ns();
  if (!ok) {  // tried again at the next turn (a join) or given up (a leave)
    member->state = join ? MEMBER_NEW : MEMBER_GONE;
    return;
  }
  member->sequence = sequence;
  member->state = join ? MEMBER_JOINING : MEMBER_LEAVING;
}

static void publish_done_of(const member_t * member, int64_t time_ns);

// Under g_lock: take the answers to joins and leaves.
static void take_answers(void)
{
  rmw_request_id_t header;
  sim_clock__srv__Join_Response joined;
  memset(&joined, 0, sizeof(joined));
  if (sim_clock__srv__Join_Response__init(&joined)) {
    rcl_ret_t ret;
    while ((ret = rcl_take_response(&g_join, &header, &joined)) == RCL_RET_OK) {
      for (size_t i = 0; i < MAX_MEMBERS; i++) {
        member_t * member = &g_members[i];
        if (member->state == MEMBER_JOINING && member->sequence == header.sequence_number) {
          if (joined.success) {
            member->state = MEMBER_JOINED;
            free(member->ready);  // a node that joins again says Ready again
            member->ready = NULL;
            member->ready_size = 0;
            int64_t clock_ns = (int64_t)joined.clock.sec * NS_PER_SEC + joined.clock.nanosec;
            SAY("joined as %s at %lld ns", member->name, (long long)clock_ns);
            if (g_host->next_frame) {
              g_host->joined_at(clock_ns);
            }
            if (g_done_ns > clock_ns) {
              // The process was followed from the join on, and finished a frame the server
              // counts it in before the answer came: that done was kept for now.
              publish_done_of(member, g_done_ns);
            }
          } else {
            member->state = MEMBER_GONE;
            LOG("join as %s refused: %s", member->name, joined.message.data);
          }
        }
      }
    }
    if (ret != RCL_RET_CLIENT_TAKE_FAILED) {
      failed("take a join's answer");
    }
    sim_clock__srv__Join_Response__fini(&joined);
  }
  sim_clock__srv__Leave_Response left;
  memset(&left, 0, sizeof(left));
  if (sim_clock__srv__Leave_Response__init(&left)) {
    rcl_ret_t ret;
    while ((ret = rcl_take_response(&g_leave, &header, &left)) == RCL_RET_OK) {
      for (size_t i = 0; i < MAX_MEMBERS; i++) {
        member_t * member = &g_members[i];
        if (member->state == MEMBER_LEAVING && member->sequence == header.sequence_number) {
          member->state = MEMBER_GONE;
          SAY("left as %s", member->name);
          pthread_cond_broadcast(&g_changed);
        }
      }
    }
    if (ret != RCL_RET_CLIENT_TAKE_FAILED) {
      failed("take a leave's answer");
    }
    sim_clock__srv__Leave_Response__fini(&left);
  }
}

// Under g_lock: say on ~/ready what the member's node's writers and readers matched
// (doc/frames.md, "Expected participants"), if it changed since it last said it.
static void say_ready(member_t * member)
{
  static lockstep_endpoint_t endpoints[MAX_ENDPOINTS];
  size_t size = g_host->endpoints(member->name, endpoints, MAX_ENDPOINTS);
  size = size < MAX_ENDPOINTS ? size : MAX_ENDPOINTS;
  if (member->ready && member->ready_size == size &&
    memcmp(member->ready, endpoints, size * sizeof(*endpoints)) == 0)
  {
    return;
  }
  size_t writers = 0;
  for (size_t i = 0; i < size; i++) {
    writers += endpoints[i].writer;
  }
  sim_clock__msg__Ready ready;
  memset(&ready, 0, sizeof(ready));
  bool ok = sim_clock__msg__Ready__init(&ready) &&
    rosidl_runtime_c__String__assign(&ready.name, member->name) &&
    rosidl_runtime_c__String__Sequence__init(&ready.publications, writers) &&
    rosidl_runtime_c__uint32__Sequence__init(&ready.readers, writers) &&
    rosidl_runtime_c__String__Sequence__init(&ready.subscriptions, size - writers) &&
    rosidl_runtime_c__uint32__Sequence__init(&ready.writers, size - writers);
  for (size_t i = 0, w = 0, r = 0; ok && i < size; i++) {
    if (endpoints[i].writer) {
      ok = rosidl_runtime_c__String__assign(&ready.publications.data[w], endpoints[i].topic);
      ready.readers.data[w++] = endpoints[i].matched;
    } else {
      ok = rosidl_runtime_c__String__assign(&ready.subscriptions.data[r], endpoints[i].topic);
      ready.writers.data[r++] = endpoints[i].matched;
    }
  }
  if (!ok) {
    LOG("ready of %s: out of memory", member->name);
  } else if (rcl_publish(&g_ready_pub, &ready, NULL) != RCL_RET_OK) {
    failed("publish ready");
  } else {
    lockstep_endpoint_t * kept = realloc(member->ready, (size ? size : 1) * sizeof(*kept));
    if (kept) {
      memcpy(kept, endpoints, size * sizeof(*endpoints));
      member->ready = kept;
      member->ready_size = size;
    }
  }
  sim_clock__msg__Ready__fini(&ready);
}

// Under g_lock: join, ask again, leave, give up, as the server's presence and time say; tell
// the host whether any node takes part (joined, and the server's done reader matched).
static void turn(void)
{
  bool join_served = false, leave_served = false;
  if (rcl_service_server_is_available(&g_node, &g_join, &join_served) != RCL_RET_OK ||
    rcl_service_server_is_available(&g_node, &g_leave, &leave_served) != RCL_RET_OK)
  {
    failed("look for the server");
  }
  // The server's ends of ~/done (and ~/rounds) matched the agent's: a done said, or a Round
  // sent, before they matched would be lost. A join waits for it (the server waits for a
  // participant from the frame after its join), and so does following the process.
  size_t done_readers = 0, rounds_writers = 1;
  if (join_served && rcl_publisher_get_subscription_count(&g_done, &done_readers) !=
    RCL_RET_OK)
  {
    failed("done readers");
  }
  if (join_served && (g_host->next_frame || g_host->rounds) &&
    rcl_subscription_get_publisher_count(&g_rounds, &rounds_writers) != RCL_RET_OK)
  {
    failed("rounds writers");
  }
  bool matched = done_readers > 0 && rounds_writers > 0;
  int64_t now = now_ns();
  bool taking_part = false, said_ready = false;
  for (size_t i = 0; i < MAX_MEMBERS; i++) {
    member_t * member = &g_members[i];
    switch (member->state) {
      case MEMBER_NEW:
        if (join_served && matched && !g_stop) {
          // The process is followed before the server can count it: the first frame after
          // the join may reach the process before the join's answer reaches this thread.
          if (!g_active) {
            g_active = true;
            g_done_ns = -1;  // a done said before (to a server gone since) is not this one's
            g_host->set_active(true);
          }
          send(member, true);
        }
        break;
      case MEMBER_JOINING:
      case MEMBER_JOINED:
        if (!join_served) {
          // The server is gone: join the next one that comes.
          if (member->state == MEMBER_JOINED) {
            SAY("the server is gone; %s joins again when one comes", member->name);
            said_ready |= member->ready != NULL;
          }
          member->state = MEMBER_NEW;
        } else if (member->state == MEMBER_JOINING && now - member->sent_ns > JOIN_AGAIN_NS) {
          send(member, true);  // the answer was lost: joining again changes nothing more
        }
        break;
      case MEMBER_TO_LEAVE:
        if (leave_served) {
          send(member, false);
        } else {
          member->state = MEMBER_GONE;
          pthread_cond_broadcast(&g_changed);
        }
        break;
      case MEMBER_LEAVING:
        if (!leave_served || now > member->deadline_ns) {
          SAY("left as %s without the server's answer", member->name);
          member->state = MEMBER_GONE;
          pthread_cond_broadcast(&g_changed);
        }
        break;
      default:
        break;
    }
    taking_part |= member->state == MEMBER_JOINING || member->state == MEMBER_JOINED;
  }
  if (said_ready) {
    forget_ready();
  }
  // A member is joined only while the join is served (else it went back to new above).
  bool active = taking_part && matched && !g_stop;
  // Joined, and the server's ends of ~/done (and ~/rounds) matched, which no Ready counts:
  // each node says what its endpoints matched, and again whenever that changes.
  for (size_t i = 0; active && i < MAX_MEMBERS; i++) {
    if (g_members[i].state == MEMBER_JOINED) {
      say_ready(&g_members[i]);
    }
  }
  if (active != g_active) {
    g_active = active;
    g_host->set_active(active);
  }
}

// Publish the member's done for time_ns (the last one said, under the rounds rules); under
// g_lock.
static void publish_done_of(const member_t * member, int64_t time_ns)
{
  if (!g_ready) {
    return;
  }
  sim_clock__msg__Done done;
  memset(&done, 0, sizeof(done));  // __init leaves fields without a default as they are
  bool ok = sim_clock__msg__Done__init(&done) &&
    rosidl_runtime_c__String__assign(&done.name, member->name);
  done.time.sec = (int32_t)(time_ns / NS_PER_SEC);
  done.time.nanosec = (uint32_t)(time_ns % NS_PER_SEC);
  if (ok && (g_host->next_frame || g_host->rounds)) {
    done.rounds = true;
    done.next_frame = g_host->next_frame;
    done.round = g_done_round;
    ok = rosidl_runtime_c__String__Sequence__copy(&g_done_topics, &done.topics) &&
      rosidl_runtime_c__uint32__Sequence__copy(&g_done_counts, &done.counts);
  }
  if (!ok) {
    LOG("done for %lld ns: out of memory", (long long)time_ns);
  } else if (rcl_publish(&g_done, &done, NULL) != RCL_RET_OK) {
    failed("publish done");
  }
  sim_clock__msg__Done__fini(&done);
}

// Publish a done for each node joined; under g_lock.
static void publish_done(int64_t time_ns)
{
  for (size_t i = 0; i < MAX_MEMBERS; i++) {
    if (g_members[i].state == MEMBER_JOINED) {
      publish_done_of(&g_members[i], time_ns);
    }
  }
}

// Next frame: hand each Round of the server to the host; one of the time it said done for
// last, published again, is answered with the same done again.
static void take_rounds(void)
{
  sim_clock__msg__Round round;
  memset(&round, 0, sizeof(round));
  if (!sim_clock__msg__Round__init(&round)) {
    return;
  }
  rmw_message_info_t info;
  rcl_ret_t ret;
  while ((ret = rcl_take(&g_rounds, &round, &info, NULL)) == RCL_RET_OK) {
    int64_t time_ns = (int64_t)round.time.sec * NS_PER_SEC + round.time.nanosec;
    if (round.next_frame != g_host->next_frame) {
      continue;  // the other rule's kind: one rule per stack (doc/frames.md)
    }
    if (g_host->next_frame) {
      pthread_mutex_lock(&g_lock);
      if (time_ns == g_done_ns) {
        publish_done(time_ns);  // published again: answered again
      }
      pthread_mutex_unlock(&g_lock);
    }
    const char * topics[MAX_MEMBERS * 4];
    size_t size = 0;
    for (; size < round.topics.size && size < round.counts.size &&
      size < sizeof(topics) / sizeof(topics[0]); size++)
    {
      topics[size] = round.topics.data[size].data;
    }
    g_host->on_round(time_ns, round.round, topics, round.counts.data, size);
  }
  if (ret != RCL_RET_SUBSCRIPTION_TAKE_FAILED) {
    failed("take a round");
  }
  sim_clock__msg__Round__fini(&round);
}

static bool leaving(void)
{
  for (size_t i = 0; i < MAX_MEMBERS; i++) {
    if (g_members[i].state == MEMBER_TO_LEAVE || g_members[i].state == MEMBER_LEAVING) {
      return true;
    }
  }
  return false;
}

// Wait until the host sees the server on the graph; false if stopped first.
static bool wait_for_server(void)
{
  pthread_mutex_lock(&g_lock);
  while (!g_stop) {
    pthread_mutex_unlock(&g_lock);
    bool seen = g_host->server_seen();  // takes the host's lock: never under the agent's
    pthread_mutex_lock(&g_lock);
    if (seen || g_stop) {
      break;
    }
    int64_t deadline = now_ns() + LOOK_FOR_SERVER_NS;
    struct timespec until = {(time_t)(deadline / NS_PER_SEC), (long)(deadline % NS_PER_SEC)};
    pthread_cond_timedwait(&g_changed, &g_lock, &until);
  }
  bool go = !g_stop;
  pthread_mutex_unlock(&g_lock);
  return go;
}

// The agent ends without a participant: every node it was given is gone, and it stops.
static void all_gone(void)
{
  pthread_mutex_lock(&g_lock);
  for (size_t i = 0; i < MAX_MEMBERS; i++) {
    g_members[i].state = g_members[i].state == MEMBER_FREE ? MEMBER_FREE : MEMBER_GONE;
  }
  g_stop = true;
  pthread_cond_broadcast(&g_changed);
  pthread_mutex_unlock(&g_lock);
}

int lockstep_agent_run(const lockstep_host_t * host, size_t domain_id)
{
  g_host = host;
  pthread_condattr_t attributes;
  pthread_condattr_init(&attributes);
  pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
  pthread_cond_init(&g_changed, &attributes);
  pthread_condattr_destroy(&attributes);
  if (!wait_for_server()) {
    all_gone();  // stopped before a server came
    return 0;
  }
  SAY("the server is on the graph: the participant starts");
  if (!set_up(domain_id)) {
    tear_down();
    all_gone();
    return 1;
  }
  const rcl_guard_condition_t * graph = rcl_node_get_graph_guard_condition(&g_node);
  pthread_mutex_lock(&g_lock);
  g_ready = true;
  // Until stopped, and then until every leave is answered or given up.
  while (!g_stop || leaving()) {
    turn();
    int64_t wait_ns = g_active ? LOOK_NS : WAIT_NS;
    pthread_mutex_unlock(&g_lock);
    rcl_ret_t ret = rcl_wait_set_clear(&g_wait_set);
    if (ret == RCL_RET_OK) {
      ret = rcl_wait_set_add_guard_condition(&g_wait_set, &g_wake, NULL);
    }
    if (ret == RCL_RET_OK && graph) {
      ret = rcl_wait_set_add_guard_condition(&g_wait_set, graph, NULL);
    }
    if (ret == RCL_RET_OK) {
      ret = rcl_wait_set_add_client(&g_wait_set, &g_join, NULL);
    }
    if (ret == RCL_RET_OK) {
      ret = rcl_wait_set_add_client(&g_wait_set, &g_leave, NULL);
    }
    if (ret == RCL_RET_OK && (g_host->next_frame || g_host->rounds)) {
      ret = rcl_wait_set_add_subscription(&g_wait_set, &g_rounds, NULL);
    }
    if (ret == RCL_RET_OK) {
      ret = rcl_wait(&g_wait_set, wait_ns);
    }
    if (ret != RCL_RET_OK && ret != RCL_RET_TIMEOUT) {
      failed("wait");
      struct timespec pause = {0, WAIT_NS};  // not a busy loop on a wait that fails
      nanosleep(&pause, NULL);
    }
    if (g_host->next_frame || g_host->rounds) {
      take_rounds();
    }
    pthread_mutex_lock(&g_lock);
    take_answers();
  }
  g_ready = false;
  for (size_t i = 0; i < MAX_MEMBERS; i++) {
    free(g_members[i].ready);
    g_members[i].ready = NULL;
  }
  if (g_active) {
    g_active = false;
    g_host->set_active(false);
  }
  pthread_mutex_unlock(&g_lock);
  tear_down();
  return 0;
}

void lockstep_agent_add(const char * node_name)
{
  pthread_mutex_lock(&g_lock);
  member_t * free_member = NULL;
  for (size_t i = 0; i < MAX_MEMBERS; i++) {
    member_t * member = &g_members[i];
    if (member->state != MEMBER_FREE && member->state != MEMBER_GONE &&
      strcmp(member->name, node_name) == 0)
    {
      pthread_mutex_unlock(&g_lock);
      return;  // known
    }
    if (!free_member && (member->state == MEMBER_FREE || member->state == MEMBER_GONE)) {
      free_member = member;
    }
  }
  if (!free_member) {
    LOG("more than %d nodes: %s does not take part", MAX_MEMBERS, node_name);
  } else if (!g_stop) {
    snprintf(free_member->name, sizeof(free_member->name), "%s", node_name);
    free(free_member->ready);
    free_member->ready = NULL;
    free_member->ready_size = 0;
    free_member->state = MEMBER_NEW;
    wake();
  }
  pthread_mutex_unlock(&g_lock);
}

void lockstep_agent_remove(const char * node_name, int64_t timeout_ns)
{
  pthread_mutex_lock(&g_lock);
  member_t * member = NULL;
  for (size_t i = 0; i < MAX_MEMBERS && !member; i++) {
    if (g_members[i].state != MEMBER_FREE && strcmp(g_members[i].name, node_name) == 0) {
      member = &g_members[i];
    }
  }
  if (member && (member->state == MEMBER_JOINED || member->state == MEMBER_JOINING) &&
    g_ready)
  {
    int64_t deadline = now_ns() + timeout_ns;
    member->state = MEMBER_TO_LEAVE;
    member->deadline_ns = deadline;
    wake();
    struct timespec until = {(time_t)(deadline / NS_PER_SEC), (long)(deadline % NS_PER_SEC)};
    while (member->state != MEMBER_GONE &&
      pthread_cond_timedwait(&g_changed, &g_lock, &until) == 0)
    {
    }
  }
  if (member) {
    member->state = MEMBER_GONE;
  }
  pthread_mutex_unlock(&g_lock);
}

void lockstep_agent_forget(const char * node_name)
{
  pthread_mutex_lock(&g_lock);
  for (size_t i = 0; i < MAX_MEMBERS; i++) {
    if (g_members[i].state != MEMBER_FREE && strcmp(g_members[i].name, node_name) == 0) {
      g_members[i].state = MEMBER_GONE;
      pthread_cond_broadcast(&g_changed);
    }
  }
  wake();
  pthread_mutex_unlock(&g_lock);
}

void lockstep_agent_done(int64_t time_ns, uint32_t round, const char * const * topics,
  const uint32_t * counts, size_t size)
{
  pthread_mutex_lock(&g_lock);
  if (g_host->next_frame || g_host->rounds) {
    g_done_round = round;
    rosidl_runtime_c__String__Sequence__fini(&g_done_topics);
    rosidl_runtime_c__uint32__Sequence__fini(&g_done_counts);
    bool ok = rosidl_runtime_c__String__Sequence__init(&g_done_topics, size) &&
      rosidl_runtime_c__uint32__Sequence__init(&g_done_counts, size);
    for (size_t i = 0; ok && i < size; i++) {
      ok = rosidl_runtime_c__String__assign(&g_done_topics.data[i], topics[i]);
      g_done_counts.data[i] = counts[i];
    }
    if (!ok) {
      LOG("done for %lld ns: out of memory", (long long)time_ns);
    }
  }
  g_done_ns = time_ns;
  publish_done(time_ns);
  pthread_mutex_unlock(&g_lock);
}

void lockstep_agent_again(int64_t time_ns)
{
  pthread_mutex_lock(&g_lock);
  if (time_ns == g_done_ns) {
    publish_done(time_ns);
  }
  pthread_mutex_unlock(&g_lock);
}

void lockstep_agent_stop(void)
{
  pthread_mutex_lock(&g_lock);
  g_stop = true;
  pthread_cond_broadcast(&g_changed);  // an agent still looking for the server ends at once
  int64_t deadline = now_ns() + LEAVE_TIMEOUT_NS;
  for (size_t i = 0; i < MAX_MEMBERS; i++) {
    member_t * member = &g_members[i];
    if (member->state == MEMBER_JOINED || member->state == MEMBER_JOINING) {
      member->state = MEMBER_TO_LEAVE;
      member->deadline_ns = deadline;
    } else if (member->state == MEMBER_NEW) {
      member->state = MEMBER_GONE;
    }
  }
  wake();
  pthread_mutex_unlock(&g_lock);
}
