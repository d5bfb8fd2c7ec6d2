#include "comm/collective_watchdog.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "core/check.h"
#include "core/error.h"
#include "core/exit_codes.h"

namespace sb {
namespace {
using Clock = std::chrono::steady_clock;

constexpr int kRollCallTag = 7101;
constexpr int kAnswerTag = 7102;

MPI_Comm g_roll_comm = MPI_COMM_NULL;
double g_timeout_s = 0;
std::atomic<int> g_epoch{-1};
std::atomic<int64_t> g_step{0};
int64_t g_roll_calls = 0;
// Buffers of sends that are never waited for (answers, roll calls): kept until the process ends, since
// MPI may read them after MPI_Request_free. A process takes part in very few roll calls.
std::deque<int64_t> g_sent;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void send_and_forget(int64_t value, int destination, int tag) {
  g_sent.push_back(value);
  MPI_Request request;
  CHECK_MPI(MPI_Isend(&g_sent.back(), 1, MPI_INT64_T, destination, tag, g_roll_comm, &request));
  CHECK_MPI(MPI_Request_free(&request));
}

// Answers every roll call that has arrived: "here, and waiting".
void answer_roll_calls() {
  if (g_roll_comm == MPI_COMM_NULL) return;
  for (;;) {
    int arrived = 0;
    MPI_Status status;
    CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, kRollCallTag, g_roll_comm, &arrived, &status));
    if (!arrived) return;
    int64_t id = 0;
    CHECK_MPI(MPI_Recv(&id, 1, MPI_INT64_T, status.MPI_SOURCE, kRollCallTag, g_roll_comm, MPI_STATUS_IGNORE));
    send_and_forget(id, status.MPI_SOURCE, kAnswerTag);
  }
}

// The members of `comm` as ranks of MPI_COMM_WORLD.
std::vector<int> world_ranks_of(MPI_Comm comm) {
  MPI_Group group, world_group;
  CHECK_MPI(MPI_Comm_group(comm, &group));
  CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
  int size = 0;
  CHECK_MPI(MPI_Group_size(group, &size));
  std::vector<int> local(static_cast<size_t>(size)), world(static_cast<size_t>(size));
  for (int i = 0; i < size; ++i) local[static_cast<size_t>(i)] = i;
  CHECK_MPI(MPI_Group_translate_ranks(group, size, local.data(), world_group, world.data()));
  CHECK_MPI(MPI_Group_free(&group));
  CHECK_MPI(MPI_Group_free(&world_group));
  return world;
}

std::string list_ranks(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return text;
}

std::string position_text() {
  const int epoch = g_epoch.load();
  if (epoch < 0) return "before training";
  return "epoch " + std::to_string(epoch + 1) + ", step " + std::to_string(g_step.load() + 1);
}

// The roll call after a timeout. Returns normally if the awaited operation completes meanwhile.
void roll_call_and_abort(const std::function<bool()>& done, const char* operation, MPI_Comm members, double waited) {
  int me = 0;
  CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &me));
  const std::vector<int> member_ranks = world_ranks_of(members);
  std::vector<int> answered = {me};
  if (g_roll_comm != MPI_COMM_NULL) {
    const int64_t id = (static_cast<int64_t>(me) << 32) | ++g_roll_calls;
    for (int r : member_ranks) {
      if (r != me) send_and_forget(id, r, kRollCallTag);
    }
    const double grace = std::clamp(g_timeout_s / 10, 2.0, 10.0);
    const auto start = Clock::now();
    while (seconds_since(start) < grace && answered.size() < member_ranks.size()) {
      if (done()) return;  // the late rank arrived after all
      answer_roll_calls();
      int arrived = 0;
      MPI_Status status;
      CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, kAnswerTag, g_roll_comm, &arrived, &status));
      if (!arrived) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      int64_t answer = 0;
      CHECK_MPI(MPI_Recv(&answer, 1, MPI_INT64_T, status.MPI_SOURCE, kAnswerTag, g_roll_comm, MPI_STATUS_IGNORE));
      if (answer == id && std::find(answered.begin(), answered.end(), status.MPI_SOURCE) == answered.end())
        answered.push_back(status.MPI_SOURCE);
    }
  }
  std::vector<int> missing;
  for (int r : member_ranks) {
    if (std::find(answered.begin(), answered.end(), r) == answered.end()) missing.push_back(r);
  }
  char waited_text[32], timeout_text[32];
  std::snprintf(waited_text, sizeof waited_text, "%.0f", waited);
  std::snprintf(timeout_text, sizeof timeout_text, "%g", g_timeout_s);
  std::string sentence = "waited " + std::string(waited_text) + " s in " + operation + " (" + position_text() + ") ";
  if (g_roll_comm == MPI_COMM_NULL) {
    sentence += "for ranks that did not arrive";
  } else if (missing.empty()) {
    sentence += "although every rank answered the roll call: the ranks are waiting in different operations";
  } else {
    sentence += "for rank" + std::string(missing.size() > 1 ? "s " : " ") + list_ranks(missing) + " of " +
                std::to_string(member_ranks.size()) + ", which did not arrive (stopped, hung, or busy elsewhere)";
  }
  sentence += "; ending the job (--collective-timeout " + std::string(timeout_text) + "; 0 turns the watchdog off)";
  // One sentence for the job: the lowest rank that answered speaks; the others give it a moment.
  if (*std::min_element(answered.begin(), answered.end()) != me) std::this_thread::sleep_for(std::chrono::seconds(2));
  abort_job_after_error(sentence, kExitFailure);
}

}  // namespace

void init_collective_watchdog() {
  if (g_roll_comm == MPI_COMM_NULL) CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &g_roll_comm));
}

void finalize_collective_watchdog() {
  if (g_roll_comm != MPI_COMM_NULL) CHECK_MPI(MPI_Comm_free(&g_roll_comm));
}

void set_collective_timeout(double seconds) { g_timeout_s = seconds; }
double collective_timeout() { return g_timeout_s; }

void set_collective_position(int epoch, int64_t step) {
  g_epoch.store(epoch);
  g_step.store(step);
}

void wait_with_watchdog(const std::function<bool()>& done, const char* operation, MPI_Comm members) {
  const auto start = Clock::now();
  auto next_answer = start;
  for (uint64_t polls = 1;; ++polls) {
    if (done()) return;
    if (polls % 64 != 0) continue;  // the clock and the roll calls every 64 polls: the poll itself stays fast
    const auto now = Clock::now();
    if (now >= next_answer) {
      answer_roll_calls();
      next_answer = now + std::chrono::milliseconds(10);
    }
    const double waited = std::chrono::duration<double>(now - start).count();
    if (g_timeout_s > 0 && waited > g_timeout_s) {
      roll_call_and_abort(done, operation, members, waited);
      return;  // it arrived during the roll call
    }
    // A long wait (a rank still loading data, say) need not burn a core.
    if (waited > 1.0) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace sb
