#include "train/engines/cuda/cuda_engine.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <optional>
#include <vector>

#include "core/cuda_check.h"
#include "core/error.h"
#include "core/log.h"
#include "core/nvtx_ranges.h"
#include "core/startup_clock.h"
#include "data/cuda/input_pipeline.h"
#include "nn/cuda/context.h"
#include "nn/cuda/cuda_handles.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/network.h"
#include "nn/fusion_plan.h"
#include "train/cache_folder.h"
#include "train/engines/cuda/context_options.h"
#include "train/engines/cuda/device_info.h"
#include "train/engines/cuda/device_monitor.h"
#include "train/engines/cuda/device_state.h"
#include "train/engines/cuda/gpu_wait.h"
#include "train/engines/cuda/device_sync_parts.h"
#include "train/engines/cuda/step_graph_policy.h"
#include "train/engines/cuda/step_graphs.h"
#include "train/engines/cuda/step_inputs.h"
#include "train/engines/cuda/step_state.h"
#include "train/engines/cuda/step_timer.h"
#include "train/engines/cuda/training_input.h"
#include "train/engines/engine_base.h"
#include "train/engines/gradient_sync.h"
#include "train/engines/micro_batches.h"
#include "train/run_setup.h"

namespace sb {
namespace {
using cuda::DeviceTensor;

class CudaEngine final : public EngineBase, private EngineRunState, private EngineMeasurements {
 public:
  // input: the batches, made on `device` (training_input.h).
  CudaEngine(const TrainConfig& config, const Dataset& train, const Dataset& test, Communicator& comm, int device,
             std::unique_ptr<cuda::InputPipeline> input, const cuda::CudaEngineOptions& options);
  ~CudaEngine() override;

  EngineFacts describe() const override;
  PhaseTimes train_step(std::span<const int64_t> indices, const StepInfo& info) override;
  EvalTotals train_totals(TotalsRead read) override {
    const cuda::DeviceLossTotals& totals = state_->train_totals();
    return read == TotalsRead::Take ? totals.take(stream_.get()) : totals.read(stream_.get());
  }
  EvalTotals evaluate(std::span<const int64_t> indices) override;
  void synchronize() override;
  EngineRunState& run_state() override { return *this; }
  EngineMeasurements& measurements() override { return *this; }

 private:
  // The run state (EngineRunState); no update_mutex: a GPU step is short enough to wait for.
  EngineState save() override;
  void load(const EngineState& state) override;
  // What it measures (EngineMeasurements).
  PhaseTimes drain_step_times() override { return timer_->drain(gpu_wait_); }
  // The device's readings are the monitor's.
  std::vector<EpochReading> readings() override { return monitor_->readings(); }
  double peak_tflops() const override { return monitor_->peak_tflops(); }
  std::vector<GpuClocks> take_gpu_clocks() override { return {monitor_->take_clocks()}; }
  std::optional<InputTotals> input_totals() const override { return input_->input_totals(); }

  // The context with rank 0's autotuned choices on every rank, and the network on it.
  void build_network(const cuda::CudaEngineOptions& options);
  int64_t micro_batch() const { return config_.per_rank_batch(comm_.size()); }  // --batch-size per rank
  // Everything of one step after its inputs are in device memory: the part a CUDA graph captures.
  // micro_sizes: the samples of each micro-batch (one entry without --accumulate-steps).
  void enqueue_step_body(const std::vector<int64_t>& micro_sizes, int slot, int buffer, bool capturing);
  // The step's tail after the last backward: the all-reduce's end and the optimizer.
  void enqueue_step_end(int slot, bool capturing, std::optional<NvtxRange>& phase);
  void capture_graphs(const std::vector<int64_t>& micro_sizes);
  void drop_graphs();
  // After the first step's forward, whose shapes decide the fused runs' last fallbacks: the plan report.
  void log_fusion_report() const;

