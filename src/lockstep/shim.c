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
// - rmw_destroy_node: the agent leaves for the node.
//
// Until the agent has joined, each function only forwards (a thread-local and an atomic load).

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

#include <rmw/rmw.h>

#include "lockstep.h"

#define CLOCK_TOPIC "/clock"
#define NS_PER_SEC 1000000000LL
#define LEAVE_TIMEOUT_NS (NS_PER_SEC / 2)  // a courtesy: the server may be gone
#define MAX_THREADS 64    // threads that wait, tracked at once
#define MAX_ENTITIES 64   // /clock subscriptions and nodes that made one

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
} g_real;
static pthread_once_t g_resolved = PTHREAD_ONCE_INIT;

// The agent's functions, once it is loaded.
static struct
{
  lockstep_agent_run_t run;
  lockstep_agent_add_t add;
  lockstep_agent_remove_t remove;
  lockstep_agent_done_t done;
  lockstep_agent_stop_t stop;
} g_agent;

// Set on the agent's thread, and around each call into the agent: its rmw calls pass through.
static __thread bool t_agent = false;
// The agent has joined: the waits and takes of the process are tracked.
static atomic_bool g_active = false;

// What a thread that waits is doing. BUSY: anything but waiting idle. PROBING: in a wait that
// would block, looking whether anything is ready. IDLE: in a wait that found nothing ready.
// WOKEN: a guard condition of its wait was triggered since it looked: it is about to be busy.
typedef enum {SLOT_FREE, SLOT_BUSY, SLOT_PROBING, SLOT_IDLE, SLOT_WOKEN} slot_state_t;

typedef struct
{
  slot_state_t state;
  void ** guard_conditions;  // the guard conditions of its wait (their rmw data pointers)
  size_t guard_condition_count, capacity;
} slot_t;

// Everything below is guarded by g_lock.
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static slot_t g_slots[MAX_THREADS];
static bool g_slots_full_said = false;
static const rmw_subscription_t * g_clock_subs[MAX_ENTITIES];
static const rmw_node_t * g_nodes[MAX_ENTITIES];
static int64_t g_clock_ns = -1;     // the last /clock time the process took
static bool g_clock_pending = false;  // taken since the last done
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

