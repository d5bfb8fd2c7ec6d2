#include "train/engines/cpu_engine.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "core/error.h"
#include "core/nvtx_ranges.h"
#include "core/startup_clock.h"
#include "core/stop_signal.h"
#include "data/cpu_batches.h"
#include "data/worker_count.h"
#include "nn/cpu/loss.h"
#include "nn/cpu/step_interrupt.h"
#include "train/engines/micro_batches.h"
#include "train/run_setup.h"

namespace sb {
namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

CpuEngine::CpuEngine(const TrainConfig& config, const Dataset& train, const Dataset& test, Communicator& comm, int local_ranks,
                     const GradientSyncStrategy& sync)
    : EngineBase(config, train, test, comm),
      net_([&] {
        const StartupSpan network_startup(StartupPart::network);
        return cpu::Network<float>(model_spec_for(config, train), config.seed);
      }()),
      optimizer_(optimizer_for(config, static_cast<int64_t>(net_.params().size()))),
      sync_(sync.make(GradientSyncSetup{config, comm, std::span<float>(net_.grads())})),
      dropout_key_(dropout_stream_key(config.seed, comm.rank())),
      micro_batch_(config.per_rank_batch(comm.size())),
      input_(train, test,
             CpuBatchOptions{augmentation_, config.bad_images, comm.rank(),
                             config.workers > 0 ? config.workers : default_input_workers(local_ranks)}) {}

std::optional<InputTotals> CpuEngine::input_totals() const { return input_.input_totals(); }

float CpuEngine::loss_and_gradient(const Tensor<float>& output, const std::vector<int32_t>& labels,
                                   Tensor<float>& grad) {
  return log_probabilities_ ? cpu::nll_loss(output, labels.data(), grad)
                            : cpu::cross_entropy_loss(output, labels.data(), grad);
}

void CpuEngine::run_micro_batch(std::span<const int64_t> indices, const StepInfo& info, size_t micro, uint64_t position,
                                size_t step_samples, PhaseTimes& t) {
  std::optional<NvtxRange> phase(phase_name(kPhaseData));
  auto t0 = Clock::now();
  input_.build(true, indices, AugmentKey{config_.seed, info.epoch, comm_.rank()}, position);
  t.seconds[kPhaseData] += seconds_since(t0);

  phase.reset();
  phase.emplace(phase_name(kPhaseForward));
  t0 = Clock::now();
  net_.set_random_stream(dropout_key_, dropout_step(info.step, config_.accumulate_steps, micro));
  const Tensor<float>& output = net_.forward(input_.images(), cpu::Mode::Train);
  const float loss = loss_and_gradient(output, input_.labels(), grad_);
  if (indices.size() != step_samples) {  // one of several micro-batches: its share of the step's mean loss
    const float weight = micro_batch_weight(indices.size(), step_samples);
    for (float& g : grad_.storage()) g *= weight;
  }
  t.seconds[kPhaseForward] += seconds_since(t0);
  train_totals_.loss_sum += static_cast<double>(loss) * static_cast<double>(indices.size());
  train_totals_.correct += cpu::count_correct(output, input_.labels().data());
  train_totals_.count += static_cast<int64_t>(indices.size());

  phase.reset();
  phase.emplace(phase_name(kPhaseBackward));
  t0 = Clock::now();
  net_.backward(grad_);
  t.seconds[kPhaseBackward] += seconds_since(t0);
}

void CpuEngine::accumulate_gradient(size_t micro, size_t count) {
  std::vector<float>& grads = net_.grads();
  if (micro == 0) {
    accumulated_ = grads;
  } else if (micro + 1 < count) {
    for (size_t i = 0; i < grads.size(); ++i) accumulated_[i] += grads[i];
  } else {  // the last: the step's gradient goes where the all-reduce and the optimizer read it
    for (size_t i = 0; i < grads.size(); ++i) grads[i] += accumulated_[i];
  }
}

PhaseTimes CpuEngine::train_step(std::span<const int64_t> indices, const StepInfo& info) {
  PhaseTimes t;
  const auto step_start = Clock::now();
  // A stop signal abandons the step between layers (the launcher's grace may be shorter than a step);
  // what the step changed before its update (BN statistics, the epoch's totals) is put back.
  const EvalTotals totals_before = train_totals_;
  const std::vector<float> buffers_before = net_.buffers();
  bool abandoned = false;
  try {
    cpu::ScopedStepInterrupt interruptible(stop_signal_received);
    const std::vector<std::span<const int64_t>> micro = micro_batches(indices, micro_batch_, config_.accumulate_steps);
    sync_->begin(0, micro.size());
    uint64_t position = info.position;
    for (size_t m = 0; m < micro.size(); ++m) {
      run_micro_batch(micro[m], info, m, position, indices.size(), t);
      position += static_cast<uint64_t>(micro[m].size());
      if (micro.size() > 1) {
        const auto t0 = Clock::now();
        accumulate_gradient(m, micro.size());
        t.seconds[kPhaseBackward] += seconds_since(t0);
      }
    }
  } catch (const cpu::StepInterrupted&) {
    abandoned = true;
  }
  // This check is the gradient exchange's first collective: the rank waits here for the last to arrive.
  const auto check_start = Clock::now();
  t.arrival_s = std::chrono::duration<double>(check_start - step_start).count();
  // Every rank learns whether any abandoned its step before the gradients are combined: all of them
  // then skip the update together, and the step counts as not taken.
  const bool any_abandoned = comm_.allreduce_max(abandoned ? 1 : 0) != 0;
  t.check_s = seconds_since(check_start);
  if (any_abandoned) {
    train_totals_ = totals_before;
    net_.buffers() = buffers_before;
    t.abandoned = true;
    return t;
  }

  // The whole gradient is final; the host strategy's average blocks after backward: all of it is comm, and
  // backward_overlap stays 0.
  std::optional<NvtxRange> phase(phase_name(kPhaseComm));
  auto t0 = Clock::now();
  sync_->gradients_ready(0, nullptr);
  sync_->finish();
  t.seconds[kPhaseComm] = seconds_since(t0);

  phase.reset();
  phase.emplace(phase_name(kPhaseOptimizer));
  t0 = Clock::now();
  {
    const std::lock_guard<std::mutex> updating(update_mutex_);
    optimizer_->step(net_.params().data(), net_.grads().data(), info.lr);
  }
  t.seconds[kPhaseOptimizer] = seconds_since(t0);
  return t;
}

EngineFacts CpuEngine::describe() const {
  EngineFacts facts = data_facts();
  facts.device_name = "cpu";
  facts.parameter_count = static_cast<int64_t>(net_.params().size());
  return facts;
}

EvalTotals CpuEngine::train_totals(TotalsRead read) {
  const EvalTotals out = train_totals_;
  if (read == TotalsRead::Take) train_totals_ = EvalTotals{};
  return out;
}

EvalTotals CpuEngine::evaluate(std::span<const int64_t> indices) {
  EvalTotals totals;
  const size_t batch = static_cast<size_t>(config_.eval_batch_size);
  for (size_t begin = 0; begin < indices.size(); begin += batch) {
    const auto part = indices.subspan(begin, std::min(batch, indices.size() - begin));
    input_.build(false, part, AugmentKey{}, 0);
    const Tensor<float>& output = net_.forward(input_.images(), cpu::Mode::Eval);
    const float loss = loss_and_gradient(output, input_.labels(), grad_);
    totals.loss_sum += static_cast<double>(loss) * static_cast<double>(part.size());
    totals.correct += cpu::count_correct(output, input_.labels().data());
    totals.count += static_cast<int64_t>(part.size());
  }
  return totals;
}

}  // namespace sb

