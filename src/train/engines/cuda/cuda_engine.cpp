#include "train/engines/cuda/cuda_engine.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <vector>

#include "comm/cuda/nccl_communicator.h"
#include "comm/cuda/nccl_window.h"
#include "core/cuda_check.h"
#include "core/dev_switches.h"
#include "core/error.h"
#include "core/log.h"
#include "core/nvtx_ranges.h"
#include "core/startup_clock.h"
#include "data/worker_count.h"
#include "kernels/elementwise.h"
#include "nn/cuda/context.h"
#include "nn/cuda/cuda_handles.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/network.h"
#include "nn/fusion_plan.h"
#include "train/cache_folder.h"
#include "train/engines/cuda/context_options.h"
#include "train/engines/cuda/device_batches.h"
#include "train/engines/cuda/device_info.h"
#include "train/engines/cuda/device_loss.h"
#include "train/engines/cuda/device_optimizer.h"
#include "train/engines/cuda/device_state.h"
#include "train/engines/cuda/gpu_clock_sampler.h"
#include "train/engines/cuda/gpu_energy.h"
#include "train/engines/cuda/gpu_wait.h"
#include "train/engines/cuda/gradient_buckets.h"
#include "train/engines/cuda/host_input.h"
#include "train/engines/cuda/loss_scaler.h"
#include "train/engines/cuda/peak_rate.h"
#include "train/engines/cuda/step_graph_policy.h"
#include "train/engines/cuda/step_graphs.h"
#include "train/engines/cuda/step_inputs.h"
#include "train/engines/cuda/step_staging.h"
#include "train/engines/cuda/step_timer.h"
#include "train/engines/engine_base.h"
#include "train/engines/micro_batches.h"
#include "train/engines/optimizer_overlap.h"
#include "train/run_setup.h"

namespace sb {
namespace {
using cuda::DeviceTensor;

// Device memory peaks during the first steps: the eager ones grow the layers' buffers and the third adds
// the captured graphs; after it the footprint stays flat, so sampling stops (a sample costs a driver call).
constexpr int64_t kStepsSampledForPeakMemory = 3;

class CudaEngine final : public EngineBase, private EngineMeasurements {
 public:
  CudaEngine(const TrainConfig& config, const Dataset& train, const Dataset& test, Communicator& comm, int device,
             int local_ranks);
  ~CudaEngine() override;

  std::string device_name() const override { return device_name_; }
  int64_t parameter_count() const override { return net_->param_count(); }
  PhaseTimes train_step(std::span<const int64_t> indices, const StepInfo& info) override;
  // The eager steps the graph policy waits for, then the step that captures the graphs.
  int warm_up_steps() const override { return config_.cuda_graph ? cuda::kEagerStepsBeforeCapture + 1 : 1; }
  EvalTotals take_train_totals() override;
  EvalTotals peek_train_totals() override { return train_totals_->read(stream_.get()); }
  EvalTotals evaluate(std::span<const int64_t> indices) override;
  EngineState save_state() override;
  void load_state(const EngineState& state) override;
  void synchronize() override;
  EngineMeasurements& measurements() override { return *this; }
  PhaseTimes drain_step_times() override;
  double peak_memory_bytes() const override { return static_cast<double>(peak_memory_.bytes()); }
  double peak_allocated_bytes() const override { return static_cast<double>(cuda::device_buffer_peak_bytes(device_)); }
  double peak_tflops() const override { return peak_tflops_; }
  double energy_joules() const override { return energy_->joules(); }
  std::vector<GpuClocks> take_gpu_clocks() override { return {clocks_->take()}; }
  std::optional<InputTotals> input_totals() const override {
    return host_input_ ? host_input_->input_totals() : std::nullopt;
  }

