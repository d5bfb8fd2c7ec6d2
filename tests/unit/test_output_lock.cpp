// The lock beside an output file: one live run per output, stale locks taken over, exactly one winner.
#include "metrics/output_lock.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <utime.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "child_process.h"
#include "core/error.h"
#include "core/host_name.h"
#include "metrics/results_publish.h"
#include "scratch_dir.h"

namespace sb {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

class OutputLockTest : public test::ScratchDirTest {
 protected:
  std::string out() const { return (dir_ / "F.h5").string(); }
  std::string lock() const { return out() + ".lock"; }

  void write_lock(const LockOwner& owner) const {
    std::ofstream(lock()) << format_lock(owner);
  }
  void age_lock(seconds age) const {
    const time_t then = std::time(nullptr) - age.count();
    const utimbuf times{then, then};
    ASSERT_EQ(::utime(lock().c_str(), &times), 0);
  }
};

LockOwner other(const std::string& host, long long pid) { return LockOwner{host, pid, "2026-01-02T03:04:05Z"}; }

TEST(LockText, RoundTripsAndRejectsPartialText) {
  const LockOwner owner = other("node-7", 4242);
  const std::string text = format_lock(owner);
  ASSERT_TRUE(parse_lock(text).has_value());
  EXPECT_EQ(*parse_lock(text), owner);
  EXPECT_FALSE(parse_lock("").has_value());
  EXPECT_FALSE(parse_lock(text.substr(0, text.size() - 1)).has_value());  // cut short while being written
  EXPECT_FALSE(parse_lock("host=a\npid=0\nstart_time=x\n").has_value());
  EXPECT_FALSE(parse_lock("host=a\npid=12x\nstart_time=x\n").has_value());
  EXPECT_FALSE(parse_lock("not a lock\n").has_value());
}

TEST_F(OutputLockTest, AcquireWritesThisProcessAndReleaseRemovesTheLock) {
  {
    const auto held = OutputLock::acquire(out(), "--out");
    EXPECT_EQ(held->path(), lock());
    const auto state = read_lock(lock());
    ASSERT_TRUE(state && state->owner);
    EXPECT_EQ(state->owner->pid, ::getpid());
    EXPECT_EQ(state->owner->host, this_host_name());
    EXPECT_EQ(*state->owner, held->owner());
  }
  EXPECT_FALSE(fs::exists(lock()));
}

TEST_F(OutputLockTest, ALiveHolderMakesTheSecondRunRefuseWithOneSentence) {
  const auto held = OutputLock::acquire(out(), "--out");
  try {
    OutputLock::acquire(out(), "--out");
    FAIL() << "a second lock of a live run's output was granted";
  } catch (const UserError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("--out " + out() + " is in use by another run"), std::string::npos) << message;
    EXPECT_NE(message.find(lock()), std::string::npos) << message;
    EXPECT_NE(message.find("PID " + std::to_string(::getpid()) + " on host " + this_host_name() + " since " +
                           held->owner().start_time),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("choose another --out"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  EXPECT_EQ(read_lock(lock())->owner, held->owner());  // the refusal changed nothing
}

TEST_F(OutputLockTest, ALockOfADeadProcessOnThisHostIsTakenOverWithItsWorkingFiles) {
  const pid_t dead = test::dead_pid();
  write_lock(other(this_host_name(), dead));
  const std::string dead_working = working_path_of(out(), "writing", this_host_name(), dead);
  const std::string dead_staging = working_path_of(out(), "publishing", this_host_name(), dead);
  const std::string live_working = working_path_of(out(), "writing", this_host_name(), ::getpid());
  for (const std::string& path : {dead_working, dead_staging, live_working, out()}) std::ofstream(path) << "x";

  const auto stale = read_lock(lock());
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale_reason(*stale, this_host_name()), "process " + std::to_string(dead) + " is gone");

  ::testing::internal::CaptureStderr();
  const auto held = OutputLock::acquire(out(), "--out");
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(read_lock(lock())->owner, held->owner());
  EXPECT_NE(said.find("taking over the stale lock " + lock()), std::string::npos) << said;
  EXPECT_NE(said.find("is gone"), std::string::npos) << said;
  EXPECT_FALSE(fs::exists(dead_working));
  EXPECT_FALSE(fs::exists(dead_staging));
  EXPECT_TRUE(fs::exists(live_working));  // only the dead run's files go
  EXPECT_TRUE(fs::exists(out()));
}

TEST_F(OutputLockTest, AnotherHostsPidIsNotCheckedButAnOldLockIsStale) {
  const LockOwner elsewhere = other("another-node-of-the-cluster", test::dead_pid());
  write_lock(elsewhere);
  EXPECT_THROW(OutputLock::acquire(out(), "--out"), UserError);  // that PID may well live over there
  EXPECT_EQ(read_lock(lock())->owner, elsewhere);

  age_lock(kLockStaleAfter - seconds(30));
  EXPECT_THROW(OutputLock::acquire(out(), "--out"), UserError);

  age_lock(kLockStaleAfter + seconds(60));
  EXPECT_NE(stale_reason(*read_lock(lock()), this_host_name()).find("last refreshed 11 minutes ago"), std::string::npos);
  ::testing::internal::CaptureStderr();
  const auto held = OutputLock::acquire(out(), "--out");
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(read_lock(lock())->owner, held->owner());
}

TEST_F(OutputLockTest, AnOldLockOfALiveProcessIsStaleToo) {
  write_lock(other(this_host_name(), ::getppid()));  // alive, but silent for too long (e.g. a reused PID)
  EXPECT_THROW(OutputLock::acquire(out(), "--out"), UserError);
  age_lock(kLockStaleAfter + seconds(1));
  ::testing::internal::CaptureStderr();
  EXPECT_NO_THROW(OutputLock::acquire(out(), "--out"));
  ::testing::internal::GetCapturedStderr();
}

TEST_F(OutputLockTest, AnUnreadableFreshLockBlocksAndAnOldOneDoesNot) {
  std::ofstream(lock()) << "garbage";
  try {
    OutputLock::acquire(out(), "--out");
    FAIL() << "an unreadable fresh lock was taken";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find("an unknown process"), std::string::npos) << error.what();
  }
  age_lock(kLockStaleAfter + seconds(1));
  ::testing::internal::CaptureStderr();
  EXPECT_NO_THROW(OutputLock::acquire(out(), "--out"));
  ::testing::internal::GetCapturedStderr();
}

TEST_F(OutputLockTest, TakeoverReplacesOnlyTheLockItJudgedStale) {
  const LockOwner me = this_process_as_owner();
  write_lock(other(this_host_name(), test::dead_pid()));
  const LockState seen = *read_lock(lock());

  // Someone else took it over between our look and our takeover: their live lock stays.
  const LockOwner winner = other(this_host_name(), ::getppid());
  write_lock(winner);
  EXPECT_FALSE(take_over_stale_lock(lock(), seen, me));
  EXPECT_EQ(read_lock(lock())->owner, winner);

  // The same holder, but refreshed meanwhile (a slow, live run): not stale any more, so not replaced.
  const LockOwner slow = other("another-node-of-the-cluster", 77);
  write_lock(slow);
  age_lock(kLockStaleAfter + seconds(5));
  const LockState old_look = *read_lock(lock());
  age_lock(seconds(0));
  EXPECT_FALSE(take_over_stale_lock(lock(), old_look, me));
  EXPECT_EQ(read_lock(lock())->owner, slow);

  // Still the stale lock that was judged: replaced, and no guard or temporary file is left.
  age_lock(kLockStaleAfter + seconds(5));
  EXPECT_TRUE(take_over_stale_lock(lock(), *read_lock(lock()), me));
  EXPECT_EQ(read_lock(lock())->owner, me);
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir_)) names.push_back(entry.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"F.h5.lock"});
}

