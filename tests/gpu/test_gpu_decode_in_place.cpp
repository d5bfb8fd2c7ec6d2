// --decode gpu leaves each batch where nvJPEG's crop kernel wrote it, in its ring slot's device buffer, and
// the step reads it there (data/cuda/host_input.h). A ring buffer is not handed to the decoders again until
// the step that read it has run; the engine captures a step graph per slot and ring buffer and replays
// the one of the batch staged, so training with the graphs gives the parameters of eager steps. Built only
// with nvJPEG; skips without a GPU.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <set>
#include <thread>
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

// Holds a stream at a host function until release(): the work queued behind it waits.
class StreamGate {
 public:
  explicit StreamGate(cudaStream_t stream) {
    CHECK_CUDA(cudaLaunchHostFunc(stream, [](void* open) {
      while (!static_cast<std::atomic<bool>*>(open)->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }, &open_));
  }
  ~StreamGate() { release(); }
  void release() { open_ = true; }

 private:
  std::atomic<bool> open_{false};
};

TEST_F(GpuDecodeInPlace, ARingBufferIsNotDecodedIntoUntilTheStepThatReadItHasRun) {
  SKIP_WITHOUT_GPU();
  const TrainTest data = folder();
  const cuda::WaitForEvent wait = [](const cuda::CudaEvent& e) { CHECK_CUDA(cudaEventSynchronize(e.get())); };
  const cuda::CudaStream compute = cuda::CudaStream::create_non_blocking();
  cuda::HostInput input(data.train, data.test, gpu_decode_options(), wait);
  const int buffers = input.training_buffers();
  ASSERT_GT(buffers, cuda::kInputSlots) << "room for the batches built ahead beside those the steps hold";

  // The batches in the order the pipeline predicts them, so that each is built ahead.
  BatchSchedule schedule(data.train.size(), 1, 0, kSeed, false, kBatch, shard_sizes(data.train));
  ScheduledBatch next{0, 0, 0};
  const auto stage = [&](int64_t step) {
    const int slot = static_cast<int>(step % cuda::kInputSlots);
    input.stage_training(slot, schedule.indices(next), static_cast<int>(next.epoch), next.first_position, compute.get());
    const int buffer = input.staged_buffer(slot);
    const cuda::DeviceTensor x = input.input(slot, kBatch);
    EXPECT_EQ(x.data, input.training_batch(slot, buffer, kBatch, nullptr, {}, compute.get()).data)
        << "the staged batch is the one its buffer's graph reads";
    input.consumed(slot, compute.get());
    next = schedule.after(next);
    return buffer;
  };

  StreamGate gate(compute.get());  // no step has run: every buffer staged is still held
  std::set<int> held;
  for (int64_t step = 0; step < buffers; ++step) {
    const int buffer = stage(step);
    EXPECT_TRUE(held.insert(buffer).second) << "step " << step << " got buffer " << buffer << ", still held by an earlier step";
  }
  gate.release();
  std::set<int> reused;
  for (int64_t step = buffers; step < 3 * buffers; ++step) reused.insert(stage(step));
  compute.synchronize();
  EXPECT_EQ(reused, held) << "once the steps have run, their buffers come back";
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
