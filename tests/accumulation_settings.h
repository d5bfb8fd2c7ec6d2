// The gradient-accumulation tests' settings, shared by the CPU engine's (tests/mpi/
// test_gradient_accumulation.cpp) and the CUDA engine's (tests/gpu/mpi/test_gpu_gradient_accumulation.cpp).
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <string>

#include "data/synthetic.h"
#include "train/train_config.h"

namespace sb::testing {

inline constexpr int64_t kMicroBatch = 8;
inline constexpr int kAccumulate = 3;
// An epoch's tail in the tests: 2.5 micro-batches (two full ones and a half), fewer than kAccumulate.
inline constexpr int64_t kTailSamples = kMicroBatch * 5 / 2;

struct AccumulationCase {
  const char* model;
  SyntheticShape shape;
  bool dropout;
  const char* name;  // of the test instance
};
inline void PrintTo(const AccumulationCase& c, std::ostream* out) { *out << c.name; }
inline std::string case_name(const ::testing::TestParamInfo<AccumulationCase>& info) { return info.param.name; }

// SGD with momentum at a rate that moves the parameters well beyond the tolerances in a few steps.
inline TrainConfig accumulation_config(const AccumulationCase& c, int64_t batch, int accumulate) {
  TrainConfig config;
  config.model = c.model;
  config.dropout = c.dropout;
  config.optimizer = OptimizerKind::Sgd;
  config.lr = 0.05;
  config.momentum = 0.9;
  config.seed = 7;
  config.batch_size = batch;
  config.accumulate_steps = accumulate;
  config.eval_batch_size = 16;
  return config;
}

}  // namespace sb::testing
