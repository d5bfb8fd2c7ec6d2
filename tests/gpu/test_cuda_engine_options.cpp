// The CUDA engine's paths as a run takes them: the settled ones, whatever the environment holds (no
// variable chooses one, those named SCALEBENCH_DEV_* included, in any spelling), and
// the optimizer overlap turned off by CudaEngineOptions alone, the CUDA row of the gradient-sync
// strategies, and the batch-norm statistics fold as the configuration resolves it. Host code: runs without
// a GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "nn/batchnorm_path.h"
#include "nn/cuda/context.h"
#include "train/engines/cuda/context_options.h"
#include "train/engines/cuda/cuda_engine_options.h"
#include "train/train_config.h"

namespace sb {
namespace {

constexpr const char* kSwitchLikeVariables[] = {"SCALEBENCH_DEV_FUSED_BN", "SCALEBENCH_DEV_FUSED_RESIDUAL_GRAD",
                                            "SCALEBENCH_DEV_PARALLEL_WGRAD", "SCALEBENCH_DEV_OPTIMIZER_OVERLAP",
                                            "SCALEBENCH_DEV_SYMMETRIC_MEMORY"};

TrainConfig gpu_config() {
  TrainConfig config;
  config.device = Device::Cuda;
  config.plan_cache = "";  // no cache folder
  return config;
}

bool settled_layers(const cuda::ContextOptions& o) {
  return o.fused_bn_kernels && o.fuse_residual_grad && o.parallel_wgrad && o.batchnorm_path == BatchNormPath::Auto;
}

TEST(CudaEngineOptions, ARunTakesTheSettledPaths) {
  const cuda::CudaEngineOptions options;
  EXPECT_TRUE(options.optimizer_overlap && options.symmetric_memory);
  EXPECT_FALSE(options.adjust_context) << "a run leaves the layers' options as context_options sets them";
  EXPECT_EQ(options.gradient_sync, &cuda::kBucketedAllreduce) << "the CUDA row of the gradient-sync strategies";
  EXPECT_EQ(options.gradient_sync->device, Device::Cuda);
  EXPECT_TRUE(settled_layers(context_options(gpu_config())));
  EXPECT_EQ(cuda::overlap_refusal(options, gpu_config(), 2), "");
}

// The layers fold the batch norms' statistics as the configuration resolves them: resnet50 in fp16 by its
// default, not in bf16, and not in fp16 once --no-fold-bn-statistics is given.
TEST(CudaEngineOptions, TheLayersTakeTheResolvedStatisticsFold) {
  TrainConfig config = gpu_config();
  config.model = "resnet50";
  config.precision = Precision::FP16;
  EXPECT_TRUE(context_options(config).fold_bn_statistics);
  config.precision = Precision::BF16;
  EXPECT_FALSE(context_options(config).fold_bn_statistics);
  config.precision = Precision::FP16;
  config.fold_bn_statistics = false;
  EXPECT_FALSE(context_options(config).fold_bn_statistics);
}

TEST(CudaEngineOptions, TheEnvironmentChoosesNoPath) {
  for (const char* variable : kSwitchLikeVariables) {
    for (const char* value : {"off", "false", "0", "no", "sometimes", ""}) {
      setenv(variable, value, 1);
      EXPECT_TRUE(settled_layers(context_options(gpu_config()))) << variable << "=" << value;
      EXPECT_EQ(cuda::overlap_refusal({}, gpu_config(), 2), "") << variable << "=" << value;
    }
    unsetenv(variable);
  }
}

TEST(CudaEngineOptions, TheOptionsTurnTheOverlapOff) {
  cuda::CudaEngineOptions no_overlap;
  no_overlap.optimizer_overlap = false;
  EXPECT_NE(cuda::overlap_refusal(no_overlap, gpu_config(), 2), "");
  cuda::CudaEngineOptions plain;
  plain.symmetric_memory = false;
  EXPECT_EQ(cuda::overlap_refusal(plain, gpu_config(), 2), "") << "the window's choice leaves the overlap on";
  // Where the overlap does not apply, the options cannot turn it on.
  EXPECT_NE(cuda::overlap_refusal({}, gpu_config(), 1), "");
}

}  // namespace
}  // namespace sb
