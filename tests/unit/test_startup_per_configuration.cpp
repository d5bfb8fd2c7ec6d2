// The start-up parts of one stretch of a process (train/reporting/startup_report.h, gather_startup_since): what a
// later `scale` configuration timed itself, apart from what came before it, and their attributes on the
// configuration's /configs group.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cmath>
#include <string>

#include "core/startup_clock.h"
#include "h5/attributes.h"
#include "h5/handle.h"
#include "metrics/results_file.h"
#include "scratch_dir.h"
#include "train/reporting/startup_report.h"
#include "unit/solo_communicator.h"

namespace sb {
namespace {

size_t part(const std::string& name) {
  for (size_t p = 0; p < startup_part_count(); ++p)
    if (name == startup_parts()[p].name) return p;
  ADD_FAILURE() << "no part " << name;
  return 0;
}

class StartupPerConfiguration : public test::ScratchDirTest {
 protected:
  void SetUp() override {
    ScratchDirTest::SetUp();
    reset_startup_times();
  }
  void TearDown() override {
    reset_startup_times();
    ScratchDirTest::TearDown();
  }
};

TEST_F(StartupPerConfiguration, ALaterStretchHoldsOnlyWhatItTimed) {
  add_startup_seconds(StartupPart::data, 0.25);
  add_startup_seconds(StartupPart::network, 0.5);
  { const FirstStepTimer first; }
  add_startup_seconds(StartupPart::graph_capture, 0.01);
  const StartupSnapshot second_configuration = startup_snapshot();
  add_startup_seconds(StartupPart::network, 0.25);
  add_startup_seconds(StartupPart::nccl, 0.125);
  add_startup_seconds(StartupPart::graph_capture, 0.02);

  testing::SoloCommunicator comm;
  const StartupReport later = gather_startup_since(comm, second_configuration);
  EXPECT_NEAR(later.seconds[part("network")], 0.25, 1e-12);
  EXPECT_EQ(later.seconds[part("nccl")], 0.125);
  EXPECT_NEAR(later.seconds[part("graph_capture")], 0.02, 1e-12);
  for (const char* untouched : {"data", "first_step", "other", "launch"})
    EXPECT_TRUE(std::isnan(later.seconds[part(untouched)])) << untouched;
  EXPECT_TRUE(std::isnan(later.to_first_step));

  // From the process's start, as `train` and a study's first configuration report it: every part.
  const StartupReport whole = gather_startup(comm);
  EXPECT_EQ(whole.seconds[part("data")], 0.25);
  EXPECT_NEAR(whole.seconds[part("network")], 0.75, 1e-12);
  EXPECT_TRUE(std::isfinite(whole.to_first_step));
  EXPECT_TRUE(std::isfinite(whole.seconds[part("other")]));
}

// A rank's first step in a later stretch (a rank left out of the first configuration) is not that
// stretch's: the first step belongs to the process's start-up.
TEST_F(StartupPerConfiguration, AFirstStepInALaterStretchIsNotItsOwn) {
  const StartupSnapshot later_configuration = startup_snapshot();
  { const FirstStepTimer first; }
  testing::SoloCommunicator comm;
  const StartupReport later = gather_startup_since(comm, later_configuration);
  EXPECT_TRUE(std::isnan(later.seconds[part("first_step")]));
  EXPECT_TRUE(std::isnan(later.seconds[part("other")]));
  EXPECT_TRUE(std::isnan(later.to_first_step));
  EXPECT_TRUE(std::isfinite(gather_startup(comm).seconds[part("first_step")]));
}

TEST_F(StartupPerConfiguration, AConfigurationGroupHoldsTheAttributes) {
  StartupReport report;
  report.seconds.assign(startup_part_count(), std::nan(""));
  report.seconds[part("peak_gemm")] = 0.003;
  report.to_first_step = std::nan("");
  const std::string path = (dir_ / "study.h5").string();
  {
    RunMetadata metadata;
    metadata.world_size = 2;
    metadata.hosts = {"host", "host"};
    metadata.gpu_models = {"cpu", "cpu"};
    ResultsFile file(path, metadata);
    write_startup_attributes(file.add_config(2), report);
    file.close();
  }
  const h5::Handle f = h5::Handle::file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  ASSERT_GE(f.get(), 0);
  const h5::Handle group = h5::Handle::group(H5Gopen2(f.get(), "/configs/gpus_2", H5P_DEFAULT));
  ASSERT_GE(group.get(), 0);
  for (size_t p = 0; p < startup_part_count(); ++p) {
    const std::string name = startup_attribute_name(p);
    ASSERT_TRUE(h5::has_attribute(group.get(), name.c_str())) << name;
    const double v = h5::read_double_attribute(group.get(), name.c_str());
    if (p == part("peak_gemm")) EXPECT_EQ(v, 0.003);
    else EXPECT_TRUE(std::isnan(v)) << name;
  }
  EXPECT_TRUE(std::isnan(h5::read_double_attribute(group.get(), "startup_to_first_step_s")));
  EXPECT_FALSE(h5::has_attribute(f.get(), "startup_peak_gemm_s")) << "the configuration's, not the file's";
}

}  // namespace
}  // namespace sb
