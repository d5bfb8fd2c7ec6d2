#include "metrics/results_file.h"

#include <algorithm>
#include <ctime>
#include <exception>
#include <filesystem>
#include <stdexcept>

#include "core/check.h"
#include "core/error.h"
#include "h5/attributes.h"
#include "h5/extendible.h"
#include "metrics/results_output_check.h"
#include "metrics/results_publish.h"

namespace sb {
namespace {

void validate(const RunMetadata& metadata) {
  const auto per_rank = [&](const std::vector<std::string>& values, const char* what) {
    if (static_cast<int64_t>(values.size()) != metadata.world_size)
      throw std::invalid_argument(std::string("results metadata: ") + std::to_string(values.size()) + " " + what +
                                  " for a world of " + std::to_string(metadata.world_size) + " ranks");
  };
  if (metadata.world_size < 1) throw std::invalid_argument("results metadata: world_size must be at least 1");
  if (metadata.node_count < 1) throw std::invalid_argument("results metadata: node_count must be at least 1");
  per_rank(metadata.hosts, "hosts");
  per_rank(metadata.gpu_models, "GPU models");
}

void flush(hid_t object) { CHECK_HDF5(H5Fflush(object, H5F_SCOPE_LOCAL)); }

// Rows per chunk of a table whose rows hold `values` float64s: about 64 KiB per chunk, 1 to 64 rows.
hsize_t rows_per_chunk(int64_t values) { return static_cast<hsize_t>(std::clamp<int64_t>(8192 / values, 1, 64)); }

}  // namespace

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// ---------------------------------------------------------------------------------------------- RunWriter

RunWriter::RunWriter(hid_t group, int64_t ranks, ResultsFile* owner)
    : group_(group), owner_(owner), ranks_(ranks), epoch_type_(compound_type(epoch_columns(), sizeof(EpochRow))) {
  if (CHECK_HDF5(H5Lexists(group_, "epochs", H5P_DEFAULT)) > 0) open_tables();
  else create_tables();
  flush();
}

void RunWriter::create_tables() {
  h5::Handle file_type = packed_copy(epoch_type_.get());
  epochs_ = h5::create_extendible(group_, "epochs", file_type.get(), {0}, 0, {64});
  h5::write_string_list_attribute(epochs_.get(), "units", column_units(epoch_columns()));

  const hsize_t ranks_extent = static_cast<hsize_t>(ranks_);
  epoch_times_ = h5::create_extendible(group_, "epoch_times_per_rank", H5T_IEEE_F64LE, {0, ranks_extent}, 0,
                                       {rows_per_chunk(ranks_), ranks_extent});
  h5::write_string_attribute(epoch_times_.get(), "units", "s");
}

// The tables of a continued file (resume_check.h checked their layout against this run first).
void RunWriter::open_tables() {
  const auto open = [&](const char* name) { return h5::Handle::dataset(CHECK_HDF5(H5Dopen2(group_, name, H5P_DEFAULT))); };
  epochs_ = open("epochs");
  epoch_times_ = open("epoch_times_per_rank");
  const std::vector<hsize_t> times_shape = h5::shape_of(epoch_times_.get());
  if (times_shape.size() != 2 || times_shape[1] != static_cast<hsize_t>(ranks_))
    throw std::invalid_argument("the results file to continue holds epoch times of another rank count than " +
                                std::to_string(ranks_));
  epochs_written_ = static_cast<int64_t>(h5::shape_of(epochs_.get())[0]);
  if (CHECK_HDF5(H5Lexists(group_, "steps", H5P_DEFAULT)) > 0) {
    steps_ = open("steps");
    step_numbers_ = open("step_numbers");
    // Files written before step numbers carried a unit gain it, as every dataset has one.
    if (!h5::has_attribute(step_numbers_.get(), "units")) h5::write_string_attribute(step_numbers_.get(), "units", "1");
  }
}

void RunWriter::flush() {
  sb::flush(group_);
  owner_->publish();
}

void RunWriter::write_attribute(const char* name, double value) {
  const NamedValue one{name, value};
  write_attributes(std::span<const NamedValue>(&one, 1));
}

void RunWriter::write_attributes(std::span<const NamedValue> values) {
  for (const NamedValue& v : values) h5::write_double_attribute(group_, v.name.c_str(), v.value);
  flush();
}

void RunWriter::append_epoch(const EpochRow& row, std::span<const double> epoch_time_per_rank_s) {
  if (static_cast<int64_t>(epoch_time_per_rank_s.size()) != ranks_)
    throw std::invalid_argument("append_epoch: " + std::to_string(epoch_time_per_rank_s.size()) +
                                " epoch times for a run of " + std::to_string(ranks_) + " ranks");
  owner_->held_back_ = false;  // a new row: from here on `path` follows the working file
  h5::append_along(epochs_.get(), epoch_type_.get(), 0, 1, &row);
  h5::append_along(epoch_times_.get(), H5T_NATIVE_DOUBLE, 0, 1, epoch_time_per_rank_s.data());
  ++epochs_written_;
  flush();
}

void RunWriter::append_steps(std::span<const int64_t> step_numbers, std::span<const int64_t> phase_ns) {
  const size_t phases = kStepPhases.size();
  if (phase_ns.size() != static_cast<size_t>(ranks_) * step_numbers.size() * phases)
    throw std::invalid_argument("append_steps: " + std::to_string(phase_ns.size()) + " phase times for " +
                                std::to_string(ranks_) + " ranks x " + std::to_string(step_numbers.size()) +
                                " steps x " + std::to_string(phases) + " phases");
  if (step_numbers.empty()) return;
  owner_->held_back_ = false;
  if (!steps_) {  // optional: only runs that sample steps have these datasets
    steps_ = h5::create_extendible(group_, "steps", H5T_STD_I64LE, {static_cast<hsize_t>(ranks_), 0, phases}, 1,
                                   {1, 256, phases});
    h5::write_string_attribute(steps_.get(), "units", "ns");
    h5::write_string_list_attribute(steps_.get(), "phases", {kStepPhases.begin(), kStepPhases.end()});
    step_numbers_ = h5::create_extendible(group_, "step_numbers", H5T_STD_I64LE, {0}, 0, {256});
    h5::write_string_attribute(step_numbers_.get(), "units", "1");  // a count: the global step number
  }
  h5::append_along(steps_.get(), H5T_NATIVE_INT64, 1, step_numbers.size(), phase_ns.data());
  h5::append_along(step_numbers_.get(), H5T_NATIVE_INT64, 0, step_numbers.size(), step_numbers.data());
  flush();
}

void RunWriter::append_table_block(const char* name, const TableLayout& layout, std::span<const double> values) {
  std::vector<hsize_t> shape{0};
  shape.insert(shape.end(), layout.block_shape.begin(), layout.block_shape.end());
  shape.push_back(layout.columns.size());
  size_t per_epoch = 1;
  for (size_t i = 1; i < shape.size(); ++i) per_epoch *= shape[i];
  if (values.size() != per_epoch)
    throw std::invalid_argument(std::string("append_table_block: ") + std::to_string(values.size()) + " values for " +
                                std::to_string(per_epoch) + " in a block of " + name);
  h5::Handle table;
  if (CHECK_HDF5(H5Lexists(group_, name, H5P_DEFAULT)) > 0) {  // a continued file
    table = h5::Handle::dataset(CHECK_HDF5(H5Dopen2(group_, name, H5P_DEFAULT)));
  } else {
    std::vector<hsize_t> chunk = shape;
    chunk[0] = 16;
    table = h5::create_extendible(group_, name, H5T_IEEE_F64LE, shape, 0, chunk);
    h5::write_string_list_attribute(table.get(), "columns", layout.columns);
    h5::write_string_list_attribute(table.get(), "units", layout.units);
    for (const auto& [attribute, list] : layout.extra) h5::write_string_list_attribute(table.get(), attribute.c_str(), list);
  }
  owner_->held_back_ = false;
  h5::append_along(table.get(), H5T_NATIVE_DOUBLE, 0, 1, values.data());
  flush();
}

void RunWriter::write_bucket_ready(std::span<const double> seconds) {
  if (seconds.empty()) return;
  if (!bucket_ready_) {
    if (CHECK_HDF5(H5Lexists(group_, "bucket_ready", H5P_DEFAULT)) > 0) {  // a continued file
      bucket_ready_ = h5::Handle::dataset(CHECK_HDF5(H5Dopen2(group_, "bucket_ready", H5P_DEFAULT)));
    } else {
      bucket_ready_ = h5::create_extendible(group_, "bucket_ready", H5T_IEEE_F64LE, {0}, 0, {static_cast<hsize_t>(seconds.size())});
      h5::write_string_attribute(bucket_ready_.get(), "units", "s");
    }
  }
  // Replaced as a whole: each epoch's list is the median over more steps.
  const hsize_t count = seconds.size();
  CHECK_HDF5(H5Dset_extent(bucket_ready_.get(), &count));
  CHECK_HDF5(H5Dwrite(bucket_ready_.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, seconds.data()));
  flush();
}

// -------------------------------------------------------------------------------------------- ResultsFile

ResultsFile::ResultsFile(const std::string& path, const RunMetadata& metadata, ResultsOpen mode)
    : path_(path), world_size_(metadata.world_size) {
  // Everything that can be wrong with the input is found before the file exists.
  validate(metadata);
  check_output_writable(path);
  h5::init_hdf5();
  // HDF5 writes go to a working file of this run; after every flush a copy of it replaces `path`
  // atomically (copy, then rename), so a job killed even in the middle of a write leaves `path` holding
  // every finished epoch.
  working_path_ = unique_working_path(path, "writing");
  if (mode == ResultsOpen::Create) create_file(metadata);
  else continue_file(metadata);
}

namespace {
// The 1.8 format: dense attribute storage (no 64 KiB limit for the per-rank lists), readable by any
// HDF5 since 1.8, and no "file is open for writing" flag that would make a killed job's file need h5clear.
h5::Handle results_file_access() {
  h5::Handle access = h5::unlocked_file_access();
  CHECK_HDF5(H5Pset_libver_bounds(access.get(), H5F_LIBVER_V18, H5F_LIBVER_V18));
  return access;
}
}  // namespace

void ResultsFile::create_file(const RunMetadata& metadata) {
  h5::Handle access = results_file_access();
  file_ = h5::Handle::file(CHECK_HDF5(H5Fcreate(working_path_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get())));

  const hid_t root = file_.get();
  h5::write_int_attribute(root, "schema_version", kResultsSchemaVersion);
  h5::write_string_attribute(root, "tool_version", metadata.tool_version);
  h5::write_string_attribute(root, "git_sha", metadata.git_sha);
  h5::write_string_attribute(root, "command_line", metadata.command_line);
  h5::write_string_attribute(root, "config_json", metadata.config_json);
  h5::write_int_attribute(root, "world_size", metadata.world_size);
  h5::write_int_attribute(root, "node_count", metadata.node_count);
  h5::write_string_list_attribute(root, "hosts", metadata.hosts);
  h5::write_string_list_attribute(root, "gpu_models", metadata.gpu_models);
  h5::write_string_attribute(root, "cuda_version", metadata.cuda_version);
  h5::write_string_attribute(root, "cudnn_version", metadata.cudnn_version);
  h5::write_string_attribute(root, "nccl_version", metadata.nccl_version);
  h5::write_string_attribute(root, "mpi_version", metadata.mpi_version);
  h5::write_string_attribute(root, "hdf5_version", h5::hdf5_library_version());
  h5::write_string_attribute(root, "start_time", metadata.start_time.empty() ? utc_now_iso8601() : metadata.start_time);
  h5::write_string_attribute(root, "end_time", "");
  h5::write_int_attribute(root, "complete", 0);
  h5::write_string_attribute(root, "slurm_job_id", metadata.slurm_job_id);
  h5::write_string_attribute(root, "launcher", metadata.launcher);
  h5::write_string_attribute(root, "node_list", metadata.node_list);
  h5::write_int_attribute(root, "ranks_per_node", metadata.ranks_per_node);
  flush(root);
  publish();
}

void ResultsFile::continue_file(const RunMetadata& metadata) {
  std::error_code ec;
  std::filesystem::copy_file(path_, working_path_, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) {
    std::filesystem::remove(working_path_, ec);
    throw UserError("cannot continue the results file '" + path_ + "': copying it failed (" + ec.message() +
                    "); check the free space and permissions of its directory");
  }
  held_back_ = true;
  h5::Handle access = results_file_access();
  file_ = h5::Handle::file(CHECK_HDF5(H5Fopen(working_path_.c_str(), H5F_ACC_RDWR, access.get())));
  const hid_t root = file_.get();
  const int64_t world_size = h5::read_int_attribute(root, "world_size");
  if (world_size != metadata.world_size) {
    close_handles();
    std::filesystem::remove(working_path_, ec);
    throw std::invalid_argument("the results file to continue was written by " + std::to_string(world_size) +
                                " ranks, not " + std::to_string(metadata.world_size));
  }
  // The start, the job and its versions stay those of the first run; the configuration is the latest
  // (a resume may change only the options that do not shape the run), each resume's command line is kept.
  std::vector<std::string> resumes;
  if (h5::has_attribute(root, "resume_command_lines")) resumes = h5::read_string_list_attribute(root, "resume_command_lines");
  resumes.push_back(metadata.command_line);
  h5::write_string_list_attribute(root, "resume_command_lines", resumes);
  h5::write_string_attribute(root, "config_json", metadata.config_json);
  h5::write_string_attribute(root, "end_time", "");
  h5::write_int_attribute(root, "complete", 0);
  flush(root);
}

void ResultsFile::publish() {
  if (held_back_) return;
  if (publish_holds_ > 0) {
    publish_pending_ = true;
    return;
  }
  publish_pending_ = false;
  publish_copy(working_path_, path_);
}

RunWriter::PublishOnce::PublishOnce(RunWriter& run) : file_(run.owner_) { ++file_->publish_holds_; }

RunWriter::PublishOnce::~PublishOnce() noexcept(false) {
  // An exception under way leaves the last published copy; the working file keeps every write.
  if (--file_->publish_holds_ == 0 && file_->publish_pending_ && file_->file_ && std::uncaught_exceptions() == 0) file_->publish();
}

ResultsFile::~ResultsFile() {
  if (!file_) return;
  // An exception unwound past close(): keep what was written (complete stays 0) and leave no working
  // file behind. A continued file with no new row leaves `path` exactly as it was.
  close_handles();
  std::error_code ec;
  if (held_back_) std::filesystem::remove(working_path_, ec);
  else std::filesystem::rename(working_path_, path_, ec);
}

void ResultsFile::close_handles() {
  study_ = {};
  study_type_ = {};
  split_ = {};
  split_type_ = {};
  runs_.clear();
  groups_.clear();
  file_.reset();  // H5Fclose writes everything out
}

void ResultsFile::require_open() const {
  if (!file_) throw std::logic_error("the results file '" + path_ + "' is already closed");
}

RunWriter& ResultsFile::add_run(hid_t group, int64_t ranks) {
  char name[256];
  CHECK_HDF5(H5Iget_name(group, name, sizeof name));
  auto [it, inserted] = runs_.emplace(name, nullptr);
  if (!inserted) throw std::invalid_argument(std::string("the results file already has a run at ") + name);
  it->second.reset(new RunWriter(group, ranks, this));
  return *it->second;
}

RunWriter& ResultsFile::main_run() {
  require_open();
  if (auto it = runs_.find("/"); it != runs_.end()) return *it->second;
  return add_run(file_.get(), world_size_);
}

RunWriter& ResultsFile::add_config(const ConfigGroup& config) {
  require_open();
  const int64_t gpus = config.gpus;
  const int64_t ranks = config.ranks > 0 ? config.ranks : gpus;
  if (gpus < 1 || ranks > world_size_ || ranks > gpus)
    throw std::invalid_argument("add_config: " + std::to_string(gpus) + " GPUs on " + std::to_string(ranks) +
                                " ranks in a job of " + std::to_string(world_size_) + " ranks");
  const hid_t root = file_.get();
  if (CHECK_HDF5(H5Lexists(root, "configs", H5P_DEFAULT)) == 0)
    groups_.push_back(h5::Handle::group(CHECK_HDF5(H5Gcreate2(root, "configs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT))));
  if (config.suffix.find('/') != std::string::npos) throw std::invalid_argument("add_config: '/' in the suffix " + config.suffix);
  const std::string path = "/configs/gpus_" + std::to_string(gpus) + config.suffix;
  if (CHECK_HDF5(H5Lexists(root, path.c_str(), H5P_DEFAULT)) > 0)
    throw std::invalid_argument("the results file already has the configuration " + path);
  groups_.push_back(h5::Handle::group(CHECK_HDF5(H5Gcreate2(root, path.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT))));
  const hid_t group = groups_.back().get();
  h5::write_int_attribute(group, "gpus", gpus);
  h5::write_int_attribute(group, "repeat", config.repeat);
  h5::write_string_attribute(group, "config_json", config.config_json);
  return add_run(group, ranks);
}

void ResultsFile::begin_study(const StudyInfo& info) {
  require_open();
  if (info.mode != "strong" && info.mode != "weak")
    throw std::invalid_argument("begin_study: mode must be \"strong\" or \"weak\", not \"" + info.mode + "\"");
  if (info.baseline_gpus < 1) throw std::invalid_argument("begin_study: baseline_gpus must be at least 1");
  if (info.repeats < 1) throw std::invalid_argument("begin_study: repeats must be at least 1");
  if (study_) throw std::logic_error("begin_study: the study table exists already");
  study_type_ = compound_type(study_columns(), sizeof(StudyRow));
  h5::Handle file_type = packed_copy(study_type_.get());
  study_ = h5::create_extendible(file_.get(), "study", file_type.get(), {0}, 0, {16});
  h5::write_string_list_attribute(study_.get(), "units", column_units(study_columns()));
  h5::write_string_attribute(study_.get(), "mode", info.mode);
  h5::write_int_attribute(study_.get(), "baseline_gpus", info.baseline_gpus);
  h5::write_double_attribute(study_.get(), "target_accuracy", info.target_accuracy);
  h5::write_string_list_attribute(study_.get(), "swept", info.swept);
  h5::write_int_attribute(study_.get(), "repeats", info.repeats);
  if (info.settle_epochs >= 0) h5::write_int_attribute(study_.get(), "settle_epochs", info.settle_epochs);
  for (const auto& [column, names] : info.value_names)
    h5::write_string_list_attribute(study_.get(), (column + "_names").c_str(), names);
  flush(file_.get());
  publish();
}

void ResultsFile::append_study_row(const StudyRow& row) {
  require_open();
  if (!study_) throw std::logic_error("append_study_row before begin_study");
  h5::append_along(study_.get(), study_type_.get(), 0, 1, &row);
  flush(file_.get());
  publish();
}

void ResultsFile::append_efficiency_split_row(const EfficiencySplitRow& row) {
  require_open();
  if (!split_) {
    split_type_ = compound_type(efficiency_split_columns(), sizeof(EfficiencySplitRow));
    h5::Handle file_type = packed_copy(split_type_.get());
    split_ = h5::create_extendible(file_.get(), "efficiency_split", file_type.get(), {0}, 0, {16});
    h5::write_string_list_attribute(split_.get(), "units", column_units(efficiency_split_columns()));
  }
  h5::append_along(split_.get(), split_type_.get(), 0, 1, &row);
  flush(file_.get());
  publish();
}

void ResultsFile::write_root_attribute(const char* name, double value) {
  const NamedValue one{name, value};
  write_root_attributes(std::span<const NamedValue>(&one, 1));
}

void ResultsFile::write_root_attributes(std::span<const NamedValue> values) {
  require_open();
  for (const NamedValue& v : values) h5::write_double_attribute(file_.get(), v.name.c_str(), v.value);
  flush(file_.get());
  publish();
}

void ResultsFile::close(bool finished, std::span<const NamedValue> last_attributes) {
  require_open();
  for (const NamedValue& v : last_attributes) h5::write_double_attribute(file_.get(), v.name.c_str(), v.value);
  h5::write_string_attribute(file_.get(), "end_time", utc_now_iso8601());
  h5::write_int_attribute(file_.get(), "complete", finished ? 1 : 0);
  close_handles();
  std::error_code ec;
  std::filesystem::rename(working_path_, path_, ec);  // the finished file replaces the last published copy
  if (ec) fatal("could not move " + working_path_ + " to " + path_ + ": " + ec.message());
}

}  // namespace sb
