#include "data/host_batch_pipeline.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace sb {

HostBatchPipeline::HostBatchPipeline(int workers, std::vector<HostBatchBuffer> buffers, int64_t max_batch,
                                     int64_t sample_bytes)
    : max_batch_(max_batch), claim_parts_(std::max(1, workers)), slots_(buffers.size()), order_(buffers.size()) {
  if (workers < 1) throw std::invalid_argument("HostBatchPipeline: " + std::to_string(workers) + " workers");
  if (buffers.empty() || max_batch < 1 || sample_bytes < 1)
    throw std::invalid_argument("HostBatchPipeline: no buffers, or an empty batch or sample");
  for (size_t s = 0; s < slots_.size(); ++s) {
    slots_[s].buffer = buffers[s];
    slots_[s].indices.reserve(static_cast<size_t>(max_batch));
  }
  try {
    for (int w = 0; w < workers; ++w) threads_.emplace_back([this] { work(); });
  } catch (...) {
    // A thread that could not start: stop the ones that did before the members go.
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    work_ready_.notify_all();
    for (std::thread& t : threads_) t.join();
    throw;
  }
}

HostBatchPipeline::~HostBatchPipeline() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& t : threads_) t.join();
}

int HostBatchPipeline::free_slots() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.state == SlotState::Free; }));
}

int HostBatchPipeline::queued() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(order_count_);
}

bool HostBatchPipeline::front_is(const BatchRequest& wanted) const {
  std::lock_guard lock(mutex_);
  if (order_count_ == 0) return false;
  const Slot& s = slots_[static_cast<size_t>(order_[order_head_])];
  return s.builder == wanted.builder && s.key.seed == wanted.key.seed && s.key.epoch == wanted.key.epoch &&
         s.key.rank == wanted.key.rank && s.first_position == wanted.first_position &&
         std::equal(s.indices.begin(), s.indices.end(), wanted.indices.begin(), wanted.indices.end());
}

void HostBatchPipeline::submit(const BatchRequest& request) {
  if (!request.builder) throw std::logic_error("HostBatchPipeline::submit: no builder");
  if (static_cast<int64_t>(request.indices.size()) > max_batch_)
    throw std::logic_error("HostBatchPipeline::submit: a batch of " + std::to_string(request.indices.size()) +
                           " exceeds the planned " + std::to_string(max_batch_));
  {
    std::lock_guard lock(mutex_);
    const auto free = std::find_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.state == SlotState::Free; });
    if (free == slots_.end()) throw std::logic_error("HostBatchPipeline::submit: no free slot");
    Slot& s = *free;
    s.state = SlotState::Queued;
    s.builder = request.builder;
    s.indices.assign(request.indices.begin(), request.indices.end());  // within the reserved capacity
    s.key = request.key;
    s.first_position = request.first_position;
    s.rows = static_cast<int64_t>(request.indices.size());
    s.next_row = 0;
    s.rows_done = 0;
    s.in_flight = 0;
    s.error = nullptr;
    s.skipped->take();  // a batch dropped before it was taken counts nothing
    order_[(order_head_ + order_count_) % order_.size()] = static_cast<int>(free - slots_.begin());
    ++order_count_;
  }
  work_ready_.notify_all();
}

HostBatch HostBatchPipeline::take() {
  std::unique_lock lock(mutex_);
  if (order_count_ == 0) throw std::logic_error("HostBatchPipeline::take: no batch queued");
  const int index = order_[order_head_];
  Slot& s = slots_[static_cast<size_t>(index)];
  batch_done_.wait(lock, [&] { return finished(s); });
  order_head_ = (order_head_ + 1) % order_.size();
  --order_count_;
  if (s.error) {
    s.state = SlotState::Free;
    std::rethrow_exception(std::exchange(s.error, nullptr));
  }
  s.state = SlotState::Taken;
  return HostBatch{index, s.rows, s.buffer, s.skipped->take()};
}

void HostBatchPipeline::release(int slot) {
  std::lock_guard lock(mutex_);
  Slot& s = slots_.at(static_cast<size_t>(slot));
  if (s.state != SlotState::Taken) throw std::logic_error("HostBatchPipeline::release: slot " + std::to_string(slot) + " not taken");
  s.state = SlotState::Free;
}

void HostBatchPipeline::discard_queued() {
  std::unique_lock lock(mutex_);
  for (size_t k = 0; k < order_count_; ++k) {
    Slot& s = slots_[static_cast<size_t>(order_[(order_head_ + k) % order_.size()])];
    s.rows_done += s.rows - s.next_row;  // the rows nobody claimed are dropped
    s.next_row = s.rows;
  }
  for (size_t k = 0; k < order_count_; ++k) {
    Slot& s = slots_[static_cast<size_t>(order_[(order_head_ + k) % order_.size()])];
    batch_done_.wait(lock, [&] { return finished(s); });
    s.state = SlotState::Free;
    s.error = nullptr;
  }
  order_count_ = 0;
}

HostBatchPipeline::Slot* HostBatchPipeline::slot_with_unclaimed_rows() {
  for (size_t k = 0; k < order_count_; ++k) {
    Slot& s = slots_[static_cast<size_t>(order_[(order_head_ + k) % order_.size()])];
    if (s.next_row < s.rows) return &s;
  }
  return nullptr;
}

void HostBatchPipeline::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    Slot* s = nullptr;
    work_ready_.wait(lock, [&] { return stopping_ || (s = slot_with_unclaimed_rows()) != nullptr; });
    if (stopping_) return;
    // The workers share a batch's rows in equal parts, so each batch is ready as early as it can be.
    const int64_t claim = std::max<int64_t>(1, (s->rows + claim_parts_ - 1) / claim_parts_);
    const int64_t begin = s->next_row, end = std::min(s->rows, begin + claim);
    s->next_row = end;
    ++s->in_flight;
    lock.unlock();
    std::exception_ptr error;
    try {
      s->builder->fill(s->indices, s->key, s->first_position, begin, end, s->buffer.images, s->buffer.labels,
                       s->skipped.get());
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (error && !s->error) s->error = error;
    s->rows_done += end - begin;
    --s->in_flight;
    if (finished(*s)) batch_done_.notify_all();
  }
}

}  // namespace sb
