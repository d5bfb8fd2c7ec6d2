#include "train/cuda/cuda_engine.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <limits>

#include "comm/collective_watchdog.h"
#include "comm/cuda/nccl_communicator.h"
#include "comm/mpi_communicator.h"
#include "core/cuda_check.h"
#include "core/error.h"
#include "core/log.h"
#include "data/batch.h"
#include "kernels/amp.h"
#include "kernels/augment.h"
#include "kernels/loss.h"
#include "kernels/optimizer.h"
#include "models/registry.h"
#include "nn/cuda/context.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/network.h"
#include "optim/cuda/fused_step_hyperparameters.h"
#include "optim/optim_config.h"
#include "train/cuda/device_info.h"
#include "train/cuda/gpu_energy.h"
#include "train/cuda/peak_rate.h"
#include "train/cuda/gradient_buckets.h"
#include "train/cuda/step_inputs.h"
#include "train/run_setup.h"

namespace sb {
namespace {
using cuda::DeviceBuffer;

// Phase boundaries of one step, recorded on the compute stream.
enum StepEvent { kStart = 0, kDataDone, kForwardDone, kBackwardDone, kCommDone, kOptimizerDone, kStepEvents };
constexpr int kSlots = 2;  // steps in flight: the host fills slot k%2 while the device may run step k-1

cuda::ContextOptions context_options(const TrainConfig& c) {
  cuda::ContextOptions o;
  o.compute = compute_dtype(c.precision);
  o.tf32 = c.precision == Precision::TF32;
  o.layout = c.layout;
  o.deterministic = c.deterministic;
  return o;
}

// The fused update of the run's optimizer spec, which the CPU engine builds its optimizer from too.
kernels::FusedOptimizerArgs optimizer_args(const OptimizerSpec& spec) {
  kernels::FusedOptimizerArgs a;
  switch (spec.kind) {
    case OptimizerKind::Sgd:
      a.kind = kernels::OptimizerKind::Sgd;
      a.sgd = fused_step_hyperparameters(sgd_config(spec));
      break;
    case OptimizerKind::Adadelta:
      a.kind = kernels::OptimizerKind::Adadelta;
      a.adadelta = fused_step_hyperparameters(adadelta_config(spec));
      break;
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW:
      a.kind = kernels::OptimizerKind::Adam;
      a.adam = fused_step_hyperparameters(adam_config(spec));
      break;
  }
  return a;
}

// The state buffers of the fused optimizer, named as the CPU optimizers (torch.optim) name them.
std::vector<std::string> optimizer_state_names(const kernels::FusedOptimizerArgs& a) {
  switch (a.kind) {
    case kernels::OptimizerKind::Sgd: return a.sgd.momentum > 0 ? std::vector<std::string>{"momentum_buffer"} : std::vector<std::string>{};
    case kernels::OptimizerKind::Adadelta: return {"square_avg", "acc_delta"};
    case kernels::OptimizerKind::Adam:
      return a.adam.amsgrad ? std::vector<std::string>{"exp_avg", "exp_avg_sq", "max_exp_avg_sq"} : std::vector<std::string>{"exp_avg", "exp_avg_sq"};
  }
  return {};
}

struct DeviceDataset {
  DeviceBuffer images, labels;
};

class CudaEngine final : public Engine {
 public:
  CudaEngine(const TrainConfig& config, const Dataset& train, const Dataset& test, Communicator& comm, int device);
  ~CudaEngine() override;

  std::string device_name() const override { return device_name_; }
  int64_t parameter_count() const override { return net_->param_count(); }
  int64_t train_size() const override { return train_.size(); }
  int64_t test_size() const override { return test_.size(); }
  PhaseTimes train_step(std::span<const int64_t> indices, const StepInfo& info) override;
  EvalTotals take_train_totals() override;
  EvalTotals evaluate(std::span<const int64_t> indices) override;
  EngineState save_state() override;
  void load_state(const EngineState& state) override;
  void synchronize() override;
  PhaseTimes drain_step_times() override;
  double peak_memory_bytes() const override { return static_cast<double>(peak_memory_); }
  double peak_tflops() const override { return peak_tflops_; }
  double energy_joules() const override { return energy_ ? energy_->joules() : std::numeric_limits<double>::quiet_NaN(); }

