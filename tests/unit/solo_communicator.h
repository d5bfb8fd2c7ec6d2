// A communicator of one rank for engine tests that run without MPI: reductions and broadcasts leave the
// data as it is, gathers copy this rank's part.
#pragma once
#include <cstring>
#include <memory>

#include "comm/communicator.h"

namespace sb::testing {

class SoloCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void barrier() override {}
  std::unique_ptr<Communicator> split(int, int) override { return std::make_unique<SoloCommunicator>(); }

 protected:
  void allreduce_elements(void*, size_t, ElementType, ReduceOp) override {}
  void broadcast_elements(void*, size_t, ElementType, int) override {}
  void gather_elements(const void* mine, size_t count, void* all, ElementType type, int) override { copy(mine, count, all, type); }
  void allgather_elements(const void* mine, size_t count, void* all, ElementType type) override { copy(mine, count, all, type); }

 private:
  static void copy(const void* mine, size_t count, void* all, ElementType type) {
    if (count) std::memcpy(all, mine, count * bytes_of(type));
  }
  static size_t bytes_of(ElementType type) {
    switch (type) {
      case ElementType::Char:
      case ElementType::UInt8: return 1;
      case ElementType::Int32:
      case ElementType::Float32: return 4;
      case ElementType::Int64:
      case ElementType::UInt64:
      case ElementType::Float64: return 8;
    }
    return 8;
  }
};

}  // namespace sb::testing
