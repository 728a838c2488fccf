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

// The lockstep layer (doc/lockstep-layer.md) is two libraries:
// - libsim_clock_lockstep.so, preloaded into a process: it wraps the rmw calls of the process
//   and decides when the process has finished a /clock time. It links nothing of ROS, so that
//   it costs nothing in a process that never uses ROS (a shell the wrapper starts, Python
//   before the wheels' bootstrap sets the library path).
// - libsim_clock_lockstep_agent.so, opened by the first once the process subscribes to /clock:
//   a participant of its own (an rcl context and node on a thread of its own) that joins,
//   says done and leaves for the process's nodes.
// This header is what they call of each other.

#ifndef SIM_CLOCK_LOCKSTEP_H_
#define SIM_CLOCK_LOCKSTEP_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOCKSTEP_AGENT_LIBRARY "libsim_clock_lockstep_agent.so"

// A writer or a reader of a node of the process, and how many endpoints it has matched.
typedef struct lockstep_endpoint_s
{
  char topic[256];
  bool writer;
  uint32_t matched;
} lockstep_endpoint_t;

// What the preloaded library gives the agent.
typedef struct lockstep_host_s
{
  // The agent has sent a join (or left) for at least one node, and its done writer has matched
  // the server's reader: from then on the host tracks the process's waits and says each time
  // done. Inactive again (the server gone), it hands the process what it held.
  void (* set_active)(bool active);
  // Whether the log is wanted (SIM_CLOCK_LOCKSTEP_LOG=1): lines on stderr, prefixed.
  bool verbose;
  // The rule (SIM_CLOCK_LOCKSTEP_RULE): next_frame, what participants publish during a frame
  // is taken at the next one; rounds, within the frame, round by round (doc/frames.md);
  // neither: a participant without rounds.
  bool next_frame;
  bool rounds;
  // Next frame, rounds: the guard condition (an rmw_guard_condition_t of the agent's
  // context) that the host adds to each wait of the process, triggered when a Round comes.
  void (* set_wake)(const void * guard_condition);
  // Next frame, rounds: a Round of the server, of the host's rule. Next frame: the frame
  // `time_ns` starts, and the first counts[i] messages on topics[i] are that frame's. Rounds:
  // round `round` of the frame starts, and counts[i] messages on topics[i] are its.
  void (* on_round)(int64_t time_ns, uint32_t round, const char * const * topics,
    const uint32_t * counts, size_t size);
  // Next frame: the topics the process's nodes publish on (their Join.topics), in a new array
  // of new strings (the caller frees each and the array); NULL if none.
  char ** (* publisher_topics)(size_t * size);
  // The writers and readers of the node `node_name` (its full name), ROS's own and the
  // server's left out, with what each matched, for its Ready on ~/ready: at most `capacity`
  // into `endpoints`; returns how many there are.
  size_t (* endpoints)(const char * node_name, lockstep_endpoint_t * endpoints, size_t capacity);
  // Whether the server is on the graph as a node of the process sees it (its ~/done reader,
  // through the process's own DDS participant): the agent makes its own only once it is.
  // When it is, the host starts following the process's waits (the default rule).
  bool (* server_seen)(void);
  // Next frame: a join was answered at the server's time `time_ns`, the process's time from
  // now: its /clock is released without a Round (none may come before the next frame's).
  void (* joined_at)(int64_t time_ns);
} lockstep_host_t;

// The agent's functions, looked up by these names (dlsym). Every one is called with the
// host's thread-local mark set, so that the agent's own rmw calls pass through untouched.

// The agent's thread: once the host sees the server, make the context (on `domain_id`, the
// process's), join the nodes added, serve leaves, until lockstep_agent_stop. Returns 0, or 1
// if it could not start.
typedef int (* lockstep_agent_run_t)(const lockstep_host_t * host, size_t domain_id);
#define LOCKSTEP_AGENT_RUN "lockstep_agent_run"
// A node of the process subscribed to /clock: join under its full name (once).
typedef void (* lockstep_agent_add_t)(const char * node_name);
#define LOCKSTEP_AGENT_ADD "lockstep_agent_add"
// The node is being destroyed: leave for it, waiting `timeout_ns` at most for the answer.
typedef void (* lockstep_agent_remove_t)(const char * node_name, int64_t timeout_ns);
#define LOCKSTEP_AGENT_REMOVE "lockstep_agent_remove"
// The process has finished /clock time `time_ns` (rounds: its round `round`): say done for
// every node joined. Next frame, rounds: with what it published during the frame (the round)
// on each of its topics (0: nothing).
typedef void (* lockstep_agent_done_t)(int64_t time_ns, uint32_t round,
  const char * const * topics, const uint32_t * counts, size_t size);
#define LOCKSTEP_AGENT_DONE "lockstep_agent_done"
// Rounds: the /clock of `time_ns` came again: the last done of that time, said again.
typedef void (* lockstep_agent_again_t)(int64_t time_ns);
#define LOCKSTEP_AGENT_AGAIN "lockstep_agent_again"
// The node takes part through sim_clock's participant helper (it calls ~/join itself): forget
// it without leaving (its join and the helper's are one participant on the server).
typedef void (* lockstep_agent_forget_t)(const char * node_name);
#define LOCKSTEP_AGENT_FORGET "lockstep_agent_forget"
// Leave for every node still joined (bounded) and end the thread's loop.
typedef void (* lockstep_agent_stop_t)(void);
#define LOCKSTEP_AGENT_STOP "lockstep_agent_stop"

#endif  // SIM_CLOCK_LOCKSTEP_H_
