// One live run per output file. A run that writes OUT holds the lock file OUT.lock, which names its host,
// PID and start time, and whose modification time the run refreshes while it lives. A second run that
// would write the same OUT refuses to start instead of mixing its results into the first run's file.
//
// Works on a file system shared by several nodes: the lock is created with O_EXCL (atomic on NFS v3+ and
// parallel file systems), and a stale lock is replaced only under a takeover guard (see take_over_stale_lock).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace sb {

// A lock not refreshed for this long is stale even when its holder cannot be checked (another host).
inline constexpr std::chrono::seconds kLockStaleAfter{600};
// How often a live holder refreshes its lock's modification time.
inline constexpr std::chrono::seconds kLockRefreshEvery{60};

// Who holds a lock, as the lock file says.
struct LockOwner {
  std::string host;
  long long pid = 0;
  std::string start_time;  // ISO 8601 UTC
  bool operator==(const LockOwner&) const = default;
};

// The lock file's text ("host=...\npid=...\nstart_time=...\n"), and back; nullopt for text that is not a
// whole lock (one being written, or a file that is no lock of ours).
std::string format_lock(const LockOwner& owner);
std::optional<LockOwner> parse_lock(const std::string& text);

// A lock file as found: its holder (nullopt when unreadable) and how long ago it was last refreshed.
struct LockState {
  std::optional<LockOwner> owner;
  std::chrono::seconds age{0};
};
// nullopt when there is no lock file at `lock_path`.
std::optional<LockState> read_lock(const std::string& lock_path);

// Why a lock no longer blocks anyone ("" while it is live): its PID is gone on this host, or it has not
// been refreshed for kLockStaleAfter. `this_host` decides whether the PID can be checked.
std::string stale_reason(const LockState& lock, const std::string& this_host);

// Replaces the stale lock `seen` at `lock_path` with `me`'s. Takers serialise on LOCK.takeover (O_EXCL),
// and under it re-read the lock: only if it is still `seen` and still stale is it replaced (a rename of
// a complete file over it, then a re-read that must show `me`). So of several runs that found the same
// stale lock at once exactly one wins; the others see the winner's live lock on their next look. Returns
// whether `me` now holds the lock. A guard left by a taker that died is removed after a minute.
bool take_over_stale_lock(const std::string& lock_path, const LockState& seen, const LockOwner& me);

// This process's identity for a new lock: host name, PID and now.
LockOwner this_process_as_owner();

class OutputLock {
 public:
  // Takes `output`.lock for this process, or throws sb::UserError: another live run holds it (the message
  // names the lock, the holder's host, PID and start time, and what to do), or it cannot be created.
  // A stale lock is taken over, which one line on stderr says; the dead holder's working files beside
  // `output` are removed then. `option` names the option in messages ("--out", "--checkpoint").
  static std::unique_ptr<OutputLock> acquire(const std::string& output, const std::string& option);
  ~OutputLock();  // removes the lock file if it is still this run's
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

  const std::string& path() const { return path_; }
  const LockOwner& owner() const { return owner_; }

  // Marks the lock as live (its modification time := now). A background thread does this every
  // kLockRefreshEvery; if the lock is no longer this run's (taken over after a long stall), it warns once.
  void refresh();

 private:
  OutputLock(std::string path, LockOwner owner);
  void refresh_until_released();

  std::string path_;
  LockOwner owner_;
  std::atomic<bool> warned_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool released_ = false;
  std::thread refresher_;
};

}  // namespace sb
