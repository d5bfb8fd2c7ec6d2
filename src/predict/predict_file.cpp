#include "predict/predict_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/check.h"
#include "core/error.h"
#include "h5/attributes.h"
#include "h5/extendible.h"
#include "metrics/results_output_check.h"
#include "metrics/results_publish.h"

namespace sb::predict {

std::span<const Column> predict_columns() {
  using Row = PredictRow;
  static const Column columns[] = {SB_PREDICT_COLUMNS(SB_COLUMN_ENTRY)};
  return columns;
}

std::span<const Column> check_columns() {
  using Row = CheckRow;
  static const Column columns[] = {SB_PREDICT_CHECK_COLUMNS(SB_COLUMN_ENTRY)};
  return columns;
}

void check_predict_output_free(const std::string& path) {
  if (std::filesystem::exists(path) || std::filesystem::is_symlink(path))
    throw UserError("--out '" + path + "' exists; predict never overwrites a file: give a new path or move the old file away");
  check_output_writable(path, "the prediction file (--out)");
}

namespace {

template <class Row>
void write_table(hid_t file, const char* name, std::span<const Column> columns, const std::vector<Row>& rows) {
  h5::Handle memory_type = compound_type(columns, sizeof(Row));
  h5::Handle file_type = packed_copy(memory_type.get());
  h5::Handle table = h5::create_extendible(file, name, file_type.get(), {0}, 0, {64});
  h5::write_string_list_attribute(table.get(), "units", column_units(columns));
  if (!rows.empty()) h5::append_along(table.get(), memory_type.get(), 0, rows.size(), rows.data());
}

void write_info(hid_t table, const PredictInfo& info) {
  h5::write_string_attribute(table, "study", info.study);
  h5::write_string_attribute(table, "comm", info.comm);
  h5::write_string_attribute(table, "comm_inter", info.comm_inter);
  h5::write_string_attribute(table, "network", info.network);
  h5::write_string_list_attribute(table, "scaling_names", info.scaling_names);
  h5::write_double_attribute(table, "intra_alpha_s", info.intra_alpha_s);
  h5::write_double_attribute(table, "intra_beta_bytes_per_s", info.intra_beta_bytes_per_s);
  h5::write_double_attribute(table, "intra_fit_error", info.intra_fit_error);
  h5::write_int_attribute(table, "intra_ranks", info.intra_ranks);
  h5::write_double_attribute(table, "inter_alpha_s", info.inter_alpha_s);
  h5::write_double_attribute(table, "inter_beta_bytes_per_s", info.inter_beta_bytes_per_s);
  h5::write_int_attribute(table, "gpus_per_node", info.gpus_per_node);
  h5::write_string_attribute(table, "ready_source", info.ready_source);
  h5::write_string_list_attribute(table, "calibration_parameter_names", info.calibration_parameter_names);
  h5::write_int_attribute(table, "calibration_gpus", info.calibration_gpus);
  h5::write_int_attribute(table, "calibration_parameter", info.calibration_parameter);
  h5::write_double_attribute(table, "calibration_value", info.calibration_value);
  h5::write_int_attribute(table, "calibration_at_bound", info.calibration_at_bound);
  h5::write_double_attribute(table, "compute_factor", info.compute_factor);
  h5::write_int_attribute(table, "compute_factor_at_bound", info.compute_factor_at_bound);
  h5::write_double_attribute(table, "backward_factor", info.backward_factor);
  h5::write_int_attribute(table, "backward_factor_at_bound", info.backward_factor_at_bound);
  h5::write_double_attribute(table, "rank_spread", info.rank_spread);
  for (size_t i = 0; i < info.scaling_names.size(); ++i) {
    const std::string& name = info.scaling_names[i];
    h5::write_int_attribute(table, (name + "_exposed_5pct_gpus").c_str(), info.exposed_5pct_gpus.at(i));
    h5::write_int_attribute(table, (name + "_exposed_20pct_gpus").c_str(), info.exposed_20pct_gpus.at(i));
  }
}

}  // namespace

void write_predict_file(const std::string& path, const RunMetadata& metadata, const PredictInfo& info,
                        const std::vector<PredictRow>& rows, bool with_check, const std::vector<CheckRow>& check) {
  const std::string working = unique_working_path(path, "writing");
  RunMetadata with_start = metadata;
  if (with_start.start_time.empty()) with_start.start_time = utc_now_iso8601();
  ResultsFile(working, with_start).close();  // the root attributes, as every results file has them
  {
    h5::Handle access = h5::unlocked_file_access();
    CHECK_HDF5(H5Pset_libver_bounds(access.get(), H5F_LIBVER_V18, H5F_LIBVER_V18));
    h5::Handle file = h5::Handle::file(CHECK_HDF5(H5Fopen(working.c_str(), H5F_ACC_RDWR, access.get())));
    h5::write_int_attribute(file.get(), "predict_version", kPredictVersion);
    write_table(file.get(), "predict", predict_columns(), rows);
    {
      h5::Handle table = h5::Handle::dataset(CHECK_HDF5(H5Dopen2(file.get(), "predict", H5P_DEFAULT)));
      write_info(table.get(), info);
    }
    if (with_check) {
      write_table(file.get(), "check", check_columns(), check);
      h5::Handle table = h5::Handle::dataset(CHECK_HDF5(H5Dopen2(file.get(), "check", H5P_DEFAULT)));
      h5::write_string_list_attribute(table.get(), "calibration_parameter_names", info.calibration_parameter_names);
    }
    CHECK_HDF5(H5Fflush(file.get(), H5F_SCOPE_LOCAL));
  }
  // link() fails where a file appeared meanwhile: a path is never written over.
  if (::link(working.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::filesystem::remove(working);
    throw UserError("--out '" + path + "': cannot place the prediction there (" + std::strerror(error) + ")");
  }
  std::filesystem::remove(working);
}

}  // namespace sb::predict
