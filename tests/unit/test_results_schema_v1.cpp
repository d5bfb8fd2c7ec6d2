// A results file of schema version 1 (a 1- and 2-GPU study written before sweeps existed) still reads:
// its /study rows get the later columns' "not measured" values and its study info one repeat, no sweeps.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "metrics/results_reader.h"

namespace sb {
namespace {

const std::string kV1Study =
    (std::filesystem::path(__FILE__).parent_path() / ".." / "data" / "study-schema-v1.h5").string();

TEST(ResultsSchemaV1, StudyRowsReadWithDefaultsForLaterColumns) {
  const ResultsReader file(kV1Study);
  EXPECT_EQ(file.int_attribute("schema_version"), 1);
  const std::vector<StudyRow> rows = file.study();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].gpus, 1);
  EXPECT_EQ(rows[1].gpus, 2);
  for (const StudyRow& row : rows) {
    EXPECT_EQ(row.repeat, 1);
    EXPECT_EQ(row.batch_size, -1);
    EXPECT_EQ(row.precision, -1);
    EXPECT_EQ(row.workers, -1);
    EXPECT_GT(row.images_per_s, 0.0);
    EXPECT_GT(row.epoch_time_s, 0.0);
  }
  EXPECT_DOUBLE_EQ(rows[0].speedup, 1.0);
  EXPECT_DOUBLE_EQ(rows[1].efficiency, rows[1].speedup / 2);
  EXPECT_TRUE(std::isnan(rows[0].time_to_accuracy_s));
}

TEST(ResultsSchemaV1, StudyInfoHasNoSweepsAndOneRepeat) {
  const ResultsReader file(kV1Study);
  const StudyInfo info = file.study_info();
  EXPECT_EQ(info.mode, "weak");
  EXPECT_EQ(info.baseline_gpus, 1);
  EXPECT_TRUE(info.swept.empty());
  EXPECT_EQ(info.repeats, 1);
  EXPECT_TRUE(info.value_names.empty());
  EXPECT_EQ(info.settle_epochs, -1);  // not recorded: written before the attribute
  EXPECT_EQ(file.config_names(), (std::vector<std::string>{"gpus_1", "gpus_2"}));
  EXPECT_EQ(file.config_gpus(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(file.epochs("/configs/gpus_2").size(), 3u);
}

}  // namespace
}  // namespace sb