 private:
  // Everything of one step after its inputs are in device memory: the part a CUDA graph captures.
  // micro_sizes: the samples of each micro-batch (one entry without --accumulate-steps).
  void enqueue_step_body(const std::vector<int64_t>& micro_sizes, int slot, bool capturing);
  // With several micro-batches, after micro-batch `micro`'s backward: its weighted gradient joins the
  // step's sum, which the last one leaves in the gradient buffer for the all-reduce.
  void accumulate_gradient(size_t micro, size_t count, float weight, cudaStream_t s);
  void capture_graphs(const std::vector<int64_t>& micro_sizes);
  void drop_graphs();
  // The training batch's input and labels: built on the device (--input device) or uploaded (--input host).
  // A micro-batch of `batch` samples from `offset` of the step's indices, with its step inputs.
  DeviceTensor training_batch(int64_t batch, int64_t offset, const cuda::StepInputs* inputs, int slot);
  const int32_t* training_labels(int slot) const { return host_input_ ? host_input_->labels(slot) : batches_->labels(); }
  cuda::HostInputOptions host_input_options(int64_t max_batch, int local_ranks) const;
  const float* loss_scale() const { return scaler_ ? scaler_->scale() : nullptr; }
  cuda::DeviceStateParts state_parts() { return {*net_, *optimizer_, scaler_ ? &*scaler_ : nullptr, *train_totals_}; }

