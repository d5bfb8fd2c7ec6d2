// The column tables of the results files (results_schema.h, comm_results.h) against what the writer
// writes and the reader reads: a file with one row whose every column holds its own value, read back
// column by column, with the stored names, types and units compared to the table.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "metrics/comm_results.h"
#include "metrics/results_file.h"
#include "metrics/results_reader.h"
#include "scratch_dir.h"

namespace sb {
namespace {

using ResultsColumns = test::ScratchDirTest;

// A value of its own for column i: integers 1000 + i, floats 0.25 + i.
void fill_distinct(std::span<const Column> columns, void* row) {
  for (size_t i = 0; i < columns.size(); ++i) {
    char* at = static_cast<char*>(row) + columns[i].offset;
    if (columns[i].type == ColumnType::Int64) {
      const int64_t v = 1000 + static_cast<int64_t>(i);
      std::memcpy(at, &v, sizeof v);
    } else {
      const double v = 0.25 + static_cast<double>(i);
      std::memcpy(at, &v, sizeof v);
    }
  }
}

void expect_same_columns(std::span<const Column> columns, const void* written, const void* read) {
  for (const Column& c : columns) {
    const char* w = static_cast<const char*>(written) + c.offset;
    const char* r = static_cast<const char*>(read) + c.offset;
    if (c.type == ColumnType::Int64) {
      int64_t a, b;
      std::memcpy(&a, w, sizeof a);
      std::memcpy(&b, r, sizeof b);
      EXPECT_EQ(b, a) << c.name;
    } else {
      double a, b;
      std::memcpy(&a, w, sizeof a);
      std::memcpy(&b, r, sizeof b);
      EXPECT_EQ(b, a) << c.name;
    }
  }
}

// The stored members of a table: names in column order, each of the column's type, and its units.
void expect_stored_as_table(const ResultsReader& file, const std::string& table, std::span<const Column> columns) {
  std::vector<std::string> names;
  for (const Column& c : columns) names.emplace_back(c.name);
  EXPECT_EQ(file.column_names(table), names) << table;
  EXPECT_EQ(file.string_list_attribute("units", table), column_units(columns)) << table;
}

RunMetadata one_rank() {
  RunMetadata m;
  m.hosts = {"host"};
  m.gpu_models = {"cpu"};
  return m;
}

TEST_F(ResultsColumns, EveryEpochColumnIsWrittenAndReadBackByName) {
  const std::string path = (dir_ / "train.h5").string();
  EpochRow written;
  fill_distinct(epoch_columns(), &written);
  {
    ResultsFile file(path, one_rank());
    const double times[] = {1.5};
    file.main_run().append_epoch(written, times);
    file.close();
  }
  const ResultsReader file(path);
  const std::vector<EpochRow> rows = file.epochs();
  ASSERT_EQ(rows.size(), 1u);
  expect_same_columns(epoch_columns(), &written, &rows[0]);
  expect_stored_as_table(file, "/epochs", epoch_columns());
}

TEST_F(ResultsColumns, EveryStudyColumnIsWrittenAndReadBackByName) {
  const std::string path = (dir_ / "scale.h5").string();
  StudyRow written;
  fill_distinct(study_columns(), &written);
  {
    ResultsFile file(path, one_rank());
    file.begin_study(StudyInfo{"strong", 1, 0.5});
    file.append_study_row(written);
    file.close();
  }
  const ResultsReader file(path);
  const std::vector<StudyRow> rows = file.study();
  ASSERT_EQ(rows.size(), 1u);
  expect_same_columns(study_columns(), &written, &rows[0]);
  expect_stored_as_table(file, "/study", study_columns());
}

TEST_F(ResultsColumns, EveryEfficiencySplitColumnIsWrittenAndReadBackByName) {
  const std::string path = (dir_ / "split.h5").string();
  EfficiencySplitRow written;
  fill_distinct(efficiency_split_columns(), &written);
  {
    ResultsFile file(path, one_rank());
    file.begin_study(StudyInfo{"weak", 1, 0.5});
    file.append_efficiency_split_row(written);
    file.close();
  }
  const ResultsReader file(path);
  const std::vector<EfficiencySplitRow> rows = file.efficiency_split();
  ASSERT_EQ(rows.size(), 1u);
  expect_same_columns(efficiency_split_columns(), &written, &rows[0]);
  expect_stored_as_table(file, "/efficiency_split", efficiency_split_columns());
}

TEST_F(ResultsColumns, EveryCommColumnIsWrittenAndReadBackByName) {
  const std::string path = (dir_ / "comm.h5").string();
  CommRow written;
  fill_distinct(comm_columns(), &written);
  {
    CommTableInfo info;
    info.backend = "mpi";
    info.dtype_names = {"fp32"};
    CommResultsFile file(path, one_rank(), info);
    file.append(written);
    file.close();
  }
  const ResultsReader file(path);
  const std::vector<CommRow> rows = file.comm();
  ASSERT_EQ(rows.size(), 1u);
  expect_same_columns(comm_columns(), &written, &rows[0]);
  expect_stored_as_table(file, "/comm", comm_columns());
}

// docs/results_schema.md, from this source file's path: absolute, or relative to the build's tests folder,
// where ctest runs the test. Empty where the sources are not at hand.
std::string results_readme() {
  const std::filesystem::path readme = std::filesystem::path(__FILE__).parent_path() / ".." / ".." / "docs" / "results_schema.md";
  std::ifstream in(readme);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Every column has a name of its own and a unit; the row structs start out "not measured"; and
// docs/results_schema.md documents each column with the type and unit the writer stores.
TEST(ResultsColumnTables, ColumnsAreDistinctAndDocumented) {
  const std::string readme = results_readme();
  for (std::span<const Column> table : {epoch_columns(), study_columns(), efficiency_split_columns(), comm_columns()}) {
    for (size_t i = 0; i < table.size(); ++i) {
      EXPECT_STRNE(table[i].unit, "") << table[i].name;
      const std::string row = std::string("| `") + table[i].name + "` | " +
                              (table[i].type == ColumnType::Int64 ? "int64" : "float64") + " | " + table[i].unit + " |";
      if (!readme.empty()) {
        EXPECT_NE(readme.find(row), std::string::npos) << "docs/results_schema.md lacks the row " << row;
      }
      for (size_t j = i + 1; j < table.size(); ++j) {
        EXPECT_STRNE(table[i].name, table[j].name);
        EXPECT_NE(table[i].offset, table[j].offset) << table[i].name << " and " << table[j].name;
      }
    }
  }
  const EpochRow epoch;
  EXPECT_TRUE(std::isnan(epoch.test_accuracy));
  EXPECT_EQ(epoch.peak_memory_bytes, -1);
  EXPECT_EQ(epoch.peak_allocated_bytes, -1);
  if (readme.empty()) GTEST_SKIP() << "docs/results_schema.md is not next to this test's source: its rows were not compared";
}

TEST_F(ResultsColumns, TheStepPhasesAreStoredInTheirOneOrder) {
  const std::string path = (dir_ / "steps.h5").string();
  {
    ResultsFile file(path, one_rank());
    file.main_run().append_steps(std::vector<int64_t>{0}, std::vector<int64_t>(kStepPhases.size(), 5));
    file.close();
  }
  const StepSamples samples = ResultsReader(path).steps();
  EXPECT_EQ(samples.phases, std::vector<std::string>(kStepPhases.begin(), kStepPhases.end()));
  EXPECT_EQ(kStepPhases.size(), static_cast<size_t>(kPhaseCount));
  EXPECT_STREQ(phase_name(kPhaseComm), "comm");
}

}  // namespace
}  // namespace sb
