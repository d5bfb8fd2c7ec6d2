// A Residual's shortcut gradient added by its main branch's first dgrad (cuDNN's dgrad with beta 1,
// ContextOptions::fuse_residual_grad): the accumulating dgrad against the plain one plus a host add, in
// fp32/tf32/bf16/fp16, NCHW and NHWC, on first use (autotuning times the candidates on the real buffers)
// and from the plan cache; Wide ResNet blocks (projection and identity shortcuts) against the CPU
// reference with the fusion on and off; and the fusion on against off on the GPU.

#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "nn/cuda/containers.h"
#include "nn/cuda/conv_ops.h"
#include "test_layers_support.h"

namespace sb::layertest {
namespace {

// The unit roundoff of the compute dtype, for the one rounding that separates the two sums.
double unit_roundoff(const Precision& p) {
  if (p.dtype == DType::BF16) return 1.0 / 256;
  if (p.dtype == DType::F16) return 1.0 / 2048;
  return 0x1p-24;
}

// The accumulating dgrad rounds a + b once, in the epilogue's fp32; the plain dgrad and the add round a to
// the compute dtype first and the sum again: per element at most u|a| + u|a + b| apart (u the unit
// roundoff), and with a and b independent of about the same size ||a|| <= ~1.5 ||a + b||, so 4u bounds the
// relative L2 difference. fp32 rounds nothing of note: the engines' summation orders (the beta-1 engine may
// be another than the beta-0 one) move the last bits, 1e-5 (as the single-layer fp32 tolerance); tf32
// engines may round the inputs to tf32 differently, hence the tf32 layer tolerance.
double sum_tolerance(const Precision& p) {
  if (p.dtype != DType::F32) return 4 * unit_roundoff(p);
  return p.tf32 ? p.tol : 1e-5;
}

// A strided 3x3 convolution of a block's first layer, batch 4: its weights, output gradient and plain dgrad.
struct DgradRig {
  const cuda::ConvGeometry g{4, 16, 10, 10, 32, 3, 3, 5, 5, 1, 2};
  const size_t nx = static_cast<size_t>(g.n * g.c * g.h * g.w);
  DType dtype;
  std::mt19937_64 rng{71};
  DeviceMem w, dy;
  std::vector<float> plain;

  DgradRig(cuda::Context& ctx, DType t)
      : dtype(t),
        w(gputest::to_device(normal_values(static_cast<size_t>(g.k * g.c * g.r * g.s), rng, t), t)),
        dy(gputest::to_device(normal_values(static_cast<size_t>(g.n * g.k * g.p * g.q), rng, t), t)) {
    DeviceMem dx(nx * dtype_size(t));
    cuda::conv_backward_data(ctx, g, dy.get(), w.get(), dx.get());
    plain = gputest::download(dx.get(), nx, t);
  }