// The loaded library that itself defines rmw_wait (not this one, nor one that merely depends
// on the one that does), in load order: rmw_implementation where rcl calls through it (an apt
// install), else the rmw rcl links (the PyPI wheels: rmw_fastrtps_cpp). Or the library named
// by SIM_CLOCK_LOCKSTEP_RMW. NULL if none.
static void * find_rmw(void)
{
  const char * named = getenv("SIM_CLOCK_LOCKSTEP_RMW");
  if (named && named[0]) {
    return dlopen(named, RTLD_LAZY | RTLD_NOLOAD);
  }
  Dl_info self;
  if (!dladdr((void *)&find_rmw, &self)) {
    return NULL;
  }
  names_t names = {NULL, 0, 0};
  dl_iterate_phdr(collect_name, &names);  // names first: no dlopen under the loader's lock
  void * found = NULL;
  for (size_t i = 0; i < names.size; i++) {
    if (!found && strcmp(names.names[i], self.dli_fname) != 0) {
      void * handle = dlopen(names.names[i], RTLD_LAZY | RTLD_NOLOAD);
      void * symbol = handle ? dlsym(handle, "rmw_wait") : NULL;
      Dl_info where;
      if (symbol && dladdr(symbol, &where) && strcmp(where.dli_fname, names.names[i]) == 0) {
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

static void resolve(void)
{
  void * rmw = find_rmw();
  if (rmw) {
    // A function pointer from dlsym's void *, as POSIX allows.
    *(void **)&g_real.create_subscription = dlsym(rmw, "rmw_create_subscription");
    *(void **)&g_real.destroy_subscription = dlsym(rmw, "rmw_destroy_subscription");
    *(void **)&g_real.destroy_node = dlsym(rmw, "rmw_destroy_node");
    *(void **)&g_real.take = dlsym(rmw, "rmw_take");
    *(void **)&g_real.take_with_info = dlsym(rmw, "rmw_take_with_info");
    *(void **)&g_real.trigger_guard_condition = dlsym(rmw, "rmw_trigger_guard_condition");
    *(void **)&g_real.wait = dlsym(rmw, "rmw_wait");
  }
  if (!g_real.create_subscription || !g_real.destroy_subscription || !g_real.destroy_node ||
    !g_real.take || !g_real.take_with_info || !g_real.trigger_guard_condition || !g_real.wait)
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

// ---- threads that wait ------------------------------------------------------------------

static void free_slot(void * value)
{
  size_t index = (size_t)(uintptr_t)value - 1;
  pthread_mutex_lock(&g_lock);
  g_slots[index].state = SLOT_FREE;
  g_slots[index].guard_condition_count = 0;
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

// Under g_lock: the process has taken a /clock it has not said done for, and every thread
// that waits is idle. Then returns true with the time in *time_ns (the pending mark cleared).
static bool finished(int64_t * time_ns)
{
  if (!g_clock_pending) {
    return false;
  }
  for (size_t i = 0; i < MAX_THREADS; i++) {
    if (g_slots[i].state == SLOT_BUSY || g_slots[i].state == SLOT_PROBING ||
      g_slots[i].state == SLOT_WOKEN)
    {
      return false;
    }
  }
  g_clock_pending = false;
  *time_ns = g_clock_ns;
  return true;
}

static void say_done(int64_t time_ns)
{
  t_agent = true;
  g_agent.done(time_ns);
  t_agent = false;
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

// ---- the agent --------------------------------------------------------------------------

static void set_active(bool active)
{
  atomic_store(&g_active, active);
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
  if (!g_agent.run || !g_agent.add || !g_agent.remove || !g_agent.done || !g_agent.stop) {
    LOG("%s lacks its functions", LOCKSTEP_AGENT_LIBRARY);
    return false;
  }
  const char * log = getenv("SIM_CLOCK_LOCKSTEP_LOG");
  g_host.set_active = set_active;
  g_host.verbose = log && strcmp(log, "1") == 0;
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
  return true;
}

// ---- the rmw functions ------------------------------------------------------------------

rmw_subscription_t * rmw_create_subscription(
  const rmw_node_t * node, const rosidl_message_type_support_t * type_support,
  const char * topic_name, const rmw_qos_profile_t * qos_policies,
  const rmw_subscription_options_t * subscription_options)
{
  RESOLVE();
  rmw_subscription_t * subscription = g_real.create_subscription(
    node, type_support, topic_name, qos_policies, subscription_options);
  if (!subscription || t_agent || !topic_name || strcmp(topic_name, CLOCK_TOPIC) != 0 ||
    !node || !node->name || !node->namespace_)
  {
    return subscription;
  }
  // A node of the process takes part in simulated time.
  pthread_once(&g_slot_key_once, make_slot_key);
  char name[512];
  snprintf(name, sizeof(name), "%s%s%s", node->namespace_,
    strcmp(node->namespace_, "/") == 0 ? "" : "/", node->name);
  pthread_mutex_lock(&g_lock);
  bool known = false, stored = false;
  for (size_t i = 0; i < MAX_ENTITIES && !known; i++) {
    known = g_nodes[i] == node;
  }
  for (size_t i = 0; i < MAX_ENTITIES && !stored; i++) {
    if (!g_clock_subs[i]) {
      g_clock_subs[i] = subscription;
      g_nodes[i] = node;
      stored = true;
    }
  }
  bool started = stored && start_agent(node->context ? node->context->actual_domain_id : 0);
  pthread_mutex_unlock(&g_lock);
  if (!stored) {
    LOG("more than %d /clock subscriptions: %s is not a participant", MAX_ENTITIES, name);
  } else if (started && !known) {
    t_agent = true;
    g_agent.add(name);
    t_agent = false;
  }
  return subscription;
}

rmw_ret_t rmw_destroy_subscription(rmw_node_t * node, rmw_subscription_t * subscription)
{
  RESOLVE();
  if (!t_agent) {
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < MAX_ENTITIES; i++) {
      if (g_clock_subs[i] == subscription) {
        g_clock_subs[i] = NULL;  // the node stays known until it is destroyed
      }
    }
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
        g_clock_subs[i] = NULL;
      }
    }
    bool started = g_agent_started;
    pthread_mutex_unlock(&g_lock);
    if (known && started && node->name && node->namespace_) {
      char name[512];
      snprintf(name, sizeof(name), "%s%s%s", node->namespace_,
        strcmp(node->namespace_, "/") == 0 ? "" : "/", node->name);
      t_agent = true;
      g_agent.remove(name, LEAVE_TIMEOUT_NS);
      t_agent = false;
    }
  }
  return g_real.destroy_node(node);
}

// A /clock taken by the process: its time is pending until the process is idle.
static void took(const rmw_subscription_t * subscription, const void * message, bool taken)
{
  if (!taken || !message || t_agent || !atomic_load(&g_active)) {
    return;
  }
  pthread_mutex_lock(&g_lock);
  for (size_t i = 0; i < MAX_ENTITIES; i++) {
    if (g_clock_subs[i] == subscription) {
      // rosgraph_msgs/msg/Clock: builtin_interfaces/Time {int32 sec; uint32 nanosec}, the
      // same layout in the C and the C++ message.
      int32_t sec;
      uint32_t nanosec;
      memcpy(&sec, message, sizeof(sec));
      memcpy(&nanosec, (const char *)message + sizeof(sec), sizeof(nanosec));
      g_clock_ns = (int64_t)sec * NS_PER_SEC + nanosec;
      g_clock_pending = true;
      break;
    }
  }
  pthread_mutex_unlock(&g_lock);
}

rmw_ret_t rmw_take(
  const rmw_subscription_t * subscription, void * ros_message, bool * taken,
  rmw_subscription_allocation_t * allocation)
{
  RESOLVE();
  rmw_ret_t ret = g_real.take(subscription, ros_message, taken, allocation);
  if (ret == RMW_RET_OK && taken) {
    took(subscription, ros_message, *taken);
  }
  return ret;
}

rmw_ret_t rmw_take_with_info(
  const rmw_subscription_t * subscription, void * ros_message, bool * taken,
  rmw_message_info_t * message_info, rmw_subscription_allocation_t * allocation)
{
  RESOLVE();
  rmw_ret_t ret = g_real.take_with_info(subscription, ros_message, taken, message_info,
      allocation);
  if (ret == RMW_RET_OK && taken) {
    took(subscription, ros_message, *taken);
  }
  return ret;
}

rmw_ret_t rmw_trigger_guard_condition(const rmw_guard_condition_t * guard_condition)
{
  RESOLVE();
  if (!t_agent && guard_condition && atomic_load(&g_active)) {
    pthread_mutex_lock(&g_lock);
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
    pthread_mutex_unlock(&g_lock);
  }
  return g_real.trigger_guard_condition(guard_condition);
}

rmw_ret_t rmw_wait(
  rmw_subscriptions_t * subscriptions, rmw_guard_conditions_t * guard_conditions,
  rmw_services_t * services, rmw_clients_t * clients, rmw_events_t * events,
  rmw_wait_set_t * wait_set, const rmw_time_t * wait_timeout)
{
  RESOLVE();
  if (t_agent || !atomic_load(&g_active)) {
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
  bool tracked = slot && blocking && save(arrays, n) &&
    keep_guard_conditions(slot, guard_conditions);
  if (slot) {
    slot->state = tracked ? SLOT_PROBING : SLOT_BUSY;
  }
  pthread_mutex_unlock(&g_lock);
  if (!tracked) {
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
  pthread_mutex_lock(&g_lock);
  bool done = false;
  if (slot->state == SLOT_PROBING) {  // not woken while it looked
    slot->state = SLOT_IDLE;
    done = finished(&time_ns);
  }
  pthread_mutex_unlock(&g_lock);
  if (done) {
    say_done(time_ns);
  }
  ret = g_real.wait(subscriptions, guard_conditions, services, clients, events, wait_set,
      wait_timeout);
  pthread_mutex_lock(&g_lock);
  slot->state = SLOT_BUSY;
  pthread_mutex_unlock(&g_lock);
  return ret;
}
