// --device auto: cuda only when the CUDA backend is built and every rank sees a GPU, cpu otherwise; an
// explicit cpu or cuda is never changed (a cuda run without a GPU is refused later, by the engine).
#include <gtest/gtest.h>

#include "train/config_json.h"
#include "train/device_choice.h"
#include "train/train_config.h"
#include "train/train_options.h"

namespace sb {
namespace {

TEST(DeviceChoice, AutoTakesTheGpuWhenTheBackendIsBuiltAndOneIsVisible) {
  const DeviceChoice choice = resolve_device(Device::Auto, /*cuda_built=*/true, /*gpus_visible=*/2);
  EXPECT_EQ(choice.device, Device::Cuda);
  EXPECT_EQ(device_line(choice), "device: cuda (--device auto; 2 CUDA device(s) visible on every rank)");
}

TEST(DeviceChoice, AutoFallsBackToTheCpuWithoutAVisibleGpu) {
  const DeviceChoice choice = resolve_device(Device::Auto, true, 0);
  EXPECT_EQ(choice.device, Device::Cpu);
  EXPECT_EQ(device_line(choice), "device: cpu (--device auto; no CUDA device visible)");
}

TEST(DeviceChoice, AutoFallsBackToTheCpuWithoutTheCudaBackend) {
  const DeviceChoice choice = resolve_device(Device::Auto, false, 4);
  EXPECT_EQ(choice.device, Device::Cpu);
  EXPECT_NE(choice.reason.find("CUDA backend is not built"), std::string::npos) << choice.reason;
}

TEST(DeviceChoice, AnExplicitDeviceIsKeptWhateverTheMachine) {
  EXPECT_EQ(resolve_device(Device::Cpu, true, 8).device, Device::Cpu);
  EXPECT_EQ(resolve_device(Device::Cuda, false, 0).device, Device::Cuda);
  EXPECT_EQ(device_line(resolve_device(Device::Cpu, true, 8)), "device: cpu (--device cpu)");
}

TEST(DeviceChoice, TheOptionRowAcceptsAutoInAnyCase) {
  const TrainOption* row = train_option_named("device");
  ASSERT_NE(row, nullptr);
  TrainConfig config;
  row->field.parse(config, "AUTO", "device");
  EXPECT_EQ(config.device, Device::Auto);
}

TEST(DeviceChoice, TheRecordedConfigurationHoldsTheResolvedDevice) {
  TrainConfig config;
  config.device = resolve_device(Device::Auto, true, 0).device;
  const std::string json = config.to_json();
  bool recorded = false;
  for (const auto& [key, value] : flat_json_members(json, "test")) {
    if (key == "device") recorded = value == "\"cpu\"";
  }
  EXPECT_TRUE(recorded) << json;
  EXPECT_EQ(TrainConfig::from_json(json, "test").device, Device::Cpu) << "an old stored cpu or cuda keeps its meaning";
}

}  // namespace
}  // namespace sb
