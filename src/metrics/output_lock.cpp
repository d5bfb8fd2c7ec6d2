#include "metrics/output_lock.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "core/error.h"
#include "core/host_name.h"
#include "core/os_error.h"
#include "metrics/results_file.h"
#include "metrics/results_publish.h"

namespace sb {
namespace {

// A takeover holds its guard for milliseconds; one older than this was left by a taker that died.
constexpr std::chrono::seconds kGuardStaleAfter{60};
// Tries before giving up when the lock keeps changing hands under us (a stale lock raced for, a lock
// released and retaken); each try waits a little longer.
constexpr int kAcquireTries = 20;

std::optional<std::chrono::seconds> age_of(const std::string& path) {
  struct stat info{};
  if (::stat(path.c_str(), &info) != 0) return std::nullopt;
  const auto modified = std::chrono::system_clock::from_time_t(info.st_mtim.tv_sec);
  const auto age = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now() - modified);
  return std::max(age, std::chrono::seconds{0});
}

// A killed process may linger as a zombie until its parent (or init) reaps it: it holds nothing.
bool is_zombie(long long pid) {
  std::ifstream stat_file("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat_file, line)) return false;
  const size_t name_end = line.rfind(')');  // the state follows the command name, which may hold spaces
  return name_end != std::string::npos && name_end + 2 < line.size() && line[name_end + 2] == 'Z';
}

bool process_alive(long long pid) {
  const bool exists = ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;  // EPERM: alive, another user's
  return exists && !is_zombie(pid);
}

// Writes `owner` to a new file `path` (O_EXCL when `exclusive`). Returns 0 or the errno of the failure,
// leaving no partial file.
int write_lock_file(const std::string& path, const LockOwner& owner, bool exclusive) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (exclusive ? O_EXCL : O_TRUNC), 0644);
  if (fd < 0) return errno;
  const std::string text = format_lock(owner);
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  int error = written ? 0 : (errno != 0 ? errno : EIO);
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error != 0) ::unlink(path.c_str());
  return error;
}

std::string describe_holder(const LockState& lock) {
  if (!lock.owner) return "an unknown process (the lock file is not readable as a lock)";
  return "PID " + std::to_string(lock.owner->pid) + " on host " + lock.owner->host + " since " + lock.owner->start_time;
}

void release_if_ours(const std::string& path, const LockOwner& owner) {
  const std::optional<LockState> lock = read_lock(path);
  if (lock && lock->owner == owner) ::unlink(path.c_str());
}

// Locks of this process, removed by the abort hook: MPI_Abort ends the process without unwinding.
struct HeldLocks {
  std::mutex mutex;
  std::map<std::string, LockOwner> locks;  // by lock path
};

HeldLocks& held_locks() {
  static HeldLocks held;
  return held;
}

void remember_held(const std::string& path, const LockOwner& owner, bool held) {
  static std::once_flag once;
  std::call_once(once, [] {
    add_abort_hook([] {
      HeldLocks& all = held_locks();
      std::lock_guard guard(all.mutex);
      for (const auto& [path, owner] : all.locks) release_if_ours(path, owner);
    });
  });
  HeldLocks& all = held_locks();
  std::lock_guard guard(all.mutex);
  if (held) all.locks[path] = owner;
  else all.locks.erase(path);
}

}  // namespace

std::string format_lock(const LockOwner& owner) {
  return "host=" + owner.host + "\npid=" + std::to_string(owner.pid) + "\nstart_time=" + owner.start_time + "\n";
}

std::optional<LockOwner> parse_lock(const std::string& text) {
  LockOwner owner;
  bool has_host = false, has_pid = false, has_start = false;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t equals = line.find('=');
    if (equals == std::string::npos) return std::nullopt;
    const std::string key = line.substr(0, equals), value = line.substr(equals + 1);
    if (key == "host") {
      owner.host = value;
      has_host = !value.empty();
    } else if (key == "pid") {
      char* end = nullptr;
      errno = 0;
      owner.pid = std::strtoll(value.c_str(), &end, 10);
      has_pid = !value.empty() && *end == '\0' && errno == 0 && owner.pid > 0;
    } else if (key == "start_time") {
      owner.start_time = value;
      has_start = true;
    }
  }
  // The trailing newline comes last: a lock cut short while being written is not a whole one.
  if (!has_host || !has_pid || !has_start || text.empty() || text.back() != '\n') return std::nullopt;
  return owner;
}

