#include "train/engines/dp/cuda/cuda_replicas.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "core/cuda_check.h"
#include "core/log.h"
#include "data/cuda/device_batches.h"
#include "data/cuda/input_pipeline.h"
#include "models/registry.h"
#include "nn/cuda/context.h"
#include "nn/cuda/cuda_handles.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/network.h"
#include "train/engines/cuda/context_options.h"
#include "train/engines/cuda/device_info.h"
#include "train/engines/cuda/device_loss.h"
#include "train/engines/cuda/device_memory_readings.h"
#include "train/engines/cuda/device_optimizer.h"
#include "train/engines/cuda/device_state.h"
#include "train/engines/cuda/gpu_clock_sampler.h"
#include "train/engines/cuda/loss_scaler.h"
#include "train/engines/cuda/step_staging.h"
#include "train/run_setup.h"

namespace sb {
namespace {
using cuda::DeviceTensor;

// `whole` (batch axis first) narrowed to samples [first, first + count), at `data`.
DeviceTensor slice_view(const DeviceTensor& whole, void* data, int64_t count) {
  DeviceTensor t = whole;
  t.data = data;
  t.desc.shape[0] = count;
  return t;
}

// Replica 0's input: the data sets resident on its device, each batch built there by one kernel; the
// process is one rank of its own.
cuda::InputPipelineOptions input_options(const TrainConfig& config, int64_t max_batch, const cuda::Context& root) {
  cuda::InputPipelineOptions o;
  o.augmentation = config.augment ? cifar_augmentation() : BatchOptions{};
  o.seed = config.seed;
  o.train_batch = config.per_rank_batch(1);
  o.max_batch = max_batch;
  o.format = BatchFormat{root.compute_dtype(), root.layout()};
  return o;
}

size_t sample_bytes(const DeviceTensor& t) { return t.bytes() / static_cast<size_t>(t.shape()[0]); }

char* at_sample(const DeviceTensor& t, int64_t sample) {
  return static_cast<char*>(t.data) + static_cast<size_t>(sample) * sample_bytes(t);
}

// One GPU's replica: its stream, layers and network, and the views of its slice for the current step.
struct Replica {
  int device = 0;
  std::unique_ptr<NvmlDevice> nvml;
  std::unique_ptr<GpuClockSampler> clocks;  // after the device it reads, destroyed before it
  cuda::CudaStream stream;
  std::unique_ptr<cuda::Context> ctx;
  std::unique_ptr<cuda::Network> net;
  cuda::DeviceBuffer input_slice, output_grad_slice;  // replicas 1..N-1: what scatter copies in
  DeviceTensor input, output, output_grad;
};

class CudaReplicas final : public Replicas {
 public:
  CudaReplicas(const TrainConfig& config, const Dataset& train, const Dataset& test);
  ~CudaReplicas() override;

  int count() const override { return static_cast<int>(replicas_.size()); }
  std::string device_name() const override { return device_name_; }
  int64_t parameter_count() const override { return root().net->param_count(); }
  void assemble_batch(std::span<const int64_t> indices, const StepInfo& info) override;
  void broadcast_parameters() override;  // NCCL broadcast, one group call over the GPUs
  void scatter_batch(std::span<const BatchSlice> slices) override;  // peer copies from GPU 0
  void forward(int replica, const BatchSlice& slice, const StepInfo& info) override;
  void gather_outputs(std::span<const BatchSlice> slices) override;  // peer copies to GPU 0
  void loss_and_gradient(int64_t batch) override;  // the fused loss kernel on GPU 0
  void scatter_output_gradient(std::span<const BatchSlice> slices) override;
  void backward(int replica, const BatchSlice& slice) override;
  void reduce_gradients() override;  // NCCL reduce (sum) to GPU 0
  void optimizer_step(double lr) override;  // the fused optimizer kernel on GPU 0
  EvalTotals take_train_totals() override;
  EvalTotals evaluate(std::span<const int64_t> indices) override;
  EngineState save_state() override;
  void load_state(const EngineState& state) override;
  // The root GPU's peaks, where the memory in use is sampled; no energy meter.
  std::vector<EpochReading> readings() override { return cuda::device_memory_readings(peak_memory_, root().device); }
  std::vector<GpuClocks> take_gpu_clocks() override;

 private:
  Replica& root() const { return *replicas_[0]; }
  cudaStream_t root_stream() const { return root().stream.get(); }
  void select_root() const { CHECK_CUDA(cudaSetDevice(root().device)); }
  void synchronize_all() const;
  // Copies `bytes` from replica `from` to replica `to` on the stream of `on`, as a peer copy.
  void peer_copy(void* to_data, int to, const void* from_data, int from, size_t bytes, int on) const;
  const float* loss_scale() const { return scaler_ ? scaler_->scale() : nullptr; }
  cuda::DeviceStateParts state_parts() { return {*root().net, *optimizer_, scaler_ ? &*scaler_ : nullptr, *train_totals_}; }

