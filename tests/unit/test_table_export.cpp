// --csv and --json: the value texts, the files a TableExport writes, and the refusal of existing files.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "metrics/table_export.h"
#include "scratch_dir.h"

namespace sb {
namespace {

using TableExportTest = test::ScratchDirTest;

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(TableExportText, CsvFieldsAndJsonValues) {
  EXPECT_EQ(csv_field(int64_t{-1}), "-1");
  EXPECT_EQ(csv_field(0.1), "0.1");            // the shortest text that reads back as the same double
  EXPECT_EQ(csv_field(NAN), "");               // not measured: an empty field
  EXPECT_EQ(csv_field(std::string("plain")), "plain");
  EXPECT_EQ(csv_field(std::string("a,b")), "\"a,b\"");
  EXPECT_EQ(csv_field(std::string("say \"hi\"")), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(json_value(NAN), "null");
  EXPECT_EQ(json_value(INFINITY), "null");
  EXPECT_EQ(json_value(2.5), "2.5");
  EXPECT_EQ(json_value(std::string("a\"b")), "\"a\\\"b\"");
}

TEST(TableExportText, FurtherTablesGoBesideTheFirst) {
  EXPECT_EQ(csv_table_path("out/run.csv", 0, "epochs"), "out/run.csv");
  EXPECT_EQ(csv_table_path("out/run.csv", 1, "summary"), "out/run-summary.csv");
  EXPECT_EQ(csv_table_path("run", 1, "summary"), "run-summary");
}

TEST_F(TableExportTest, WritesEveryTableAsRowsArrive) {
  const std::string csv = (dir_ / "t.csv").string(), json = (dir_ / "t.jsonl").string();
  {
    TableExport out({csv, json});
    out.begin_table("comm", {{"oop_time", "time"}, {"ip_time", "time"}, {"type", "type"}});
    out.add_row({1.5, NAN, std::string("float")});
    EXPECT_EQ(read_text(csv), "time,time,type\n1.5,,float\n");  // flushed at once
    out.begin_table("summary", {{"n", "n"}});
    out.add_row({int64_t{3}});
  }
  EXPECT_EQ(read_text(dir_ / "t-summary.csv"), "n\n3\n");
  EXPECT_EQ(read_text(json),
            "{\"table\":\"comm\",\"oop_time\":1.5,\"ip_time\":null,\"type\":\"float\"}\n"
            "{\"table\":\"summary\",\"n\":3}\n");
}

TEST_F(TableExportTest, AnExistingFileIsRefusedNamingTheOption) {
  const std::string csv = (dir_ / "t.csv").string(), json = (dir_ / "t.jsonl").string();
  EXPECT_NO_THROW(check_table_exports_free({csv, json}, {"epochs", "summary"}));
  std::ofstream(dir_ / "t-summary.csv") << "kept\n";
  try {
    check_table_exports_free({csv, ""}, {"epochs", "summary"});
    ADD_FAILURE() << "an existing file was accepted";
  } catch (const UserError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("--csv " + (dir_ / "t-summary.csv").string() + ": the file exists already", 0), 0u) << message;
  }
  std::ofstream(json) << "kept\n";
  EXPECT_THROW(check_table_exports_free({"", json}, {"epochs"}), UserError);
  EXPECT_THROW(check_table_exports_free({csv, csv}, {"epochs"}), UserError);  // one file for both
  EXPECT_EQ(read_text(json), "kept\n");
  EXPECT_EQ(read_text(dir_ / "t-summary.csv"), "kept\n");
  EXPECT_THROW(check_table_exports_free({(dir_ / "missing" / "t.csv").string(), ""}, {"epochs"}), UserError);
}

TEST_F(TableExportTest, AResumedRunContinuesItsTables) {
  const std::string csv = (dir_ / "t.csv").string(), json = (dir_ / "t.jsonl").string();
  {
    TableExport first({csv, json});
    first.begin_table("epochs", {{"epoch", "epoch"}});
    first.add_row({int64_t{1}});
  }
  EXPECT_THROW(check_table_exports_free({csv, json}, {"epochs"}), UserError);
  EXPECT_NO_THROW(check_table_exports_free({csv, json, true}, {"epochs"}));
  {
    TableExport resumed({csv, json, true});
    resumed.begin_table("epochs", {{"epoch", "epoch"}});
    resumed.add_row({int64_t{2}});
  }
  EXPECT_EQ(read_text(csv), "epoch\n1\n2\n");  // one header
  EXPECT_EQ(read_text(json), "{\"table\":\"epochs\",\"epoch\":1}\n{\"table\":\"epochs\",\"epoch\":2}\n");
  TableExport fresh({(dir_ / "new.csv").string(), "", true});  // a resume may also start the tables
  fresh.begin_table("epochs", {{"epoch", "epoch"}});
  EXPECT_EQ(read_text(dir_ / "new.csv"), "epoch\n");
}

TEST(TableExportColumns, ResultsTablesExportTheirColumnsByName) {
  const std::vector<ExportColumn> columns = export_columns(study_columns());
  ASSERT_EQ(columns.size(), study_columns().size());
  EXPECT_EQ(columns[0].key, "gpus");
  EXPECT_EQ(columns[0].header, "gpus");
  StudyRow row;
  row.gpus = 4;
  row.speedup = 3.5;
  const std::vector<ExportValue> values = export_values(study_columns(), &row);
  auto at = [&](const std::string& key) {
    for (size_t i = 0; i < columns.size(); ++i)
      if (columns[i].key == key) return values[i];
    ADD_FAILURE() << "no column " << key;
    return ExportValue{};
  };
  EXPECT_EQ(std::get<int64_t>(at("gpus")), 4);
  EXPECT_EQ(std::get<double>(at("speedup")), 3.5);
  EXPECT_TRUE(std::isnan(std::get<double>(at("images_per_s"))));  // not measured
}

}  // namespace
}  // namespace sb
