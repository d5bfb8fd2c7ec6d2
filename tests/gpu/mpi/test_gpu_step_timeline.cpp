// The CUDA engine's step timeline on 2 ranks: the phases (backward_overlap included) add up to the step,
// each bucket becomes ready inside backward and in launch order, the rank's arrival is its last bucket's
// ready time, each all-reduce lies inside the step, and a traced run writes the all-reduce track and
// records the buckets' ready times. Runs under mpiexec -np 2 and skips unless every rank has a GPU of its
// own.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <regex>
#include <string>

#include "comm/mpi_communicator.h"
#include "data/sampler.h"
#include "data/synthetic.h"
#include "metrics/chrome_trace.h"
#include "train/engines/cuda/cuda_engine.h"
#include "train/engines/cuda/device_info.h"
#include "train/engines/micro_batches.h"
#include "train/loop/trainer.h"

namespace sb {
namespace {

// cudaEventElapsedTime resolves about 0.5 us; sums of a few differences stay within this.
constexpr double kEventResolution = 5e-6;

TrainConfig small_buckets_config() {
  TrainConfig config;
  config.model = "mnist-cnn";
  config.device = Device::Cuda;
  config.batch_size = 16;     // per rank
  config.bucket_mib = 0.05;   // several buckets, so that some all-reduces run beside backward
  config.cuda_graph = true;   // the events must work inside the captured graph too
  config.epochs = 1;
  return config;
}

// One rank all-reduces nothing and has no buckets (docs/architecture.md): the timeline needs two.
bool two_ranks_with_a_gpu_each(MpiCommunicator& world) {
  return world.size() >= 2 && world.allreduce_min(visible_gpu_count()) >= world.size();
}

void expect_consistent(const PhaseTimes& t, int64_t step) {
  const StepTimeline& line = t.timeline;
  ASSERT_TRUE(line.on_device()) << "step " << step;
  const double step_s = line.ends[kOptimizerEnd];
  const double phases = std::accumulate(std::begin(t.seconds), std::end(t.seconds), 0.0);
  EXPECT_NEAR(phases, step_s, kEventResolution) << "step " << step;
  EXPECT_GE(t.seconds[kPhaseBackwardOverlap], 0.0);
  EXPECT_GE(t.seconds[kPhaseBackward], -kEventResolution);
  ASSERT_GT(line.buckets.size(), 1u) << "the plan should have several buckets";
  double previous_ready = 0;
  for (size_t b = 0; b < line.buckets.size(); ++b) {
    const BucketSpan& bucket = line.buckets[b];
    EXPECT_GE(bucket.ready_s, previous_ready - kEventResolution) << "step " << step << " bucket " << b;
    EXPECT_GE(bucket.ready_s, line.ends[kForwardEnd] - kEventResolution) << "step " << step << " bucket " << b;
    EXPECT_LE(bucket.ready_s, line.ends[kBackwardEnd] + kEventResolution) << "step " << step << " bucket " << b;
    EXPECT_GT(bucket.bytes, 0);
    // The all-reduce ends after its bucket is ready and before the compute stream's wait ends.
    EXPECT_GE(bucket.end_s, bucket.ready_s - kEventResolution) << "step " << step << " bucket " << b;
    EXPECT_LE(bucket.end_s, line.ends[kCommEnd] + kEventResolution) << "step " << step << " bucket " << b;
    previous_ready = bucket.ready_s;
  }
  // The rank arrives at its last collective when its last bucket is ready: inside backward, on its clock.
  EXPECT_NEAR(t.arrival_s, line.buckets.back().ready_s, kEventResolution) << "step " << step;
  EXPECT_LE(t.arrival_s, line.ends[kBackwardEnd] + kEventResolution) << "step " << step;
}

TEST(GpuStepTimeline, PhasesAddUpAndBucketsLieInsideTheStep) {
  auto world = MpiCommunicator::world();
  if (!two_ranks_with_a_gpu_each(*world)) GTEST_SKIP() << "needs 2 ranks or more, each with a GPU of its own";
  const TrainTest data = make_synthetic(SyntheticShape{1, 28, 28, 10}, 512, 64, 5);
  const TrainConfig config = small_buckets_config();
  auto engine = make_cuda_engine(config, data.train, data.test, *world, world->rank(), world->size());
  DistributedSampler sampler(engine->describe().train_size, world->size(), world->rank(), true, config.seed, false);
  const auto batches = step_batches(sampler.indices(0), config.batch_size, 1, false);
  int64_t timed = 0;
  uint64_t position = 0;
  for (size_t k = 0; k < batches.size(); ++k) {
    const PhaseTimes t = engine->train_step(batches[k], StepInfo{0, static_cast<int64_t>(k), position, config.lr});
    position += batches[k].size();
    if (t.valid) expect_consistent(t, timed++);
  }
  engine->synchronize();
  const PhaseTimes last = engine->measurements().drain_step_times();
  ASSERT_TRUE(last.valid);
  expect_consistent(last, timed++);
  EXPECT_EQ(timed, static_cast<int64_t>(batches.size()));
}

TEST(GpuStepTimeline, TracedRunShowsAllReducesAndRecordsReadyTimes) {
  auto world = MpiCommunicator::world();
  if (!two_ranks_with_a_gpu_each(*world)) GTEST_SKIP() << "needs 2 ranks or more, each with a GPU of its own";
  const TrainTest data = make_synthetic(SyntheticShape{1, 28, 28, 10}, 512, 64, 5);
  TrainConfig config = small_buckets_config();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "sb-gpu-step-timeline";
  if (world->rank() == 0) std::filesystem::create_directories(dir);
  world->barrier();
  config.trace = dir.string();
  auto engine = make_cuda_engine(config, data.train, data.test, *world, world->rank(), world->size());
  const RunSummary run = train({config, *world, *engine});
  ASSERT_EQ(run.epochs_run, 1);
  const std::vector<double>& ready = run.epochs[0].bucket_ready_s;
  ASSERT_GT(ready.size(), 1u);
  for (size_t b = 0; b < ready.size(); ++b) {
    EXPECT_GE(ready[b], 0.0) << b;
    if (b > 0) {
      EXPECT_GE(ready[b], ready[b - 1] - kEventResolution) << b;
    }
  }
  EXPECT_GT(run.epochs[0].phases_max.seconds[kPhaseBackward] + run.epochs[0].phases_max.seconds[kPhaseBackwardOverlap], 0.0);

  std::ifstream in(trace_path(config.trace, world->rank()));
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  // Every all-reduce span lies within the span of some step: between a data phase's start and the
  // following optimizer phase's end on the step track.
  const std::regex span(R"re("name":"([a-z_]+|bucket \d+)","cat":"(step|allreduce)","ph":"X","ts":([0-9.]+),"dur":([0-9.]+))re");
  std::vector<std::pair<double, double>> steps;
  std::vector<std::pair<double, double>> allreduces;
  double step_begin = -1;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), span); it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1];
    const double ts = std::stod((*it)[3]), dur = std::stod((*it)[4]);
    if (name == "data") step_begin = ts;
    if (name == "optimizer") steps.emplace_back(step_begin, ts + dur);
    if ((*it)[2] == "allreduce") allreduces.emplace_back(ts, ts + dur);
  }
  ASSERT_FALSE(steps.empty());
  ASSERT_FALSE(allreduces.empty());
  constexpr double kResolutionUs = kEventResolution * 1e6;
  for (const auto& [begin, end] : allreduces) {
    const bool inside = std::any_of(steps.begin(), steps.end(), [&](const auto& s) {
      return begin >= s.first - kResolutionUs && end <= s.second + kResolutionUs;
    });
    EXPECT_TRUE(inside) << "all-reduce span [" << begin << ", " << end << "] us lies in no step";
  }
  world->barrier();
  if (world->rank() == 0) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sb
