#include "metrics/results_reader.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "core/check.h"
#include "core/error.h"
#include "h5/attributes.h"
#include "h5/extendible.h"

namespace sb {
namespace {

std::string child_path(const std::string& parent, const char* name) {
  std::string path = parent;
  if (path.empty() || path.back() != '/') path += '/';
  return path += name;
}

}  // namespace

ResultsReader::ResultsReader(const std::string& path) {
  h5::init_hdf5();
  if (!std::filesystem::is_regular_file(path)) throw UserError("no results file at '" + path + "'");
  if (CHECK_HDF5(H5Fis_hdf5(path.c_str())) <= 0) throw UserError("'" + path + "' is not an HDF5 file");
  h5::Handle access = h5::unlocked_file_access();
  file_ = h5::Handle::file(CHECK_HDF5(H5Fopen(path.c_str(), H5F_ACC_RDONLY, access.get())));
}

bool ResultsReader::has(const std::string& object) const {
  if (object == "/") return true;
  // H5Lexists wants every parent to exist, so walk the path one link at a time.
  size_t end = 0;
  while (end != std::string::npos) {
    end = object.find('/', end + 1);
    const std::string prefix = object.substr(0, end);
    if (CHECK_HDF5(H5Lexists(file_.get(), prefix.c_str(), H5P_DEFAULT)) <= 0) return false;
  }
  return true;
}

h5::Handle ResultsReader::open_object(const std::string& object) const {
  if (!has(object)) throw std::out_of_range("no object '" + object + "' in the results file");
  return h5::Handle(CHECK_HDF5(H5Oopen(file_.get(), object.c_str(), H5P_DEFAULT)), H5Oclose);
}

h5::Handle ResultsReader::open_dataset(const std::string& run, const char* name) const {
  return open_dataset_at(child_path(run, name));
}

h5::Handle ResultsReader::open_dataset_at(const std::string& path) const {
  if (!has(path)) throw std::out_of_range("no dataset '" + path + "' in the results file");
  return h5::Handle::dataset(CHECK_HDF5(H5Dopen2(file_.get(), path.c_str(), H5P_DEFAULT)));
}

bool ResultsReader::has_attribute(const std::string& name, const std::string& object) const {
  return h5::has_attribute(open_object(object).get(), name.c_str());
}
std::string ResultsReader::string_attribute(const std::string& name, const std::string& object) const {
  return h5::read_string_attribute(open_object(object).get(), name.c_str());
}
std::vector<std::string> ResultsReader::string_list_attribute(const std::string& name, const std::string& object) const {
  return h5::read_string_list_attribute(open_object(object).get(), name.c_str());
}
int64_t ResultsReader::int_attribute(const std::string& name, const std::string& object) const {
  return h5::read_int_attribute(open_object(object).get(), name.c_str());
}
double ResultsReader::double_attribute(const std::string& name, const std::string& object) const {
  return h5::read_double_attribute(open_object(object).get(), name.c_str());
}

template <class Row>
std::vector<Row> ResultsReader::read_rows(const std::string& parent, const char* name, std::span<const Column> columns) const {
  h5::Handle dataset = open_dataset(parent, name);
  // Only the columns the file has: a table of an older schema lacks the later ones, which keep their
  // "not measured" values (HDF5 leaves the members it does not convert untouched).
  const std::vector<std::string> stored = column_names(child_path(parent, name));
  std::vector<Column> present;
  for (const Column& column : columns)
    if (std::find(stored.begin(), stored.end(), column.name) != stored.end()) present.push_back(column);
  h5::Handle type = compound_type(present, sizeof(Row));
  std::vector<Row> rows(static_cast<size_t>(h5::shape_of(dataset.get())[0]));
  h5::read_whole(dataset.get(), type.get(), rows.data());
  return rows;
}

std::vector<EpochRow> ResultsReader::epochs(const std::string& run) const {
  return read_rows<EpochRow>(run, "epochs", epoch_columns());
}

std::vector<std::string> ResultsReader::epoch_column_names(const std::string& run) const {
  return column_names(child_path(run, "epochs"));
}

std::vector<std::string> ResultsReader::column_names(const std::string& table) const {
  h5::Handle dataset = open_dataset_at(table);
  h5::Handle type = h5::Handle::datatype(CHECK_HDF5(H5Dget_type(dataset.get())));
  std::vector<std::string> names;
  if (CHECK_HDF5(H5Tget_class(type.get())) != H5T_COMPOUND) return names;
  const int members = CHECK_HDF5(H5Tget_nmembers(type.get()));
  for (int i = 0; i < members; ++i) {
    char* name = H5Tget_member_name(type.get(), static_cast<unsigned>(i));
    if (!name) detail::hdf5_call_failed(__FILE__, __LINE__, "H5Tget_member_name");
    names.emplace_back(name);
    H5free_memory(name);
  }
  return names;
}

std::vector<std::vector<double>> ResultsReader::epoch_times_per_rank(const std::string& run) const {
  h5::Handle dataset = open_dataset(run, "epoch_times_per_rank");
  const std::vector<hsize_t> shape = h5::shape_of(dataset.get());
  std::vector<double> flat(static_cast<size_t>(shape[0] * shape[1]));
  h5::read_whole(dataset.get(), H5T_NATIVE_DOUBLE, flat.data());
  std::vector<std::vector<double>> times;
  for (hsize_t epoch = 0; epoch < shape[0]; ++epoch)
    times.emplace_back(flat.begin() + static_cast<ptrdiff_t>(epoch * shape[1]),
                       flat.begin() + static_cast<ptrdiff_t>((epoch + 1) * shape[1]));
  return times;
}

StepSamples ResultsReader::steps(const std::string& run) const {
  StepSamples samples;
  if (!has(child_path(run, "steps"))) return samples;
  h5::Handle numbers = open_dataset(run, "step_numbers");
  samples.step_numbers.resize(static_cast<size_t>(h5::shape_of(numbers.get())[0]));
  h5::read_whole(numbers.get(), H5T_NATIVE_INT64, samples.step_numbers.data());
  h5::Handle steps = open_dataset(run, "steps");
  const std::vector<hsize_t> shape = h5::shape_of(steps.get());
  samples.ranks = static_cast<int64_t>(shape[0]);
  samples.phase_ns.resize(static_cast<size_t>(shape[0] * shape[1] * shape[2]));
  h5::read_whole(steps.get(), H5T_NATIVE_INT64, samples.phase_ns.data());
  samples.phases = h5::read_string_list_attribute(steps.get(), "phases");
  return samples;
}

std::vector<double> ResultsReader::bucket_ready(const std::string& run) const {
  std::vector<double> seconds;
  if (!has(child_path(run, "bucket_ready"))) return seconds;
  h5::Handle dataset = open_dataset(run, "bucket_ready");
  const std::vector<hsize_t> shape = h5::shape_of(dataset.get());
  if (shape.size() != 1)
    throw UserError(child_path(run, "bucket_ready") + " must be 1-D, one value per bucket (docs/results_schema.md); this file's is " +
                    std::to_string(shape.size()) + "-D");
  seconds.resize(static_cast<size_t>(shape[0]));
  if (!seconds.empty()) h5::read_whole(dataset.get(), H5T_NATIVE_DOUBLE, seconds.data());
  return seconds;
}

std::vector<StudyRow> ResultsReader::study() const { return read_rows<StudyRow>("/", "study", study_columns()); }

std::vector<EfficiencySplitRow> ResultsReader::efficiency_split() const {
  if (!has("/efficiency_split")) return {};
  return read_rows<EfficiencySplitRow>("/", "efficiency_split", efficiency_split_columns());
}

std::vector<CommRow> ResultsReader::comm() const { return read_rows<CommRow>("/", "comm", comm_columns()); }

StudyInfo ResultsReader::study_info() const {
  StudyInfo info;
  info.mode = string_attribute("mode", "/study");
  info.baseline_gpus = int_attribute("baseline_gpus", "/study");
  info.target_accuracy = double_attribute("target_accuracy", "/study");
  // Schema 1 has no sweeps and no repeats.
  if (has_attribute("swept", "/study")) info.swept = string_list_attribute("swept", "/study");
  if (has_attribute("repeats", "/study")) info.repeats = int_attribute("repeats", "/study");
  if (has_attribute("settle_epochs", "/study")) info.settle_epochs = int_attribute("settle_epochs", "/study");
  for (const Column& column : study_columns()) {
    const std::string names = std::string(column.name) + "_names";
    if (has_attribute(names, "/study")) info.value_names.emplace_back(column.name, string_list_attribute(names, "/study"));
  }
  return info;
}

std::vector<std::string> ResultsReader::config_names() const {
  std::vector<std::string> names;
  if (!has("/configs")) return names;
  h5::Handle configs = h5::Handle::group(CHECK_HDF5(H5Gopen2(file_.get(), "/configs", H5P_DEFAULT)));
  H5G_info_t info;
  CHECK_HDF5(H5Gget_info(configs.get(), &info));
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t length = CHECK_HDF5(H5Lget_name_by_idx(configs.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT));
    std::string name(static_cast<size_t>(length) + 1, '\0');
    CHECK_HDF5(H5Lget_name_by_idx(configs.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT));
    name.resize(static_cast<size_t>(length));
    names.push_back(std::move(name));
  }
  return names;
}

std::vector<int64_t> ResultsReader::config_gpus() const {
  std::vector<int64_t> gpus;
  for (const std::string& name : config_names()) gpus.push_back(int_attribute("gpus", "/configs/" + name));
  std::sort(gpus.begin(), gpus.end());
  return gpus;
}

}  // namespace sb
