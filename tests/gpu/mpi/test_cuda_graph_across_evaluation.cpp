// The captured training step survives evaluation only while no buffer it uses has moved. The
// first evaluation, with a larger batch than training, grows the layers' buffers, so the graph must be
// captured again; the second allocates nothing, so the graph is kept and replayed. Either way the steps
// must equal eager steps: 2 ranks with NCCL, dropout on (masks drawn from the step in device memory),
// deterministic fp32. Runs under mpiexec -np 2 and skips unless every rank has a GPU of its own.
#include <gtest/gtest.h>

#include <cmath>

#include "comm/mpi_communicator.h"
#include "data/sampler.h"
#include "data/synthetic.h"
#include "relative_l2.h"
#include "train/engines/cuda/cuda_engine.h"
#include "train/engines/cuda/device_info.h"

namespace sb {
namespace {

struct Trace {
  std::vector<double> train_losses, test_losses;
  std::vector<float> params;
};

Trace train_and_evaluate(TrainConfig config, bool cuda_graph, const TrainTest& data, Communicator& comm) {
  config.cuda_graph = cuda_graph;
  auto engine = make_cuda_engine(config, data.train, data.test, comm, comm.rank(), comm.size());
  DistributedSampler sampler(data.train.size(), comm.size(), comm.rank(), true, config.seed, false);
  const auto batches = split_batches(sampler.indices(0), config.per_rank_batch(comm.size()), false);
  DistributedSampler test_sampler(data.test.size(), comm.size(), comm.rank(), false, config.seed, false);
  Trace t;
  uint64_t position = 0;
  int step = 0;
  for (int round = 0; round < 3; ++round) {
    for (int k = 0; k < 3; ++k, ++step) {
      engine->train_step(batches[static_cast<size_t>(step)], StepInfo{0, step, position, config.lr});
      position += batches[static_cast<size_t>(step)].size();
      engine->synchronize();
      const EvalTotals totals = engine->train_totals(TotalsRead::Take);
      t.train_losses.push_back(totals.loss_sum / static_cast<double>(totals.count));
    }
    const EvalTotals test = engine->evaluate(test_sampler.indices(0));
    t.test_losses.push_back(test.loss_sum / static_cast<double>(test.count));
  }
  t.params = engine->run_state().save().params;
  return t;
}

TEST(CudaGraphAcrossEvaluation, GraphStepsEqualEagerStepsAroundEvaluations) {
  auto world = MpiCommunicator::world();
  if (world->allreduce_min(visible_gpu_count()) < world->size()) GTEST_SKIP() << "needs one GPU per rank";
  const TrainTest data = make_synthetic(SyntheticShape{1, 28, 28, 10}, 256, 64, 5);
  TrainConfig config;
  config.model = "mnist-cnn";  // has dropout
  config.device = Device::Cuda;
  config.precision = Precision::FP32;
  config.deterministic = true;
  config.dropout = true;
  config.batch_size = 8;  // per rank (weak scaling)
  config.eval_batch_size = 32;  // larger than the training batch: the first evaluation grows buffers
  config.optimizer = OptimizerKind::Sgd;
  config.lr = 0.02;
  config.momentum = 0.9;
  config.seed = 9;
  const Trace graph = train_and_evaluate(config, true, data, *world);
  const Trace eager = train_and_evaluate(config, false, data, *world);
  for (size_t k = 0; k < eager.train_losses.size(); ++k)
    EXPECT_NEAR(graph.train_losses[k], eager.train_losses[k], 1e-5 * std::fabs(eager.train_losses[k])) << "step " << k;
  for (size_t k = 0; k < eager.test_losses.size(); ++k)
    EXPECT_NEAR(graph.test_losses[k], eager.test_losses[k], 1e-5 * std::fabs(eager.test_losses[k])) << "evaluation " << k;
  EXPECT_LT(testing::relative_l2(graph.params, eager.params), 1e-5) << "parameters after 9 steps and 3 evaluations";
}

}  // namespace
}  // namespace sb
