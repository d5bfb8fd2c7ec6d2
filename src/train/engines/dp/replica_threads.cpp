#include "train/engines/dp/replica_threads.h"

namespace sb {

ReplicaThreads::ReplicaThreads(int replicas) : errors_(static_cast<size_t>(replicas)) {
  threads_.reserve(static_cast<size_t>(replicas));
  for (int r = 0; r < replicas; ++r) threads_.emplace_back([this, r] { serve(r); });
}

ReplicaThreads::~ReplicaThreads() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ReplicaThreads::run(const std::function<void(int)>& task) {
  std::unique_lock<std::mutex> lock(mutex_);
  task_ = &task;
  running_ = count();
  for (std::exception_ptr& e : errors_) e = nullptr;
  ++generation_;
  work_ready_.notify_all();
  work_done_.wait(lock, [this] { return running_ == 0; });
  task_ = nullptr;
  for (const std::exception_ptr& e : errors_)
    if (e) std::rethrow_exception(e);
}

void ReplicaThreads::serve(int replica) {
  uint64_t done = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_ready_.wait(lock, [&] { return stopping_ || generation_ != done; });
    if (stopping_) return;
    done = generation_;
    const std::function<void(int)>& task = *task_;
    lock.unlock();
    std::exception_ptr error;
    try {
      task(replica);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    errors_[static_cast<size_t>(replica)] = error;
    if (--running_ == 0) work_done_.notify_one();
  }
}

}  // namespace sb
