// The shutdown's clock (core/shutdown_clock.h): parts timed by spans add up, the `shutdown:` line lists
// the timed ones in the list's order with the remainder, and nothing is printed before training ended.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "core/shutdown_clock.h"

namespace sb {
namespace {

class ShutdownClock : public ::testing::Test {
 protected:
  void SetUp() override { reset_shutdown_times(); }
  void TearDown() override { reset_shutdown_times(); }
};

TEST_F(ShutdownClock, NoLineBeforeTrainingEnds) {
  EXPECT_FALSE(training_ended());
  EXPECT_EQ(shutdown_line(), "");
  mark_training_end();
  EXPECT_TRUE(training_ended());
  EXPECT_NE(shutdown_line(), "");
}

TEST_F(ShutdownClock, SpansAddUpAndTheLineListsTimedPartsInOrderWithTheRest) {
  mark_training_end();
  EXPECT_TRUE(std::isnan(shutdown_seconds(ShutdownPart::engine)));
  {
    const ShutdownSpan span(ShutdownPart::mpi_finalize);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  add_shutdown_seconds(ShutdownPart::engine, 0.25);
  add_shutdown_seconds(ShutdownPart::engine, 0.5);
  EXPECT_EQ(shutdown_seconds(ShutdownPart::engine), 0.75);
  EXPECT_GE(shutdown_seconds(ShutdownPart::mpi_finalize), 0.02);
  const std::string line = shutdown_line();
  std::smatch m;
  ASSERT_TRUE(std::regex_match(line, m, std::regex(R"(shutdown: ([\d.]+) s from the end of training to the end of MPI \(rank 0\): )"
                                                   R"(engine 0\.750 s, mpi_finalize ([\d.]+) s, other (-?[\d.]+) s; ([\d.]+) s from process start)")))
      << line;
  // The engine part was added, not timed: the remainder is the wall time less both parts, negative here.
  EXPECT_NEAR(std::stod(m[1]), 0.75 + std::stod(m[2]) + std::stod(m[3]), 0.0025) << line;
  EXPECT_GE(std::stod(m[4]), std::stod(m[1])) << line;
  EXPECT_EQ(line.find("results"), std::string::npos) << "a part never timed is left out: " << line;
}

TEST_F(ShutdownClock, AttributeNamesComeFromTheList) {
  EXPECT_EQ(shutdown_attribute_name(ShutdownPart::engine), "shutdown_engine_s");
  EXPECT_STREQ(shutdown_parts()[static_cast<size_t>(ShutdownPart::mpi_finalize)].name, "mpi_finalize");
}

// docs/benchmarks.md documents every part with the list's own words.
TEST_F(ShutdownClock, TheDocumentationListsEveryPart) {
  const std::filesystem::path doc = std::filesystem::path(__FILE__).parent_path() / ".." / ".." / "docs" / "benchmarks.md";
  std::ifstream in(doc);
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().empty()) GTEST_SKIP() << "docs/benchmarks.md is not next to this test's source";
  for (size_t p = 0; p < shutdown_part_count(); ++p) {
    const std::string row = std::string("| `") + shutdown_parts()[p].name + "` | " + shutdown_parts()[p].what + " |";
    EXPECT_NE(text.str().find(row), std::string::npos) << "docs/benchmarks.md lacks the row " << row;
  }
}

}  // namespace
}  // namespace sb
