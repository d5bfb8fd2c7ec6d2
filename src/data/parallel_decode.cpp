#include "data/parallel_decode.h"

#include <exception>
#include <system_error>
#include <thread>

namespace sb {

void run_decode_tasks(const std::vector<std::function<void()>>& tasks, Decode mode) {
  std::vector<std::exception_ptr> errors(tasks.size());
  auto run = [&](size_t i) {
    try {
      tasks[i]();
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  if (mode == Decode::Serial || tasks.size() < 2) {
    for (size_t i = 0; i < tasks.size(); ++i) run(i);
  } else {
    std::vector<std::thread> threads;
    threads.reserve(tasks.size() - 1);
    for (size_t i = 1; i < tasks.size(); ++i) {
      try {
        threads.emplace_back(run, i);
      } catch (const std::system_error&) {  // no thread to be had: this one decodes it
        run(i);
      }
    }
    run(0);  // the calling thread takes the first
    for (std::thread& t : threads) t.join();
  }
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
}

}  // namespace sb
