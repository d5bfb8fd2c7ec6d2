// The fused runs (FusedBnRun, planned by the containers) against the CPU reference layers (BatchNorm2d,
// ReLU, Dropout, the residual add): y, dx, dgamma, dbeta and the running statistics in fp32/tf32/bf16/fp16,
// NCHW and NHWC, Train and Eval; a Wide ResNet block with the fused kernels on against off; the device step
// of CUDA graph replays; the separate layers standing in for shapes the kernels do not take; and a ResNet
// bottleneck whose convolutions take the batch norms' reductions (ContextOptions::fold_batch_norm) and whose
// shortcut batch norm the add applies; and a ResNet stem run that takes its max pool.
#include <string>

#include "nn/cuda/containers.h"
#include "test_layers_support.h"

namespace sb::layertest {
namespace {

LayerSpec bn_relu_dropout(int64_t c, double p) {
  return sequential("run", {batchnorm2d("run.bn", c), relu("run.relu"), dropout("run.drop", p)});
}

// A Wide ResNet block as src/models/wide_resnet.cpp builds it.
LayerSpec wide_block(int64_t in, int64_t out, double p) {
  LayerSpec main = sequential("blk.main", {conv2d("blk.conv1", in, out, 3, 1, 1, false), batchnorm2d("blk.bn1", out),
                                           relu("blk.relu1"), dropout("blk.dropout", p),
                                           conv2d("blk.conv2", out, out, 3, 1, 1, false), batchnorm2d("blk.bn2", out),
                                           relu("blk.relu2")});
  std::vector<LayerSpec> shortcut;
  if (in != out) shortcut.push_back(conv2d("blk.shortcut", in, out, 1, 1, 0, true));
  return residual("blk", std::move(main), std::move(shortcut));
}

void fused_off(cuda::ContextOptions& o) { o.fused_bn_kernels = false; }

// dx and the parameter gradients of a whole block, which the single-layer tolerance cannot hold once the
// activations are rounded. Each BN output goes through a ReLU whose gradient is a step: the tf32
// convolutions (about 3e-4 relative on y) and the 16-bit activations move BN outputs that lie within that
// distance of zero to the other side, and each such element drops or adds its whole dy (up to ~2) in a
// gradient whose norm is only sqrt(4096..8192 / 2) ~ 45..64 here: one flipped ReLU moves dx and the
// gradients by 0.03 to 0.05 relative, whatever the precision (which only sets how many flip). Measured
// on an H100: tf32/NHWC identity block dx 0.0365 grads 0.0427, bf16 blocks up to 0.028 / 0.041 (fused
// and cuDNN alike), fp16 0.008 / 0.012. The CPU reference gives the same values in double when x and the
// convolution weights are perturbed by 5e-4 relative (each BN output of these cases, 4096 or 8192
// values, has 3 to 11 within 1e-3 of zero), and up to 0.06 / 0.074 at 2e-3 (bf16's rounding). So y and
// the running statistics, continuous in the inputs, keep the single-layer tolerance; dx and the
// gradients get 0.1 (two or three flips), except in fp32, where nothing comes within its 1e-7 of a flip
// and any slip in the backward's structure would show.
double block_grad_tolerance(const Precision& p) { return p.dtype == DType::F32 && !p.tf32 ? p.tol : 0.1; }

TEST(CudaFusedBn, BnReluDropoutTrainAndEval) {
  SKIP_WITHOUT_GPU();
  LayerCase c{bn_relu_dropout(16, 0.3), Shape{4, 16, 8, 8}};
  c.stream_key = 0xfeed;
  c.step = 5;
  check_everywhere(c, "bn+relu+dropout train", 51);
  c.mode = cuda::Mode::Eval;
  c.backward = false;
  check_everywhere(c, "bn+relu+dropout eval", 52);
}

// Many blocks per channel (their partial sums added up) and channel columns spread over several blocks,
// some of them partly idle (320 channels = 40 groups of 8 over blocks of 32).
TEST(CudaFusedBn, ManyBlocksAndWideChannels) {
  SKIP_WITHOUT_GPU();
  LayerCase c{bn_relu_dropout(16, 0.2), Shape{32, 16, 16, 16}};
  c.step = 2;
  check_everywhere(c, "bn+relu+dropout 32x16x16x16", 65);
  check_everywhere({bn_relu_dropout(320, 0.2), Shape{2, 320, 4, 8}}, "bn+relu+dropout c320", 66);
}

TEST(CudaFusedBn, BnReluTrainAndEval) {
  SKIP_WITHOUT_GPU();
  const LayerSpec seq = sequential("stem", {batchnorm2d("stem.bn", 32), relu("stem.relu")});
  check_everywhere({seq, Shape{4, 32, 8, 4}}, "bn+relu train", 53);
  check_everywhere({seq, Shape{4, 32, 8, 4}, cuda::Mode::Eval, false}, "bn+relu eval", 54);
}

TEST(CudaFusedBn, ResidualAddTakenByTheLastRun) {
  SKIP_WITHOUT_GPU();
  const LayerSpec identity = residual(
      "res", sequential("res.main", {conv2d("res.conv", 16, 16, 3, 1, 1, false), batchnorm2d("res.bn", 16),
                                     relu("res.relu")}),
      {});
  check_everywhere({identity, Shape{4, 16, 8, 8}}, "residual identity", 55);
  check_everywhere({identity, Shape{4, 16, 8, 8}, cuda::Mode::Eval, false}, "residual identity eval", 56);
}

TEST(CudaFusedBn, WideResNetBlock) {
  SKIP_WITHOUT_GPU();
  LayerCase c{wide_block(16, 32, 0.3), Shape{4, 16, 8, 8}};
  c.stream_key = 3;
  c.step = 11;
  check_everywhere(c, "wrn block (fused)", 57, nullptr, block_grad_tolerance);
  check_everywhere(c, "wrn block (fused off)", 57, fused_off, block_grad_tolerance);
  LayerCase same{wide_block(16, 16, 0.3), Shape{4, 16, 8, 8}};
  check_everywhere(same, "wrn block identity (fused)", 58, nullptr, block_grad_tolerance);
}

// The unfused twin stays tested: the cuDNN BN+ReLU pair and a separate dropout.
TEST(CudaFusedBn, FusedKernelsOffKeepTheSeparateLayers) {
  SKIP_WITHOUT_GPU();
  check_everywhere({bn_relu_dropout(16, 0.3), Shape{4, 16, 8, 8}}, "bn+relu+dropout (fused off)", 59, fused_off);
}

// w % 4 != 0 in NHWC (and h*w % 4 != 0 in NCHW): the run's separate layers compute it.
TEST(CudaFusedBn, UnsupportedShapesFallBack) {
  SKIP_WITHOUT_GPU();
  check_everywhere({bn_relu_dropout(16, 0.3), Shape{2, 16, 5, 5}}, "bn+relu+dropout 5x5", 60);
  const LayerSpec identity = residual(
      "res", sequential("res.main", {conv2d("res.conv", 16, 16, 3, 1, 1, false), batchnorm2d("res.bn", 16),
                                     relu("res.relu")}),
      {});
  check_everywhere({identity, Shape{2, 16, 5, 5}}, "residual identity 5x5", 61);
}

// One training step of a layer tree on the GPU, from case_params/case_buffers as run_case draws them.
struct GpuStep {
  std::vector<float> y, dx, grads, buffers;
  std::string report;
};
GpuStep gpu_step(const LayerSpec& spec, const Shape& input, const cuda::ContextOptions& o, uint64_t seed,
                 uint64_t step, bool device_step) {
  cuda::Context ctx(o);
  const DType dtype = o.compute;
  std::mt19937_64 rng(seed);
  const std::vector<float> params = case_params(spec, seed, dtype, rng);
  const std::vector<float> buffers = case_buffers(spec, rng);
  const std::vector<float> x = normal_values(static_cast<size_t>(input.numel()), rng, dtype);
  const Shape out = output_shape(spec, input);
  const std::vector<float> dy = normal_values(static_cast<size_t>(out.numel()), rng, dtype);
  const size_t np = params.size(), nb = buffers.size();
  DeviceMem d_params(np * 4), d_grads(np * 4), d_compute(np * dtype_size(dtype)), d_buffers(nb * 4);
  gputest::upload(params, DType::F32, d_params.get());
  gputest::upload(params, dtype, d_compute.get());
  gputest::upload(buffers, DType::F32, d_buffers.get());
  d_grads.poison();
  DeviceMem d_step = gputest::to_device_raw(std::vector<uint64_t>{step});
  if (device_step) ctx.set_device_step(d_step.as<uint64_t>());
  auto layer = cuda::make_layer(spec, ctx);
  layer->bind(layer_views(d_params, d_grads, d_compute, d_buffers, dtype));
  layer->set_random_stream(9, device_step ? step + 100 : step);  // the device step must win
  DeviceMem d_x(x.size() * dtype_size(dtype)), d_dy(dy.size() * dtype_size(dtype));
  gputest::upload(to_device_order(x, input, o.layout), dtype, d_x.get());
  gputest::upload(to_device_order(dy, out, o.layout), dtype, d_dy.get());
  const cuda::DeviceTensor& y = layer->forward({d_x.get(), TensorDesc{input, dtype, o.layout}}, cuda::Mode::Train);
  GpuStep r;
  r.y = from_device(y);
  r.dx = from_device(layer->backward({d_dy.get(), TensorDesc{out, dtype, o.layout}}));
  r.grads = gputest::download(d_grads.get(), np, DType::F32);
  r.buffers = gputest::download(d_buffers.get(), nb, DType::F32);
  r.report = cuda::fusion_report(*layer);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return r;
}

// Two GPU steps of one block that differ only in how the batch norms compute (fused or not, statistics
// from the convolution or not): y and the running statistics within the single-layer tolerance, dx and the
// gradients within the block's (block_grad_tolerance).
void expect_steps_agree(const GpuStep& a, const GpuStep& b, const Precision& p, const std::string& name) {
  EXPECT_LE(gputest::rel_l2(a.y, b.y), p.tol) << name << " y";
  EXPECT_LE(gputest::rel_l2(a.buffers, b.buffers), p.tol) << name << " running statistics";
  EXPECT_LE(gputest::rel_l2(a.dx, b.dx), block_grad_tolerance(p)) << name << " dx";
  EXPECT_LE(gputest::rel_l2(a.grads, b.grads), block_grad_tolerance(p)) << name << " grads";
}

// Both sides on the GPU, so the only difference should be the batch-norm passes. The convolutions must then
// run the same engines on both sides: autotuning picks them by timing, and two engines round differently
// (tf32, 16-bit outputs), enough to move a BN output near zero across its ReLU and change dx and the
// gradients by several percent (see block_grad_tolerance), which hides what this test compares. Without
// autotuning both contexts take the heuristics' first deterministic engine for each convolution, whose
// outputs are then the same bits, and fused and unfused differ only by the BN arithmetic (fp32, ~1e-7):
// the single-layer tolerances hold.
cuda::ContextOptions heuristic_engines(const Precision& p, Layout layout) {
  cuda::ContextOptions o = options_for(p, layout);
  o.autotune = false;
  o.deterministic = true;
  return o;
}

TEST(CudaFusedBn, WideResNetBlockFusedMatchesUnfused) {
  SKIP_WITHOUT_GPU();
  const LayerSpec block = wide_block(16, 32, 0.3);
  for (const Precision& p : kPrecisions)
    for (Layout layout : kLayouts) {
      const std::string name = label(p, layout, "wrn block fused vs unfused");
      const cuda::ContextOptions on = heuristic_engines(p, layout);
      cuda::ContextOptions off = on;
      off.fused_bn_kernels = false;
      const GpuStep fused = gpu_step(block, Shape{4, 16, 8, 8}, on, 62, 4, false);
      const GpuStep separate = gpu_step(block, Shape{4, 16, 8, 8}, off, 62, 4, false);
      // Even with the same convolution engines, the BN outputs differ in their last fp32 bits, which can
      // round a 16-bit (or tf32-fed) value near zero to the other side of its ReLU: y and the running
      // statistics keep the single-layer tolerance, dx and the gradients get the block's (fp32 stays tight).
      expect_steps_agree(fused, separate, p, name);
      EXPECT_NE(fused.report.find("blk.bn1 + blk.relu1 + blk.dropout: fused kernels"), std::string::npos)
          << fused.report;
      EXPECT_NE(fused.report.find("blk.bn2 + blk.relu2 + residual add: fused kernels"), std::string::npos)
          << fused.report;
      EXPECT_EQ(fused.report.find("not taken"), std::string::npos) << fused.report;
      EXPECT_EQ(separate.report.find("fused kernels\n"), std::string::npos) << separate.report;
    }
}

// Inside a CUDA graph the step comes from device memory: the fused run must follow it as Dropout does.
TEST(CudaFusedBn, DeviceStepDrivesTheMask) {
  SKIP_WITHOUT_GPU();
  const LayerSpec run = bn_relu_dropout(16, 0.5);
  for (Layout layout : kLayouts) {
    const cuda::ContextOptions o = options_for(kPrecisions[2], layout);  // bf16
    const GpuStep by_value = gpu_step(run, Shape{4, 16, 8, 8}, o, 63, 21, false);
    const GpuStep by_device = gpu_step(run, Shape{4, 16, 8, 8}, o, 63, 21, true);
    EXPECT_EQ(by_value.y, by_device.y) << layout_name(layout);
    EXPECT_EQ(by_value.dx, by_device.dx) << layout_name(layout);
    const GpuStep other = gpu_step(run, Shape{4, 16, 8, 8}, o, 63, 22, true);
    EXPECT_NE(by_value.y, other.y) << "another step must draw another mask";
  }
}

// A ResNet's stem run, [BatchNorm2d, ReLU, MaxPool2d 3x3/2 pad 1], which under NHWC pools as it applies and
// routes the pool's gradient as it reads it (kernels::BnMaxPool). Against the CPU in fp32 (16-bit outputs
// rounded near a window's maximum tie on the GPU where the double reference does not, and the gradient then
// goes to another cell), and bit for bit against the same run with the pool as its own layer in every
// precision: odd rows, padded edges and the ReLU's zeros (ties the first cell wins) included.
LayerSpec bn_relu_pool(int64_t c) {
  return sequential("stem", {batchnorm2d("stem.bn", c), relu("stem.relu"), maxpool2d("stem.pool", 3, 2, 1)});
}

TEST(CudaFusedBn, StemRunPoolsAsItApplies) {
  SKIP_WITHOUT_GPU();
  const Shape shapes[] = {Shape{4, 16, 12, 16}, Shape{2, 24, 9, 8}};
  for (const Shape& shape : shapes) {
    const LayerSpec run = bn_relu_pool(shape[1]);
    for (const Precision& p : {kPrecisions[0], kPrecisions[1]})
      for (Layout layout : kLayouts)
        for (const cuda::Mode mode : {cuda::Mode::Train, cuda::Mode::Eval}) {
          cuda::Context ctx(options_for(p, layout));
          const Errors e = run_case({run, shape, mode, mode == cuda::Mode::Train}, ctx, 67);
          const std::string name = label(p, layout, "bn+relu+pool " + shape.str());
          EXPECT_LE(e.y, p.tol) << name << ": " << e.str();
          EXPECT_LE(e.dx, p.tol) << name << ": " << e.str();
          EXPECT_LE(e.grads, p.tol) << name << ": " << e.str();
          EXPECT_LE(e.buffers, p.tol) << name << ": " << e.str();
        }
    for (const Precision& p : kPrecisions) {
      const std::string name = label(p, Layout::NHWC, "bn+relu+pool " + shape.str() + " pooled run vs pool layer");
      const cuda::ContextOptions pooled = options_for(p, Layout::NHWC);
      cuda::ContextOptions layer = pooled;
      layer.pool_in_bn_run = false;
      const GpuStep a = gpu_step(run, shape, pooled, 68, 1, false);
      const GpuStep b = gpu_step(run, shape, layer, 68, 1, false);
      EXPECT_EQ(a.y, b.y) << name;
      EXPECT_EQ(a.dx, b.dx) << name;
      EXPECT_EQ(a.grads, b.grads) << name;
      EXPECT_EQ(a.buffers, b.buffers) << name;
      EXPECT_NE(a.report.find("stem.bn + stem.relu + stem.pool: fused kernels"), std::string::npos) << a.report;
      EXPECT_EQ(a.report.find("not taken"), std::string::npos) << a.report;
      EXPECT_NE(b.report.find("stem.bn + stem.relu: fused kernels"), std::string::npos) << b.report;
    }
  }
}

// Rows whose width the pooled passes do not take (w % 4 != 0): the run's own layers, pool included.
TEST(CudaFusedBn, StemRunFallsBackWhereThePoolIsNotTaken) {
  SKIP_WITHOUT_GPU();
  cuda::Context ctx(options_for(kPrecisions[0], Layout::NHWC));
  const Errors e = run_case({bn_relu_pool(16), Shape{2, 16, 10, 10}}, ctx, 69);
  EXPECT_LE(e.y, kPrecisions[0].tol) << e.str();
  EXPECT_LE(e.dx, kPrecisions[0].tol) << e.str();
  EXPECT_LE(e.grads, kPrecisions[0].tol) << e.str();
  const GpuStep r = gpu_step(bn_relu_pool(16), Shape{2, 16, 10, 10}, options_for(kPrecisions[2], Layout::NHWC), 69, 1, false);
  EXPECT_NE(r.report.find("stem.bn: [2x16x10x10] NHWC not taken by the fused kernels"), std::string::npos) << r.report;
}

TEST(CudaFusedBn, ReportNamesTheFallback) {
  SKIP_WITHOUT_GPU();
  const GpuStep r = gpu_step(bn_relu_dropout(16, 0.3), Shape{2, 16, 5, 5},
                             options_for(kPrecisions[2], Layout::NHWC), 64, 1, false);
  EXPECT_NE(r.report.find("run.bn: [2x16x5x5] NHWC not taken by the fused kernels"), std::string::npos)
      << r.report;
}

// A ResNet-50 bottleneck as src/models/resnet.cpp builds it (stride 1, projection shortcut, ReLU after the add).
LayerSpec bottleneck(int64_t in, int64_t width, int64_t out) {
  LayerSpec main = sequential("bt.main", {conv2d("bt.conv1", in, width, 1, 1, 0, false), batchnorm2d("bt.bn1", width),
                                          relu("bt.relu1"), conv2d("bt.conv2", width, width, 3, 1, 1, false),
                                          batchnorm2d("bt.bn2", width), relu("bt.relu2"),
                                          conv2d("bt.conv3", width, out, 1, 1, 0, false), batchnorm2d("bt.bn3", out)});
  LayerSpec down = sequential("bt.down", {conv2d("bt.down.0", in, out, 1, 1, 0, false), batchnorm2d("bt.down.1", out)});
  return sequential("bt", {residual("bt.res", std::move(main), {std::move(down)}), relu("bt.relu")});
}

// A projection's shortcut batch norm paired with the main branch's last (the defaults): applied by the main
// run as it adds the shortcut (ContextOptions::shortcut_bn_in_add), and both backward passes computed by the
// shortcut's run for the two (shortcut_bn_paired). The block is the CPU's in every precision and layout.
// Against each run's own passes, on the same convolution engines: with the apply alone, the same bits in
// fp32 and tf32, where both sum bn3(x) + bn(shortcut) in fp32 from the same fp32 values; in 16 bits the
// shortcut's output is no longer rounded to the compute type before the add, and the paired backward sums
// bn3's gradients over another grid, so the steps agree to the block's tolerances (y and the running
// statistics stay the same bits in fp32).
// The bottleneck is followed by a convolution, whose input gradient the block's ReLU may mask in place, as in a
// network: only then does the shortcut's run mask it, which the pair needs.
TEST(CudaFusedBn, ShortcutBatchNormPairedWithTheMainBranch) {
  SKIP_WITHOUT_GPU();
  const LayerSpec block = sequential("net", {bottleneck(32, 16, 64), conv2d("net.head", 64, 16, 1, 1, 0, false)});
  check_everywhere({block, Shape{4, 32, 8, 8}}, "bottleneck (shortcut bn paired)", 76, nullptr, block_grad_tolerance);
  for (const Precision& p : kPrecisions)
    for (Layout layout : kLayouts) {
      const std::string name = label(p, layout, "bottleneck shortcut bn paired vs its own passes");
      const cuda::ContextOptions paired = heuristic_engines(p, layout);
      cuda::ContextOptions in_add = paired;
      in_add.shortcut_bn_paired = false;
      cuda::ContextOptions own = in_add;
      own.shortcut_bn_in_add = false;
      const GpuStep a = gpu_step(block, Shape{4, 32, 8, 8}, paired, 77, 1, false);
      const GpuStep b = gpu_step(block, Shape{4, 32, 8, 8}, in_add, 77, 1, false);
      const GpuStep c = gpu_step(block, Shape{4, 32, 8, 8}, own, 77, 1, false);
      expect_steps_agree(a, c, p, name);
      expect_steps_agree(b, c, p, name + " (apply alone)");
      if (p.dtype == DType::F32) {
        EXPECT_EQ(b.y, c.y) << name;
        EXPECT_EQ(b.dx, c.dx) << name;
        EXPECT_EQ(b.grads, c.grads) << name;
        EXPECT_EQ(b.buffers, c.buffers) << name;
        EXPECT_EQ(a.y, c.y) << name;
        EXPECT_EQ(a.buffers, c.buffers) << name;
      }
      const bool nhwc = layout == Layout::NHWC;  // the pair reads the ReLU's stored bits, NHWC only
      EXPECT_NE(a.report.find("bt.res: bt.down.1 applied in bt.bn3's add"), std::string::npos) << a.report;
      EXPECT_EQ(a.report.find("bt.res: bt.down.1 and bt.bn3: backward as a pair") != std::string::npos, nhwc)
          << a.report;
      EXPECT_EQ(b.report.find("as a pair"), std::string::npos) << b.report;
      EXPECT_EQ(c.report.find("applied in"), std::string::npos) << c.report;
    }
}

// The full fold (--fold-batch-norm): statistics, apply and backward reduction, wherever engines run them.
void fold_fully(cuda::ContextOptions& o) { o.fold_batch_norm = true; }

// Where cuDNN runs the convolution with the sums in its epilogue, the batch norms take them instead of their
// own pass, and where it runs the dgrad with the ReLU's mask and the batch norm's reductions, the runs before
// conv2 and conv3 skip their reduce pass; elsewhere (fp32, an engine missing) the passes stand in. Either way
// the block is the CPU's.
TEST(CudaFoldedBn, BottleneckWithStatisticsInTheConvolutions) {
  SKIP_WITHOUT_GPU();
  check_everywhere({bottleneck(32, 16, 64), Shape{4, 32, 8, 8}}, "bottleneck (statistics in conv)", 70, fold_fully,
                   block_grad_tolerance);
}

// How many of the pairs the plan report says were folded (record `in_graph`); each must have a line, folded
// or by its own pass (`own_pass`).
int folded_pairs(const std::string& report, std::initializer_list<const char*> pairs, const char* in_graph,
                 const char* own_pass) {
  int folded = 0;
  for (const char* pair : pairs) {
    const bool in = report.find(std::string(pair) + in_graph) != std::string::npos;
    EXPECT_TRUE(in || report.find(std::string(pair) + own_pass) != std::string::npos) << pair << "\n" << report;
    folded += in;
  }
  return folded;
}

// The bottleneck's step with `fold` against its step without, both on the heuristics' first engine for each
// graph (genstats engines may be non-deterministic, so that filter stays off); returns the folded step.
GpuStep folded_against_separate(const Precision& p, void (*fold)(cuda::ContextOptions&), uint64_t seed,
                                const std::string& name) {
  const LayerSpec block = bottleneck(32, 16, 64);
  cuda::ContextOptions off = options_for(p, Layout::NHWC);
  off.autotune = false;
  cuda::ContextOptions on = off;
  fold(on);
  const GpuStep folded = gpu_step(block, Shape{4, 32, 8, 8}, on, seed, 1, false);
  const GpuStep separate = gpu_step(block, Shape{4, 32, 8, 8}, off, seed, 1, false);
  expect_steps_agree(folded, separate, p, name);
  EXPECT_EQ(separate.report.find(" -> "), std::string::npos) << separate.report;
  EXPECT_EQ(separate.report.find(" <- "), std::string::npos) << separate.report;
  EXPECT_EQ(separate.report.find(" => "), std::string::npos) << separate.report;
  return folded;
}

// How many of the bottleneck's four convolution-to-batch-norm pairs took the sums from the epilogue.
int statistics_in_convolutions(const std::string& report) {
  return folded_pairs(report,
                      {"bt.conv1 -> bt.bn1+bt.relu1", "bt.conv2 -> bt.bn2+bt.relu2", "bt.conv3 -> bt.bn3",
                       "bt.down.0 -> bt.down.1"},
                      kStatisticsInConvRecord, kStatisticsPassRecord);
}

// Folded against separate: the sums are those of the same convolution output, unshifted, so the statistics
// agree to fp32's precision and y to the single-layer tolerance. The plan report names each
// convolution-to-batch-norm pair and whether its sums came from the epilogue, and each batch-norm-to-dgrad
// pair and whether the dgrad took the reduction.
TEST(CudaFoldedBn, FoldedMatchesSeparateAndIsReported) {
  SKIP_WITHOUT_GPU();
  for (const Precision& p : {kPrecisions[2], kPrecisions[3]}) {
    const std::string name = label(p, Layout::NHWC, "bottleneck folded vs separate");
    const GpuStep folded = folded_against_separate(p, fold_fully, 71, name);
    const int in_conv = statistics_in_convolutions(folded.report);
    const int in_dgrad = folded_pairs(folded.report, {"bt.bn1+bt.relu1 <- bt.conv2", "bt.bn2+bt.relu2 <- bt.conv3"},
                                      kBackwardInDgradRecord, kBackwardPassRecord);
    const int in_prologue = folded_pairs(folded.report, {"bt.bn1+bt.relu1 => bt.conv2", "bt.bn2+bt.relu2 => bt.conv3"},
                                         kApplyInPrologueRecord, kApplyPassRecord);
    std::printf("[fold] %s: %d of 4 batch norms took their sums from the convolution, %d of 2 their backward "
                "reduction from the dgrad, %d of 2 their apply into the next convolution's prologue\n",
                name.c_str(), in_conv, in_dgrad, in_prologue);
  }
}

void fold_statistics_alone(cuda::ContextOptions& o) { o.fold_bn_statistics = true; }

// A stem on 3 image channels and a convolution after it, each before a batch norm.
LayerSpec stem_and_conv() {
  return sequential("st", {conv2d("st.conv1", 3, 16, 3, 1, 1, false), batchnorm2d("st.bn1", 16), relu("st.relu1"),
                           conv2d("st.conv2", 16, 16, 3, 1, 1, false), batchnorm2d("st.bn2", 16)});
}

// The statistics alone (--fold-bn-statistics): every convolution's epilogue but a stem's sums its batch
// norm's input, and no backward or apply is folded. The layers are the CPU's, and the separate passes' to
// fp32's precision.
TEST(CudaFoldedBn, StatisticsAloneInTheConvolutionsButTheStem) {
  SKIP_WITHOUT_GPU();
  const LayerSpec block = bottleneck(32, 16, 64);
  check_everywhere({block, Shape{4, 32, 8, 8}}, "bottleneck (statistics alone)", 72, fold_statistics_alone,
                   block_grad_tolerance);
  check_everywhere({stem_and_conv(), Shape{4, 3, 8, 8}}, "stem (statistics alone)", 74, fold_statistics_alone,
                   block_grad_tolerance);
  for (const Precision& p : {kPrecisions[2], kPrecisions[3]}) {
    const std::string name = label(p, Layout::NHWC, "bottleneck statistics folded vs separate");
    const GpuStep folded = folded_against_separate(p, fold_statistics_alone, 73, name);
    const int in_conv = statistics_in_convolutions(folded.report);
    EXPECT_EQ(folded.report.find(" <- "), std::string::npos) << folded.report;
    EXPECT_EQ(folded.report.find(" => "), std::string::npos) << folded.report;
    std::printf("[fold] %s: %d of 4 batch norms took their sums from the convolution\n", name.c_str(), in_conv);

    cuda::ContextOptions on = options_for(p, Layout::NHWC);
    on.autotune = false;
    fold_statistics_alone(on);
    const GpuStep stem = gpu_step(stem_and_conv(), Shape{4, 3, 8, 8}, on, 75, 1, false);
    EXPECT_EQ(stem.report.find("st.conv1 -> "), std::string::npos) << stem.report;
    folded_pairs(stem.report, {"st.conv2 -> st.bn2"}, kStatisticsInConvRecord, kStatisticsPassRecord);
  }
}

}  // namespace
}  // namespace sb::layertest
