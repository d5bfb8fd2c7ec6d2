// One host thread per replica, as nn.DataParallel's parallel_apply starts one per device: run(task)
// calls task(r) on replica r's own thread for every r at once and returns when all have finished,
// rethrowing the first replica's exception. The threads live as long as this object (a CUDA thread keeps
// its selected device).
#pragma once
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sb {

class ReplicaThreads {
 public:
  explicit ReplicaThreads(int replicas);
  ~ReplicaThreads();
  ReplicaThreads(const ReplicaThreads&) = delete;
  ReplicaThreads& operator=(const ReplicaThreads&) = delete;

  int count() const { return static_cast<int>(threads_.size()); }
  void run(const std::function<void(int replica)>& task);

 private:
  void serve(int replica);

  std::mutex mutex_;
  std::condition_variable work_ready_, work_done_;
  const std::function<void(int)>* task_ = nullptr;
  uint64_t generation_ = 0;  // counts run() calls; a thread works once per generation
  int running_ = 0;
  bool stopping_ = false;
  std::vector<std::exception_ptr> errors_;
  std::vector<std::thread> threads_;
};

}  // namespace sb
