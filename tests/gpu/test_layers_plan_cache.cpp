// The cuDNN plan cache: one plan per key, the deterministic mode (no NONDETERMINISTIC engine, bitwise
// repeatable gradients), the rank-agreement hook (a second "rank" obeys the first one's choices),
// autotuning on versus off, and the on-disk cache (a fresh cache runs the saved choices without a
// search; a corrupt file is ignored).
#include "test_layers_support.h"


#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "nn/cuda/conv2d.h"

namespace sb::layertest {
namespace {

// One conv layer with its own buffers, for running the same step several times.
struct ConvRig {
  LayerSpec spec = conv2d("conv", 16, 32, 3, 1, 1, true);
  Shape input{8, 16, 12, 12};
  cuda::Context& ctx;
  std::unique_ptr<cuda::Layer> layer;
  std::optional<DeviceMem> params, grads, compute, x, dy;  // DeviceMem moves but does not move-assign

  explicit ConvRig(cuda::Context& c) : ctx(c) {
    const DType dt = ctx.compute_dtype();
    std::mt19937_64 rng(5);
    const auto p = case_params(spec, 5, dt, rng);
    const auto xv = normal_values(static_cast<size_t>(input.numel()), rng, dt);
    const Shape out = output_shape(spec, input);
    const auto dyv = normal_values(static_cast<size_t>(out.numel()), rng, dt);
    params.emplace(gputest::to_device(p, DType::F32));
    compute.emplace(gputest::to_device(p, dt));
    grads.emplace(p.size() * 4);
    x.emplace(gputest::to_device(to_device_order(xv, input, ctx.layout()), dt));
    dy.emplace(gputest::to_device(to_device_order(dyv, out, ctx.layout()), dt));
    layer = cuda::make_layer(spec, ctx);
    cuda::ParamViews v;
    v.params = params->as<float>();
    v.grads = grads->as<float>();
    v.compute_params = dt == DType::F32 ? params->get() : compute->get();
    v.compute = dt;
    layer->bind(v);
  }
  // One forward and backward; returns the raw gradient bytes.
  std::vector<float> step() {
    const DType dt = ctx.compute_dtype();
    cuda::DeviceTensor xt{x->get(), TensorDesc{input, dt, ctx.layout()}};
    const cuda::DeviceTensor& y = layer->forward(xt, cuda::Mode::Train);
    cuda::DeviceTensor dyt{dy->get(), TensorDesc{y.shape(), dt, ctx.layout()}};
    layer->backward(dyt);
    return gputest::download(grads->get(), grads->bytes() / 4, DType::F32);
  }
};

TEST(CudaPlanCache, DeterministicModeRepeatsBitwise) {
  SKIP_WITHOUT_GPU();
  for (const Precision& p : kPrecisions)
    for (Layout layout : kLayouts) {
      cuda::ContextOptions o = options_for(p, layout);
      o.deterministic = true;
      cuda::Context ctx(o);
      ConvRig rig(ctx);
      const auto first = rig.step();
      const size_t plans = ctx.plans().size();
      const auto second = rig.step();
      EXPECT_EQ(ctx.plans().size(), plans) << "the second step must reuse the cached plans";
      EXPECT_EQ(std::memcmp(first.data(), second.data(), first.size() * 4), 0) << label(p, layout, "wgrad repeat");
      for (const auto& r : ctx.plans().reports()) {
        EXPECT_TRUE(r.ok) << r.key << ": " << r.why;
        EXPECT_EQ(r.engine.find("nondet"), std::string::npos) << r.key << " chose " << r.engine;
      }
      print_plans(ctx, label(p, layout, "deterministic"));
    }
}

// The agreement carries one int per call: the words of each key's choice (see plan_cache.h).
TEST(CudaPlanCache, SecondRankObeysTheFirstRanksChoices) {
  SKIP_WITHOUT_GPU();
  const Precision& p = kPrecisions[2];  // bf16: the most engines to choose from
  for (Layout layout : kLayouts) {
    std::map<std::string, std::vector<int>> rank0_words;
    std::map<std::string, std::string> rank0_chosen;
    {
      cuda::Context rank0(options_for(p, layout));
      rank0.plans().set_agreement([&](const std::string& key, int local) {
        rank0_words[key].push_back(local);
        return local;
      });
      ConvRig(rank0).step();
      for (const auto& r : rank0.plans().reports()) {
        ASSERT_TRUE(r.ok) << r.key;
        const std::vector<int>& w = rank0_words.at(r.key);
        EXPECT_EQ(w.size(), static_cast<size_t>(w.at(0)) + 1) << r.key << ": the first word counts the others";
        rank0_chosen[r.key] = r.chosen;
      }
    }
    cuda::ContextOptions o = options_for(p, layout);
    o.autotune = false;  // left alone it would take the heuristics' first configuration
    cuda::Context rank1(o);
    std::map<std::string, size_t> asked;
    rank1.plans().set_agreement([&](const std::string& key, int) {
      return rank0_words.at(key).at(asked[key]++);  // what a broadcast from rank 0 would deliver
    });
    ConvRig(rank1).step();
    EXPECT_EQ(asked.size(), rank0_words.size());
    for (const auto& r : rank1.plans().reports()) {
      EXPECT_TRUE(r.ok) << r.key;
      EXPECT_EQ(asked.at(r.key), rank0_words.at(r.key).size()) << r.key;
      EXPECT_EQ(r.chosen, rank0_chosen.at(r.key)) << r.key;
    }
    print_plans(rank1, label(p, layout, "rank 1 (agreed)"));
  }
}

cuda::ContextOptions cached_options(const PlanCacheFolder& folder, bool autotune) {
  cuda::ContextOptions o = options_for(kPrecisions[2], Layout::NHWC);
  o.deterministic = true;  // so that the same engine gives the same bits in both processes' runs
  o.autotune = autotune;
  o.plan_cache_dir = folder.path.string();
  return o;
}

TEST(CudaPlanCache, AFreshCacheFindsAndRunsTheSavedChoices) {
  SKIP_WITHOUT_GPU();
  PlanCacheFolder folder;
  std::map<std::string, std::string> first_chosen;
  std::map<std::string, int> first_index;
  std::vector<float> first_grads;
  std::string path;
  {
    cuda::Context first(cached_options(folder, true));
    first_grads = ConvRig(first).step();
    for (const auto& r : first.plans().reports()) {
      ASSERT_TRUE(r.ok) << r.key << ": " << r.why;
      EXPECT_FALSE(r.cached) << r.key << ": the cache started empty";
      EXPECT_GT(r.heuristics, 0) << r.key;
      first_chosen[r.key] = r.chosen;
      first_index[r.key] = r.choice;
    }
    path = first.plans().store_path();
    print_plans(first, "searched");
  }  // saves
  ASSERT_TRUE(std::filesystem::exists(path)) << path;

  cuda::Context second(cached_options(folder, true));
  const std::vector<float> second_grads = ConvRig(second).step();
  const auto reports = second.plans().reports();
  EXPECT_EQ(reports.size(), first_chosen.size());
  for (const auto& r : reports) {
    EXPECT_TRUE(r.ok) << r.key << ": " << r.why;
    EXPECT_TRUE(r.cached) << r.key;
    EXPECT_EQ(r.heuristics, 0) << r.key << ": a hit asks no heuristics";
    EXPECT_EQ(r.built, 0) << r.key << ": a hit builds and times no candidates";
    EXPECT_EQ(r.chosen, first_chosen.at(r.key)) << r.key;
    // The configuration the search timed, not another of the heuristics' with the same engine and knobs.
    EXPECT_EQ(r.choice, first_index.at(r.key)) << r.key << ": " << r.chosen;
  }
  print_plans(second, "from the plan cache");
  ASSERT_EQ(first_grads.size(), second_grads.size());
  EXPECT_EQ(std::memcmp(first_grads.data(), second_grads.data(), first_grads.size() * 4), 0)
      << "the cached engines compute the same gradients";
}

TEST(CudaPlanCache, AnUntunedChoiceServesUntunedRunsOnly) {
  SKIP_WITHOUT_GPU();
  PlanCacheFolder folder;
  { cuda::Context untuned(cached_options(folder, false)); ConvRig(untuned).step(); }
  {
    cuda::Context tuned(cached_options(folder, true));  // searches and replaces the untuned choices
    ConvRig(tuned).step();
    for (const auto& r : tuned.plans().reports()) EXPECT_FALSE(r.cached) << r.key;
  }
  cuda::Context untuned_again(cached_options(folder, false));
  ConvRig(untuned_again).step();
  for (const auto& r : untuned_again.plans().reports()) EXPECT_TRUE(r.cached) << r.key;
}

TEST(CudaPlanCache, ACorruptCacheFileIsIgnoredWithOneWarningAndReplaced) {
  SKIP_WITHOUT_GPU();
  PlanCacheFolder folder;
  std::string path;
  { cuda::Context first(cached_options(folder, false)); ConvRig(first).step(); path = first.plans().store_path(); }
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(20);
    f.put('\x7f');  // inside the identity or the first entry: the checksum no longer matches
  }
  testing::internal::CaptureStderr();
  {
    cuda::Context second(cached_options(folder, false));
    ConvRig(second).step();
    for (const auto& r : second.plans().reports()) {
      EXPECT_TRUE(r.ok) << r.key;
      EXPECT_FALSE(r.cached) << r.key;
    }
  }
  const std::string err = testing::internal::GetCapturedStderr();
  size_t warnings = 0;
  for (size_t at = err.find("warning: cuDNN plan cache"); at != std::string::npos;
       at = err.find("warning: cuDNN plan cache", at + 1))
    ++warnings;
  EXPECT_EQ(warnings, 1u) << err;
  EXPECT_NE(err.find(path), std::string::npos) << err;

  cuda::Context third(cached_options(folder, false));  // the second one rewrote a sound file
  ConvRig(third).step();
  for (const auto& r : third.plans().reports()) EXPECT_TRUE(r.cached) << r.key;
}

TEST(CudaPlanCache, AutotuneOffBuildsOnePlanPerKey) {
  SKIP_WITHOUT_GPU();
  cuda::ContextOptions o = options_for(kPrecisions[2], Layout::NHWC);
  o.autotune = false;
  cuda::Context ctx(o);
  ConvRig(ctx).step();
  EXPECT_EQ(ctx.plans().size(), 3u);  // fprop, dgrad, wgrad
  for (const auto& r : ctx.plans().reports()) {
    EXPECT_TRUE(r.ok) << r.key;
    EXPECT_EQ(r.built, 1) << r.key;
  }
}

}  // namespace
}  // namespace sb::layertest