  // Every part that holds device resources is created in the constructor's body, after the device is
  // selected, in the order below; they are released in reverse: the compute stream last, the NCCL
  // communicator after the buckets that use it.
  int device_;
  std::string device_name_;
  std::unique_ptr<NvmlDevice> nvml_;
  std::unique_ptr<GpuEnergyMeter> energy_;
  std::unique_ptr<GpuClockSampler> clocks_;
  cuda::CudaStream stream_;
  std::unique_ptr<cuda::Context> ctx_;
  std::unique_ptr<cuda::Network> net_;
  std::unique_ptr<cuda::NcclCommunicator> nccl_;     // null on one rank
  std::unique_ptr<cuda::GradientBuckets> buckets_;  // null on one rank
  std::unique_ptr<cuda::StepStaging> staging_;
  cuda::DeviceBuffer accumulated_;  // the sum of a step's earlier micro-batch gradients (--accumulate-steps > 1)
  int64_t micro_batch_;       // per-rank samples of a micro-batch (--batch-size)
  // False while a step of several micro-batches runs: their sum is all-reduced after the last backward.
  bool reduce_during_backward_ = true;
  std::optional<cuda::LossScaler> scaler_;  // fp16 only
  std::unique_ptr<cuda::DeviceOptimizer> optimizer_;
  std::optional<cuda::DeviceLossTotals> train_totals_, eval_totals_;
  std::unique_ptr<cuda::DeviceLoss> loss_;
  std::unique_ptr<cuda::DeviceDataset> train_data_, test_data_;
  std::unique_ptr<cuda::DeviceBatches> batches_;
  std::optional<cuda::StepTimer> timer_;
  cuda::StepGraphs graphs_;
  cuda::StepGraphPolicy graph_policy_;
  cuda::GpuWait gpu_wait_;
  std::unique_ptr<cuda::HostInput> host_input_;  // --input host, instead of the device data sets and batches
  PeakDeviceMemory peak_memory_;
  int64_t steps_queued_ = 0;
  bool graph_in_flight_ = false;  // a step graph was launched since the last synchronize()
  double peak_tflops_ = std::numeric_limits<double>::quiet_NaN();
};

CudaEngine::CudaEngine(const TrainConfig& config, const Dataset& train, const Dataset& test, Communicator& comm,
                       int device, int local_ranks)
    : EngineBase(config, train, test, comm),
      device_(device),
      micro_batch_(config.per_rank_batch(comm.size())),
      graph_policy_(config.cuda_graph, micro_batch_ * config.accumulate_steps),
      gpu_wait_(comm) {
  StartupSpan context_startup(StartupPart::cuda_context);
  CHECK_CUDA(cudaSetDevice(device));
  context_startup.stop();
  device_name_ = gpu_name(device);
  nvml_ = std::make_unique<NvmlDevice>(device);
  energy_ = std::make_unique<GpuEnergyMeter>(*nvml_);
  clocks_ = std::make_unique<GpuClockSampler>(*nvml_);
  cuda::check_fits_batch_kernel(train);
  cuda::set_out_of_memory_hint("training " + config.model + " with a batch of " + std::to_string(config.per_rank_batch(comm.size())) +
                                " per rank (evaluation " + std::to_string(config.eval_batch_size) + ") in " + name_of(config.precision) +
                                "; lower --batch-size or --eval-batch-size, or use --precision bf16");
  stream_ = cuda::CudaStream::create_non_blocking();
  StartupSpan network_startup(StartupPart::network);
  ctx_ = std::make_unique<cuda::Context>(context_options(config), stream_.get());
  // Every rank runs rank 0's autotuned engine choices (plans are built in the same order everywhere).
  ctx_->plans().set_agreement([&comm](const std::string&, int local_choice) {
    int choice = local_choice;
    comm.broadcast(std::span<int>(&choice, 1), 0);
    return choice;
  });
  // A trailing LogSoftmax runs inside the loss kernel (nn/fusion_plan.h): two launches fewer per step.
  net_ = std::make_unique<cuda::Network>(model_spec_for(config, train), config.seed, *ctx_, cuda::NetworkOutput::LogitsForLoss);
  net_->set_random_stream(dropout_stream_key(config.seed, comm.rank()), 0);
  network_startup.stop();
  // One rank has nothing to average: no communicator, no buckets, no communication stream (the startup
  // line then leaves nccl out).
  const DevSwitches dev = dev_switches();
  const std::string overlap_refusal =
      dev.optimizer_overlap ? optimizer_overlap_refusal(config, comm.size()) : "SCALEBENCH_DEV_OPTIMIZER_OVERLAP=off";
  if (comm.size() > 1) {
    StartupSpan nccl_startup(StartupPart::nccl);
    nccl_ = std::make_unique<cuda::NcclCommunicator>(comm);
    nccl_startup.stop();
    const int64_t bucket_size = bucket_elements_of_mib(config.bucket_mib);
    const std::string window_refusal = dev.symmetric_memory ? cuda::symmetric_window_refusal(comm) : "SCALEBENCH_DEV_SYMMETRIC_MEMORY=off";
    if (dev.symmetric_memory && !window_refusal.empty()) log0("symmetric memory: off (%s)\n", window_refusal.c_str());
    buckets_ = std::make_unique<cuda::GradientBuckets>(plan_buckets(net_->param_specs(), bucket_size, default_tail_elements(bucket_size)),
                                                       net_->grads(), net_->param_count(), *nccl_, stream_.get(),
                                                       config.allreduce_bf16, window_refusal.empty());
    ctx_->set_gradient_ready_hook([this](const float* first_final, cudaStream_t final_on) {
      if (reduce_during_backward_) buckets_->gradients_ready_from(first_final - net_->grads(), final_on);
    });
  }

  const int64_t max_batch = std::max(micro_batch_, config.eval_batch_size);
  // A training step's indices are those of all its micro-batches.
  staging_ = std::make_unique<cuda::StepStaging>(std::max(micro_batch_ * config.accumulate_steps, config.eval_batch_size),
                                                 config.accumulate_steps, stream_);
  if (config.accumulate_steps > 1) accumulated_.ensure_as<float>(static_cast<size_t>(net_->param_count()));
  ctx_->set_device_step(&staging_->device_micro_inputs(0)->step);  // each micro-batch of a step sets its own
  cuda::StepInputs* inputs = staging_->device_inputs();
  if (ctx_->compute_dtype() == DType::F16) scaler_.emplace(stream_.get());
  optimizer_ = std::make_unique<cuda::DeviceOptimizer>(optimizer_spec_for(config), *net_, ctx_->compute_dtype(), &inputs->lr,
                                                       scaler_ ? &*scaler_ : nullptr, stream_.get());
  if (buckets_ && overlap_refusal.empty())
    buckets_->queue_updates(*optimizer_);
  else if (buckets_ && dev.optimizer_overlap)
    log0("optimizer overlap: off (%s)\n", overlap_refusal.c_str());
  train_totals_.emplace();
  eval_totals_.emplace();
  train_totals_->zero(stream_.get());
  loss_ = std::make_unique<cuda::DeviceLoss>(log_probabilities_ && !net_->log_softmax_in_loss());

  if (config.input == InputSource::Host || train.streamed()) {
    host_input_ = std::make_unique<cuda::HostInput>(train, test, host_input_options(max_batch, local_ranks), gpu_wait_);
    log0("input: %s, %d batch worker(s) per rank, %s buffers\n",
         !train.streamed() ? "host memory"
         : config.decode == ImageDecoding::Gpu ? "image files read on the CPU, decoded by nvJPEG"
                                               : "image files decoded on the CPU",
         host_input_->workers(),
         config.pin_memory ? "pinned" : "pageable");
  } else {
    StartupSpan upload_startup(StartupPart::upload);
    train_data_ = std::make_unique<cuda::DeviceDataset>(train);
    test_data_ = std::make_unique<cuda::DeviceDataset>(test);
    upload_startup.stop();
    batches_ = std::make_unique<cuda::DeviceBatches>(augmentation_, config.seed, comm.rank(), ctx_->compute_dtype(),
                                                     ctx_->layout(), max_batch);
  }
  timer_.emplace(buckets_.get());
  stream_.synchronize();
  StartupSpan peak_startup(StartupPart::peak_gemm);
  peak_tflops_ = peak_gemm_tflops(device, ctx_->compute_dtype(), ctx_->tf32(), cache_folder(config));
  peak_startup.stop();
  peak_memory_.sample();
}

CudaEngine::~CudaEngine() {
  // The queued work still uses the buffers released below.
  stream_.synchronize_noexcept();
}

cuda::HostInputOptions CudaEngine::host_input_options(int64_t max_batch, int local_ranks) const {
  cuda::HostInputOptions o;
  o.augmentation = augmentation_;
  o.seed = config_.seed;
  o.rank = comm_.rank();
  o.world_size = comm_.size();
  o.drop_last = config_.drop_last;
  o.train_batch = config_.per_rank_batch(comm_.size());
  o.max_batch = max_batch;
  o.format = BatchFormat{ctx_->compute_dtype(), ctx_->layout()};
  // --decode gpu's workers mostly wait for the GPU: a few keep its JPEG engines busy (scalebench io).
  constexpr int kGpuDecodeWorkers = 4;
  const bool gpu_decode = train_.streamed() && config_.decode == ImageDecoding::Gpu;
  o.workers = config_.workers > 0 ? config_.workers
              : gpu_decode        ? std::min(kGpuDecodeWorkers, default_input_workers(local_ranks))
                                  : default_input_workers(local_ranks);
  o.pin_memory = config_.pin_memory;
  o.bad_images = config_.bad_images;
  o.decode = config_.decode;
  return o;
}

DeviceTensor CudaEngine::training_batch(int64_t batch, int64_t offset, const cuda::StepInputs* inputs, int slot) {
  // --input host uploads the whole step's batch before the step, outside the graph (one micro-batch:
  // TrainConfig refuses --input host with --accumulate-steps above 1).
  if (host_input_) return host_input_->input(slot, batch);
  return batches_->enqueue(*train_data_, staging_->device_indices() + offset, batch, config_.augment, inputs, stream_.get());
}

void CudaEngine::accumulate_gradient(size_t micro, size_t count, float weight, cudaStream_t s) {
  float* grads = net_->grads();
  const int64_t n = net_->param_count();
  auto* sum = static_cast<float*>(accumulated_.data());
  kernels::scale(grads, grads, weight, n, DType::F32, s);
  if (micro + 1 < count) {
    kernels::accumulate_into_f32(grads, DType::F32, sum, n, micro > 0, s);
  } else {
    kernels::add(sum, grads, grads, n, DType::F32, s);
  }
}

void CudaEngine::enqueue_step_body(const std::vector<int64_t>& micro_sizes, int slot, bool capturing) {
  const cudaStream_t s = stream_.get();
  const size_t count = micro_sizes.size();
  int64_t step_samples = 0;
  for (int64_t size : micro_sizes) step_samples += size;
  // With several micro-batches the phase events bracket the last one (and the step's all-reduce and
  // update); the micro-batches before it count in the step's wall time only.
  reduce_during_backward_ = count == 1;
  if (buckets_) buckets_->begin_step(slot);
  int64_t offset = 0;
  // Host ranges around what each phase enqueues (a captured step shows them once, at its capture).
  std::optional<NvtxRange> phase;
  for (size_t m = 0; m < count; ++m) {
    const bool last = m + 1 == count;
    const int64_t batch = micro_sizes[m];
    const cuda::StepInputs* inputs = staging_->device_micro_inputs(m);
    ctx_->set_device_step(&inputs->step);
    phase.reset();
    phase.emplace(phase_name(kPhaseData));
    // With --input host, the data phase is the compute stream's wait for the upload, timed in train_step.
    if (last && !host_input_) timer_->record(slot, cuda::kStepStart, s, capturing);
    const DeviceTensor x = training_batch(batch, offset, inputs, slot);
    if (last && !host_input_) timer_->record(slot, cuda::kDataDone, s, capturing);

    phase.reset();
    phase.emplace(phase_name(kPhaseForward));

    const DeviceTensor& output = net_->forward(x, cuda::Mode::Train);
    const DeviceTensor& dlogits = loss_->enqueue(output, training_labels(slot), batch, *train_totals_, loss_scale(), true, s);
    if (last) timer_->record(slot, cuda::kForwardDone, s, capturing);

    phase.reset();
    phase.emplace(phase_name(kPhaseBackward));

    net_->backward(dlogits);
    if (count > 1) accumulate_gradient(m, count, micro_batch_weight(static_cast<size_t>(batch), static_cast<size_t>(step_samples)), s);
    offset += batch;
  }
  timer_->record(slot, cuda::kBackwardDone, s, capturing);
  phase.reset();
  phase.emplace(phase_name(kPhaseComm));
  if (buckets_) buckets_->finish();
  reduce_during_backward_ = true;
  timer_->record(slot, cuda::kCommDone, s, capturing);

  phase.reset();
  phase.emplace(phase_name(kPhaseOptimizer));
  // With the optimizer overlap each bucket's update followed its all-reduce, and finish() waited for them.
  if (!buckets_ || !buckets_->queues_updates()) {
    if (scaler_) scaler_->enqueue_check(net_->grads(), net_->param_count(), s);
    optimizer_->enqueue_step(s);
    if (scaler_) scaler_->enqueue_update(s);
  }
  timer_->record(slot, cuda::kOptimizerDone, s, capturing);
}

void CudaEngine::capture_graphs(const std::vector<int64_t>& micro_sizes) {
  const StartupSpan capture_startup(StartupPart::graph_capture);
  const int64_t batch = std::accumulate(micro_sizes.begin(), micro_sizes.end(), int64_t{0});
  if (graphs_.capture(stream_, [&](int slot) { enqueue_step_body(micro_sizes, slot, true); })) {
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
  graph_in_flight_ = false;
  timer_->anchor(stream_.get());  // the stream is idle: renew the trace's host/device anchor
}

PhaseTimes CudaEngine::train_step(std::span<const int64_t> indices, const StepInfo& info) {
  const int64_t batch = static_cast<int64_t>(indices.size());
  const int slot = cuda::step_slot(steps_queued_);
  if (!timer_->anchored()) synchronize();  // the first step: nothing queued yet to wait for
  const std::vector<std::span<const int64_t>> micro = micro_batches(indices, micro_batch_, config_.accumulate_steps);
  std::vector<int64_t> micro_sizes;
  for (const auto& m : micro) micro_sizes.push_back(static_cast<int64_t>(m.size()));
  staging_->upload_step(slot, indices, info, micro);
  if (host_input_) {
    // From the end of the step before to the upload's end: how long the compute waits for its input,
    // including the host's wait for the workers.
    timer_->record(slot, cuda::kStepStart, stream_.get(), false);
    host_input_->stage_training(slot, indices, info, stream_.get());
    timer_->record(slot, cuda::kDataDone, stream_.get(), false);
  }
  // The one check of the graphs' addresses, before any replay: whatever ran since the capture (the epoch's
  // short last step, whose plans may want a larger workspace; an evaluation of a larger batch) may have
  // grown a buffer they hold. A full step then captures them again at once.
  if (graphs_.stale()) drop_graphs();
  if (graph_policy_.should_capture(batch)) capture_graphs(micro_sizes);
  if (graph_policy_.replays(batch)) {
    graphs_.launch(slot, stream_.get());
    graph_in_flight_ = true;
  } else {
    // An eager all-reduce must not start while a step graph's may still run (NCCL's graph mixing is off:
    // comm/cuda/nccl_communicator.h); this is the epoch's short last step, once an epoch.
    if (buckets_ && graph_in_flight_) synchronize();
    enqueue_step_body(micro_sizes, slot, false);
    graph_policy_.ran_eagerly(batch);
  }
  if (host_input_) host_input_->consumed(slot, stream_.get());
  // After the first step's forward, whose shapes decide the fused runs' last fallbacks: the plan report.
  if (steps_queued_ == 0 && comm_.rank() == 0) {
    const std::string fusion = fusion_summary(net_->fusion_report());
    if (!fusion.empty()) log0("%s\n", fusion.c_str());
  }
  ++steps_queued_;
  const PhaseTimes previous = timer_->queued(slot, gpu_wait_);
  if (steps_queued_ <= kStepsSampledForPeakMemory) peak_memory_.sample();
  return previous;
}

PhaseTimes CudaEngine::drain_step_times() { return timer_->drain(gpu_wait_); }

EvalTotals CudaEngine::take_train_totals() { return train_totals_->take(stream_.get()); }

EvalTotals CudaEngine::evaluate(std::span<const int64_t> indices) {
  drain_step_times();
  const cudaStream_t s = stream_.get();
  eval_totals_->zero(s);
  const size_t eval_batch = static_cast<size_t>(config_.eval_batch_size);
  for (size_t begin = 0; begin < indices.size(); begin += eval_batch) {
    const auto part = indices.subspan(begin, std::min(eval_batch, indices.size() - begin));
    const int64_t batch = static_cast<int64_t>(part.size());
    if (host_input_) {
      const int64_t number = static_cast<int64_t>(begin / eval_batch);
      const int slot = cuda::step_slot(number);
      host_input_->stage_evaluation(slot, indices, config_.eval_batch_size, number, s);
      loss_->enqueue(net_->forward(host_input_->input(slot, batch), cuda::Mode::Eval), host_input_->labels(slot), batch,
                     *eval_totals_, loss_scale(), false, s);
      host_input_->consumed(slot, s);
      continue;
    }
    staging_->upload_indices(part);
    const DeviceTensor x = batches_->enqueue(*test_data_, staging_->device_indices(), batch, false, nullptr, s);
    loss_->enqueue(net_->forward(x, cuda::Mode::Eval), batches_->labels(), batch, *eval_totals_, loss_scale(), false, s);
  }
  const EvalTotals totals = eval_totals_->read(s);
  peak_memory_.sample();
  return totals;
}

EngineState CudaEngine::save_state() {
  synchronize();
  return cuda::save_device_state(state_parts());
}

void CudaEngine::load_state(const EngineState& st) {
  synchronize();
  cuda::load_device_state(state_parts(), st, config_);
}

}  // namespace

std::unique_ptr<Engine> make_cuda_engine(const TrainConfig& config, const Dataset& train, const Dataset& test,
                                         Communicator& comm, int local_rank, int local_size) {
  const int gpus = visible_gpu_count();
  if (gpus == 0) throw UserError("--device cuda: no CUDA device is visible on this node");
  if (local_size > gpus) {
    log_all("warning: %d ranks on this node share %d visible GPU(s); ranks will share GPUs and the timings will "
            "not be those of one GPU per rank (per-task GPU isolation, e.g. CUDA_VISIBLE_DEVICES per task, also "
            "hides the peer GPUs from NCCL)\n", local_size, gpus);
  }
  return std::make_unique<CudaEngine>(config, train, test, comm, local_rank % gpus, local_size);
}

}  // namespace sb
