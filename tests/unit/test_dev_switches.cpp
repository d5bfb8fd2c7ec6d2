// The developer switches (core/dev_switches.h): on unless their environment variable says off, in every
// spelling a flag takes; a bad value is refused naming the variable; the log line names those switched off.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/dev_switches.h"
#include "user_error_text.h"

namespace sb {
namespace {

using testing::refusal;

constexpr const char* kVariables[] = {"SCALEBENCH_DEV_FUSED_BN", "SCALEBENCH_DEV_FUSED_RESIDUAL_GRAD",
                                      "SCALEBENCH_DEV_PARALLEL_WGRAD", "SCALEBENCH_DEV_OPTIMIZER_OVERLAP",
                                      "SCALEBENCH_DEV_SYMMETRIC_MEMORY"};

class DevSwitches : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* variable : kVariables) unsetenv(variable);
  }
};

TEST_F(DevSwitches, AllOnWhenUnsetOrEmpty) {
  const sb::DevSwitches on = dev_switches();
  EXPECT_TRUE(on.fused_bn && on.fused_residual_grad && on.parallel_wgrad && on.optimizer_overlap && on.symmetric_memory);
  EXPECT_EQ(describe_changed(on), "");
  setenv("SCALEBENCH_DEV_FUSED_BN", "", 1);
  EXPECT_TRUE(dev_switches().fused_bn);
}

TEST_F(DevSwitches, EachVariableTurnsItsOwnPathOff) {
  const auto field_of = [](const sb::DevSwitches& s, int k) {
    const bool fields[] = {s.fused_bn, s.fused_residual_grad, s.parallel_wgrad, s.optimizer_overlap, s.symmetric_memory};
    return fields[k];
  };
  for (int k = 0; k < 5; ++k) {
    for (const char* off : {"off", "false", "0", "no"}) {
      setenv(kVariables[k], off, 1);
      const sb::DevSwitches s = dev_switches();
      for (int j = 0; j < 5; ++j) EXPECT_EQ(field_of(s, j), j != k) << kVariables[k] << "=" << off;
      EXPECT_EQ(describe_changed(s), std::string(kVariables[k]) + "=off");
    }
    setenv(kVariables[k], "on", 1);
    EXPECT_TRUE(field_of(dev_switches(), k)) << kVariables[k];
    unsetenv(kVariables[k]);
  }
  setenv("SCALEBENCH_DEV_FUSED_BN", "off", 1);
  setenv("SCALEBENCH_DEV_SYMMETRIC_MEMORY", "no", 1);
  EXPECT_EQ(describe_changed(dev_switches()), "SCALEBENCH_DEV_FUSED_BN=off, SCALEBENCH_DEV_SYMMETRIC_MEMORY=off");
}

TEST_F(DevSwitches, ABadValueIsRefusedNamingTheVariable) {
  setenv("SCALEBENCH_DEV_PARALLEL_WGRAD", "sometimes", 1);
  const std::string message = refusal([] { dev_switches(); });
  EXPECT_NE(message.find("SCALEBENCH_DEV_PARALLEL_WGRAD='sometimes'"), std::string::npos) << message;
  EXPECT_NE(message.find("on or off"), std::string::npos) << message;
}

}  // namespace
}  // namespace sb
