// The shared input-gradient buffers of backward (nn/cuda/gradient_pool.h): which buffer each request gets
// (the smallest free one that fits, the earliest given back among equals, a new one when none fits), the
// same choices at every backward, pointers the pool did not hand out ignored, the compute stream's wait for
// the weight-gradient stream's readers of a buffer given back, and a ResNet-18's backward on a few buffers
// that keep their addresses from one step to the next.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gpu_test_util.h"
#include "models/resnet.h"
#include "nn/cuda/context.h"
#include "nn/cuda/gradient_pool.h"
#include "nn/cuda/network.h"
#include "train/engines/cuda/step_graph_policy.h"

namespace {

using namespace sb;

constexpr size_t kMiB = size_t{1} << 20;

TEST(GradientPool, GivesTheSmallestFreeBufferThatFitsAndRepeatsItsChoices) {
  SKIP_WITHOUT_GPU();
  cuda::GradientPool pool;
  std::vector<void*> first;
  for (int step = 0; step < 2; ++step) {
    pool.begin_backward();
    void* a = pool.acquire(4 * kMiB, nullptr);
    void* b = pool.acquire(kMiB, nullptr);
    EXPECT_NE(a, b);
    pool.release(a, nullptr);
    pool.release(b, nullptr);
    void* c = pool.acquire(kMiB, nullptr);  // b fits more closely than a
    EXPECT_EQ(c, b);
    void* d = pool.acquire(2 * kMiB, nullptr);  // only a fits
    EXPECT_EQ(d, a);
    void* e = pool.acquire(8 * kMiB, nullptr);  // none free fits: a new buffer
    EXPECT_NE(e, a);
    EXPECT_NE(e, b);
    int outside = 0;
    pool.release(&outside, nullptr);  // not the pool's: ignored
    EXPECT_EQ(pool.buffers(), 3u);
    EXPECT_EQ(pool.bytes(), 13 * kMiB);
    const std::vector<void*> got = {a, b, c, d, e};
    if (step == 0) first = got;
    else EXPECT_EQ(got, first);  // the same call order, the same buffers
  }
}

TEST(GradientPool, OfEqualBuffersTakesTheOneGivenBackFirst) {
  SKIP_WITHOUT_GPU();
  cuda::GradientPool pool;
  pool.begin_backward();
  void* x = pool.acquire(kMiB, nullptr);
  void* y = pool.acquire(kMiB, nullptr);
  pool.release(y, nullptr);
  pool.release(x, nullptr);
  EXPECT_EQ(pool.acquire(kMiB, nullptr), y);
}

// Where no free buffer fits but one is free, that one grows (the largest free one): a backward whose
// gradients grow layer by layer (a ResNet's, from the last stage to the stem) keeps as many buffers as it
// holds at once, not one per size.
TEST(GradientPool, GrowsAFreeBufferRatherThanAddingOne) {
  SKIP_WITHOUT_GPU();
  cuda::GradientPool pool;
  pool.begin_backward();
  void* a = pool.acquire(kMiB, nullptr);
  void* b = pool.acquire(2 * kMiB, nullptr);
  pool.release(a, nullptr);
  pool.release(b, nullptr);
  pool.acquire(8 * kMiB, nullptr);  // grows b, the larger free one
  EXPECT_EQ(pool.buffers(), 2u);
  EXPECT_EQ(pool.bytes(), 9 * kMiB);
  pool.acquire(4 * kMiB, nullptr);  // a is free but too small: it grows
  EXPECT_EQ(pool.buffers(), 2u);
  EXPECT_EQ(pool.bytes(), 12 * kMiB);
  pool.acquire(kMiB, nullptr);  // nothing free: a new buffer
  EXPECT_EQ(pool.buffers(), 3u);
}

// A reader on the weight-gradient stream holds the buffer: the compute stream's next work after acquiring it
// runs only once that reader is done.
TEST(GradientPool, TheNextWriterWaitsForTheWeightGradientStream) {
  SKIP_WITHOUT_GPU();
  cudaStream_t compute = nullptr, wgrad = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&wgrad, cudaStreamNonBlocking), cudaSuccess);
  struct Flags {
    std::atomic<bool> reader_done{false};
    std::atomic<bool> writer_saw_reader_done{false};
  } flags;
  cuda::GradientPool pool;
  pool.begin_backward();
  void* g = pool.acquire(kMiB, compute);
  ASSERT_EQ(cudaLaunchHostFunc(
                wgrad,
                [](void* p) {
                  std::this_thread::sleep_for(std::chrono::milliseconds(200));
                  static_cast<Flags*>(p)->reader_done = true;
                },
                &flags),
            cudaSuccess);
  pool.release(g, wgrad);
  EXPECT_EQ(pool.acquire(kMiB, compute), g);
  ASSERT_EQ(cudaLaunchHostFunc(
                compute,
                [](void* p) {
                  auto* f = static_cast<Flags*>(p);
                  f->writer_saw_reader_done = f->reader_done.load();
                },
                &flags),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(compute), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(wgrad), cudaSuccess);
  EXPECT_TRUE(flags.writer_saw_reader_done);
  // Once joined, nothing is waited for any more.
  pool.release(g, wgrad);
  pool.joined();
  flags.reader_done = false;
  EXPECT_EQ(pool.acquire(kMiB, compute), g);
  cudaStreamDestroy(compute);
  cudaStreamDestroy(wgrad);
}

