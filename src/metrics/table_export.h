// `--csv FILE` and `--json FILE`: every command's tables as CSV and as JSON Lines, for spreadsheets and
// for the parsers people already have. One writer serves train (its epoch table and summary), scale
// (the study table and its efficiency split) and comm (the sweep, under nccl-tests' column names).
//
// CSV: a table per file, a header line of column names, then one line per row; the first table of a
// command goes to FILE, a later one to FILE with "-<table>" before the extension (train's summary:
// run-summary.csv beside run.csv). JSON Lines: every table in FILE, one object per row, its first
// member "table" naming the table. A value that was not measured (NaN) is an empty CSV field and a JSON
// null. Rows are written (and flushed) as they arrive, so a killed job keeps every finished row.
//
// An existing file is never written over: the paths are checked before the run starts
// (check_table_exports_free) and created exclusively on first use. A resumed run (--resume) continues
// its tables instead: rows are appended to a file that exists, whose CSV header must be the table's.
#pragma once
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "metrics/results_schema.h"

namespace sb {

// A column of an exported table. `key` names it in JSON and is unique; `header` names it in CSV, where
// it may repeat as in nccl-tests (time, algbw, busbw, #wrong appear for out-of-place and in-place).
struct ExportColumn {
  std::string key;
  std::string header;
};

using ExportValue = std::variant<int64_t, double, std::string>;

// The export's paths; "" for none.
struct TableExportPaths {
  std::string csv;
  std::string json;
  bool continuing = false;  // a resumed run: append to files that exist
  bool any() const { return !csv.empty() || !json.empty(); }
};

// The CSV file of the command's `index`-th table named `table` (0: FILE itself; else FILE-<table>.ext).
std::string csv_table_path(const std::string& csv, size_t index, const std::string& table);

// Throws UserError naming --csv or --json when a file the command would write exists already (unless
// paths.continuing), or cannot be written there. `tables`: the names of the command's tables, in order.
void check_table_exports_free(const TableExportPaths& paths, const std::vector<std::string>& tables);

// A results-file table's columns as exported (key = header = the column's name), and one row's values.
std::vector<ExportColumn> export_columns(std::span<const Column> columns);
std::vector<ExportValue> export_values(std::span<const Column> columns, const void* row);

// Text of one value: CSV (NaN: empty; text quoted when it holds a comma, quote or line break) and JSON.
std::string csv_field(const ExportValue& value);
std::string json_value(const ExportValue& value);

class TableExport {
 public:
  explicit TableExport(TableExportPaths paths) : paths_(std::move(paths)) {}
  ~TableExport();
  TableExport(const TableExport&) = delete;
  TableExport& operator=(const TableExport&) = delete;

  // Starts a table: its CSV file and header; later rows belong to it.
  void begin_table(const std::string& table, std::vector<ExportColumn> columns);
  // One row of the current table, in its column order; written and flushed at once.
  void add_row(const std::vector<ExportValue>& values);

 private:
  TableExportPaths paths_;
  size_t tables_ = 0;
  std::string table_;
  std::vector<ExportColumn> columns_;
  std::string csv_path_;
  std::FILE* csv_ = nullptr;
  std::FILE* json_ = nullptr;
};

}  // namespace sb
