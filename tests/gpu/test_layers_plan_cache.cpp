// The cuDNN plan cache: one plan per key, the deterministic mode (no NONDETERMINISTIC engine, bitwise
// repeatable gradients), the rank-agreement hook (a second "rank" obeys the first one's choices), and
// autotuning on versus off.
#include "test_layers_support.h"

#include <cstring>
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

TEST(CudaPlanCache, SecondRankObeysTheFirstRanksChoices) {
  SKIP_WITHOUT_GPU();
  const Precision& p = kPrecisions[2];  // bf16: the most engines to choose from
  for (Layout layout : kLayouts) {
    std::map<std::string, int> rank0_choices;
    {
      cuda::Context rank0(options_for(p, layout));
      rank0.plans().set_agreement([&](const std::string& key, int local) {
        EXPECT_EQ(rank0_choices.count(key), 0u) << "agreement asked twice for " << key;
        rank0_choices[key] = local;
        return local;
      });
      ConvRig(rank0).step();
      for (const auto& r : rank0.plans().reports()) EXPECT_EQ(r.choice, rank0_choices.at(r.key));
    }
    cuda::ContextOptions o = options_for(p, layout);
    o.autotune = false;  // left alone it would take the heuristics' first configuration
    cuda::Context rank1(o);
    int asked = 0;
    rank1.plans().set_agreement([&](const std::string& key, int) {
      ++asked;
      return rank0_choices.at(key);  // what a broadcast from rank 0 would deliver
    });
    ConvRig(rank1).step();
    EXPECT_EQ(asked, static_cast<int>(rank0_choices.size()));
    for (const auto& r : rank1.plans().reports()) {
      EXPECT_TRUE(r.ok) << r.key;
      EXPECT_EQ(r.choice, rank0_choices.at(r.key)) << r.key;
    }
    print_plans(rank1, label(p, layout, "rank 1 (agreed)"));
  }
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
