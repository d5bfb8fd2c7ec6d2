#include "train/cuda/cuda_engine.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>

#include "comm/cuda/nccl_communicator.h"
#include "core/cuda_check.h"
#include "core/error.h"
#include "core/log.h"
#include "core/nvtx_ranges.h"
#include "nn/cuda/context.h"
#include "nn/cuda/cuda_handles.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/network.h"
#include "nn/plan_store.h"
#include "train/cuda/device_batches.h"
#include "train/cuda/device_info.h"
#include "train/cuda/device_loss.h"
#include "train/cuda/device_optimizer.h"
#include "train/cuda/gpu_energy.h"
#include "train/cuda/gpu_wait.h"
#include "train/cuda/gradient_buckets.h"
#include "train/cuda/loss_scaler.h"
#include "train/cuda/peak_rate.h"
#include "train/cuda/step_graph_policy.h"
#include "train/cuda/step_graphs.h"
#include "train/cuda/step_inputs.h"
#include "train/cuda/step_staging.h"
#include "train/cuda/step_timer.h"
#include "train/engine_base.h"
#include "train/run_setup.h"

namespace sb {
namespace {
using cuda::DeviceTensor;

// Device memory peaks during the first steps: the eager ones grow the layers' buffers and the third adds
// the captured graphs; after it the footprint stays flat, so sampling stops (a sample costs a driver call).
constexpr int64_t kStepsSampledForPeakMemory = 3;

constexpr double kBytesPerMiB = 1024.0 * 1024.0;

// --bucket-mib as fp32 gradient elements, at least one.
int64_t bucket_elements(double bucket_mib) {
  return std::max<int64_t>(1, static_cast<int64_t>(bucket_mib * kBytesPerMiB / sizeof(float)));
}

cuda::ContextOptions context_options(const TrainConfig& c) {
  cuda::ContextOptions o;
  o.compute = compute_dtype(c.precision);
  o.tf32 = c.precision == Precision::TF32;
  o.layout = c.layout;
  o.deterministic = c.deterministic;
  o.batchnorm_path = c.batchnorm_path;
  o.fused_bn_kernels = c.fused_bn;
  o.autotune = c.autotune;
  o.plan_cache_dir = c.plan_cache ? *c.plan_cache : default_plan_cache_dir();
  return o;
}

class CudaEngine final : public EngineBase {
 public:
  CudaEngine(const TrainConfig& config, const Dataset& train, const Dataset& test, Communicator& comm, int device);
  ~CudaEngine() override;

  std::string device_name() const override { return device_name_; }
  int64_t parameter_count() const override { return net_->param_count(); }
  PhaseTimes train_step(std::span<const int64_t> indices, const StepInfo& info) override;
  EvalTotals take_train_totals() override;
  EvalTotals peek_train_totals() override { return train_totals_->read(stream_.get()); }
  EvalTotals evaluate(std::span<const int64_t> indices) override;
  EngineState save_state() override;
  void load_state(const EngineState& state) override;
  void synchronize() override;
  PhaseTimes drain_step_times() override;
  double peak_memory_bytes() const override { return static_cast<double>(peak_memory_.bytes()); }
  double peak_tflops() const override { return peak_tflops_; }
  double energy_joules() const override { return energy_ ? energy_->joules() : std::numeric_limits<double>::quiet_NaN(); }

 private:
  // Everything of one step after its inputs are in device memory: the part a CUDA graph captures.
  void enqueue_step_body(int64_t batch, int slot, bool capturing);
  void capture_graphs(int64_t batch);
  void drop_graphs();
  const float* loss_scale() const { return scaler_ ? scaler_->scale() : nullptr; }

