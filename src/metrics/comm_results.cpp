#include "metrics/comm_results.h"

#include <filesystem>
#include <stdexcept>

#include "core/check.h"
#include "h5/attributes.h"
#include "h5/extendible.h"
#include "metrics/results_output_check.h"
#include "metrics/results_publish.h"

namespace sb {

std::span<const Column> comm_columns() {
  using Row = CommRow;
  static const Column columns[] = {SB_COMM_COLUMNS(SB_COLUMN_ENTRY)};
  return columns;
}

CommResultsFile::CommResultsFile(const std::string& path, const RunMetadata& metadata, const CommTableInfo& info)
    : path_(path), working_path_(unique_working_path(path, "writing")) {
  check_output_writable(path);  // named as the user gave it, before anything is created
  // ResultsFile writes the root attributes: a finished file at our working path, which we then reopen,
  // mark as running again, and give the /comm table. `path` only ever receives published copies.
  RunMetadata with_start = metadata;
  if (with_start.start_time.empty()) with_start.start_time = utc_now_iso8601();
  ResultsFile(working_path_, with_start).close();

  h5::Handle access = h5::unlocked_file_access();
  CHECK_HDF5(H5Pset_libver_bounds(access.get(), H5F_LIBVER_V18, H5F_LIBVER_V18));  // as ResultsFile writes
  file_ = h5::Handle::file(CHECK_HDF5(H5Fopen(working_path_.c_str(), H5F_ACC_RDWR, access.get())));
  h5::write_string_attribute(file_.get(), "end_time", "");
  h5::write_int_attribute(file_.get(), "complete", 0);

  row_type_ = compound_type(comm_columns(), sizeof(CommRow));
  h5::Handle file_type = packed_copy(row_type_.get());
  table_ = h5::create_extendible(file_.get(), "comm", file_type.get(), {0}, 0, {64});
  const hid_t t = table_.get();
  h5::write_string_list_attribute(t, "units", column_units(comm_columns()));
  h5::write_int_attribute(t, "comm_version", kCommTableVersion);
  h5::write_string_attribute(t, "backend", info.backend);
  h5::write_string_attribute(t, "op", info.op);
  h5::write_int_attribute(t, "ranks", info.ranks);
  h5::write_int_attribute(t, "iterations", info.iterations);
  h5::write_int_attribute(t, "warmup_iterations", info.warmup_iterations);
  h5::write_string_list_attribute(t, "dtype_names", info.dtype_names);
  h5::write_string_list_attribute(t, "collective_names", info.collective_names);
  h5::write_string_list_attribute(t, "skipped_dtypes", info.skipped_dtypes);
  h5::write_string_attribute(t, "note", info.note);
  h5::write_string_attribute(t, "model", info.model);
  h5::write_int_attribute(t, "model_elements", info.model_elements);
  flush_and_publish();
}

void CommResultsFile::flush_and_publish() {
  CHECK_HDF5(H5Fflush(file_.get(), H5F_SCOPE_LOCAL));
  publish_copy(working_path_, path_);
}

void CommResultsFile::append(const CommRow& row) {
  if (!file_) throw std::logic_error("the results file '" + path_ + "' is already closed");
  h5::append_along(table_.get(), row_type_.get(), 0, 1, &row);
  flush_and_publish();
}

void CommResultsFile::close() {
  if (!file_) throw std::logic_error("the results file '" + path_ + "' is already closed");
  h5::write_string_attribute(file_.get(), "end_time", utc_now_iso8601());
  h5::write_int_attribute(file_.get(), "complete", 1);
  table_ = {};
  row_type_ = {};
  file_.reset();
  std::error_code ec;
  std::filesystem::rename(working_path_, path_, ec);  // the finished file replaces the last published copy
  if (ec) fatal("could not move " + working_path_ + " to " + path_ + ": " + ec.message());
}

}  // namespace sb