  // The accumulating dgrad into fresh prior values, checked against the plain dgrad plus a host add (or,
  // where no engine runs it, the prior left as it was). Returns whether it added.
  bool check_accumulate(cuda::Context& ctx, const Precision& p, const std::string& name) {
    const std::vector<float> prior = normal_values(nx, rng, dtype);
    DeviceMem sum = gputest::to_device(prior, dtype);
    const bool added = cuda::conv_backward_data_accumulate(ctx, g, dy.get(), w.get(), sum.get());
    const std::vector<float> got = gputest::download(sum.get(), nx, dtype);
    if (!added) {
      EXPECT_EQ(std::memcmp(got.data(), prior.data(), nx * sizeof(float)), 0) << name << ": no engine, yet dx changed";
      print_plans(ctx, name + " (no beta-1 engine)");
      return false;
    }
    std::vector<float> want(nx);
    for (size_t i = 0; i < nx; ++i) want[i] = plain[i] + prior[i];
    const double err = gputest::rel_l2(got, want);
    std::printf("[case] %-48s rel %.3g\n", name.c_str(), err);
    EXPECT_LE(err, sum_tolerance(p)) << name;
    return true;
  }
};

std::optional<cuda::PlanReport> beta1_report(cuda::Context& ctx) {
  for (const auto& r : ctx.plans().reports())
    if (r.key.rfind("conv_dgrad", 0) == 0 && r.key.find("|beta1") != std::string::npos) return r;
  return std::nullopt;
}

TEST(CudaResidualGrad, DgradAccumulatesIntoThePriorGradient) {
  SKIP_WITHOUT_GPU();
  for (const Precision& p : kPrecisions)
    for (Layout layout : kLayouts) {
      const std::string name = label(p, layout, "dgrad beta 1");
      cuda::Context ctx(options_for(p, layout));  // autotuning on: first use times beta-1 candidates
      DgradRig rig(ctx, p.dtype);
      // Twice: the first use searches (and must leave the prior sum as it was), the second runs the cached plan.
      const bool added = rig.check_accumulate(ctx, p, name + ", first use");
      EXPECT_EQ(rig.check_accumulate(ctx, p, name + ", cached"), added) << name;
      // The WRN's configurations (16-bit NHWC) are what the fusion is for: an engine must run them.
      if (p.dtype != DType::F32 && layout == Layout::NHWC) {
        EXPECT_TRUE(added) << name << ": no beta-1 engine";
      }
      // One plan per beta: the accumulating graph's key says so, the plain one's does not.
      int plain_keys = 0, beta1_keys = 0;
      for (const auto& r : ctx.plans().reports()) {
        if (r.key.rfind("conv_dgrad", 0) != 0) continue;
        (r.key.find("|beta1") != std::string::npos ? beta1_keys : plain_keys) += 1;
      }
      EXPECT_EQ(plain_keys, 1) << name;
      EXPECT_EQ(beta1_keys, 1) << name;
    }
}

// The on-disk store keeps one choice per beta: a process that stored only the plain dgrad's choice makes
// the next search for beta 1 (not a hit on beta 0's entry), and the one after finds beta 1's own.
TEST(CudaResidualGrad, TheStoreKeepsAChoicePerBeta) {
  SKIP_WITHOUT_GPU();
  PlanCacheFolder folder;
  const Precision& p = kPrecisions[2];  // bf16
  cuda::ContextOptions o = options_for(p, Layout::NHWC);
  o.plan_cache_dir = folder.path.string();
  {
    cuda::Context plain_only(o);
    DgradRig rig(plain_only, p.dtype);
  }  // saves the plain dgrad's choice
  {
    cuda::Context second(o);
    DgradRig rig(second, p.dtype);
    ASSERT_TRUE(rig.check_accumulate(second, p, "beta 1 after a store of beta 0"));
    const std::optional<cuda::PlanReport> r = beta1_report(second);
    ASSERT_TRUE(r.has_value());
    EXPECT_FALSE(r->cached) << r->key << ": served from another beta's choice";
    EXPECT_GT(r->heuristics, 0) << r->key;
  }  // saves beta 1's choice
  cuda::Context third(o);
  DgradRig rig(third, p.dtype);
  EXPECT_TRUE(rig.check_accumulate(third, p, "beta 1 from the store"));
  const std::optional<cuda::PlanReport> r = beta1_report(third);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->cached) << r->key;
}

// The accumulating dgrad is searched whole: every configuration that builds is timed, however few
// candidates the other graphs get, while the plain dgrad keeps the cap.
TEST(CudaResidualGrad, TheAccumulatingDgradIsSearchedWhole) {
  SKIP_WITHOUT_GPU();
  const Precision& p = kPrecisions[3];  // fp16
  cuda::ContextOptions o = options_for(p, Layout::NHWC);
  o.autotune_candidates = 2;
  cuda::Context ctx(o);
  DgradRig rig(ctx, p.dtype);
  ASSERT_TRUE(rig.check_accumulate(ctx, p, "beta 1, searched whole"));
  for (const auto& r : ctx.plans().reports()) {
    if (r.key.rfind("conv_dgrad", 0) != 0) continue;
    std::printf("[plan] %s: %d built of %d proposed\n", r.key.c_str(), r.built, r.heuristics);
    if (r.key.find("|beta1|all-configs") != std::string::npos)
      EXPECT_GT(r.built, o.autotune_candidates) << r.key << ": the cap applied to the accumulating dgrad";
    else
      EXPECT_LE(r.built, o.autotune_candidates) << r.key;
  }
  ASSERT_TRUE(beta1_report(ctx).has_value());
}

// A Wide ResNet block as src/models/wide_resnet.cpp builds it: a projection shortcut where the widths differ.
LayerSpec wide_block(int64_t in, int64_t out, int64_t stride, const std::string& n = "blk") {
  LayerSpec main = sequential(n + ".main", {conv2d(n + ".conv1", in, out, 3, stride, 1, false),
                                            batchnorm2d(n + ".bn1", out), relu(n + ".relu1"),
                                            dropout(n + ".dropout", 0.3), conv2d(n + ".conv2", out, out, 3, 1, 1, false),
                                            batchnorm2d(n + ".bn2", out), relu(n + ".relu2")});
  std::vector<LayerSpec> shortcut;
  if (in != out || stride != 1) shortcut.push_back(conv2d(n + ".shortcut", in, out, 1, stride, 0, true));
  return residual(n, std::move(main), std::move(shortcut));
}

// dx and the gradients of a whole block: ReLUs flip near zero under rounding (the reasoning and the
// measurements are test_layers_bn_fused.cpp's block_grad_tolerance); fp32 stays tight.
double block_grad_tolerance(const Precision& p) { return p.dtype == DType::F32 && !p.tf32 ? p.tol : 0.1; }
// Three blocks in a row have three blocks' ReLUs that may flip: in bf16 the chain's weight gradients came
// 0.103 from the CPU's on an H200 with the fusion on and off alike (0.0981 for dx); fp32 stays tight.
double chain_grad_tolerance(const Precision& p) { return p.dtype == DType::F32 && !p.tf32 ? p.tol : 0.2; }

void fusion_off(cuda::ContextOptions& o) { o.fuse_residual_grad = false; }

// An identity block followed by a pooling layer, as in the Wide ResNet: the pooling's input gradient is a
// buffer of its own, which the block may add into.
LayerSpec identity_then_pool() { return sequential("net", {wide_block(16, 16, 1), maxpool2d("pool", 2, 2)}); }

// A projection block and two identity blocks under a pooling layer: the upper identity block adds into the
// pooling's input gradient, the lower one into that same buffer, which the upper one handed down.
LayerSpec chain_then_pool() {
  return sequential("net", {wide_block(16, 32, 1, "a"), wide_block(32, 32, 1, "b"), wide_block(32, 32, 1, "c"),
                            maxpool2d("pool", 2, 2)});
}

TEST(CudaResidualGrad, BlocksMatchTheCpuWithTheFusionOnAndOff) {
  SKIP_WITHOUT_GPU();
  struct BlockCase {
    LayerSpec spec;
    const char* what;
    double (*gradient_tolerance)(const Precision&);
  };
  const BlockCase cases[] = {{wide_block(16, 32, 2), "wrn projection block", block_grad_tolerance},
                             {identity_then_pool(), "wrn identity block + pool", block_grad_tolerance},
                             {wide_block(16, 16, 1), "wrn identity block alone", block_grad_tolerance},
                             {chain_then_pool(), "wrn projection + 2 identity + pool", chain_grad_tolerance}};
  uint64_t seed = 72;
  for (const BlockCase& b : cases) {
    LayerCase c{b.spec, Shape{4, 16, 8, 8}};
    c.stream_key = 0xb10c;
    c.step = 3;
    check_everywhere(c, std::string(b.what) + ", fused grad", seed, nullptr, b.gradient_tolerance);
    check_everywhere(c, std::string(b.what) + ", add pass", seed, fusion_off, b.gradient_tolerance);
    ++seed;
  }
}

// torchvision's bottleneck as src/models/resnet.cpp builds it: relu(bn3(conv3(...)) + shortcut(x)), with a
// 1x1 convolution + batch norm shortcut where the widths differ. Its last batch norm takes the add and the
// block's ReLU; the shortcut's batch norm runs alone on the fused kernels.
LayerSpec bottleneck_block(int64_t in, int64_t width, const std::string& n) {
  const int64_t out = 4 * width;
  LayerSpec main = sequential(n + ".main", {conv2d(n + ".conv1", in, width, 1, 1, 0, false),
                                            batchnorm2d(n + ".bn1", width), relu(n + ".relu1"),
                                            conv2d(n + ".conv2", width, width, 3, 1, 1, false),
                                            batchnorm2d(n + ".bn2", width), relu(n + ".relu2"),
                                            conv2d(n + ".conv3", width, out, 1, 1, 0, false),
                                            batchnorm2d(n + ".bn3", out)});
  std::vector<LayerSpec> shortcut;
  if (in != out)
    shortcut.push_back(sequential(n + ".downsample", {conv2d(n + ".downsample.0", in, out, 1, 1, 0, false),
                                                      batchnorm2d(n + ".downsample.1", out)}));
  return sequential(n, {residual(n + ".sum", std::move(main), std::move(shortcut)), relu(n + ".relu")});
}

// A projection bottleneck and an identity one (which adds its shortcut gradient in its first dgrad, in place:
// the block's ReLU hands it a buffer of its own), on rows of 8 and of 7 (NHWC walks those as one row of
// pixels; NCHW's fused kernels refuse h*w = 49 and the runs fall back to their separate layers).
TEST(CudaResidualGrad, BottlenecksMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  const LayerSpec net = sequential("net", {bottleneck_block(16, 8, "a"), bottleneck_block(32, 8, "b")});
  uint64_t seed = 90;
  for (int64_t side : {8, 7}) {
    LayerCase c{net, Shape{4, 16, side, side}};
    check_everywhere(c, "bottlenecks " + std::to_string(side) + "x" + std::to_string(side), seed++, nullptr,
                     chain_grad_tolerance);
  }
  cuda::Context ctx(options_for(kPrecisions[2], Layout::NHWC));
  const std::string report = cuda::fusion_report(*cuda::make_layer(net, ctx));
  EXPECT_NE(report.find("a.bn3 + residual add + relu: fused kernels"), std::string::npos) << report;
  EXPECT_NE(report.find("a.downsample.1: fused kernels"), std::string::npos) << report;
  EXPECT_NE(report.find("b.sum: shortcut gradient added by b.conv1's dgrad in place"), std::string::npos) << report;
}

// Bottlenecks whose ReLU may write its output gradient (the next block, or a pool, follows): the batch norm
// whose backward reads that gradient first masks it in place (NHWC; the ReLU layer itself under NCHW), against
// the CPU: an identity block's last one, a projection block's shortcut one.
TEST(CudaResidualGrad, TheLastBatchNormMasksTheFollowingRelusGradient) {
  SKIP_WITHOUT_GPU();
  const LayerSpec net = sequential("net", {bottleneck_block(16, 8, "a"), bottleneck_block(32, 8, "b"),
                                           maxpool2d("pool", 2, 2)});
  uint64_t seed = 94;
  for (int64_t side : {8, 7}) {
    LayerCase c{net, Shape{4, 16, side, side}};
    check_everywhere(c, "bottlenecks then pool " + std::to_string(side) + "x" + std::to_string(side), seed++,
                     nullptr, chain_grad_tolerance);
  }
  cuda::Context ctx(options_for(kPrecisions[2], Layout::NHWC));
  const std::string report = cuda::fusion_report(*cuda::make_layer(net, ctx));
  EXPECT_NE(report.find("b.sum: the following ReLU's gradient masked by b.bn3's backward"), std::string::npos)
      << report;
  // A projection block: its shortcut's batch norm reads dy first, and masks it for the main branch.
  EXPECT_NE(report.find("a.sum: the following ReLU's gradient masked by a.downsample.1's backward"), std::string::npos)
      << report;
  // The last block of a network: its ReLU's output gradient is the caller's, which it may not write (the
  // block before it still masks its own ReLU's).
  const std::string at_end = cuda::fusion_report(
      *cuda::make_layer(sequential("net", {bottleneck_block(16, 8, "a"), bottleneck_block(32, 8, "b")}), ctx));
  EXPECT_EQ(at_end.find("b.sum: the following ReLU's gradient"), std::string::npos) << at_end;
  EXPECT_NE(at_end.find("a.sum: the following ReLU's gradient masked by a.downsample.1's backward"), std::string::npos)
      << at_end;
}

// The plan report names each block whose dgrad takes the add; an identity block that is its container's
// last layer (its dy is its caller's) or under a Flatten keeps the add pass, as every block does with the
// fusion off.
TEST(CudaResidualGrad, TheReportNamesTheBlocksThatAddInTheDgrad) {
  SKIP_WITHOUT_GPU();
  const std::string a = "a: shortcut gradient added by a.conv1's dgrad (fused layers)\n";
  const std::string b = "b: shortcut gradient added by b.conv1's dgrad in place (fused layers)\n";
  const std::string c = "c: shortcut gradient added by c.conv1's dgrad in place (fused layers)\n";
  cuda::ContextOptions o = options_for(kPrecisions[2], Layout::NHWC);
  cuda::Context ctx(o);
  const std::string chain = cuda::fusion_report(*cuda::make_layer(chain_then_pool(), ctx));
  EXPECT_NE(chain.find(a), std::string::npos) << chain;
  EXPECT_NE(chain.find(b), std::string::npos) << chain;
  EXPECT_NE(chain.find(c), std::string::npos) << chain;
  const LayerSpec last = sequential("net", {wide_block(16, 32, 1, "a"), wide_block(32, 32, 1, "b")});
  const std::string at_end = cuda::fusion_report(*cuda::make_layer(last, ctx));
  EXPECT_NE(at_end.find(a), std::string::npos) << at_end;
  EXPECT_EQ(at_end.find("b: shortcut gradient"), std::string::npos) << at_end;
  const LayerSpec flattened = sequential("net", {wide_block(16, 16, 1, "b"), flatten("flat")});
  const std::string under_flatten = cuda::fusion_report(*cuda::make_layer(flattened, ctx));
  EXPECT_EQ(under_flatten.find("shortcut gradient"), std::string::npos) << under_flatten;
  // A main branch that ends in a convolution: its weight gradient reads dy on the second stream.
  const LayerSpec conv_last = sequential(
      "net", {residual("d", sequential("d.main", {conv2d("d.conv1", 16, 16, 3, 1, 1, false), batchnorm2d("d.bn", 16),
                                                  relu("d.relu"), conv2d("d.conv2", 16, 16, 3, 1, 1, false)}), {}),
              maxpool2d("pool", 2, 2)});
  const std::string ends_in_conv = cuda::fusion_report(*cuda::make_layer(conv_last, ctx));
  EXPECT_EQ(ends_in_conv.find("shortcut gradient"), std::string::npos) << ends_in_conv;
  o.fuse_residual_grad = false;
  cuda::Context off(o);
  const std::string none = cuda::fusion_report(*cuda::make_layer(chain_then_pool(), off));
  EXPECT_EQ(none.find("shortcut gradient"), std::string::npos) << none;
}

struct Step {
  std::vector<float> y, dx, grads;
  std::string report;
};

// One training step of `spec` on the GPU from seeded parameters, input and output gradient.
Step gpu_step(const LayerSpec& spec, const Shape& input, const cuda::ContextOptions& o, uint64_t seed) {
  cuda::Context ctx(o);
  const DType dtype = o.compute;
  std::mt19937_64 rng(seed);
  const std::vector<float> params = case_params(spec, seed, dtype, rng);
  const std::vector<float> buffers = case_buffers(spec, rng);
  const std::vector<float> x = normal_values(static_cast<size_t>(input.numel()), rng, dtype);
  auto layer = cuda::make_layer(spec, ctx);
  const size_t np = params.size();
  DeviceMem d_params = gputest::to_device(params, DType::F32), d_compute = gputest::to_device(params, dtype);
  DeviceMem d_buffers = gputest::to_device(buffers, DType::F32), d_grads(np * 4);
  d_grads.poison();
  layer->bind(layer_views(d_params, d_grads, d_compute, d_buffers, dtype));
  layer->set_random_stream(0xb10c, 3);
  DeviceMem d_x = gputest::to_device(to_device_order(x, input, o.layout), dtype);
  const cuda::DeviceTensor& y = layer->forward({d_x.get(), TensorDesc{input, dtype, o.layout}}, cuda::Mode::Train);
  Step r;
  r.y = from_device(y);
  const std::vector<float> dy = normal_values(static_cast<size_t>(y.numel()), rng, dtype);
  DeviceMem d_dy = gputest::to_device(to_device_order(dy, y.shape(), o.layout), dtype);
  r.dx = from_device(layer->backward({d_dy.get(), y.desc}));
  r.grads = gputest::download(d_grads.get(), np, DType::F32);
  r.report = cuda::fusion_report(*layer);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return r;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Without autotuning and with deterministic engines both contexts run the same kernels, except the last
// dgrad and the add of a block that takes the fusion: y and the parameter gradients (which never read dx)
// are the same bits; that block's dx differs by the one rounding of sum_tolerance. An identity block with
// no layer above it keeps its add pass (its dy is its caller's), so its dx is unchanged bit for bit.
TEST(CudaResidualGrad, FusionOnMatchesOff) {
  SKIP_WITHOUT_GPU();
  struct Case {
    LayerSpec spec;
    const char* what;
    const char* report;  // the fusion report's line with the fusion on; null: no fusion
  };
  const Case cases[] = {
      {wide_block(16, 32, 2), "projection", "blk: shortcut gradient added by blk.conv1's dgrad (fused layers)\n"},
      {identity_then_pool(), "identity + pool", "blk: shortcut gradient added by blk.conv1's dgrad in place (fused layers)\n"},
      {wide_block(16, 16, 1), "identity alone", nullptr}};
  for (const Precision& p : kPrecisions)
    for (Layout layout : kLayouts) {
      cuda::ContextOptions on = options_for(p, layout);
      on.autotune = false;
      on.deterministic = true;
      cuda::ContextOptions off = on;
      fusion_off(off);
      for (const Case& c : cases) {
        const std::string name = label(p, layout, std::string(c.what) + " on vs off");
        const Step a = gpu_step(c.spec, Shape{4, 16, 8, 8}, on, 74);
        const Step b = gpu_step(c.spec, Shape{4, 16, 8, 8}, off, 74);
        EXPECT_TRUE(same_bits(a.y, b.y)) << name << " y";
        EXPECT_TRUE(same_bits(a.grads, b.grads)) << name << " grads";
        const double dx_err = gputest::rel_l2(a.dx, b.dx);
        std::printf("[case] %-48s dx rel %.3g%s\n", name.c_str(), dx_err, same_bits(a.dx, b.dx) ? " (same bits)" : "");
        if (c.report) {
          EXPECT_LE(dx_err, sum_tolerance(p)) << name << " dx";
          EXPECT_NE(a.report.find(c.report), std::string::npos) << name << "\n" << a.report;
        } else {
          EXPECT_TRUE(same_bits(a.dx, b.dx)) << name << " dx";
          EXPECT_EQ(a.report.find("shortcut gradient"), std::string::npos) << name << "\n" << a.report;
        }
        EXPECT_EQ(b.report.find("shortcut gradient"), std::string::npos) << name << "\n" << b.report;
      }
    }
}

}  // namespace
}  // namespace sb::layertest