  // Every part that holds device resources is created in the constructor's body, after the device is
  // selected, in the order below; they are released in reverse: the compute stream last, the NCCL
  // communicator after the buckets that use it.
  std::string device_name_;
  std::unique_ptr<GpuEnergyMeter> energy_;
  cuda::CudaStream stream_;
  std::unique_ptr<cuda::Context> ctx_;
  std::unique_ptr<cuda::Network> net_;
  std::unique_ptr<cuda::NcclCommunicator> nccl_;
  std::unique_ptr<cuda::GradientBuckets> buckets_;
  std::unique_ptr<cuda::StepStaging> staging_;
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
  PeakDeviceMemory peak_memory_;
  int64_t steps_queued_ = 0;
  double peak_tflops_ = std::numeric_limits<double>::quiet_NaN();
};

CudaEngine::CudaEngine(const TrainConfig& config, const Dataset& train, const Dataset& test, Communicator& comm,
                       int device)
    : EngineBase(config, train, test, comm),
      graph_policy_(config.cuda_graph, config.per_rank_batch(comm.size())),
      gpu_wait_(comm) {
  CHECK_CUDA(cudaSetDevice(device));
  device_name_ = gpu_name(device);
  energy_ = std::make_unique<GpuEnergyMeter>(device);
  cuda::check_fits_batch_kernel(train);
  cuda::set_out_of_memory_hint("training " + config.model + " with a batch of " + std::to_string(config.per_rank_batch(comm.size())) +
                                " per rank (evaluation " + std::to_string(config.eval_batch_size) + ") in " + name_of(config.precision) +
                                "; lower --batch-size or --eval-batch-size, or use --precision bf16");
  stream_ = cuda::CudaStream::create_non_blocking();
  ctx_ = std::make_unique<cuda::Context>(context_options(config), stream_.get());
  // Every rank runs rank 0's autotuned engine choices (plans are built in the same order everywhere).
  ctx_->plans().set_agreement([&comm](const std::string&, int local_choice) {
    int choice = local_choice;
    comm.broadcast(std::span<int>(&choice, 1), 0);
    return choice;
  });
  net_ = std::make_unique<cuda::Network>(model_spec_for(config, train), config.seed, *ctx_);
  net_->set_random_stream(dropout_stream_key(config.seed, comm.rank()), 0);
  nccl_ = std::make_unique<cuda::NcclCommunicator>(comm);

  const int64_t bucket_size = bucket_elements(config.bucket_mib);
  buckets_ = std::make_unique<cuda::GradientBuckets>(plan_buckets(net_->param_specs(), bucket_size, default_tail_elements(bucket_size)),
                                                     net_->grads(), net_->param_count(), nccl_.get(), stream_.get(),
                                                     config.allreduce_bf16);
  ctx_->set_gradient_ready_hook([this](const float* first_final) { buckets_->gradients_ready_from(first_final - net_->grads()); });

  const int64_t max_batch = std::max(config.per_rank_batch(comm.size()), config.eval_batch_size);
  staging_ = std::make_unique<cuda::StepStaging>(max_batch, stream_);
  cuda::StepInputs* inputs = staging_->device_inputs();
  ctx_->set_device_step(&inputs->step);
  if (ctx_->compute_dtype() == DType::F16) scaler_.emplace(stream_.get());
  optimizer_ = std::make_unique<cuda::DeviceOptimizer>(optimizer_spec_for(config), *net_, ctx_->compute_dtype(), &inputs->lr,
                                                       scaler_ ? &*scaler_ : nullptr, stream_.get());
  train_totals_.emplace();
  eval_totals_.emplace();
  train_totals_->zero(stream_.get());
  loss_ = std::make_unique<cuda::DeviceLoss>(log_probabilities_);

  train_data_ = std::make_unique<cuda::DeviceDataset>(train);
  test_data_ = std::make_unique<cuda::DeviceDataset>(test);
  batches_ = std::make_unique<cuda::DeviceBatches>(augmentation_, config.seed, comm.rank(), ctx_->compute_dtype(),
                                                   ctx_->layout(), max_batch);
  timer_.emplace();
  stream_.synchronize();
  peak_tflops_ = measure_gemm_tflops(ctx_->compute_dtype(), ctx_->tf32());  // ~0.1 s, once per engine
  peak_memory_.sample();
}

CudaEngine::~CudaEngine() {
  // The queued work still uses the buffers released below.
  stream_.synchronize_noexcept();
}

void CudaEngine::enqueue_step_body(int64_t batch, int slot, bool capturing) {
  const cudaStream_t s = stream_.get();
  // Host ranges around what each phase enqueues (a captured step shows them once, at its capture).
  std::optional<NvtxRange> phase(phase_name(kPhaseData));
  timer_->record(slot, cuda::kStepStart, s, capturing);
  const DeviceTensor x =
      batches_->enqueue(*train_data_, staging_->device_indices(), batch, config_.augment, staging_->device_inputs(), s);
  timer_->record(slot, cuda::kDataDone, s, capturing);

  phase.reset();
  phase.emplace(phase_name(kPhaseForward));
  const DeviceTensor& output = net_->forward(x, cuda::Mode::Train);
  const DeviceTensor& dlogits = loss_->enqueue(output, batches_->labels(), batch, *train_totals_, loss_scale(), true, s);
  timer_->record(slot, cuda::kForwardDone, s, capturing);

  phase.reset();
  phase.emplace(phase_name(kPhaseBackward));
  buckets_->begin_step();
  net_->backward(dlogits);
  timer_->record(slot, cuda::kBackwardDone, s, capturing);
  phase.reset();
  phase.emplace(phase_name(kPhaseComm));
  buckets_->finish();
  timer_->record(slot, cuda::kCommDone, s, capturing);

  phase.reset();
  phase.emplace(phase_name(kPhaseOptimizer));
  if (scaler_) scaler_->enqueue_check(net_->grads(), net_->param_count(), s);
  optimizer_->enqueue_step(s);
  if (scaler_) scaler_->enqueue_update(s);
  timer_->record(slot, cuda::kOptimizerDone, s, capturing);
}

void CudaEngine::capture_graphs(int64_t batch) {
  if (graphs_.capture(stream_, [&](int slot) { enqueue_step_body(batch, slot, true); })) {
    graph_policy_.captured(batch);
  } else {
    graph_policy_.capture_failed();
  }
}

void CudaEngine::drop_graphs() {
  graphs_.drop();
  graph_policy_.dropped();
}

void CudaEngine::synchronize() { gpu_wait_.for_stream(stream_); }

PhaseTimes CudaEngine::train_step(std::span<const int64_t> indices, const StepInfo& info) {
  const int64_t batch = static_cast<int64_t>(indices.size());
  const int slot = cuda::step_slot(steps_queued_);
  staging_->upload_step(slot, indices, info);
  if (graph_policy_.should_capture(batch)) capture_graphs(batch);
  if (graph_policy_.replays(batch)) {
    graphs_.launch(slot, stream_.get());
  } else {
    enqueue_step_body(batch, slot, false);
    graph_policy_.ran_eagerly(batch);
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
  const uint64_t allocations_before = cuda::device_buffer_generation();
  const cudaStream_t s = stream_.get();
  eval_totals_->zero(s);
  const size_t eval_batch = static_cast<size_t>(config_.eval_batch_size);
  for (size_t begin = 0; begin < indices.size(); begin += eval_batch) {
    const auto part = indices.subspan(begin, std::min(eval_batch, indices.size() - begin));
    const int64_t batch = static_cast<int64_t>(part.size());
    staging_->upload_indices(part);
    const DeviceTensor x = batches_->enqueue(*test_data_, staging_->device_indices(), batch, false, nullptr, s);
    loss_->enqueue(net_->forward(x, cuda::Mode::Eval), batches_->labels(), batch, *eval_totals_, loss_scale(), false, s);
  }
  const EvalTotals totals = eval_totals_->read(s);
  peak_memory_.sample();
  // Evaluation batches larger than the training batch grow the layers' buffers on the first evaluation,
  // moving addresses the graphs hold: the next full training step then captures them again. Later
  // evaluations allocate nothing and the graphs stay (a capture costs ~15 ms, once per epoch otherwise).
  if (cuda::device_buffer_generation() != allocations_before) drop_graphs();
  return totals;
}

EngineState CudaEngine::save_state() {
  synchronize();
  EngineState st;
  st.params = net_->get_params();
  st.buffers = net_->get_buffers();
  optimizer_->save(st);
  if (scaler_) scaler_->save(st);
  st.train_totals = train_totals_->copy_out();
  return st;
}

void CudaEngine::load_state(const EngineState& st) {
  synchronize();
  const size_t n = static_cast<size_t>(net_->param_count());
  if (st.params.size() != n || st.buffers.size() != static_cast<size_t>(net_->buffer_count())) {
    throw UserError("the checkpoint holds " + std::to_string(st.params.size()) + " parameters but model '" + config_.model +
                    "' has " + std::to_string(n) + "; resume with the model and data it was written for");
  }
  optimizer_->check_state_count(st, optimizer_name(config_.optimizer));
  net_->set_params(st.params);
  net_->set_buffers(st.buffers);
  optimizer_->load(st, optimizer_name(config_.optimizer));
  if (scaler_) scaler_->load(st);
  train_totals_->copy_in(st.train_totals);
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
  return std::make_unique<CudaEngine>(config, train, test, comm, local_rank % gpus);
}

}  // namespace sb