// A bf16 ResNet-18 (torchvision's) in `layout` without autotuning, and a batch of four 64x64 images.
// pool_in_run off: the stem's max pool is its own layer instead of its batch-norm run's.
struct ResNetRig {
  ResNetRig(Layout layout, uint64_t seed, bool pool_in_run = true, bool shortcut_in_add = true)
      : ctx(options(layout, pool_in_run, shortcut_in_add)),
        net(resnet18(ModelInput{3, 64, 64, 10}), 7, ctx, cuda::NetworkOutput::LogitsForLoss),
        rng(seed),
        x(gputest::to_device(gputest::random_values(static_cast<size_t>(in.numel()), rng), DType::BF16)),
        input{x.get(), TensorDesc{in, DType::BF16, layout}} {}
  static cuda::ContextOptions options(Layout layout, bool pool_in_run, bool shortcut_in_add) {
    cuda::ContextOptions o;
    o.compute = DType::BF16;
    o.layout = layout;
    o.autotune = false;
    o.pool_in_bn_run = pool_in_run;
    o.shortcut_bn_in_add = shortcut_in_add;
    return o;
  }
  // One backward of `out` from a random output gradient.
  void backward(const cuda::DeviceTensor& out) {
    gputest::DeviceMem dy = gputest::to_device(gputest::random_values(static_cast<size_t>(out.numel()), rng), DType::BF16);
    net.backward(cuda::DeviceTensor{dy.get(), out.desc});
    ctx.synchronize();
  }

  const Shape in{4, 3, 64, 64};
  cuda::Context ctx;
  cuda::Network net;
  std::mt19937_64 rng;
  gputest::DeviceMem x;
  cuda::DeviceTensor input;
};

// A ResNet-18's backward takes its input gradients from a handful of buffers, the same ones at every step
// after the first two, which may still grow them; the engine runs those two eagerly before it captures a
// step (kEagerStepsBeforeCapture).
TEST(GradientPool, AResNetBackwardNeedsAFewBuffersThatKeepTheirAddresses) {
  SKIP_WITHOUT_GPU();
  for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
    ResNetRig rig(layout, 8);
    cuda::Context& ctx = rig.ctx;
    size_t buffers = 0, bytes = 0;
    for (int step = 0; step < 4; ++step) {
      rig.backward(rig.net.forward(rig.input, cuda::Mode::Train));
      if (step < cuda::kEagerStepsBeforeCapture) {
        buffers = ctx.gradient_pool().buffers();
        bytes = ctx.gradient_pool().bytes();
      }
      EXPECT_EQ(ctx.gradient_pool().buffers(), buffers) << layout_name(layout);
      EXPECT_EQ(ctx.gradient_pool().bytes(), bytes) << layout_name(layout);
    }
    // 20 convolutions, 20 batch-norm runs, 8 ReLUs, a max-pool and a Linear: a few buffers serve them all.
    EXPECT_LE(buffers, 6u) << layout_name(layout);
    EXPECT_GE(buffers, 2u) << layout_name(layout);
  }
}

// Outputs that only the next forward reads are lent from the pool, whose buffers no gradient holds in
// forward: the projection shortcuts' batch norms (read by the add) where they write their outputs
// (shortcut_bn_in_add off; by default the add applies them and they write none), and under NHWC the stem's
// where its max pool, which keeps its maxima's positions, is a layer of its own. After a forward, one buffer
// has served them all, as large as the stem's output in that case; the step's gradients then reuse it.
// Where the stem's run takes the pool (the default under NHWC), the stem writes no output of its own size at
// all, and with the defaults nothing is lent.
TEST(GradientPool, OutputsThatOnlyTheNextForwardReadsAreLentFromThePool) {
  SKIP_WITHOUT_GPU();
  struct Case {
    Layout layout;
    bool pool_in_run, shortcut_in_add, lends_stem;
  };
  for (const Case& c : {Case{Layout::NCHW, true, true, false}, Case{Layout::NHWC, true, true, false},
                        Case{Layout::NCHW, true, false, false}, Case{Layout::NHWC, true, false, false},
                        Case{Layout::NHWC, false, true, true}}) {
    const std::string name = std::string(layout_name(c.layout)) + (c.pool_in_run ? "" : ", pool layer") +
                             (c.shortcut_in_add ? "" : ", shortcut's own apply");
    ResNetRig rig(c.layout, 9, c.pool_in_run, c.shortcut_in_add);
    cuda::Context& ctx = rig.ctx;
    const cuda::DeviceTensor& out = rig.net.forward(rig.input, cuda::Mode::Train);
    ctx.synchronize();
    const bool lends = c.lends_stem || !c.shortcut_in_add;
    EXPECT_EQ(ctx.gradient_pool().buffers(), lends ? 1u : 0u) << name;
    const size_t stem_output = 4 * 64 * 32 * 32 * dtype_size(DType::BF16);  // the 7x7/2 stem's 64 channels
    if (c.lends_stem) {
      EXPECT_GE(ctx.gradient_pool().bytes(), stem_output) << name;
    } else {
      EXPECT_LT(ctx.gradient_pool().bytes(), stem_output) << name;  // the largest shortcut output, 128 x 8 x 8
    }
    rig.backward(out);
    EXPECT_GE(ctx.gradient_pool().buffers(), 2u) << name;
  }
}

}  // namespace
