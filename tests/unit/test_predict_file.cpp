// The `predict` file: its tables hold the rows given under the columns' own names and units, docs/results_schema.md
// documents every column, and an existing path is refused, never overwritten.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "metrics/results_reader.h"
#include "predict/predict_file.h"
#include "scratch_dir.h"
#include "user_error_text.h"

namespace sb::predict {
namespace {

RunMetadata one_process() {
  RunMetadata m;
  m.git_sha = "0123456789ab";
  m.command_line = "scalebench predict";
  m.config_json = R"({"command":"predict"})";
  m.hosts = {"host"};
  m.gpu_models = {"cpu"};
  m.mpi_version = "test";
  return m;
}

using PredictFile = sb::test::ScratchDirTest;

TEST_F(PredictFile, HoldsItsTablesAndIsNeverOverwritten) {
  const std::string path = (dir_ / "pred.h5").string();
  PredictRow row;
  row.gpus = 8;
  row.scaling = 1;
  row.images_per_s = 1234.5;
  CheckRow check;
  check.gpus = 2;
  check.measured_step_s = 0.25;
  PredictInfo info;
  info.scaling_names = {"strong", "weak"};
  info.exposed_5pct_gpus = {4, 16};
  info.exposed_20pct_gpus = {-1, 64};
  check_predict_output_free(path);
  write_predict_file(path, one_process(), info, {row, row}, true, {check});

  const ResultsReader reader(path);
  EXPECT_EQ(reader.int_attribute("complete"), 1);
  EXPECT_EQ(reader.int_attribute("predict_version"), kPredictVersion);
  std::vector<std::string> names;
  for (const Column& c : predict_columns()) names.emplace_back(c.name);
  EXPECT_EQ(reader.column_names("/predict"), names);
  EXPECT_EQ(reader.string_list_attribute("units", "/predict").size(), predict_columns().size());
  EXPECT_EQ(reader.int_attribute("weak_exposed_20pct_gpus", "/predict"), 64);
  EXPECT_EQ(reader.int_attribute("strong_exposed_20pct_gpus", "/predict"), -1);
  EXPECT_TRUE(reader.has("/check"));

  const auto before = std::filesystem::last_write_time(path);
  EXPECT_NE(sb::testing::refusal([&] { check_predict_output_free(path); }).find("--out '" + path + "' exists"), std::string::npos);
  EXPECT_NE(sb::testing::refusal([&] { write_predict_file(path, one_process(), info, {row}, false, {}); }).find("--out"),
            std::string::npos);
  EXPECT_EQ(std::filesystem::last_write_time(path), before);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), std::filesystem::directory_iterator()), 1);
}

TEST(PredictFileColumns, ResultsReadmeDocumentsEveryColumn) {
  const std::filesystem::path readme = std::filesystem::path(__FILE__).parent_path() / ".." / ".." / "docs" / "results_schema.md";
  std::ifstream in(readme);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.empty()) GTEST_SKIP() << "docs/results_schema.md is not next to this test's source";
  for (std::span<const Column> table : {predict_columns(), check_columns()}) {
    for (const Column& c : table) {
      const std::string row = std::string("| `") + c.name + "` | " + (c.type == ColumnType::Int64 ? "int64" : "float64") + " | " + c.unit + " |";
      EXPECT_NE(text.find(row), std::string::npos) << "docs/results_schema.md lacks the row " << row;
    }
  }
}

}  // namespace
}  // namespace sb::predict