namespace sb {

EngineState CpuEngine::save_model() {
  EngineState s;
  s.params = net_.params();
  for (const NamedState& st : optimizer_->state()) s.optimizer_state.emplace_back(st.name, std::vector<float>(st.data, st.data + st.count));
  s.optimizer_steps = optimizer_->step_count();
  return s;
}

EngineState CpuEngine::save_running() {
  EngineState s;
  s.buffers = net_.buffers();
  s.train_totals = train_totals_;
  s.optimizer_steps = optimizer_->step_count();
  return s;
}

EngineState CpuEngine::save() {
  EngineState s = save_model();
  EngineState running = save_running();
  s.buffers = std::move(running.buffers);
  s.train_totals = running.train_totals;
  return s;
}

void CpuEngine::load(const EngineState& s) {
  if (s.params.size() != net_.params().size() || s.buffers.size() != net_.buffers().size()) {
    throw UserError("the checkpoint holds " + std::to_string(s.params.size()) + " parameters but model '" + config_.model +
                    "' has " + std::to_string(net_.params().size()) + "; resume with the model and data it was written for");
  }
  net_.params() = s.params;
  net_.buffers() = s.buffers;
  auto states = optimizer_->state();
  if (states.size() != s.optimizer_state.size()) {
    throw UserError("the checkpoint's optimizer state does not match --optimizer " + std::string(optimizer_name(config_.optimizer)));
  }
  for (size_t i = 0; i < states.size(); ++i) {
    const auto& [name, values] = s.optimizer_state[i];
    if (name != states[i].name || static_cast<int64_t>(values.size()) != states[i].count) {
      throw UserError("the checkpoint's optimizer state '" + name + "' does not match --optimizer " + optimizer_name(config_.optimizer));
    }
    std::copy(values.begin(), values.end(), states[i].data);
  }
  optimizer_->set_step_count(s.optimizer_steps);
  train_totals_ = s.train_totals;
}

}  // namespace sb