 private:
  void upload(const Dataset& data, DeviceDataset& out);
  void enqueue_step_body(int64_t batch, int slot);
  void enqueue_batch(const Dataset& data, const DeviceDataset& device, int64_t batch, bool augment,
                     const cuda::StepInputs* step_inputs_device, uint64_t first_position, int64_t epoch);
  const cuda::DeviceTensor& loss_and_gradient(const cuda::DeviceTensor& output, int64_t batch, kernels::LossCounters* counters,
                                              bool with_gradient);
  void capture_graphs(int64_t batch);
  PhaseTimes read_times(int slot);
  void track_memory();
  void drop_graphs();
  // Records a phase event: as an event node of the graph while capturing, plainly otherwise.
  void record_event(cudaEvent_t event) {
    CHECK_CUDA(capturing_ ? cudaEventRecordWithFlags(event, stream_, cudaEventRecordExternal) : cudaEventRecord(event, stream_));
  }
  bool capturing_ = false;

  TrainConfig config_;
  const Dataset& train_;
  const Dataset& test_;
  Communicator& comm_;
  std::string device_name_;
  bool log_probabilities_;
  BatchOptions augmentation_;

  cudaStream_t stream_ = nullptr;
  std::unique_ptr<cuda::Context> ctx_;
  std::unique_ptr<cuda::Network> net_;
  std::unique_ptr<cuda::NcclCommunicator> nccl_;
  std::unique_ptr<cuda::GradientBuckets> buckets_;
  kernels::FusedOptimizerArgs optimizer_;
  DeviceBuffer optimizer_state_[3];

  DeviceDataset train_data_, test_data_;
  DeviceBuffer input_, labels_, dlogits_, batch_indices_, step_inputs_, step_counter_, loss_scale_, train_counters_,
      eval_counters_;
  cuda::StepInputs* pinned_inputs_ = nullptr;  // kSlots
  int64_t* pinned_indices_ = nullptr;          // kSlots x max batch
  int64_t max_batch_ = 0;
  std::array<std::array<cudaEvent_t, kStepEvents>, kSlots> events_{};
  cuda::DeviceTensor grad_;  // the loss gradient's view of dlogits_

  cudaGraphExec_t graphs_[kSlots] = {nullptr, nullptr};
  int64_t graph_batch_ = 0;
  bool graphs_failed_ = false;
  int eager_full_steps_ = 0;

