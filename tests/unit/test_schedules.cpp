// Learning-rate schedules against values worked out by hand (and re-derived in double here) at several
// epochs and steps, including the boundaries of each phase; the linear scaling rule; factory errors.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>
#include <string>

#include "core/error.h"
#include "optim/schedule.h"
#include "optim/schedule_factory.h"

namespace sb {
namespace {

constexpr double kTol = 1e-12;

TEST(ConstantLr, SameEverywhere) {
  std::mt19937_64 rng(1);
  const double base = std::uniform_real_distribution<double>(0.01, 1.0)(rng);
  ConstantLr s(base);
  EXPECT_STREQ(s.name(), "constant");
  EXPECT_EQ(s.base_lr(), base);
  EXPECT_EQ(s.lr(0, 0, 10), base);
  EXPECT_EQ(s.lr(3, 9, 10), base);
  EXPECT_EQ(s.lr(1000, 0, 1), base);
}

TEST(StepLr, LiteralValuesAtBoundaries) {
  // base 0.1, gamma 0.5 every 3 epochs.
  StepLr s(0.1, 3, 0.5);
  EXPECT_NEAR(s.lr(0, 0, 7), 0.1, kTol);
  EXPECT_NEAR(s.lr(2, 6, 7), 0.1, kTol);  // last step before the first decay
  EXPECT_NEAR(s.lr(3, 0, 7), 0.05, kTol);
  EXPECT_NEAR(s.lr(5, 6, 7), 0.05, kTol);
  EXPECT_NEAR(s.lr(6, 0, 7), 0.025, kTol);
  EXPECT_NEAR(s.lr(9, 3, 7), 0.0125, kTol);
}

TEST(StepLr, RandomParametersEveryEpoch) {
  std::mt19937_64 rng(2);
  const double base = std::uniform_real_distribution<double>(0.01, 1.0)(rng);
  const double gamma = std::uniform_real_distribution<double>(0.1, 0.9)(rng);
  const int64_t step_size = 4;
  StepLr s(base, step_size, gamma);
  for (int64_t epoch = 0; epoch < 20; ++epoch) {
    double expected = base;
    for (int64_t k = 0; k < epoch / step_size; ++k) expected *= gamma;
    EXPECT_NEAR(s.lr(epoch, 0, 5), expected, kTol) << epoch;
    EXPECT_NEAR(s.lr(epoch, 4, 5), expected, kTol) << epoch;  // constant within an epoch
  }
}

TEST(WarmupCosineLr, LiteralValuesAtPhaseBoundaries) {
  // base 0.4, min 0.01, start factor 0.1; 2 warm-up epochs of 10 total, 5 steps each: W = 10, T = 50.
  WarmupCosineLr s(0.4, CosineConfig{2.0, 10, 0.1, 0.01});
  EXPECT_STREQ(s.name(), "cosine");
  EXPECT_NEAR(s.lr(0, 0, 5), 0.04, kTol);                 // s = 0: start_factor * base
  EXPECT_NEAR(s.lr(1, 0, 5), 0.4 * (0.1 + 0.9 * 0.5), kTol);  // s = 5: half-way through the warm-up
  EXPECT_NEAR(s.lr(1, 4, 5), 0.4 * (0.1 + 0.9 * 0.9), kTol);  // s = 9: last warm-up step
  EXPECT_NEAR(s.lr(2, 0, 5), 0.4, kTol);                  // s = 10: peak
  EXPECT_NEAR(s.lr(6, 0, 5), 0.01 + 0.39 * 0.5, kTol);    // s = 30: half-way through the cosine
  EXPECT_NEAR(s.lr(9, 4, 5), 0.01 + 0.39 * 0.5 * (1 + std::cos(std::numbers::pi * 39.0 / 40.0)), kTol);  // s = 49
  EXPECT_NEAR(s.lr(10, 0, 5), 0.01, kTol);                // past the end: min
  EXPECT_NEAR(s.lr(12, 3, 5), 0.01, kTol);
}

TEST(WarmupCosineLr, RandomParametersEveryStep) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double base = 0.05 + u(rng), min_lr = 0.01 * u(rng) + 1e-4, f = 0.5 * u(rng) + 0.01;
  const int64_t spe = 7, epochs = 6;
  WarmupCosineLr s(base, CosineConfig{1.5, epochs, f, min_lr});
  const int64_t W = 11, T = 42;  // round(1.5 * 7) = 11 (10.5 rounds away from zero), 6 * 7
  double previous = 0;
  for (int64_t step = 0; step < T + spe; ++step) {
    double expected;
    if (step < W) expected = base * f + (base - base * f) * double(step) / W;
    else if (step < T) expected = min_lr + (base - min_lr) * (std::cos(std::numbers::pi * double(step - W) / (T - W)) + 1) / 2;
    else expected = min_lr;
    const double actual = s.lr(step / spe, step % spe, spe);
    EXPECT_NEAR(actual, expected, kTol) << step;
    if (step > 0 && step <= W) {
      EXPECT_GT(actual, previous) << step;  // rises through the warm-up
    }
    if (step > W && step < T) {
      EXPECT_LT(actual, previous) << step;  // then falls
    }
    previous = actual;
  }
}

TEST(WarmupCosineLr, NoWarmupAndZeroStartFactor) {
  WarmupCosineLr no_warmup(0.2, CosineConfig{0.0, 4, 0.0, 0.0});
  EXPECT_NEAR(no_warmup.lr(0, 0, 10), 0.2, kTol);
  EXPECT_NEAR(no_warmup.lr(2, 0, 10), 0.1, kTol);
  EXPECT_NEAR(no_warmup.lr(3, 9, 10), 0.1 * (1 + std::cos(std::numbers::pi * 39.0 / 40.0)), kTol);
  WarmupCosineLr from_zero(0.2, CosineConfig{1.0, 4, 0.0, 0.0});
  EXPECT_EQ(from_zero.lr(0, 0, 10), 0.0);
  EXPECT_NEAR(from_zero.lr(0, 3, 10), 0.06, kTol);
}

TEST(WarmupCosineLr, PureFunctionOverSteps) {
  EXPECT_NEAR(warmup_cosine_lr(1.0, 0.0, 0.0, 0, 4, 8), 0.0, kTol);
  EXPECT_NEAR(warmup_cosine_lr(1.0, 0.0, 0.0, 2, 4, 8), 0.5, kTol);
  EXPECT_NEAR(warmup_cosine_lr(1.0, 0.0, 0.0, 4, 4, 8), 1.0, kTol);
  EXPECT_NEAR(warmup_cosine_lr(1.0, 0.0, 0.0, 6, 4, 8), 0.5, kTol);
  EXPECT_NEAR(warmup_cosine_lr(1.0, 0.0, 0.0, 8, 4, 8), 0.0, kTol);
  EXPECT_NEAR(warmup_cosine_lr(1.0, 0.2, 0.5, 1, 4, 8), 0.625, kTol);
  EXPECT_NEAR(warmup_cosine_lr(1.0, 0.2, 0.5, 100, 4, 8), 0.2, kTol);
}

TEST(LinearScaling, MultipliesByWorldSize) {
  EXPECT_NEAR(linear_scaled_lr(0.1, 1), 0.1, kTol);
  EXPECT_NEAR(linear_scaled_lr(0.1, 8), 0.8, kTol);
  EXPECT_NEAR(linear_scaled_lr(0.025, 4), 0.1, kTol);
  EXPECT_THROW(linear_scaled_lr(0.1, 0), std::invalid_argument);
}

TEST(LrSchedule, RejectsBadPositions) {
  ConstantLr s(0.1);
  EXPECT_THROW(s.lr(-1, 0, 10), std::invalid_argument);
  EXPECT_THROW(s.lr(0, 10, 10), std::invalid_argument);
  EXPECT_THROW(s.lr(0, -1, 10), std::invalid_argument);
  EXPECT_THROW(s.lr(0, 0, 0), std::invalid_argument);
}

TEST(ScheduleFactory, BuildsEachByName) {
  ScheduleOptions o;
  o.total_epochs = 10;
  EXPECT_STREQ(make_schedule("none", 0.1, o)->name(), "constant");
  EXPECT_STREQ(make_schedule("constant", 0.1, o)->name(), "constant");
  EXPECT_STREQ(make_schedule("Cosine", 0.1, o)->name(), "cosine");
  o.step_size = 2;
  o.gamma = 0.3;
  auto step = make_schedule("step", 0.1, o);
  EXPECT_STREQ(step->name(), "step");
  EXPECT_NEAR(step->lr(2, 0, 1), 0.03, kTol);
  o.warmup_epochs = 1;
  o.warmup_start_factor = 0.5;
  o.min_lr = 0.001;
  auto cosine = make_schedule("cosine", 0.1, o);
  EXPECT_NEAR(cosine->lr(0, 0, 4), 0.05, kTol);
  EXPECT_NEAR(cosine->lr(1, 0, 4), 0.1, kTol);
  EXPECT_NEAR(cosine->lr(10, 0, 4), 0.001, kTol);
}

TEST(ScheduleFactory, UnknownNameListsValidOnes) {
  try {
    make_schedule("linear", 0.1, ScheduleOptions{});
    FAIL() << "unknown schedule accepted";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "Unknown learning-rate schedule 'linear'; valid schedules are none, constant, step, cosine.");
  }
}

TEST(ScheduleFactory, RejectsBadOptions) {
  ScheduleOptions o;
  o.total_epochs = 10;
  try {
    make_schedule("constant", -0.1, o);
    FAIL() << "negative learning rate accepted";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "The learning rate must be finite and >= 0, got -0.1.");
  }
  ScheduleOptions bad = o;
  bad.step_size = 0;
  EXPECT_THROW(make_schedule("step", 0.1, bad), UserError);
  bad = o;
  bad.gamma = 0.0;
  EXPECT_THROW(make_schedule("step", 0.1, bad), UserError);
  bad = o;
  bad.total_epochs = 0;
  EXPECT_THROW(make_schedule("cosine", 0.1, bad), UserError);  // the run's length is required
  bad = o;
  bad.warmup_epochs = 11;
  EXPECT_THROW(make_schedule("cosine", 0.1, bad), UserError);
  bad = o;
  bad.warmup_start_factor = 1.5;
  EXPECT_THROW(make_schedule("cosine", 0.1, bad), UserError);
  bad = o;
  bad.min_lr = 0.2;
  EXPECT_THROW(make_schedule("cosine", 0.1, bad), UserError);
}

}  // namespace
}  // namespace sb
