// --input host against --input device on the GPU: the batches uploaded by the host pipeline equal, bit for
// bit, those the batch kernel builds from the GPU-resident data set (training with augmentation, and
// evaluation; every compute dtype and layout); whole runs under --deterministic give identical losses and
// parameters (mnist-cnn in fp32, a small WRN in bf16, dropout on); and the host path's device memory does
// not grow with the data set; the evaluation after an epoch and the next epoch's first batches are built ahead.
// Runs under mpiexec (-np 1 or 2); each rank needs a GPU of its own, else it skips.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "comm/mpi_communicator.h"
#include "core/cuda_check.h"
#include "data/sampler.h"
#include "data/synthetic.h"
#include "nn/cuda/cuda_handles.h"
#include "data/cuda/device_batches.h"
#include "data/cuda/host_input.h"
#include "train/engines/cuda/cuda_engine.h"
#include "train/engines/cuda/device_info.h"
#include "train/engines/cuda/gpu_wait.h"
#include "train/engines/cuda/step_inputs.h"

namespace sb {
namespace {

bool every_rank_has_a_gpu(Communicator& comm) {
  if (comm.allreduce_min(visible_gpu_count()) < comm.size()) return false;
  CHECK_CUDA(cudaSetDevice(comm.rank() % visible_gpu_count()));
  return true;
}

std::vector<std::byte> download(const void* device, size_t bytes) {
  std::vector<std::byte> host(bytes);
  CHECK_CUDA(cudaMemcpy(host.data(), device, bytes, cudaMemcpyDeviceToHost));
  return host;
}

cuda::InputPipelineOptions host_options(const BatchOptions& augmentation, uint64_t seed, const Communicator& comm,
                                        int64_t batch, int64_t max_batch, BatchFormat format) {
  cuda::InputPipelineOptions o;
  o.from_host = true;
  o.augmentation = augmentation;
  o.seed = seed;
  o.rank = comm.rank();
  o.world_size = comm.size();
  o.train_batch = batch;
  o.max_batch = max_batch;
  o.format = format;
  o.workers = 3;
  return o;
}

// The batch kernel's training batch `indices` at `position` of `epoch`, as a captured step reads its inputs.
struct KernelBatches {
  cuda::DeviceBatches& kernel;
  const cuda::DeviceDataset& train;
  cuda::DeviceBuffer indices_device, inputs_device;