  int64_t steps_queued_ = 0;
  bool pending_times_ = false;
  int pending_slot_ = 0;
  size_t peak_memory_ = 0;
  std::unique_ptr<GpuEnergyMeter> energy_;
  double peak_tflops_ = std::numeric_limits<double>::quiet_NaN();
};

CudaEngine::CudaEngine(const TrainConfig& config, const Dataset& train, const Dataset& test, Communicator& comm,
                       int device)
    : config_(config),
      train_(train),
      test_(test),
      comm_(comm),
      log_probabilities_(model_info(config.model).outputs_log_probabilities),
      augmentation_(config.augment ? cifar_augmentation() : BatchOptions{}) {
  CHECK_CUDA(cudaSetDevice(device));
  device_name_ = gpu_name(device);
  energy_ = std::make_unique<GpuEnergyMeter>(device);
  if (train.channels > kernels::kMaxAugmentChannels) {
    throw UserError("the CUDA batch kernel takes at most " + std::to_string(kernels::kMaxAugmentChannels) +
                    " channels; " + train.name + " has " + std::to_string(train.channels));
  }
  cuda::set_out_of_memory_hint("training " + config.model + " with a batch of " + std::to_string(config.per_rank_batch(comm.size())) +
                                " per rank (evaluation " + std::to_string(config.eval_batch_size) + ") in " + name_of(config.precision) +
                                "; lower --batch-size or --eval-batch-size, or use --precision bf16");
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  ctx_ = std::make_unique<cuda::Context>(context_options(config), stream_);
  // Every rank runs rank 0's autotuned engine choices (plans are built in the same order everywhere).
  ctx_->plans().set_agreement([&comm](const std::string&, int local_choice) {
    int choice = local_choice;
    comm.broadcast(std::span<int>(&choice, 1), 0);
    return choice;
  });
  net_ = std::make_unique<cuda::Network>(model_spec_for(config, train), config.seed, *ctx_);
  net_->set_random_stream(dropout_stream_key(config.seed, comm.rank()), 0);
  nccl_ = std::make_unique<cuda::NcclCommunicator>(comm);

  const int64_t n = net_->param_count();
  const auto bucket_elements = std::max<int64_t>(1, static_cast<int64_t>(config.bucket_mib * 1024 * 1024 / sizeof(float)));
  buckets_ = std::make_unique<cuda::GradientBuckets>(plan_buckets(net_->param_specs(), bucket_elements, default_tail_elements(bucket_elements)),
                                                     net_->grads(), n, nccl_.get(), stream_, config.allreduce_bf16);
  ctx_->set_gradient_ready_hook([this](const float* first_final) { buckets_->gradients_ready_from(first_final - net_->grads()); });

  optimizer_ = optimizer_args(optimizer_spec_for(config));
  optimizer_.n = n;
  optimizer_.params = net_->params();
  optimizer_.grads = net_->grads();
  for (int i = 0; i < static_cast<int>(optimizer_state_names(optimizer_).size()); ++i) {
    optimizer_.state[i] = optimizer_state_[i].ensure_as<float>(static_cast<size_t>(n));
    CHECK_CUDA(cudaMemsetAsync(optimizer_.state[i], 0, static_cast<size_t>(n) * sizeof(float), stream_));
  }
  auto* counter = step_counter_.ensure_as<kernels::OptimizerStepCounter>(1);
  CHECK_CUDA(cudaMemsetAsync(counter, 0, sizeof(kernels::OptimizerStepCounter), stream_));
  optimizer_.step_counter = counter;
  auto* inputs = step_inputs_.ensure_as<cuda::StepInputs>(1);
  CHECK_CUDA(cudaMemsetAsync(inputs, 0, sizeof(cuda::StepInputs), stream_));
  optimizer_.lr_device = &inputs->lr;
  ctx_->set_device_step(&inputs->step);
  if (ctx_->compute_dtype() != DType::F32) {
    optimizer_.params_copy = net_->compute_params();
    optimizer_.copy_dtype = ctx_->compute_dtype();
  }
  if (ctx_->compute_dtype() == DType::F16) {
    auto* scale = loss_scale_.ensure_as<kernels::LossScaleState>(1);
    const kernels::LossScaleState initial{65536.0f, 0, 0};
    CHECK_CUDA(cudaMemcpyAsync(scale, &initial, sizeof initial, cudaMemcpyHostToDevice, stream_));
    optimizer_.found_inf = &scale->found_inf;
    optimizer_.loss_scale = &scale->scale;
  }
  train_counters_.ensure_as<kernels::LossCounters>(1);
  eval_counters_.ensure_as<kernels::LossCounters>(1);
  CHECK_CUDA(cudaMemsetAsync(train_counters_.data(), 0, sizeof(kernels::LossCounters), stream_));

  upload(train, train_data_);
  upload(test, test_data_);
  max_batch_ = std::max(config.per_rank_batch(comm.size()), config.eval_batch_size);
  CHECK_CUDA(cudaMallocHost(reinterpret_cast<void**>(&pinned_inputs_), kSlots * sizeof(cuda::StepInputs)));
  CHECK_CUDA(cudaMallocHost(reinterpret_cast<void**>(&pinned_indices_), kSlots * static_cast<size_t>(max_batch_) * sizeof(int64_t)));
  batch_indices_.ensure_as<int64_t>(static_cast<size_t>(max_batch_));
  labels_.ensure_as<int32_t>(static_cast<size_t>(max_batch_));
  for (auto& slot : events_)
    for (auto& e : slot) CHECK_CUDA(cudaEventCreate(&e));
  CHECK_CUDA(cudaStreamSynchronize(stream_));
  peak_tflops_ = measure_gemm_tflops(ctx_->compute_dtype(), ctx_->tf32());  // ~0.1 s, once per engine
  track_memory();
}

CudaEngine::~CudaEngine() {
  cudaStreamSynchronize(stream_);
  for (auto g : graphs_)
    if (g) cudaGraphExecDestroy(g);
  for (auto& slot : events_)
    for (auto e : slot)
      if (e) cudaEventDestroy(e);
  if (pinned_inputs_) cudaFreeHost(pinned_inputs_);
  if (pinned_indices_) cudaFreeHost(pinned_indices_);
  buckets_.reset();
  nccl_.reset();
  net_.reset();
  ctx_.reset();
  if (stream_) cudaStreamDestroy(stream_);
}

void CudaEngine::upload(const Dataset& data, DeviceDataset& out) {
  // Once per run, as uint8: a quarter of the bytes of float, normalised by the batch kernel.
  void* images = out.images.ensure(data.images.size());
  CHECK_CUDA(cudaMemcpy(images, data.images.data(), data.images.size(), cudaMemcpyHostToDevice));
  void* labels = out.labels.ensure(data.labels.size() * sizeof(int32_t));
  CHECK_CUDA(cudaMemcpy(labels, data.labels.data(), data.labels.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
}

void CudaEngine::enqueue_batch(const Dataset& data, const DeviceDataset& device, int64_t batch, bool augment,
                               const cuda::StepInputs* step_inputs_device, uint64_t first_position, int64_t epoch) {
  kernels::GatherBatchArgs a;
  a.images = static_cast<const uint8_t*>(device.images.data());
  a.labels = static_cast<const int32_t*>(device.labels.data());
  a.indices = static_cast<const int64_t*>(batch_indices_.data());
  a.batch = batch;
  a.channels = data.channels;
  a.height = data.height;
  a.width = data.width;
  for (int c = 0; c < data.channels; ++c) {
    a.mean[c] = data.mean[static_cast<size_t>(c)];
    a.std[c] = data.std[static_cast<size_t>(c)];
  }
  if (augment) {
    a.random_crop = augmentation_.random_crop;
    a.crop_padding = augmentation_.crop_padding;
    a.horizontal_flip = augmentation_.horizontal_flip;
  }
  a.key = kernels::AugmentDrawKey{config_.seed, epoch, comm_.rank()};
  a.first_position = first_position;
  if (step_inputs_device) {
    a.epoch_device = &step_inputs_device->epoch;
    a.first_position_device = &step_inputs_device->first_position;
  }
  const size_t bytes = static_cast<size_t>(batch) * static_cast<size_t>(data.sample_bytes()) * dtype_size(ctx_->compute_dtype());
  a.out = input_.ensure(bytes);
  a.dtype = ctx_->compute_dtype();
  a.layout = ctx_->layout();
  a.labels_out = static_cast<int32_t*>(labels_.data());
  kernels::gather_batch(a, stream_);
}

const cuda::DeviceTensor& CudaEngine::loss_and_gradient(const cuda::DeviceTensor& output, int64_t batch,
                                                        kernels::LossCounters* counters, bool with_gradient) {
  const int64_t classes = output.shape()[1];
  void* dlogits = with_gradient ? dlogits_.ensure(output.bytes()) : nullptr;
  const float* scale = optimizer_.loss_scale;
  const auto* labels = static_cast<const int32_t*>(labels_.data());
  if (log_probabilities_) {
    kernels::nll_loss(output.data, labels, dlogits, batch, classes, output.dtype(), 1.0f, scale, nullptr, counters, stream_);
  } else {
    kernels::softmax_cross_entropy(output.data, labels, dlogits, batch, classes, output.dtype(), 1.0f, scale, nullptr,
                                   counters, stream_);
  }
  grad_ = output;
  grad_.data = dlogits;
  return grad_;
}

// Everything of one step after its inputs are in device memory: the part a CUDA graph captures.
void CudaEngine::enqueue_step_body(int64_t batch, int slot) {
  auto& ev = events_[static_cast<size_t>(slot)];
  const auto* inputs = static_cast<const cuda::StepInputs*>(step_inputs_.data());
  record_event(ev[kStart]);
  enqueue_batch(train_, train_data_, batch, config_.augment, inputs, 0, 0);
  record_event(ev[kDataDone]);

  cuda::DeviceTensor x;
  x.data = input_.data();
  x.desc = TensorDesc{Shape{batch, train_.channels, train_.height, train_.width}, ctx_->compute_dtype(), ctx_->layout()};
  const cuda::DeviceTensor& output = net_->forward(x, cuda::Mode::Train);
  const cuda::DeviceTensor& dlogits =
      loss_and_gradient(output, batch, static_cast<kernels::LossCounters*>(train_counters_.data()), true);
  record_event(ev[kForwardDone]);

  buckets_->begin_step();
  net_->backward(dlogits);
  record_event(ev[kBackwardDone]);
  buckets_->finish();
  record_event(ev[kCommDone]);

  if (optimizer_.found_inf) {
    // fp16: every rank checks the same averaged gradients, so every rank skips the same steps.
    kernels::check_finite(net_->grads(), net_->param_count(), DType::F32, const_cast<int32_t*>(optimizer_.found_inf), stream_);
  }
  kernels::fused_optimizer_step(optimizer_, stream_);
  if (optimizer_.found_inf) {
    kernels::update_loss_scale(static_cast<kernels::LossScaleState*>(loss_scale_.data()), 2.0f, 0.5f, 2000, stream_);
  }
  record_event(ev[kOptimizerDone]);
}

void CudaEngine::capture_graphs(int64_t batch) {
  // One graph per event slot, so that the host can read step k-1's events while step k runs.
  for (int slot = 0; slot < kSlots; ++slot) {
    cudaGraph_t graph = nullptr;
    CHECK_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    capturing_ = true;
    enqueue_step_body(batch, slot);
    capturing_ = false;
    const cudaError_t end = cudaStreamEndCapture(stream_, &graph);
    cudaError_t inst = cudaErrorUnknown;
    // Per-node priorities: the all-reduce nodes keep the communication stream's high priority.
    if (end == cudaSuccess) inst = cudaGraphInstantiateWithFlags(&graphs_[slot], graph, cudaGraphInstantiateFlagUseNodePriority);
    if (graph) cudaGraphDestroy(graph);
    if (end != cudaSuccess || inst != cudaSuccess) {
      cudaGetLastError();
      log0("note: CUDA graph capture failed (%s); the training step runs without a graph\n",
           cudaGetErrorString(end != cudaSuccess ? end : inst));
      drop_graphs();
      graphs_failed_ = true;
      return;
    }
  }
  graph_batch_ = batch;
}

namespace {
// Waits for the GPU under the collective watchdog: behind the step's work is an NCCL all-reduce, and a
// rank that never joins it would leave this one blocked in CUDA forever.
void wait_for_gpu(const std::function<cudaError_t()>& query, const Communicator& members) {
  const auto* mpi = dynamic_cast<const MpiCommunicator*>(&members);
  wait_with_watchdog(
      [&] {
        const cudaError_t status = query();
        if (status == cudaErrorNotReady) return false;
        CHECK_CUDA(status);
        return true;
      },
      "the wait for the GPU step (its NCCL gradient all-reduce)", mpi ? mpi->handle() : MPI_COMM_WORLD);
}
}  // namespace

void CudaEngine::synchronize() {
  if (collective_timeout() <= 0) {
    CHECK_CUDA(cudaStreamSynchronize(stream_));
    return;
  }
  wait_for_gpu([&] { return cudaStreamQuery(stream_); }, comm_);
}

PhaseTimes CudaEngine::read_times(int slot) {
  auto& ev = events_[static_cast<size_t>(slot)];
  if (collective_timeout() <= 0) {
    CHECK_CUDA(cudaEventSynchronize(ev[kOptimizerDone]));
  } else {
    wait_for_gpu([&] { return cudaEventQuery(ev[kOptimizerDone]); }, comm_);
  }
  PhaseTimes t;
  const int phase_end[kPhaseCount] = {kDataDone, kForwardDone, kBackwardDone, kCommDone, kOptimizerDone};
  for (int p = 0; p < kPhaseCount; ++p) {
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, ev[static_cast<size_t>(phase_end[p] - 1)], ev[static_cast<size_t>(phase_end[p])]));
    t.seconds[p] = ms * 1e-3;
  }
  return t;
}

PhaseTimes CudaEngine::train_step(std::span<const int64_t> indices, const StepInfo& info) {
  const int64_t batch = static_cast<int64_t>(indices.size());
  if (batch > max_batch_) fatal("CUDA engine: a batch of " + std::to_string(batch) + " exceeds the planned " + std::to_string(max_batch_));
  const int slot = static_cast<int>(steps_queued_ % kSlots);
  // The slot's pinned memory was last read by step k-2, which finished before step k-1's times were read.
  int64_t* host_indices = pinned_indices_ + static_cast<size_t>(slot) * static_cast<size_t>(max_batch_);
  std::memcpy(host_indices, indices.data(), static_cast<size_t>(batch) * sizeof(int64_t));
  cuda::StepInputs& inputs = pinned_inputs_[slot];
  inputs = cuda::StepInputs{info.lr, static_cast<uint64_t>(info.step), info.epoch, info.position};
  CHECK_CUDA(cudaMemcpyAsync(batch_indices_.data(), host_indices, static_cast<size_t>(batch) * sizeof(int64_t),
                             cudaMemcpyHostToDevice, stream_));
  CHECK_CUDA(cudaMemcpyAsync(step_inputs_.data(), &inputs, sizeof inputs, cudaMemcpyHostToDevice, stream_));

  const bool full = batch == config_.per_rank_batch(comm_.size());
  if (config_.cuda_graph && !graphs_failed_ && full && !graphs_[0] && eager_full_steps_ >= 2) capture_graphs(batch);
  if (graphs_[slot] && batch == graph_batch_) {
    CHECK_CUDA(cudaGraphLaunch(graphs_[slot], stream_));
  } else {
    enqueue_step_body(batch, slot);
    if (full) ++eager_full_steps_;
  }
  ++steps_queued_;

  PhaseTimes previous;
  previous.valid = false;
  if (pending_times_) previous = read_times(pending_slot_);
  pending_times_ = true;
  pending_slot_ = slot;
  if (steps_queued_ <= 3) track_memory();
  return previous;
}

PhaseTimes CudaEngine::drain_step_times() {
  PhaseTimes t;
  t.valid = false;
  if (pending_times_) t = read_times(pending_slot_);
  pending_times_ = false;
  return t;
}

EvalTotals CudaEngine::take_train_totals() {
  kernels::LossCounters host{};
  CHECK_CUDA(cudaMemcpyAsync(&host, train_counters_.data(), sizeof host, cudaMemcpyDeviceToHost, stream_));
  CHECK_CUDA(cudaMemsetAsync(train_counters_.data(), 0, sizeof host, stream_));
  CHECK_CUDA(cudaStreamSynchronize(stream_));
  return EvalTotals{host.loss_sum, static_cast<int64_t>(host.correct), static_cast<int64_t>(host.samples)};
}

EvalTotals CudaEngine::evaluate(std::span<const int64_t> indices) {
  drain_step_times();
  const uint64_t allocations_before = cuda::device_buffer_generation();
  auto* counters = static_cast<kernels::LossCounters*>(eval_counters_.data());
  CHECK_CUDA(cudaMemsetAsync(counters, 0, sizeof(kernels::LossCounters), stream_));
  const size_t eval_batch = static_cast<size_t>(config_.eval_batch_size);
  for (size_t begin = 0; begin < indices.size(); begin += eval_batch) {
    const size_t count = std::min(eval_batch, indices.size() - begin);
    CHECK_CUDA(cudaStreamSynchronize(stream_));  // the pinned staging buffer is reused below
    std::memcpy(pinned_indices_, indices.data() + begin, count * sizeof(int64_t));
    CHECK_CUDA(cudaMemcpyAsync(batch_indices_.data(), pinned_indices_, count * sizeof(int64_t), cudaMemcpyHostToDevice, stream_));
    const int64_t batch = static_cast<int64_t>(count);
    enqueue_batch(test_, test_data_, batch, false, nullptr, 0, 0);
    cuda::DeviceTensor x;
    x.data = input_.data();
    x.desc = TensorDesc{Shape{batch, test_.channels, test_.height, test_.width}, ctx_->compute_dtype(), ctx_->layout()};
    loss_and_gradient(net_->forward(x, cuda::Mode::Eval), batch, counters, false);
  }
  kernels::LossCounters host{};
  CHECK_CUDA(cudaMemcpyAsync(&host, counters, sizeof host, cudaMemcpyDeviceToHost, stream_));
  CHECK_CUDA(cudaStreamSynchronize(stream_));
  track_memory();
  // Evaluation batches larger than the training batch grow the layers' buffers on the first evaluation,
  // moving addresses the graphs hold: the next full training step then captures them again. Later
  // evaluations allocate nothing and the graphs stay (a capture costs ~15 ms, once per epoch otherwise).
  if (cuda::device_buffer_generation() != allocations_before) drop_graphs();
  return EvalTotals{host.loss_sum, static_cast<int64_t>(host.correct), static_cast<int64_t>(host.samples)};
}

EngineState CudaEngine::save_state() {
  synchronize();
  EngineState st;
  st.params = net_->get_params();
  st.buffers = net_->get_buffers();
  const auto names = optimizer_state_names(optimizer_);
  const size_t n = static_cast<size_t>(net_->param_count());
  for (size_t i = 0; i < names.size(); ++i) {
    std::vector<float> values(n);
    CHECK_CUDA(cudaMemcpy(values.data(), optimizer_.state[i], n * sizeof(float), cudaMemcpyDeviceToHost));
    st.optimizer_state.emplace_back(names[i], std::move(values));
  }
  kernels::OptimizerStepCounter counter{};
  CHECK_CUDA(cudaMemcpy(&counter, optimizer_.step_counter, sizeof counter, cudaMemcpyDeviceToHost));
  st.optimizer_steps = counter.steps;
  if (loss_scale_.data()) {
    kernels::LossScaleState scale{};
    CHECK_CUDA(cudaMemcpy(&scale, loss_scale_.data(), sizeof scale, cudaMemcpyDeviceToHost));
    st.loss_scale = scale.scale;
    st.scale_growth = scale.growth_tracker;
  }
  kernels::LossCounters totals{};
  CHECK_CUDA(cudaMemcpy(&totals, train_counters_.data(), sizeof totals, cudaMemcpyDeviceToHost));
  st.train_totals = EvalTotals{totals.loss_sum, static_cast<int64_t>(totals.correct), static_cast<int64_t>(totals.samples)};
  return st;
}

void CudaEngine::load_state(const EngineState& st) {
  synchronize();
  const auto names = optimizer_state_names(optimizer_);
  const size_t n = static_cast<size_t>(net_->param_count());
  if (st.params.size() != n || st.buffers.size() != static_cast<size_t>(net_->buffer_count())) {
    throw UserError("the checkpoint holds " + std::to_string(st.params.size()) + " parameters but model '" + config_.model +
                    "' has " + std::to_string(n) + "; resume with the model and data it was written for");
  }
  if (st.optimizer_state.size() != names.size()) throw UserError("the checkpoint's optimizer state does not match --optimizer " + std::string(optimizer_name(config_.optimizer)));
  net_->set_params(st.params);
  net_->set_buffers(st.buffers);
  for (size_t i = 0; i < names.size(); ++i) {
    if (st.optimizer_state[i].first != names[i] || st.optimizer_state[i].second.size() != n) {
      throw UserError("the checkpoint's optimizer state '" + st.optimizer_state[i].first + "' does not match --optimizer " + optimizer_name(config_.optimizer));
    }
    CHECK_CUDA(cudaMemcpy(optimizer_.state[i], st.optimizer_state[i].second.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  }
  const kernels::OptimizerStepCounter counter{st.optimizer_steps, 0, 0};
  CHECK_CUDA(cudaMemcpy(optimizer_.step_counter, &counter, sizeof counter, cudaMemcpyHostToDevice));
  if (loss_scale_.data() && st.loss_scale > 0) {
    const kernels::LossScaleState scale{st.loss_scale, st.scale_growth, 0};
    CHECK_CUDA(cudaMemcpy(loss_scale_.data(), &scale, sizeof scale, cudaMemcpyHostToDevice));
  }
  const kernels::LossCounters totals{st.train_totals.loss_sum, static_cast<unsigned long long>(st.train_totals.correct),
                                     static_cast<unsigned long long>(st.train_totals.count)};
  CHECK_CUDA(cudaMemcpy(train_counters_.data(), &totals, sizeof totals, cudaMemcpyHostToDevice));
}

void CudaEngine::drop_graphs() {
  for (auto& g : graphs_) {
    if (g) CHECK_CUDA(cudaGraphExecDestroy(g));
    g = nullptr;
  }
  graph_batch_ = 0;
}

void CudaEngine::track_memory() {
  size_t free_bytes = 0, total_bytes = 0;
  device_memory(free_bytes, total_bytes);
  peak_memory_ = std::max(peak_memory_, total_bytes - free_bytes);
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
