// The start-up parts (core/startup_clock.h) and their report (train/reporting/startup_report.h): one list of parts
// that the line and the attributes follow, the remainder that makes the parts add up, and the process
// start that lies before everything the program did.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <thread>

#include "core/startup_clock.h"
#include "metrics/results_file.h"
#include "metrics/results_reader.h"
#include "scratch_dir.h"
#include "train/loop/trainer.h"
#include "train/reporting/startup_report.h"
#include "train/reporting/summary_line.h"
#include "unit/solo_communicator.h"

namespace sb {
namespace {

class Startup : public test::ScratchDirTest {
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

size_t index_of(const std::string& name) {
  for (size_t p = 0; p < startup_part_count(); ++p)
    if (name == startup_parts()[p].name) return p;
  ADD_FAILURE() << "no part " << name;
  return 0;
}

TEST(StartupParts, NamesAreDistinctAndOneIsTheRemainder) {
  std::set<std::string> names;
  int remainders = 0;
  for (size_t p = 0; p < startup_part_count(); ++p) {
    EXPECT_TRUE(names.insert(startup_parts()[p].name).second) << startup_parts()[p].name;
    EXPECT_STRNE(startup_parts()[p].what, "");
    remainders += startup_parts()[p].kind == StartupPartKind::Remainder;
  }
  EXPECT_EQ(remainders, 1);
  EXPECT_EQ(startup_parts()[static_cast<size_t>(StartupPart::data)].name, std::string("data"));
  EXPECT_EQ(startup_attribute_name(index_of("first_step")), "startup_first_step_s");
}

// docs/results_schema.md documents every part, in the list's order, with the list's own words.
TEST(StartupParts, TheResultsReadmeDocumentsEachPartInOrder) {
  const std::filesystem::path readme = std::filesystem::path(__FILE__).parent_path() / ".." / ".." / "docs" / "results_schema.md";
  std::ifstream in(readme);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.empty()) GTEST_SKIP() << "docs/results_schema.md is not next to this test's source";
  size_t previous = 0;
  for (size_t p = 0; p < startup_part_count(); ++p) {
    const std::string row = std::string("| `") + startup_parts()[p].name + "` | " + startup_parts()[p].what + " |";
    const size_t at = text.find(row);
    ASSERT_NE(at, std::string::npos) << "docs/results_schema.md lacks the row " << row;
    EXPECT_GT(at, previous) << row << " is out of order";
    previous = at;
  }
}

TEST(StartupClock, TheProcessStartedBeforeThisTest) {
  const double age = seconds_since_process_start();
  EXPECT_GT(age, 0.0);
  EXPECT_LT(age, 3600.0);
  const std::string source = process_start_source();
  EXPECT_TRUE(source == "/proc/self/stat" || source == "static initialisation") << source;
#ifdef __linux__
  EXPECT_EQ(source, "/proc/self/stat");  // the kernel's record is there on Linux
#endif
}

TEST_F(Startup, SpansAddUpAndUntimedPartsAreNaN) {
  EXPECT_TRUE(std::isnan(startup_seconds(StartupPart::nccl)));
  {
    const StartupSpan span(StartupPart::network);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  StartupSpan second(StartupPart::network);
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  second.stop();
  second.stop();  // once only
  EXPECT_GE(startup_seconds(StartupPart::network), 0.030);
  EXPECT_LT(startup_seconds(StartupPart::network), 1.0);
  EXPECT_TRUE(std::isnan(startup_seconds(StartupPart::nccl)));
}

TEST_F(Startup, OnlyTheProcesssFirstStepCounts) {
  EXPECT_TRUE(std::isnan(seconds_to_first_step()));
  {
    const FirstStepTimer first;
    std::this_thread::sleep_for(std::chrono::milliseconds(15));
  }
  const double first_step = startup_seconds(StartupPart::first_step);
  const double end = seconds_to_first_step();
  EXPECT_GE(first_step, 0.015);
  EXPECT_GT(end, first_step);
  {
    const FirstStepTimer later;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(startup_seconds(StartupPart::first_step), first_step);
  EXPECT_EQ(seconds_to_first_step(), end);
}

TEST_F(Startup, TheRemainderMakesThePartsAddUpToTheFirstStep) {
  add_startup_seconds(StartupPart::data, 0.25);
  add_startup_seconds(StartupPart::graph_capture, 5.0);  // after the first step: not part of the total
  {
    const FirstStepTimer first;
  }
  testing::SoloCommunicator comm;
  const StartupReport report = gather_startup(comm);
  ASSERT_EQ(report.seconds.size(), startup_part_count());
  double before = 0;
  for (size_t p = 0; p < startup_part_count(); ++p)
    if (startup_parts()[p].kind != StartupPartKind::AfterFirstStep && std::isfinite(report.seconds[p])) before += report.seconds[p];
  EXPECT_NEAR(before, report.to_first_step, 1e-9);
  EXPECT_EQ(report.seconds[index_of("data")], 0.25);
  EXPECT_EQ(report.seconds[index_of("graph_capture")], 5.0);
  EXPECT_TRUE(std::isnan(report.seconds[index_of("nccl")]));
}

TEST_F(Startup, EngineBuildTimerLeavesTheEnginesOwnPartsOut) {
  {
    const EngineBuildTimer build;
    add_startup_seconds(StartupPart::upload, 10.0);  // as if the engine timed its upload
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const double rest = startup_seconds(StartupPart::engine_other);
  EXPECT_LT(rest, 0.0);  // a made-up upload longer than the build: the rest is what the clock saw less it
  EXPECT_GT(rest, -10.0);
}

TEST(StartupLine, ListsTimedPartsInOrderAndTheLaterOnesApart) {
  StartupReport report;
  report.seconds.assign(startup_part_count(), std::nan(""));
  report.seconds[index_of("launch")] = 0.1;
  report.seconds[index_of("data")] = 0.25;
  report.seconds[index_of("other")] = 0.05;
  report.seconds[index_of("graph_capture")] = 0.015;
  report.to_first_step = 0.4;
  EXPECT_EQ(startup_line(report),
            "startup: 0.400 s from process start to the end of the first step (slowest rank per part): launch 0.100 s, "
            "data 0.250 s, other 0.050 s; after it: graph_capture 0.015 s");
}

TEST_F(Startup, EveryPartIsARootAttributeOfTheResultsFile) {
  StartupReport report;
  report.seconds.assign(startup_part_count(), std::nan(""));
  report.seconds[index_of("mpi")] = 0.5;
  report.to_first_step = 2.0;
  const std::string path = (dir_ / "train.h5").string();
  {
    RunMetadata one;
    one.hosts = {"host"};
    one.gpu_models = {"cpu"};
    ResultsFile file(path, one);
    file.close(true, startup_attributes(report));
  }
  const ResultsReader file(path);
  for (size_t p = 0; p < startup_part_count(); ++p) {
    ASSERT_TRUE(file.has_attribute(startup_attribute_name(p))) << startup_attribute_name(p);
    const double v = file.double_attribute(startup_attribute_name(p));
    if (p == index_of("mpi")) EXPECT_EQ(v, 0.5);
    else EXPECT_TRUE(std::isnan(v)) << startup_attribute_name(p);
  }
  EXPECT_EQ(file.double_attribute("startup_to_first_step_s"), 2.0);
}

TEST(SummaryLine, TheWallClockTwinFollowsTheTimeToTarget) {
  RunSummary run;
  run.epochs.resize(1);
  run.epochs[0].elapsed_seconds = 1.5;
  run.epochs[0].global_samples = 100;
  run.epochs[0].wall_max = 1.0;
  run.best_accuracy = 0.92;
  run.time_to_target = 1.5;
  run.wall_to_target = 2.75;
  EXPECT_NE(summary_line(run, 0.91).find(", 91.00% reached after 1.500 s (2.750 s from process start)"), std::string::npos)
      << summary_line(run, 0.91);
  run.wall_to_target = std::nan("");  // reached before a resume: no wall-clock time of this process
  const std::string resumed = summary_line(run, 0.91);
  EXPECT_NE(resumed.find("reached after 1.500 s"), std::string::npos);
  EXPECT_EQ(resumed.find("process start"), std::string::npos) << resumed;
}

}  // namespace
}  // namespace sb
