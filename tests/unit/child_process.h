// Runs code in a forked child and returns how it ended and what it wrote to stderr: for paths that end
// the process (sb::fatal, a job abort) and for races between processes.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace sb::test {

struct ChildResult {
  int exit_code = -1;  // 128 + the signal when a signal ended it
  std::string stderr_text;
};

template <class Body>
ChildResult run_in_child(Body body) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) std::abort();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    ::dup2(pipe_fds[1], STDERR_FILENO);
    ::close(pipe_fds[1]);
    body();
    std::_Exit(0);
  }
  ::close(pipe_fds[1]);
  ChildResult result;
  char buffer[4096];
  for (ssize_t got; (got = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) result.stderr_text.append(buffer, static_cast<size_t>(got));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

// The PID of a process that has ended and been reaped: as dead as a PID gets without reuse.
inline pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) std::_Exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

}  // namespace sb::test