  TrainConfig config_;
  std::string device_name_;
  uint64_t dropout_key_;
  std::vector<std::unique_ptr<Replica>> replicas_;
  std::vector<ncclComm_t> nccl_;
  // Replica 0's parts, created on its device after the replicas, in the order of the step: the batch
  // (the data set resident on the device: the CUDA engine's input pipeline), the loss, the update (which
  // reads the learning rate from the staged inputs and the fp16 scale).
  std::unique_ptr<cuda::InputPipeline> input_;
  std::unique_ptr<cuda::StepStaging> staging_;
  std::unique_ptr<cuda::DeviceLoss> loss_;
  std::optional<cuda::DeviceLossTotals> train_totals_, eval_totals_;
  std::optional<cuda::LossScaler> scaler_;  // fp16 only
  std::unique_ptr<cuda::DeviceOptimizer> optimizer_;
  cuda::DeviceBuffer gathered_;           // the whole batch's output
  DeviceTensor batch_, output_, output_grad_;  // the whole batch, its gathered output and the loss gradient
  PeakDeviceMemory peak_memory_;
};

CudaReplicas::CudaReplicas(const TrainConfig& config, const Dataset& train, const Dataset& test)
    : config_(config), dropout_key_(dropout_stream_key(config.seed, 0)) {
  const int n = config.replicas;
  const int64_t max_batch = std::max(config.per_rank_batch(1), config.eval_batch_size);
  cuda::check_fits_batch_kernel(train);  // before any GPU is set up
  cuda::set_out_of_memory_hint("DataParallel training of " + config.model + " on " + std::to_string(n) + " GPUs with " +
                               std::to_string(config.per_rank_batch(1)) + " samples per step gathered on GPU 0 (evaluation " +
                               std::to_string(config.eval_batch_size) + "); lower --batch-size or --eval-batch-size");
  device_name_ = gpu_name(0);
  const LayerSpec spec = model_spec_for(config, train);
  std::vector<int> devices;
  for (int r = 0; r < n; ++r) {
    auto replica = std::make_unique<Replica>();
    replica->device = r;
    devices.push_back(r);
    CHECK_CUDA(cudaSetDevice(r));
    replica->nvml = std::make_unique<NvmlDevice>(r);
    replica->clocks = std::make_unique<GpuClockSampler>(*replica->nvml);
    // Replica 0 reaches every other GPU by peer copies where the hardware allows (else through the host).
    if (r > 0) {
      int can_access = 0;
      CHECK_CUDA(cudaDeviceCanAccessPeer(&can_access, r, 0));
      if (can_access) {
        const cudaError_t e = cudaDeviceEnablePeerAccess(0, 0);
        if (e == cudaErrorPeerAccessAlreadyEnabled) (void)cudaGetLastError();
        else CHECK_CUDA(e);
        CHECK_CUDA(cudaSetDevice(0));
        const cudaError_t back = cudaDeviceEnablePeerAccess(r, 0);
        if (back == cudaErrorPeerAccessAlreadyEnabled) (void)cudaGetLastError();
        else CHECK_CUDA(back);
        CHECK_CUDA(cudaSetDevice(r));
      }
    }
    replica->stream = cuda::CudaStream::create_non_blocking(cuda::CudaStream::compute_priority());
    replica->ctx = std::make_unique<cuda::Context>(context_options(config), replica->stream.get());
    replica->net = std::make_unique<cuda::Network>(spec, config.seed, *replica->ctx);
    replicas_.push_back(std::move(replica));
  }
  nccl_.resize(static_cast<size_t>(n));
  CHECK_NCCL(ncclCommInitAll(nccl_.data(), n, devices.data()));

  select_root();
  const cuda::CudaStream& s = root().stream;
  staging_ = std::make_unique<cuda::StepStaging>(max_batch, 0, s);
  if (root().ctx->compute_dtype() == DType::F16) scaler_.emplace(s.get());
  optimizer_ = std::make_unique<cuda::DeviceOptimizer>(optimizer_spec_for(config), *root().net, root().ctx->compute_dtype(),
                                                       &staging_->device_inputs()->lr, scaler_ ? &*scaler_ : nullptr, s.get());
  train_totals_.emplace();
  eval_totals_.emplace();
  train_totals_->zero(s.get());
  loss_ = std::make_unique<cuda::DeviceLoss>(model_info(config.model).outputs_log_probabilities);
  input_ = cuda::make_input_pipeline(train, test, input_options(config, max_batch, *root().ctx), [](const cuda::CudaEvent& e) {
    CHECK_CUDA(cudaEventSynchronize(e.get()));
  });
  synchronize_all();
  peak_memory_.sample();
}

CudaReplicas::~CudaReplicas() {
  for (const auto& r : replicas_) r->stream.synchronize_noexcept();
  for (ncclComm_t c : nccl_) {
    if (!c) continue;
    const ncclResult_t e = ncclCommDestroy(c);
    if (e != ncclSuccess) log_all("warning: ncclCommDestroy failed: %s\n", ncclGetErrorString(e));
  }
}

void CudaReplicas::synchronize_all() const {
  for (const auto& r : replicas_) {
    CHECK_CUDA(cudaSetDevice(r->device));
    r->stream.synchronize();
  }
}

void CudaReplicas::peer_copy(void* to_data, int to, const void* from_data, int from, size_t bytes, int on) const {
  const Replica& r = *replicas_[static_cast<size_t>(on)];
  CHECK_CUDA(cudaSetDevice(r.device));
  CHECK_CUDA(cudaMemcpyPeerAsync(to_data, replicas_[static_cast<size_t>(to)]->device, from_data,
                                 replicas_[static_cast<size_t>(from)]->device, bytes, r.stream.get()));
}

void CudaReplicas::assemble_batch(std::span<const int64_t> indices, const StepInfo& info) {
  select_root();
  const int64_t batch = static_cast<int64_t>(indices.size());
  staging_->upload_step(0, indices, info);  // one step at a time: slot 0 is free again
  const cuda::StepInputs* inputs = staging_->device_inputs();
  const cuda::DeviceDrawKey draws{&inputs->epoch, &inputs->first_position};
  batch_ = input_->training_batch(0, input_->staged_buffer(0), batch, staging_->device_indices(), draws, root_stream());
  root().stream.synchronize();
}

void CudaReplicas::broadcast_parameters() {
  CHECK_NCCL(ncclGroupStart());
  for (size_t r = 0; r < replicas_.size(); ++r) {
    cuda::Network& net = *replicas_[r]->net;
    const cudaStream_t s = replicas_[r]->stream.get();
    CHECK_NCCL(ncclBroadcast(net.params(), net.params(), static_cast<size_t>(net.param_count()), ncclFloat, 0, nccl_[r], s));
    if (net.buffer_count() > 0)
      CHECK_NCCL(ncclBroadcast(net.buffers(), net.buffers(), static_cast<size_t>(net.buffer_count()), ncclFloat, 0, nccl_[r], s));
  }
  CHECK_NCCL(ncclGroupEnd());
  for (size_t r = 1; r < replicas_.size(); ++r) {
    CHECK_CUDA(cudaSetDevice(replicas_[r]->device));
    replicas_[r]->net->refresh_compute_params();  // replica 0's copy is the optimizer's
  }
  synchronize_all();
}

void CudaReplicas::scatter_batch(std::span<const BatchSlice> slices) {
  for (size_t r = 0; r < replicas_.size(); ++r) {
    Replica& rep = *replicas_[r];
    const BatchSlice& s = slices[r];
    if (r == 0) {
      rep.input = slice_view(batch_, batch_.data, s.count);
      continue;
    }
    if (s.count == 0) continue;
    const size_t bytes = static_cast<size_t>(s.count) * sample_bytes(batch_);
    CHECK_CUDA(cudaSetDevice(rep.device));
    rep.input = slice_view(batch_, rep.input_slice.ensure(bytes), s.count);
    peer_copy(rep.input.data, static_cast<int>(r), at_sample(batch_, s.first), 0, bytes, static_cast<int>(r));
  }
  synchronize_all();
}

void CudaReplicas::forward(int replica, const BatchSlice& slice, const StepInfo& info) {
  Replica& rep = *replicas_[static_cast<size_t>(replica)];
  CHECK_CUDA(cudaSetDevice(rep.device));  // this replica's own thread
  if (slice.count == 0) return;
  rep.net->set_random_stream(dropout_key_, static_cast<uint64_t>(info.step));
  rep.net->set_first_sample(slice.first);
  rep.output = rep.net->forward(rep.input, cuda::Mode::Train);
  rep.stream.synchronize();
}

void CudaReplicas::gather_outputs(std::span<const BatchSlice> slices) {
  const int64_t batch = batch_.shape()[0];
  select_root();
  output_ = slice_view(root().output, gathered_.ensure(static_cast<size_t>(batch) * sample_bytes(root().output)), batch);
  for (size_t r = 0; r < replicas_.size(); ++r) {
    const BatchSlice& s = slices[r];
    if (s.count == 0) continue;
    const Replica& rep = *replicas_[r];
    peer_copy(at_sample(output_, s.first), 0, rep.output.data, static_cast<int>(r), rep.output.bytes(), static_cast<int>(r));
  }
  synchronize_all();
}

void CudaReplicas::loss_and_gradient(int64_t batch) {
  select_root();
  output_grad_ = loss_->enqueue(output_, input_->labels(0), batch, *train_totals_, loss_scale(), true, root_stream());
  root().stream.synchronize();
}

void CudaReplicas::scatter_output_gradient(std::span<const BatchSlice> slices) {
  for (size_t r = 0; r < replicas_.size(); ++r) {
    Replica& rep = *replicas_[r];
    const BatchSlice& s = slices[r];
    if (s.count == 0) continue;
    if (r == 0) {
      rep.output_grad = slice_view(output_grad_, output_grad_.data, s.count);
      continue;
    }
    const size_t bytes = static_cast<size_t>(s.count) * sample_bytes(output_grad_);
    CHECK_CUDA(cudaSetDevice(rep.device));
    rep.output_grad = slice_view(output_grad_, rep.output_grad_slice.ensure(bytes), s.count);
    peer_copy(rep.output_grad.data, static_cast<int>(r), at_sample(output_grad_, s.first), 0, bytes, static_cast<int>(r));
  }
  synchronize_all();
}

void CudaReplicas::backward(int replica, const BatchSlice& slice) {
  Replica& rep = *replicas_[static_cast<size_t>(replica)];
  CHECK_CUDA(cudaSetDevice(rep.device));  // this replica's own thread
  cuda::Network& net = *rep.net;
  if (slice.count == 0) {
    CHECK_CUDA(cudaMemsetAsync(net.grads(), 0, static_cast<size_t>(net.param_count()) * sizeof(float), rep.stream.get()));
  } else {
    net.backward(rep.output_grad);
  }
  rep.stream.synchronize();
}

void CudaReplicas::reduce_gradients() {
  CHECK_NCCL(ncclGroupStart());
  for (size_t r = 0; r < replicas_.size(); ++r) {
    cuda::Network& net = *replicas_[r]->net;
    CHECK_NCCL(ncclReduce(net.grads(), net.grads(), static_cast<size_t>(net.param_count()), ncclFloat, ncclSum, 0, nccl_[r],
                          replicas_[r]->stream.get()));
  }
  CHECK_NCCL(ncclGroupEnd());
  synchronize_all();
}

void CudaReplicas::optimizer_step(double /*lr*/) {
  // The learning rate reaches the fused kernel through the step inputs that assemble_batch staged.
  select_root();
  const cudaStream_t s = root_stream();
  cuda::Network& net = *root().net;
  if (scaler_) scaler_->enqueue_check(net.grads(), net.param_count(), s);
  optimizer_->enqueue_step(s);
  if (scaler_) scaler_->enqueue_update(s);
  root().stream.synchronize();
  peak_memory_.sample();
}

std::vector<GpuClocks> CudaReplicas::take_gpu_clocks() {
  std::vector<GpuClocks> windows;
  for (const auto& replica : replicas_) windows.push_back(replica->clocks->take());
  return windows;
}

EvalTotals CudaReplicas::take_train_totals() {
  select_root();
  return train_totals_->take(root_stream());
}

EvalTotals CudaReplicas::evaluate(std::span<const int64_t> indices) {
  select_root();
  const cudaStream_t s = root_stream();
  eval_totals_->zero(s);
  const int64_t per_batch = config_.eval_batch_size;
  const int64_t batches = (static_cast<int64_t>(indices.size()) + per_batch - 1) / per_batch;
  for (int64_t number = 0; number < batches; ++number) {
    const DeviceTensor x = input_->evaluation_batch(0, indices, per_batch, number, s);
    loss_->enqueue(root().net->forward(x, cuda::Mode::Eval), input_->labels(0), x.shape()[0], *eval_totals_, loss_scale(),
                   false, s);
    input_->consumed(0, s);
  }
  return eval_totals_->read(s);
}

EngineState CudaReplicas::save_state() {
  synchronize_all();
  select_root();
  return cuda::save_device_state(state_parts());
}

void CudaReplicas::load_state(const EngineState& st) {
  synchronize_all();
  select_root();
  cuda::load_device_state(state_parts(), st, config_);
}

}  // namespace

std::unique_ptr<Replicas> make_cuda_replicas(const TrainConfig& config, const Dataset& train, const Dataset& test) {
  return std::make_unique<CudaReplicas>(config, train, test);
}

}  // namespace sb