std::optional<LockState> read_lock(const std::string& lock_path) {
  // A lock read the instant after its O_EXCL create may still be empty: look again briefly.
  for (int look = 0;; ++look) {
    const std::optional<std::chrono::seconds> age = age_of(lock_path);
    if (!age) return std::nullopt;
    std::ifstream in(lock_path);
    if (!in) return std::nullopt;  // removed between the two looks
    std::ostringstream text;
    text << in.rdbuf();
    LockState state{parse_lock(text.str()), *age};
    if (state.owner || look == 4) return state;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string stale_reason(const LockState& lock, const std::string& this_host) {
  if (lock.age >= kLockStaleAfter) {
    return "it was last refreshed " + std::to_string(lock.age.count() / 60) + " minutes ago (a live run refreshes it every " +
           std::to_string(kLockRefreshEvery.count()) + " s)";
  }
  if (lock.owner && lock.owner->host == this_host && !process_alive(lock.owner->pid))
    return "process " + std::to_string(lock.owner->pid) + " is gone";
  return "";
}

bool take_over_stale_lock(const std::string& lock_path, const LockState& seen, const LockOwner& me) {
  const std::string guard = lock_path + ".takeover";
  const int fd = ::open(guard.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const std::optional<std::chrono::seconds> age = age_of(guard);
    if (errno == EEXIST && age && *age >= kGuardStaleAfter) ::unlink(guard.c_str());
    return false;  // another run is taking over: its lock is there on the next look
  }
  ::close(fd);
  struct RemoveGuard {
    const std::string& path;
    ~RemoveGuard() { ::unlink(path.c_str()); }
  } remove_guard{guard};

  // Under the guard nobody else replaces the lock, so this look stays true until our rename.
  const std::optional<LockState> now = read_lock(lock_path);
  if (!now || now->owner != seen.owner || stale_reason(*now, me.host).empty()) return false;
  const std::string mine = lock_path + "." + me.host + "." + std::to_string(me.pid) + ".new";
  if (write_lock_file(mine, me, false) != 0) return false;
  if (::rename(mine.c_str(), lock_path.c_str()) != 0) {
    ::unlink(mine.c_str());
    return false;
  }
  const std::optional<LockState> after = read_lock(lock_path);
  return after && after->owner == me;
}

LockOwner this_process_as_owner() { return LockOwner{this_host_name(), static_cast<long long>(::getpid()), utc_now_iso8601()}; }

std::unique_ptr<OutputLock> OutputLock::acquire(const std::string& output, const std::string& option) {
  const std::string lock_path = output + ".lock";
  const LockOwner me = this_process_as_owner();
  for (int attempt = 0; attempt < kAcquireTries; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10 * attempt));
    const int error = write_lock_file(lock_path, me, true);
    if (error == 0) return std::unique_ptr<OutputLock>(new OutputLock(lock_path, me));
    if (error != EEXIST) {
      throw UserError("cannot create the lock file " + lock_path + " for " + option + " " + output + ": " +
                      std::strerror(error) + "; " + write_error_hint(error));
    }
    const std::optional<LockState> held = read_lock(lock_path);
    if (!held) continue;  // released meanwhile
    const std::string stale = stale_reason(*held, me.host);
    if (stale.empty()) {
      throw UserError(option + " " + output + " is in use by another run: its lock file " + lock_path + " is held by " +
                      describe_holder(*held) + "; wait for that run to finish, choose another " + option +
                      ", or remove " + lock_path + " if that process is gone");
    }
    if (!take_over_stale_lock(lock_path, *held, me)) continue;
    std::fprintf(stderr, "scalebench: taking over the stale lock %s of %s: %s\n", lock_path.c_str(),
                 describe_holder(*held).c_str(), stale.c_str());
    // The dead holder's working files are garbage now; a holder merely silent (another host) keeps its own.
    if (const std::optional<LockOwner>& dead = held->owner; dead && dead->host == me.host && !process_alive(dead->pid)) {
      for (const char* suffix : {"writing", "publishing"}) ::unlink(working_path_of(output, suffix, dead->host, dead->pid).c_str());
    }
    return std::unique_ptr<OutputLock>(new OutputLock(lock_path, me));
  }
  throw UserError("could not take the lock file " + lock_path + " for " + option + " " + output +
                  ": other runs kept taking it; is another run starting with the same " + option + "?");
}

OutputLock::OutputLock(std::string path, LockOwner owner) : path_(std::move(path)), owner_(std::move(owner)) {
  remember_held(path_, owner_, true);
  refresher_ = std::thread([this] { refresh_until_released(); });
}

OutputLock::~OutputLock() {
  {
    std::lock_guard guard(mutex_);
    released_ = true;
  }
  wake_.notify_all();
  refresher_.join();
  release_if_ours(path_, owner_);
  remember_held(path_, owner_, false);
}

void OutputLock::refresh_until_released() {
  std::unique_lock guard(mutex_);
  while (!wake_.wait_for(guard, kLockRefreshEvery, [this] { return released_; })) {
    guard.unlock();
    refresh();
    guard.lock();
  }
}

void OutputLock::refresh() {
  const std::optional<LockState> lock = read_lock(path_);
  if (lock && lock->owner == owner_) {
    ::utimensat(AT_FDCWD, path_.c_str(), nullptr, 0);
    return;
  }
  if (!warned_.exchange(true)) {
    std::fprintf(stderr, "scalebench: warning: the lock %s is no longer this run's (%s); another run may now write its output\n",
                 path_.c_str(), lock ? describe_holder(*lock).c_str() : "it was removed");
  }
}

}  // namespace sb
