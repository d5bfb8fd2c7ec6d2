// --decode gpu leaves each batch where nvJPEG's crop kernel wrote it, in its ring slot's device buffer, and
// the step reads it there (data/cuda/host_input.h). A ring buffer is not handed to the decoders again until
// the step that read it has run: queued steps that read their batches late read what they would read one
// by one. The engine captures a step graph per slot and ring buffer and replays the one of the batch
// staged, so training with the graphs gives the parameters of eager steps. Built only with nvJPEG; skips
// without a GPU.
#include <gtest/gtest.h>

#include <numeric>
#include <set>
#include <vector>

#include "core/cuda_check.h"
#include "core/startup_clock.h"
#include "data/batch_schedule.h"
#include "data/cuda/host_input.h"
#include "data/image_data_sets.h"
#include "data/sampler.h"
#include "gpu_test_util.h"
#include "relative_l2.h"
#include "train/engines/cuda/cuda_engine.h"
#include "unit/image_folder_files.h"
#include "unit/scratch_dir.h"
#include "unit/solo_communicator.h"

namespace sb {
namespace {

constexpr int kSize = 32;
constexpr int64_t kBatch = 4;
constexpr uint64_t kSeed = 3;

class GpuDecodeInPlace : public test::ScratchDirTest {
 protected:
  // Three classes of twelve training images (every third a PNG, decoded on the CPU and uploaded).
  TrainTest folder() {
    test::make_image_folder(dir_, 3, 12, 2);
    TrainTest data = load_image_folder(dir_.string(), 0);
    set_image_sizes(data, kSize, kSize + 4);
    return data;
  }
};

cuda::InputPipelineOptions gpu_decode_options() {
  cuda::InputPipelineOptions o;
  o.from_host = true;
  o.decode = ImageDecoding::Gpu;
  o.seed = kSeed;
  o.train_batch = kBatch;
  o.max_batch = kBatch;
  o.format = BatchFormat{DType::F32, Layout::NCHW};
  o.workers = 2;
  return o;
}

struct InputRun {
  std::vector<std::byte> batches;  // each step's batch as its step read it, one after another
  std::set<int> buffers;           // the ring buffers the steps read
};

// 24 steps of the folder's batches through the pipeline. Each step reads its batch, on `compute`, after
// `delay_bytes` of memsets: the step's work before its input is read. Without `synchronous` the steps are
// queued back to back, and each buffer handed out again must belong to a step that has run.
InputRun read_batches(const TrainTest& data, size_t delay_bytes, bool synchronous) {
  constexpr int64_t kSteps = 24;
  const cuda::WaitForEvent wait = [](const cuda::CudaEvent& e) { CHECK_CUDA(cudaEventSynchronize(e.get())); };
  const cuda::CudaStream compute = cuda::CudaStream::create_non_blocking();
  cuda::HostInput input(data.train, data.test, gpu_decode_options(), wait);
  EXPECT_GT(input.training_buffers(), cuda::kInputSlots) << "room for the batches built ahead beside those held";
  const size_t batch_bytes = static_cast<size_t>(kBatch * data.train.sample_bytes()) * sizeof(float);
  cuda::DeviceBuffer delay, read;
  if (delay_bytes > 0) delay.ensure(delay_bytes);
  std::byte* out = static_cast<std::byte*>(read.ensure(static_cast<size_t>(kSteps) * batch_bytes));
  std::vector<cuda::CudaEvent> step_done;
  std::vector<int64_t> holder(static_cast<size_t>(input.training_buffers()), -1);  // the last step to read each
  // The batches in the order the pipeline predicts them, so that each is built ahead.
  BatchSchedule schedule(data.train.size(), 1, 0, kSeed, false, kBatch, shard_sizes(data.train));
  ScheduledBatch next{0, 0, 0};
  InputRun run;
  for (int64_t step = 0; step < kSteps; ++step, next = schedule.after(next)) {
    const int slot = static_cast<int>(step % cuda::kInputSlots);
    input.stage_training(slot, schedule.indices(next), static_cast<int>(next.epoch), next.first_position, compute.get());
    const int buffer = input.staged_buffer(slot);
    const int64_t before = holder.at(static_cast<size_t>(buffer));
    if (before >= 0) {
      EXPECT_EQ(step_done[static_cast<size_t>(before)].query(), cudaSuccess)
          << "step " << step << " got buffer " << buffer << " while step " << before << ", which read it, had not run";
    }
    holder[static_cast<size_t>(buffer)] = step;
    run.buffers.insert(buffer);
    const cuda::DeviceTensor x = input.input(slot, kBatch);
    EXPECT_EQ(x.bytes(), batch_bytes);
    EXPECT_EQ(x.data, input.training_batch(slot, buffer, kBatch, nullptr, {}, compute.get()).data)
        << "the staged batch is the one its buffer's graph reads";
    for (int k = 0; k < 8 && delay_bytes > 0; ++k)
      CHECK_CUDA(cudaMemsetAsync(delay.data(), k, delay_bytes, compute.get()));
    CHECK_CUDA(cudaMemcpyAsync(out + static_cast<size_t>(step) * batch_bytes, x.data, batch_bytes,
                               cudaMemcpyDeviceToDevice, compute.get()));
    step_done.push_back(cuda::CudaEvent::create(cudaEventDisableTiming));
    step_done.back().record(compute.get());  // before the pipeline's own event, so never after it
    input.consumed(slot, compute.get());
    if (synchronous) compute.synchronize();
  }
  compute.synchronize();
  run.batches.resize(static_cast<size_t>(kSteps) * batch_bytes);
  CHECK_CUDA(cudaMemcpy(run.batches.data(), out, run.batches.size(), cudaMemcpyDeviceToHost));
  return run;
}

TEST_F(GpuDecodeInPlace, NoBatchIsDecodedOverWhileItsStepMayStillReadIt) {
  SKIP_WITHOUT_GPU();
  const TrainTest data = folder();
  // Each step waits for 8 GiB of memsets before it reads its batch: the decoders, a few images a batch,
  // would fill a buffer given back too early several times over meanwhile.
  const InputRun queued = read_batches(data, size_t{1} << 30, false);
  const InputRun one_by_one = read_batches(data, 0, true);
  EXPECT_GT(queued.buffers.size(), static_cast<size_t>(cuda::kInputSlots)) << "the steps read the ring's buffers";
  EXPECT_TRUE(queued.batches == one_by_one.batches) << "a batch changed before its step read it";
}

struct TrainedRun {
  std::vector<float> params;
  std::vector<double> test_losses;
  double capture_seconds = 0;
};

// Three epochs of the folder, an evaluation after each, the steps queued back to back.
TrainedRun train(TrainConfig config, bool cuda_graph, const TrainTest& data) {
  config.cuda_graph = cuda_graph;
  reset_startup_times();
  testing::SoloCommunicator comm;
  auto engine = make_cuda_engine(config, data.train, data.test, comm, 0, 1);
  const DistributedSampler sampler(data.train.size(), 1, 0, true, config.seed, false);
  std::vector<int64_t> test_indices(static_cast<size_t>(data.test.size()));
  std::iota(test_indices.begin(), test_indices.end(), int64_t{0});
  TrainedRun run;
  int64_t step = 0;
  for (int epoch = 0; epoch < 3; ++epoch) {
    uint64_t position = 0;
    for (const auto& batch : split_batches(sampler.indices(epoch), config.batch_size, false)) {
      engine->train_step(batch, StepInfo{epoch, step++, position, config.lr});
      position += batch.size();
    }
    const EvalTotals test = engine->evaluate(test_indices);
    run.test_losses.push_back(test.loss_sum / static_cast<double>(test.count));
  }
  run.params = engine->run_state().save().params;
  run.capture_seconds = startup_seconds(StartupPart::graph_capture);
  reset_startup_times();
  return run;
}

TEST_F(GpuDecodeInPlace, GraphedStepsTrainAsEagerSteps) {
  SKIP_WITHOUT_GPU();
  const TrainTest data = folder();
  TrainConfig config;
  config.model = "resnet18";
  config.device = Device::Cuda;
  config.input = InputSource::Host;
  config.decode = ImageDecoding::Gpu;
  config.image_size = kSize;
  config.val_resize = kSize + 4;
  config.precision = Precision::FP32;
  config.deterministic = true;
  config.autotune = false;
  config.plan_cache = "";  // nothing read or written outside the test
  config.batch_size = kBatch;
  config.eval_batch_size = kBatch;
  config.workers = 2;
  config.lr = 0.01;
  config.seed = kSeed;
  const TrainedRun graph = train(config, true, data);
  const TrainedRun eager = train(config, false, data);
  EXPECT_GT(graph.capture_seconds, 0.0) << "the graphed run captured its steps";
  ASSERT_EQ(graph.params.size(), eager.params.size());
  EXPECT_LT(testing::relative_l2(graph.params, eager.params), 1e-5) << "the parameters after three epochs";
  ASSERT_EQ(graph.test_losses.size(), eager.test_losses.size());
  for (size_t e = 0; e < eager.test_losses.size(); ++e)
    EXPECT_NEAR(graph.test_losses[e], eager.test_losses[e], 1e-4 * std::abs(eager.test_losses[e])) << "epoch " << e;
}

}  // namespace
}  // namespace sb
