// BatchNorm2d's paths forced one at a time (ContextOptions::batchnorm_path, docs/cudnn.md): Train forward
// and backward and Eval forward, with and without the fused ReLU, in fp32, bf16 and fp16, NCHW and NHWC,
// against the CPU reference. A forced path must run only its own cuDNN graphs (checked through the plan
// cache's keys) or stop with an error that names the option and the layer; it never falls back.
#include <map>
#include <set>
#include <string>

#include "core/error.h"
#include "test_layers_support.h"

namespace sb::layertest {
namespace {

// fp32 without TF32, bf16, fp16: TF32 changes nothing in batch norm.
const Precision kPathPrecisions[] = {kPrecisions[0], kPrecisions[2], kPrecisions[3]};
const cuda::Mode kModes[] = {cuda::Mode::Train, cuda::Mode::Eval};

// A plan key's graph, "bn_fwd_train" or "bn_fwd_train+relu".
std::string graph_of(const std::string& key) {
  return key.substr(0, key.find('|')) + (key.find("|+relu") != std::string::npos ? "+relu" : "");
}

// The graphs a forced path may try, in the given mode.
std::set<std::string> graphs_of(BatchNormPath path, cuda::Mode mode, bool fused_relu) {
  const std::string relu = fused_relu ? "+relu" : "";
  const bool train = mode == cuda::Mode::Train;
  switch (path) {
    case BatchNormPath::Graph:
      return train ? std::set<std::string>{"bn_fwd_train" + relu, "bn_bwd"} : std::set<std::string>{"bn_fwd_infer" + relu};
    case BatchNormPath::Pointwise:
      return train ? std::set<std::string>{} : std::set<std::string>{"bn_affine" + relu};
    default:
      return {};
  }
}

// Whether the path must run here on every GPU: auto always; legacy inference in every dtype (auto runs
// it for NCHW Eval) and legacy training in fp32 and fp16 (cuDNN's documented configurations; bf16 may
// be refused); the training graphs have engines for every dtype and layout (docs/cudnn.md). The
// pointwise path has no training forward at all. The inference graphs run only where cuDNN has an
// engine for them.
enum class Expect { Runs, Refuses, Either };
Expect expectation(BatchNormPath path, cuda::Mode mode, DType dtype) {
  const bool train = mode == cuda::Mode::Train;
  switch (path) {
    case BatchNormPath::Auto: return Expect::Runs;
    case BatchNormPath::Legacy: return train && dtype == DType::BF16 ? Expect::Either : Expect::Runs;
    case BatchNormPath::Graph: return train ? Expect::Runs : Expect::Either;
    case BatchNormPath::Pointwise: return train ? Expect::Refuses : Expect::Either;
  }
  return Expect::Either;
}

std::map<std::string, bool> plans_by_key(cuda::Context& ctx) {
  std::map<std::string, bool> ok;
  for (const auto& r : ctx.plans().reports()) ok[r.key] = r.ok;
  return ok;
}

// One fresh context per precision and layout, running Train (with backward) and then Eval. Returns how
// many of the cases ran.
int check_path(BatchNormPath path, bool fused_relu, uint64_t seed) {
  const LayerSpec bn = batchnorm2d("bn", 8);
  const LayerSpec spec = fused_relu ? sequential("block", {bn, relu("relu")}) : bn;
  const std::string name = name_of(path);
  int ran = 0;
  for (const Precision& p : kPathPrecisions)
    for (Layout layout : kLayouts) {
      cuda::ContextOptions o = options_for(p, layout);
      o.autotune = false;  // the first engine that runs is enough here; it keeps 48 contexts quick
      o.fuse_bn_relu = true;
      o.batchnorm_path = path;
      cuda::Context ctx(o);
      for (const cuda::Mode mode : kModes) {
        const bool train = mode == cuda::Mode::Train;
        const std::string what = label(p, layout, name + (fused_relu ? "+relu " : " ") + (train ? "train" : "eval"));
        const std::map<std::string, bool> before = plans_by_key(ctx);
        std::string refusal;
        Errors e;
        try {
          e = run_case({spec, Shape{4, 8, 6, 5}, mode, /*backward=*/train}, ctx, seed);
        } catch (const UserError& error) {
          refusal = error.what();
        }
        std::set<std::string> tried;
        bool every_engine_ran = true;
        for (const auto& [key, ok] : plans_by_key(ctx))
          if (!before.count(key)) {
            tried.insert(graph_of(key));
            every_engine_ran = every_engine_ran && ok;
          }
        if (path != BatchNormPath::Auto) {
          EXPECT_EQ(tried, graphs_of(path, mode, fused_relu)) << what;
        } else {
          // Auto compiles no pointwise graph for Eval: the legacy call follows the NORM_FORWARD graph.
          for (const std::string& graph : tried) EXPECT_NE(graph.rfind("bn_affine", 0), 0u) << what;
        }

        const Expect expect = expectation(path, mode, p.dtype);
        if (refusal.empty()) {
          ++ran;
          std::printf("[path] %-40s ran: %s\n", what.c_str(), e.str().c_str());
          EXPECT_NE(expect, Expect::Refuses) << what << " ran where it has no implementation";
          EXPECT_LE(e.worst(), p.tol) << what << ": " << e.str();
          if (path != BatchNormPath::Auto) {
            EXPECT_TRUE(every_engine_ran) << what << " ran after a graph without engine";
          }
          if (e.worst() > p.tol) print_plans(ctx, what);
        } else {
          std::printf("[path] %-40s refused: %s\n", what.c_str(), refusal.c_str());
          EXPECT_NE(expect, Expect::Runs) << what << ": " << refusal;
          EXPECT_NE(refusal.find("batchnorm_path " + name), std::string::npos) << refusal;
          EXPECT_NE(refusal.find("'bn'"), std::string::npos) << refusal;
        }
        std::fflush(stdout);
      }
    }
  return ran;
}

TEST(CudaBatchNormPaths, AutoRunsEverywhere) {
  SKIP_WITHOUT_GPU();
  for (const bool fused_relu : {false, true}) EXPECT_EQ(check_path(BatchNormPath::Auto, fused_relu, 41), 12);
}

TEST(CudaBatchNormPaths, GraphRunsOnlyTheNormGraphs) {
  SKIP_WITHOUT_GPU();
  for (const bool fused_relu : {false, true}) EXPECT_GE(check_path(BatchNormPath::Graph, fused_relu, 42), 6);
}

TEST(CudaBatchNormPaths, PointwiseRunsEvalOnlyAndRefusesTraining) {
  SKIP_WITHOUT_GPU();
  for (const bool fused_relu : {false, true}) EXPECT_LE(check_path(BatchNormPath::Pointwise, fused_relu, 43), 6);
}

TEST(CudaBatchNormPaths, LegacyRunsWithoutGraphs) {
  SKIP_WITHOUT_GPU();
  for (const bool fused_relu : {false, true}) EXPECT_GE(check_path(BatchNormPath::Legacy, fused_relu, 44), 10);
}

TEST(CudaBatchNormPaths, DefaultIsAuto) {
  EXPECT_EQ(cuda::ContextOptions{}.batchnorm_path, BatchNormPath::Auto);
}

}  // namespace
}  // namespace sb::layertest