TEST_F(OutputLockTest, ATakeoverInProgressIsNotRacedAndAnAbandonedGuardExpires) {
  write_lock(other(this_host_name(), test::dead_pid()));
  const LockState seen = *read_lock(lock());
  const std::string guard = lock() + ".takeover";
  std::ofstream(guard) << "";
  EXPECT_FALSE(take_over_stale_lock(lock(), seen, this_process_as_owner()));
  EXPECT_EQ(read_lock(lock())->owner, seen.owner);
  EXPECT_TRUE(fs::exists(guard));

  const time_t then = std::time(nullptr) - 120;  // left by a taker that died mid-takeover
  const utimbuf times{then, then};
  ASSERT_EQ(::utime(guard.c_str(), &times), 0);
  ::testing::internal::CaptureStderr();
  const auto held = OutputLock::acquire(out(), "--out");
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(read_lock(lock())->owner, held->owner());
  EXPECT_FALSE(fs::exists(guard));
}

// Processes started together, all after the same output: exactly one gets it, whether the lock is absent
// or stale. Each child holds its lock for a while, so that a late child cannot take a released one.
int winners_among(int children, const std::string& output) {
  std::vector<pid_t> pids;
  for (int i = 0; i < children; ++i) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(STDERR_FILENO);
      try {
        {
          const auto held = OutputLock::acquire(output, "--out");
          ::usleep(1500 * 1000);
        }
        std::_Exit(0);
      } catch (const UserError&) {
        std::_Exit(1);
      }
    }
    pids.push_back(pid);
  }
  int winners = 0;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) ++winners;
    else EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << "a racing child ended with status " << status;
  }
  return winners;
}

