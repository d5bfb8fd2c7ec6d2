#include "metrics/table_export.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/json_text.h"
#include "core/os_error.h"
#include "metrics/results_output_check.h"

namespace sb {
namespace {

// The shortest text that reads back as the same double.
std::string number_text(double v) {
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, v);
  return ec == std::errc() ? std::string(text, end) : std::to_string(v);
}

// A new file, created exclusively: a file that appeared since the check is not written over. With
// `append` (a resumed run), a file that exists is continued.
std::FILE* create_new(const std::string& path, const char* option, bool append = false) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_EXCL), 0644);
  if (fd < 0) {
    const int error = errno;
    fatal(std::string(option) + ": cannot create " + path + ": " + std::strerror(error) + "; " +
          (error == EEXIST ? "another process wrote it meanwhile; choose a new name" : write_error_hint(error)));
  }
  std::FILE* file = ::fdopen(fd, "w");
  if (!file) fatal(std::string(option) + ": cannot open " + path + ": " + std::strerror(errno));
  return file;
}

void write_line(std::FILE* file, const std::string& line, const std::string& path, const char* option) {
  if (std::fputs(line.c_str(), file) < 0 || std::fflush(file) != 0) {
    const int error = errno;
    fatal(std::string(option) + ": writing " + path + " failed: " + std::strerror(error) + "; " + write_error_hint(error));
  }
}

// The file's first line without its line break; "" when it is missing or empty.
std::string first_line(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "r");
  if (!file) return "";
  std::string line;
  for (int ch = std::fgetc(file); ch != EOF && ch != '\n'; ch = std::fgetc(file)) line += static_cast<char>(ch);
  std::fclose(file);
  return line;
}

void close_file(std::FILE*& file) {
  if (file) std::fclose(file);  // every line was flushed and checked as it was written
  file = nullptr;
}

void check_free(const std::string& path, const char* option, const char* what, bool continuing) {
  if (!continuing && std::filesystem::exists(std::filesystem::symlink_status(path)))
    throw UserError(std::string(option) + " " + path + ": the file exists already, and exported tables never replace a "
                    "file; choose a new name or move the old file away");
  check_output_writable(path, what);
}

}  // namespace

std::string csv_table_path(const std::string& csv, size_t index, const std::string& table) {
  if (index == 0) return csv;
  const std::filesystem::path path(csv);
  std::filesystem::path renamed = path;
  renamed.replace_filename(path.stem().string() + "-" + table + path.extension().string());
  return renamed.string();
}

void check_table_exports_free(const TableExportPaths& paths, const std::vector<std::string>& tables) {
  if (!paths.csv.empty()) {
    for (size_t i = 0; i < tables.size(); ++i)
      check_free(csv_table_path(paths.csv, i, tables[i]), "--csv", "the CSV file (--csv)", paths.continuing);
  }
  if (!paths.json.empty()) check_free(paths.json, "--json", "the JSON Lines file (--json)", paths.continuing);
  if (!paths.csv.empty() && paths.csv == paths.json)
    throw UserError("--csv and --json name the same file " + paths.csv + "; give each its own");
}

std::vector<ExportColumn> export_columns(std::span<const Column> columns) {
  std::vector<ExportColumn> out;
  for (const Column& c : columns) out.push_back({c.name, c.name});
  return out;
}

std::vector<ExportValue> export_values(std::span<const Column> columns, const void* row) {
  std::vector<ExportValue> out;
  const char* base = static_cast<const char*>(row);
  for (const Column& c : columns) {
    if (c.type == ColumnType::Int64) {
      int64_t v = 0;
      std::memcpy(&v, base + c.offset, sizeof v);
      out.emplace_back(v);
    } else {
      double v = 0;
      std::memcpy(&v, base + c.offset, sizeof v);
      out.emplace_back(v);
    }
  }
  return out;
}

std::string csv_field(const ExportValue& value) {
  if (const auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&value)) return std::isfinite(*d) ? number_text(*d) : std::string();
  const std::string& text = std::get<std::string>(value);
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char ch : text) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return quoted + "\"";
}

std::string json_value(const ExportValue& value) {
  if (const auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&value)) return std::isfinite(*d) ? number_text(*d) : std::string("null");
  return json_quote(std::get<std::string>(value));
}

TableExport::~TableExport() {
  close_file(csv_);
  close_file(json_);
}

void TableExport::begin_table(const std::string& table, std::vector<ExportColumn> columns) {
  table_ = table;
  columns_ = std::move(columns);
  close_file(csv_);
  if (!paths_.csv.empty()) {
    csv_path_ = csv_table_path(paths_.csv, tables_, table);
    std::string header;
    for (size_t i = 0; i < columns_.size(); ++i) {
      if (i) header += ',';  // appended, not '+'-chained: GCC 12 misfires -Wrestrict
      header += csv_field(columns_[i].header);
    }
    const std::string existing = paths_.continuing ? first_line(csv_path_) : "";
    if (!existing.empty() && existing != header)
      fatal("--csv: " + csv_path_ + " holds another table (its first line is not the header of table " + table +
            "); the resumed run cannot continue it: give --csv a new name");
    csv_ = create_new(csv_path_, "--csv", paths_.continuing);
    if (existing.empty()) write_line(csv_, header + "\n", csv_path_, "--csv");
  }
  if (!paths_.json.empty() && !json_) json_ = create_new(paths_.json, "--json", paths_.continuing);
  ++tables_;
}

void TableExport::add_row(const std::vector<ExportValue>& values) {
  if (values.size() != columns_.size())
    fatal("TableExport: a row of " + std::to_string(values.size()) + " values for the " + std::to_string(columns_.size()) +
          " columns of table " + table_);
  if (csv_) {
    std::string line;
    for (size_t i = 0; i < values.size(); ++i) {
      if (i) line += ',';
      line += csv_field(values[i]);
    }
    write_line(csv_, line + "\n", csv_path_, "--csv");
  }
  if (json_) {
    std::string line = "{\"table\":" + json_quote(table_);
    for (size_t i = 0; i < values.size(); ++i) {
      line += ',';
      line += json_quote(columns_[i].key);
      line += ':';
      line += json_value(values[i]);
    }
    line += "}\n";
    write_line(json_, line, paths_.json, "--json");
  }
}

}  // namespace sb