  KernelBatches(cuda::DeviceBatches& k, const cuda::DeviceDataset& t, int64_t max_batch) : kernel(k), train(t) {
    indices_device.ensure_as<int64_t>(static_cast<size_t>(max_batch));
    inputs_device.ensure_as<cuda::StepInputs>(1);
  }
  cuda::DeviceTensor training(std::span<const int64_t> indices, int epoch, uint64_t step, uint64_t position,
                              cudaStream_t stream) {
    const cuda::StepInputs inputs{0.1, step, epoch, position};
    CHECK_CUDA(cudaMemcpy(indices_device.data(), indices.data(), indices.size_bytes(), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(inputs_device.data(), &inputs, sizeof inputs, cudaMemcpyHostToDevice));
    const auto* device_inputs = static_cast<const cuda::StepInputs*>(inputs_device.data());
    const cuda::DeviceDrawKey draws{&device_inputs->epoch, &device_inputs->first_position};
    return kernel.enqueue(train, static_cast<const int64_t*>(indices_device.data()), static_cast<int64_t>(indices.size()),
                          true, &draws, stream);
  }
};

TEST(HostInput, UploadedBatchesEqualTheBatchKernelsBitForBit) {
  auto world = MpiCommunicator::world();
  if (!every_rank_has_a_gpu(*world)) GTEST_SKIP() << "needs one GPU per rank";
  const TrainTest data = make_synthetic(SyntheticShape{3, 32, 32, 10}, 300, 70, 4);
  const uint64_t seed = 5;
  const int64_t batch = 32, eval_batch = 48;
  const cuda::GpuWait gpu_wait(*world);
  const cuda::WaitForEvent wait = [&](const cuda::CudaEvent& event) { gpu_wait.for_event(event); };
  for (const BatchFormat format : {BatchFormat{DType::F32, Layout::NCHW}, BatchFormat{DType::BF16, Layout::NHWC},
                                   BatchFormat{DType::F16, Layout::NHWC}}) {
    SCOPED_TRACE(std::string(dtype_name(format.dtype)) + " " + layout_name(format.layout));
    const cuda::CudaStream stream = cuda::CudaStream::create_non_blocking();
    cuda::DeviceDataset train(data.train), test(data.test);
    cuda::DeviceBatches kernel(cifar_augmentation(), seed, world->rank(), format.dtype, format.layout, eval_batch);
    cuda::HostInput host(data.train, data.test, host_options(cifar_augmentation(), seed, *world, batch, eval_batch, format), wait);
    KernelBatches kernel_batches(kernel, train, eval_batch);
    cuda::DeviceBuffer indices_device;
    indices_device.ensure_as<int64_t>(static_cast<size_t>(eval_batch));

    const DistributedSampler sampler(data.train.size(), world->size(), world->rank(), true, seed, false);
    for (int epoch = 0; epoch < 2; ++epoch) {
      const auto batches = split_batches(sampler.indices(epoch), batch, false);
      uint64_t position = 0;
      for (size_t k = 0; k < batches.size(); ++k) {
        SCOPED_TRACE("epoch " + std::to_string(epoch) + " batch " + std::to_string(k));
        const auto& indices = batches[k];
        const int64_t rows = static_cast<int64_t>(indices.size());
        const cuda::DeviceTensor want = kernel_batches.training(indices, epoch, k, position, stream.get());
        const int slot = cuda::step_slot(static_cast<int64_t>(k));
        host.stage_training(slot, indices, epoch, position, stream.get());
        const cuda::DeviceTensor got = host.input(slot, rows);
        stream.synchronize();
        ASSERT_EQ(got.bytes(), want.bytes());
        ASSERT_EQ(download(got.data, got.bytes()), download(want.data, want.bytes()));
        ASSERT_EQ(download(host.labels(slot), static_cast<size_t>(rows) * 4), download(kernel.labels(), static_cast<size_t>(rows) * 4));
        host.consumed(slot, stream.get());
        position += indices.size();
      }
    }
    // Evaluation: no augmentation, the test set, batches of eval_batch.
    const std::vector<int64_t> shard = DistributedSampler(data.test.size(), world->size(), world->rank(), false, seed, false).indices(0);
    for (size_t begin = 0, part = 0; begin < shard.size(); begin += eval_batch, ++part) {
      const std::span<const int64_t> indices = std::span(shard).subspan(begin, std::min<size_t>(eval_batch, shard.size() - begin));
      const int64_t rows = static_cast<int64_t>(indices.size());
      CHECK_CUDA(cudaMemcpy(indices_device.data(), indices.data(), indices.size_bytes(), cudaMemcpyHostToDevice));
      const cuda::DeviceTensor want = kernel.enqueue(test, static_cast<const int64_t*>(indices_device.data()), rows, false,
                                                     nullptr, stream.get());
      const int slot = cuda::step_slot(static_cast<int64_t>(part));
      const cuda::DeviceTensor got = host.evaluation_batch(slot, shard, eval_batch, static_cast<int64_t>(part), stream.get());
      ASSERT_EQ(got.desc.shape[0], rows);
      stream.synchronize();
      ASSERT_EQ(download(got.data, got.bytes()), download(want.data, want.bytes())) << "evaluation part " << part;
      host.consumed(slot, stream.get());
    }
  }
}

// An evaluation after every epoch: the workers build it ahead after the epoch's last batch, as the one
// that came last, and once its last part is queued they build the next epoch's first batches. Only the
// run's first training batch and its first evaluation's first part are built on demand; what was built
// ahead is the batch asked for, bit for bit (training: the batch kernel's; evaluation: the first one's).
TEST(HostInput, TheEvaluationAndTheNextEpochAreBuiltAhead) {
  auto world = MpiCommunicator::world();
  if (!every_rank_has_a_gpu(*world)) GTEST_SKIP() << "needs one GPU per rank";
  const TrainTest data = make_synthetic(SyntheticShape{3, 16, 16, 10}, 200, 60, 4);
  const uint64_t seed = 9;
  const int64_t batch = 32, eval_batch = 16;  // more evaluation parts than ring slots
  const BatchFormat format{DType::BF16, Layout::NHWC};
  const cuda::GpuWait gpu_wait(*world);
  const cuda::WaitForEvent wait = [&](const cuda::CudaEvent& event) { gpu_wait.for_event(event); };
  const cuda::CudaStream stream = cuda::CudaStream::create_non_blocking();
  cuda::DeviceDataset train(data.train);
  cuda::DeviceBatches kernel(cifar_augmentation(), seed, world->rank(), format.dtype, format.layout, batch);
  cuda::HostInput host(data.train, data.test, host_options(cifar_augmentation(), seed, *world, batch, batch, format), wait);
  KernelBatches kernel_batches(kernel, train, batch);
  const DistributedSampler sampler(data.train.size(), world->size(), world->rank(), true, seed, false);
  const std::vector<int64_t> shard = DistributedSampler(data.test.size(), world->size(), world->rank(), false, seed, false).indices(0);
  std::vector<std::vector<std::byte>> first_evaluation;  // each part's images, then its labels
  for (int epoch = 0; epoch < 3; ++epoch) {
    const auto batches = split_batches(sampler.indices(epoch), batch, false);
    uint64_t position = 0;
    for (size_t k = 0; k < batches.size(); ++k) {
      const int slot = cuda::step_slot(static_cast<int64_t>(k));
      host.stage_training(slot, batches[k], epoch, position, stream.get());
      if (k == 0) {  // the epoch's first batch, against the batch kernel's
        const cuda::DeviceTensor want = kernel_batches.training(batches[k], epoch, 0, position, stream.get());
        stream.synchronize();
        const cuda::DeviceTensor got = host.input(slot, static_cast<int64_t>(batches[k].size()));
        ASSERT_EQ(download(got.data, got.bytes()), download(want.data, want.bytes())) << "epoch " << epoch;
      }
      host.consumed(slot, stream.get());
      position += batches[k].size();
    }
    for (int64_t part = 0; part * eval_batch < static_cast<int64_t>(shard.size()); ++part) {
      const int slot = cuda::step_slot(part);
      const cuda::DeviceTensor got = host.evaluation_batch(slot, shard, eval_batch, part, stream.get());
      stream.synchronize();  // the uploads done, so that the last part finds free slots for training batches
      std::vector<std::byte> bytes = download(got.data, got.bytes());
      bytes.resize(bytes.size() + static_cast<size_t>(got.desc.shape[0]) * 4);
      CHECK_CUDA(cudaMemcpy(bytes.data() + got.bytes(), host.labels(slot), static_cast<size_t>(got.desc.shape[0]) * 4,
                            cudaMemcpyDeviceToHost));
      if (epoch == 0) first_evaluation.push_back(std::move(bytes));
      else ASSERT_EQ(bytes, first_evaluation[static_cast<size_t>(part)]) << "epoch " << epoch << " evaluation part " << part;
      host.consumed(slot, stream.get());
    }
  }
  EXPECT_EQ(host.training_batches_built_on_demand(), 1);
  EXPECT_EQ(host.evaluation_batches_built_on_demand(), 1);
}

// Device memory in use (the whole device's, as cudaMemGetInfo sees it) while `make` holds its result.
template <typename Make>
size_t device_bytes_held(Make make) {
  size_t free_before = 0, free_during = 0, total = 0;
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemGetInfo(&free_before, &total));
  {
    const auto held = make();
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemGetInfo(&free_during, &total));
  }
  return free_before > free_during ? free_before - free_during : 0;
}

TEST(HostInput, DeviceMemoryDoesNotGrowWithTheDataSet) {
  auto world = MpiCommunicator::world();
  if (!every_rank_has_a_gpu(*world)) GTEST_SKIP() << "needs one GPU per rank";
  const cuda::GpuWait gpu_wait(*world);
  const cuda::WaitForEvent wait = [&](const cuda::CudaEvent& event) { gpu_wait.for_event(event); };
  const TrainTest small = make_synthetic(SyntheticShape{3, 32, 32, 10}, 512, 64, 4);
  const TrainTest large = make_synthetic(SyntheticShape{3, 32, 32, 10}, 40000, 8000, 4);  // 147 MiB of pixels
  const BatchFormat format{DType::F32, Layout::NHWC};
  const auto host_input = [&](const TrainTest& data) {
    return [&] {
      return std::make_unique<cuda::HostInput>(data.train, data.test,
                                               host_options(cifar_augmentation(), 1, *world, 256, 1000, format), wait);
    };
  };
  const size_t small_bytes = device_bytes_held(host_input(small));
  const size_t large_bytes = device_bytes_held(host_input(large));
  constexpr size_t kMiB = 1 << 20;
  // Two slots of 1000 fp32 samples of 3x32x32 and their labels, whatever the data set; the slack covers the
  // driver's allocation granularity.
  const size_t two_batches = 2 * 1000 * 3 * 32 * 32 * sizeof(float);
  EXPECT_LE(large_bytes, small_bytes + 2 * kMiB) << "small " << small_bytes / kMiB << " MiB, large " << large_bytes / kMiB << " MiB";
  EXPECT_LE(large_bytes, two_batches + 16 * kMiB) << large_bytes / kMiB << " MiB";
  // The measurement sees a data set that does live on the device.
  const size_t resident = device_bytes_held([&] { return std::make_unique<cuda::DeviceDataset>(large.train); });
  EXPECT_GE(resident, large.train.images.size()) << "cudaMemGetInfo does not see device allocations here";
}

struct RunTrace {
  std::vector<double> train_losses, test_losses;
  std::vector<float> params;
};

RunTrace train_run(TrainConfig config, InputSource input, const TrainTest& data, Communicator& comm) {
  config.input = input;
  auto engine = make_cuda_engine(config, data.train, data.test, comm, comm.rank(), comm.size());
  const DistributedSampler sampler(data.train.size(), comm.size(), comm.rank(), true, config.seed, false);
  const std::vector<int64_t> test_shard =
      DistributedSampler(data.test.size(), comm.size(), comm.rank(), false, config.seed, false).indices(0);
  RunTrace r;
  int64_t step = 0;
  for (int epoch = 0; epoch < 2; ++epoch) {
    const auto batches = split_batches(sampler.indices(epoch), config.per_rank_batch(comm.size()), false);
    uint64_t position = 0;
    for (const auto& batch : batches) {
      engine->train_step(batch, StepInfo{epoch, step++, position, config.lr});
      position += batch.size();
      engine->synchronize();
      const EvalTotals totals = engine->train_totals(TotalsRead::Take);
      r.train_losses.push_back(totals.loss_sum / static_cast<double>(totals.count));
    }
    const EvalTotals test = engine->evaluate(test_shard);
    r.test_losses.push_back(test.loss_sum / static_cast<double>(test.count));
  }
  r.params = engine->run_state().save().params;
  return r;
}

struct LossCase {
  const char* model;
  SyntheticShape shape;
  Precision precision;
  double lr;
};

class HostInputRuns : public ::testing::TestWithParam<LossCase> {};

TEST_P(HostInputRuns, DeterministicRunsGiveIdenticalLossesEitherWay) {
  auto world = MpiCommunicator::world();
  if (!every_rank_has_a_gpu(*world)) GTEST_SKIP() << "needs one GPU per rank";
  const LossCase p = GetParam();
  const TrainTest data = make_synthetic(p.shape, 200, 50, 8);
  TrainConfig config;
  config.model = p.model;
  config.device = Device::Cuda;
  config.precision = p.precision;
  config.deterministic = true;
  config.autotune = false;  // the same plans in both runs, whatever the timings
  config.plan_cache = "";   // and none from earlier runs
  config.dropout = true;
  config.augment = p.shape.channels == 3;
  config.batch_size = 16;  // per rank; the last batch of each epoch is shorter
  config.eval_batch_size = 24;
  config.optimizer = OptimizerKind::Sgd;
  config.lr = p.lr;
  config.momentum = 0.9;
  config.seed = 11;
  config.workers = 2;
  const RunTrace device = train_run(config, InputSource::Device, data, *world);
  const RunTrace host = train_run(config, InputSource::Host, data, *world);
  EXPECT_EQ(host.train_losses, device.train_losses);
  EXPECT_EQ(host.test_losses, device.test_losses);
  EXPECT_TRUE(host.params == device.params) << "parameters after two epochs differ";
}

INSTANTIATE_TEST_SUITE_P(Models, HostInputRuns,
                         ::testing::Values(LossCase{"mnist-cnn", {1, 28, 28, 10}, Precision::FP32, 0.05},
                                           LossCase{"wrn", {3, 8, 8, 10}, Precision::BF16, 0.002}),
                         [](const auto& info) { return std::string(info.param.model == std::string("wrn") ? "wrn" : "mnist_cnn"); });

}  // namespace
}  // namespace sb
