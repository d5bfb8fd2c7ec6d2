// Gradient accumulation's shared rules (train/engines/micro_batches.h): which samples make each optimizer step,
// the tail of an epoch, the micro-batches of a step, their loss weights and their dropout keys.
#include <gtest/gtest.h>

#include <numeric>
#include <set>
#include <stdexcept>
#include <vector>

#include "data/sampler.h"
#include "train/engines/micro_batches.h"

namespace sb {
namespace {

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), int64_t{0});
  return v;
}

using Steps = std::vector<std::vector<int64_t>>;

TEST(MicroBatches, AStepIsKConsecutiveMicroBatches) {
  EXPECT_EQ(step_batches(iota(8), 2, 2, false), (Steps{{0, 1, 2, 3}, {4, 5, 6, 7}}));
}

TEST(MicroBatches, OneStepPerBatchWithoutAccumulation) {
  EXPECT_EQ(step_batches(iota(11), 3, 1, false), split_batches(iota(11), 3, false));
  EXPECT_EQ(step_batches(iota(11), 3, 1, true), split_batches(iota(11), 3, true));
}

// The epoch stays one pass: a tail of fewer than K micro-batches (here 1.5 of K = 2) is one smaller step.
TEST(MicroBatches, TheTailOfAnEpochIsOneSmallerStep) {
  EXPECT_EQ(step_batches(iota(11), 3, 2, false), (Steps{{0, 1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}}));
  EXPECT_EQ(step_batches(iota(10), 2, 3, false), (Steps{{0, 1, 2, 3, 4, 5}, {6, 7, 8, 9}}));
}

// --drop-last drops the last incomplete micro-batch (as it drops the last incomplete batch), never a step.
TEST(MicroBatches, DropLastDropsOnlyTheIncompleteMicroBatch) {
  EXPECT_EQ(step_batches(iota(11), 3, 2, true), (Steps{{0, 1, 2, 3, 4, 5}, {6, 7, 8}}));
}

TEST(MicroBatches, AStepSplitsBackIntoItsMicroBatches) {
  const std::vector<int64_t> step = {7, 3, 5, 1, 9};
  const auto micro = micro_batches(step, 2, 3);
  ASSERT_EQ(micro.size(), 3u);
  EXPECT_EQ(std::vector<int64_t>(micro[0].begin(), micro[0].end()), (std::vector<int64_t>{7, 3}));
  EXPECT_EQ(std::vector<int64_t>(micro[2].begin(), micro[2].end()), (std::vector<int64_t>{9}));
  EXPECT_EQ(micro_batches(step, 8, 3).size(), 1u);
  EXPECT_EQ(micro_batches(step, 2, 1).size(), 1u) << "without accumulation a step is one batch, whatever its size";
  EXPECT_THROW(micro_batches(step, 0, 3), std::invalid_argument);
  EXPECT_THROW(step_batches(iota(4), 2, 0, false), std::invalid_argument);
}

// Weighted by their share of the step's samples, the micro-batches' mean losses add up to the step's.
TEST(MicroBatches, TheWeightsAreEachMicroBatchsShareOfTheStep) {
  EXPECT_EQ(micro_batch_weight(16, 64), 0.25f);
  EXPECT_EQ(micro_batch_weight(5, 5), 1.0f);
  EXPECT_FLOAT_EQ(micro_batch_weight(3, 7) + micro_batch_weight(3, 7) + micro_batch_weight(1, 7), 1.0f);
}

TEST(MicroBatches, EveryMicroBatchOfARunHasItsOwnDropoutKey) {
  std::set<uint64_t> keys;
  for (int64_t step = 0; step < 5; ++step)
    for (size_t m = 0; m < 3; ++m) EXPECT_TRUE(keys.insert(dropout_step(step, 3, m)).second) << step << " " << m;
  EXPECT_EQ(dropout_step(41, 1, 0), 41u) << "without accumulation the step keys its masks, as before";
}

}  // namespace
}  // namespace sb