TEST_F(OutputLockTest, OfRunsStartedTogetherExactlyOneWins) {
  EXPECT_EQ(winners_among(8, out()), 1);
  EXPECT_FALSE(fs::exists(lock()));  // the winner released it
}

TEST_F(OutputLockTest, OfRunsRacingForAStaleLockExactlyOneWins) {
  for (int round = 0; round < 3; ++round) {
    write_lock(other(this_host_name(), test::dead_pid()));
    EXPECT_EQ(winners_among(8, out()), 1) << "round " << round;
    EXPECT_FALSE(fs::exists(lock() + ".takeover"));
  }
}

TEST_F(OutputLockTest, ALockThatIsNoLongerOursIsLeftAloneAtRelease) {
  const LockOwner taker = other("another-node-of-the-cluster", 99);
  {
    const auto held = OutputLock::acquire(out(), "--out");
    write_lock(taker);  // taken over while this run stalled
    ::testing::internal::CaptureStderr();
    held->refresh();
    const std::string said = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(said.find("no longer this run's"), std::string::npos) << said;
  }
  EXPECT_EQ(read_lock(lock())->owner, taker);
}

TEST_F(OutputLockTest, RefreshMarksTheLockLive) {
  const auto held = OutputLock::acquire(out(), "--out");
  age_lock(kLockStaleAfter + seconds(5));
  EXPECT_FALSE(stale_reason(*read_lock(lock()), this_host_name()).empty());
  held->refresh();
  EXPECT_LT(read_lock(lock())->age, seconds(5));
  EXPECT_TRUE(stale_reason(*read_lock(lock()), this_host_name()).empty());
}

TEST_F(OutputLockTest, TheJobAbortPathRemovesTheLock) {
  const test::ChildResult child = test::run_in_child([&] {
    const auto held = OutputLock::acquire(out(), "--out");
    fatal("stop here");  // MPI_Abort's path: no destructor runs
  });
  EXPECT_EQ(child.exit_code, 3) << child.stderr_text;
  EXPECT_FALSE(fs::exists(lock()));
}

TEST_F(OutputLockTest, ALockThatCannotBeCreatedSaysWhy) {
  try {
    OutputLock::acquire((dir_ / "missing" / "F.h5").string(), "--checkpoint");
    FAIL() << "a lock was created in a missing directory";
  } catch (const UserError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("cannot create the lock file " + (dir_ / "missing" / "F.h5.lock").string() + " for --checkpoint"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace sb