  // Every part that holds device resources is created in the constructor, after the device is selected,
  // in the order below (but the input, which the factory makes on the device first, and the gradient sync,
  // made after the step state, whose optimizer it may take the update of); they are released in reverse:
  // the NCCL communicator after the buckets that use it, the compute stream after everything that queues
  // work on it, the monitor last.
  std::unique_ptr<cuda::DeviceMonitor> monitor_;  // selects the device
  cuda::CudaStream stream_;
  std::unique_ptr<cuda::Context> ctx_;
  std::unique_ptr<cuda::Network> net_;
  std::unique_ptr<GradientSync> sync_;  // the strategy of CudaEngineOptions::gradient_sync
  std::unique_ptr<cuda::StepState> state_;
  cuda::GpuWait gpu_wait_;
  std::unique_ptr<cuda::InputPipeline> input_;
  std::optional<cuda::StepTimer> timer_;
  cuda::StepGraphs graphs_;
  cuda::StepGraphPolicy graph_policy_;
  int64_t steps_queued_ = 0;
};

CudaEngine::CudaEngine(const TrainConfig& config, const Dataset& train, const Dataset& test, Communicator& comm,
                       int device, std::unique_ptr<cuda::InputPipeline> input, const cuda::CudaEngineOptions& options)
    : EngineBase(config, train, test, comm),
      monitor_(std::make_unique<cuda::DeviceMonitor>(device)),
      gpu_wait_(comm),
      input_(std::move(input)),
      graph_policy_(config.cuda_graph, config.per_rank_batch(comm.size()) * config.accumulate_steps) {
  cuda::set_out_of_memory_hint("training " + config.model + " with a batch of " + std::to_string(micro_batch()) +
                                " per rank (evaluation " + std::to_string(config.eval_batch_size) + ") in " + name_of(config.precision) +
                                "; lower --batch-size or --eval-batch-size, or use --precision bf16");
  stream_ = cuda::CudaStream::create_non_blocking(cuda::CudaStream::compute_priority());
  build_network(options);
  state_ = std::make_unique<cuda::StepState>(config, micro_batch(), *net_, ctx_->compute_dtype(), log_probabilities_, stream_);
  ctx_->set_device_step(&state_->staging().device_micro_inputs(0)->step);  // each micro-batch of a step sets its own
  cuda::DeviceSyncParts parts{*net_, *ctx_, state_->optimizer(), options};
  const std::span<float> grads(net_->grads(), static_cast<size_t>(net_->param_count()));
  sync_ = options.gradient_sync->make(GradientSyncSetup{config, comm, grads, &parts});
  timer_.emplace(*sync_);
  stream_.synchronize();
  monitor_->measure_peak_rate(ctx_->compute_dtype(), ctx_->tf32(), cache_folder(config));
  monitor_->sample_memory();
}

CudaEngine::~CudaEngine() {
  // The queued work still uses the buffers released below.
  stream_.synchronize_noexcept();
}

void CudaEngine::build_network(const cuda::CudaEngineOptions& options) {
  const StartupSpan network_startup(StartupPart::network);
  cuda::ContextOptions context = context_options(config_);
  if (options.adjust_context) options.adjust_context(context);
  ctx_ = std::make_unique<cuda::Context>(context, stream_.get());
  // Every rank runs rank 0's autotuned engine choices (plans are built in the same order everywhere).
  ctx_->plans().set_agreement([this](const std::string&, int local_choice) {
    int choice = local_choice;
    comm_.broadcast(std::span<int>(&choice, 1), 0);
    return choice;
  });
  // A trailing LogSoftmax runs inside the loss kernel (nn/fusion_plan.h): two launches fewer per step.
  net_ = std::make_unique<cuda::Network>(model_spec_for(config_, train_), config_.seed, *ctx_, cuda::NetworkOutput::LogitsForLoss);
  net_->set_random_stream(dropout_stream_key(config_.seed, comm_.rank()), 0);
}

void CudaEngine::enqueue_step_body(const std::vector<int64_t>& micro_sizes, int slot, int buffer, bool capturing) {
  const cudaStream_t s = stream_.get();
  const size_t count = micro_sizes.size();
  const int64_t step_samples = std::accumulate(micro_sizes.begin(), micro_sizes.end(), int64_t{0});
  const bool timed_data = !input_->from_host();  // the host's upload is timed in train_step
  // With several micro-batches the phase events bracket the last one (and the step's all-reduce and
  // update); the micro-batches before it count in the step's wall time only.
  sync_->begin(slot, count);
  int64_t offset = 0;
  // Host ranges around what each phase enqueues (a captured step shows them once, at its capture).
  std::optional<NvtxRange> phase;
  for (size_t m = 0; m < count; ++m) {
    const bool last = m + 1 == count;
    const int64_t batch = micro_sizes[m];
    const cuda::StepInputs* inputs = state_->staging().device_micro_inputs(m);
    ctx_->set_device_step(&inputs->step);
    phase.reset();
    phase.emplace(phase_name(kPhaseData));
    if (last && timed_data) timer_->record(slot, cuda::kStepStart, s, capturing);
    const DeviceTensor x = input_->training_batch(slot, buffer, batch, state_->staging().device_indices() + offset,
                                                  cuda::DeviceDrawKey{&inputs->epoch, &inputs->first_position}, s);
    if (last && timed_data) timer_->record(slot, cuda::kDataDone, s, capturing);

    phase.reset();
    phase.emplace(phase_name(kPhaseForward));
    const DeviceTensor& output = net_->forward(x, cuda::Mode::Train);
    const DeviceTensor& dlogits =
        state_->loss().enqueue(output, input_->labels(slot), batch, state_->train_totals(), state_->loss_scale(), true, s);
    if (last) timer_->record(slot, cuda::kForwardDone, s, capturing);

    phase.reset();
    phase.emplace(phase_name(kPhaseBackward));
    net_->backward(dlogits);
    if (count > 1) {
      const float weight = micro_batch_weight(static_cast<size_t>(batch), static_cast<size_t>(step_samples));
      state_->accumulate_gradient(*net_, m, count, weight, s);
    }
    offset += batch;
  }
  enqueue_step_end(slot, capturing, phase);
}

void CudaEngine::enqueue_step_end(int slot, bool capturing, std::optional<NvtxRange>& phase) {
  const cudaStream_t s = stream_.get();
  timer_->record(slot, cuda::kBackwardDone, s, capturing);
  phase.reset();
  phase.emplace(phase_name(kPhaseComm));
  sync_->finish();
  timer_->record(slot, cuda::kCommDone, s, capturing);

  phase.reset();
  phase.emplace(phase_name(kPhaseOptimizer));
  // With the optimizer overlap each bucket's update followed its all-reduce, and finish() waited for them.
  if (!sync_->updates_parameters()) state_->enqueue_update(*net_, s);
  timer_->record(slot, cuda::kOptimizerDone, s, capturing);
}

void CudaEngine::capture_graphs(const std::vector<int64_t>& micro_sizes) {
  const StartupSpan capture_startup(StartupPart::graph_capture);
  const int64_t batch = std::accumulate(micro_sizes.begin(), micro_sizes.end(), int64_t{0});
  const auto enqueue = [&](int slot, int buffer) { enqueue_step_body(micro_sizes, slot, buffer, true); };
  if (graphs_.capture(stream_, input_->training_buffers(), enqueue)) {
    graph_policy_.captured(batch);
  } else {
    graph_policy_.capture_failed();
  }
}

void CudaEngine::drop_graphs() {
  synchronize();  // the last replays may still run: release their graphs once they are done
  graphs_.drop();
  graph_policy_.dropped();
}

void CudaEngine::synchronize() {
  gpu_wait_.for_stream(stream_);
  graphs_.settled();
  timer_->anchor(stream_.get());  // the stream is idle: renew the trace's host/device anchor
}

void CudaEngine::log_fusion_report() const {
  if (comm_.rank() != 0) return;
  const std::string fusion = fusion_summary(net_->fusion_report());
  if (!fusion.empty()) log0("%s\n", fusion.c_str());
}

PhaseTimes CudaEngine::train_step(std::span<const int64_t> indices, const StepInfo& info) {
  const int64_t batch = static_cast<int64_t>(indices.size());
  const int slot = cuda::step_slot(steps_queued_);
  const cudaStream_t s = stream_.get();
  if (!timer_->anchored()) synchronize();  // the first step: nothing queued yet to wait for
  const std::vector<std::span<const int64_t>> micro = micro_batches(indices, micro_batch(), config_.accumulate_steps);
  std::vector<int64_t> micro_sizes;
  for (const auto& m : micro) micro_sizes.push_back(static_cast<int64_t>(m.size()));
  state_->staging().upload_step(slot, indices, info, micro);
  if (input_->from_host()) {
    // From the end of the step before to the upload's end: how long the compute waits for its input,
    // including the host's wait for the workers.
    timer_->record(slot, cuda::kStepStart, s, false);
    input_->stage_training(slot, indices, info.epoch, info.position, s);
    timer_->record(slot, cuda::kDataDone, s, false);
  }
  // The one check of the graphs' addresses, before any replay: whatever ran since the capture (the epoch's
  // short last step, whose plans may want a larger workspace; an evaluation of a larger batch) may have
  // grown a buffer they hold. A full step then captures them again at once.
  if (graphs_.stale()) drop_graphs();
  if (graph_policy_.should_capture(batch)) capture_graphs(micro_sizes);
  if (graph_policy_.replays(batch)) {
    graphs_.launch(slot, input_->staged_buffer(slot), s);
  } else {
    // An eager all-reduce must not start while a step graph's may still run; this is the epoch's short
    // last step, once an epoch.
    if (sync_->averages() && graphs_.in_flight()) synchronize();
    enqueue_step_body(micro_sizes, slot, input_->staged_buffer(slot), false);
    graph_policy_.ran_eagerly(batch);
  }
  input_->consumed(slot, s);
  if (steps_queued_ == 0) log_fusion_report();
  ++steps_queued_;
  const PhaseTimes previous = timer_->queued(slot, gpu_wait_);
  monitor_->step_queued(steps_queued_);
  return previous;
}

EvalTotals CudaEngine::evaluate(std::span<const int64_t> indices) {
  drain_step_times();
  const cudaStream_t s = stream_.get();
  state_->eval_totals().zero(s);
  const size_t eval_batch = static_cast<size_t>(config_.eval_batch_size);
  for (size_t begin = 0; begin < indices.size(); begin += eval_batch) {
    const auto part = indices.subspan(begin, std::min(eval_batch, indices.size() - begin));
    const int64_t number = static_cast<int64_t>(begin / eval_batch);
    const int slot = cuda::step_slot(number);
    const DeviceTensor x = input_->evaluation_batch(slot, indices, config_.eval_batch_size, number, s);
    state_->loss().enqueue(net_->forward(x, cuda::Mode::Eval), input_->labels(slot), static_cast<int64_t>(part.size()),
                           state_->eval_totals(), state_->loss_scale(), false, s);
    input_->consumed(slot, s);
  }
  const EvalTotals totals = state_->eval_totals().read(s);
  monitor_->sample_memory();
  return totals;
}

EngineFacts CudaEngine::describe() const {
  EngineFacts facts = data_facts();
  facts.device_name = monitor_->device_name();
  facts.parameter_count = net_->param_count();
  // The eager steps the graph policy waits for, then the step that captures the graphs.
  facts.warm_up_steps = config_.cuda_graph ? cuda::kEagerStepsBeforeCapture + 1 : 1;
  return facts;
}

EngineState CudaEngine::save() {
  synchronize();
  return cuda::save_device_state(state_->parts(*net_));
}

void CudaEngine::load(const EngineState& st) {
  synchronize();
  cuda::load_device_state(state_->parts(*net_), st, config_);
}

}  // namespace

std::unique_ptr<Engine> make_cuda_engine(const TrainConfig& config, const Dataset& train, const Dataset& test,
                                         Communicator& comm, int local_rank, int local_size,
                                         const cuda::CudaEngineOptions& options) {
  const int gpus = visible_gpu_count();
  if (gpus == 0) throw UserError("--device cuda: no CUDA device is visible on this node");
  if (local_size > gpus) {
    log_all("warning: %d ranks on this node share %d visible GPU(s); ranks will share GPUs and the timings will "
            "not be those of one GPU per rank (per-task GPU isolation, e.g. CUDA_VISIBLE_DEVICES per task, also "
            "hides the peer GPUs from NCCL)\n", local_size, gpus);
  }
  const int device = local_rank % gpus;
  CHECK_CUDA(cudaSetDevice(device));  // the input pipeline's buffers are the device's
  std::unique_ptr<cuda::InputPipeline> input = cuda::make_training_input(config, train, test, comm, local_size);
  return std::make_unique<CudaEngine>(config, train, test, comm, device, std::move(input), options);
}

}  // namespace sb
