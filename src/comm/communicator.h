// A group of ranks and the typed collectives between them. The trainer, the evaluator, the samplers and
// the results writer take a Communicator&: `scale` hands them sub-communicators, tests hand them 1, 2 or
// 4 ranks, and none of them names MPI_COMM_WORLD.
//
// Every collective takes a std::span<T> of a supported element type (comm/element_type.h); the count is
// the span's size, so a byte count can never be passed. Every member of the communicator must make the
// same collective calls in the same order with the same counts (the usual MPI contract).
#pragma once
#include <cstddef>
#include <memory>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "comm/element_type.h"

namespace sb {

enum class ReduceOp { Sum, Max, Min };

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // In-place reductions: afterwards every rank holds the element-wise result.
  template <ReducibleElement T> void allreduce_sum(std::span<T> data) { reduce(data, ReduceOp::Sum); }
  template <ReducibleElement T> void allreduce_max(std::span<T> data) { reduce(data, ReduceOp::Max); }
  template <ReducibleElement T> void allreduce_min(std::span<T> data) { reduce(data, ReduceOp::Min); }
  template <AveragedElement T> void allreduce_avg(std::span<T> data) {
    reduce(data, ReduceOp::Sum);
    const T ranks = static_cast<T>(size());
    for (T& x : data) x /= ranks;
  }

  // Out of place: `send` is left as it was and every rank's `received` holds the sum (the same sizes).
  // The all-reduce sweep times this form as well (nccl-tests' out-of-place columns).
  template <ReducibleElement T> void allreduce_sum(std::span<const T> send, std::span<T> received) {
    allreduce_elements_out_of_place(send.data(), received.data(), send.size(), element_type_of<T>, ReduceOp::Sum);
  }

  // One-value forms, for timings and counters: `double slowest = comm.allreduce_max(my_time);`
  template <ReducibleElement T> T allreduce_sum(T value) { return reduce_value(value, ReduceOp::Sum); }
  template <ReducibleElement T> T allreduce_max(T value) { return reduce_value(value, ReduceOp::Max); }
  template <ReducibleElement T> T allreduce_min(T value) { return reduce_value(value, ReduceOp::Min); }
  template <AveragedElement T> T allreduce_avg(T value) { return reduce_value(value, ReduceOp::Sum) / size(); }

  // Copies root's data into every rank's span (all spans the same size).
  template <CommElement T> void broadcast(std::span<T> data, int root) {
    static_assert(!std::is_const_v<T>, "broadcast writes into the span on every rank but root");
    broadcast_elements(data.data(), data.size(), element_type_of<T>, root);
  }

  // Every rank sends the same number of elements. On root the result holds size() blocks in rank
  // order; on other ranks it is empty.
  template <CommElement T> std::vector<std::remove_cv_t<T>> gather(std::span<T> mine, int root) {
    std::vector<std::remove_cv_t<T>> all(rank() == root ? mine.size() * static_cast<size_t>(size()) : 0);
    gather_elements(mine.data(), mine.size(), all.data(), element_type_of<T>, root);
    return all;
  }
  template <CommElement T> std::vector<T> gather(T value, int root) { return gather(std::span<const T>(&value, 1), root); }

  // As gather, with the result on every rank.
  template <CommElement T> std::vector<std::remove_cv_t<T>> allgather(std::span<T> mine) {
    std::vector<std::remove_cv_t<T>> all(mine.size() * static_cast<size_t>(size()));
    allgather_elements(mine.data(), mine.size(), all.data(), element_type_of<T>);
    return all;
  }
  template <CommElement T> std::vector<T> allgather(T value) { return allgather(std::span<const T>(&value, 1)); }

  virtual void barrier() = 0;

  // Collective over this communicator. Ranks passing the same color >= 0 form one new communicator,
  // ordered by key (ties by rank here); a rank passing a negative color joins none and gets nullptr.
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;

 protected:
  Communicator() = default;

  // The typed wrappers above are the only callers: counts here are element counts of `type`.
  virtual void allreduce_elements(void* data, size_t count, ElementType type, ReduceOp op) = 0;
  // Throws std::logic_error where a communicator offers only in-place reductions (test doubles).
  virtual void allreduce_elements_out_of_place(const void*, void*, size_t, ElementType, ReduceOp) {
    throw std::logic_error("this communicator has no out-of-place all-reduce");
  }
  virtual void broadcast_elements(void* data, size_t count, ElementType type, int root) = 0;
  virtual void gather_elements(const void* mine, size_t count, void* all, ElementType type, int root) = 0;
  virtual void allgather_elements(const void* mine, size_t count, void* all, ElementType type) = 0;

 private:
  template <typename T> void reduce(std::span<T> data, ReduceOp op) {
    static_assert(!std::is_const_v<T>, "in-place reductions need a writable span");
    allreduce_elements(data.data(), data.size(), element_type_of<T>, op);
  }
  template <typename T> T reduce_value(T value, ReduceOp op) {
    allreduce_elements(&value, 1, element_type_of<T>, op);
    return value;
  }
};

}  // namespace sb
