// Writes small valid checkpoints through sb::save_checkpoint (the writer scalebench uses), for the
// seed corpus of fuzz_checkpoint_reader. A real run's checkpoint (run_fuzzers.sh also makes one with
// the scalebench binary) holds a model of 272k parameters, 1 MB of floats the fuzzer would mostly
// mutate in vain; these hold a handful of values, so that mutations land on HDF5's metadata.
//   make_checkpoint_seed OUT_DIR
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include "comm/communicator.h"
#include "train/checkpoint/checkpoint.h"
#include "train/engines/engine.h"

namespace {

using namespace sb;

// One rank: every collective is a copy.
class SoloCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void barrier() override {}
  std::unique_ptr<Communicator> split(int, int) override { return nullptr; }

 protected:
  static size_t bytes_of(ElementType type) {
    switch (type) {
      case ElementType::Char:
      case ElementType::UInt8: return 1;
      case ElementType::Int32:
      case ElementType::Float32: return 4;
      default: return 8;
    }
  }
  void allreduce_elements(void*, size_t, ElementType, ReduceOp) override {}
  void broadcast_elements(void*, size_t, ElementType, int) override {}
  void gather_elements(const void* mine, size_t count, void* all, ElementType type, int) override {
    if (count) std::memcpy(all, mine, count * bytes_of(type));
  }
  void allgather_elements(const void* mine, size_t count, void* all, ElementType type) override {
    if (count) std::memcpy(all, mine, count * bytes_of(type));
  }
};

// An engine that only has a state.
class StateOnlyEngine : public Engine, private EngineRunState {
 public:
  explicit StateOnlyEngine(EngineState state) : state_(std::move(state)) {}
  EngineFacts describe() const override {
    EngineFacts facts;
    facts.device_name = "seed";
    facts.parameter_count = static_cast<int64_t>(state_.params.size());
    return facts;
  }
  PhaseTimes train_step(std::span<const int64_t>, const StepInfo&) override { return {}; }
  EvalTotals train_totals(TotalsRead) override { return {}; }
  EvalTotals evaluate(std::span<const int64_t>) override { return {}; }
  EngineRunState& run_state() override { return *this; }

 private:
  EngineState save() override { return state_; }
  void load(const EngineState& state) override { state_ = state; }

  EngineState state_;
};

void write_seed(const std::filesystem::path& path, const std::vector<std::string>& optimizer_names, size_t params,
                size_t buffers, const LoopState& loop) {
  EngineState s;
  for (size_t i = 0; i < params; ++i) s.params.push_back(0.25f * static_cast<float>(i) - 1.0f);
  for (size_t i = 0; i < buffers; ++i) s.buffers.push_back(1.0f + static_cast<float>(i));
  for (const std::string& name : optimizer_names) s.optimizer_state.emplace_back(name, std::vector<float>(params, 0.5f));
  s.optimizer_steps = loop.global_step;
  s.loss_scale = optimizer_names.empty() ? 65536.0f : 0.0f;
  s.scale_growth = 3;
  s.train_totals = {1.5, 2, 4};
  SoloCommunicator comm;
  StateOnlyEngine engine(s);
  const DataIdentity data{"synthetic:1x4x4:2:16:8", 16, 8, 0x1234abcdu};
  save_checkpoint(comm, engine, R"({"model":"seed","epochs":2})", data, loop, path.string());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_checkpoint_seed OUT_DIR\n");
    return 1;
  }
  const std::filesystem::path out = argv[1];
  std::filesystem::create_directories(out);
  write_seed(out / "sgd_momentum.h5", {"momentum_buffer"}, 6, 2, LoopState{1, 0, 4, 0.5, {0.25, 0, 0}});
  write_seed(out / "adam_mid_epoch.h5", {"exp_avg", "exp_avg_sq"}, 4, 0, LoopState{0, 3, 3, 0.1, {0, 0, 0}});
  write_seed(out / "no_optimizer_state.h5", {}, 3, 1, LoopState{2, 0, 8, 1.0, {0.5, 1, 0}});
  return 0;
}
