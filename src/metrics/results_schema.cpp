#include "metrics/results_schema.h"

#include <type_traits>

#include "core/check.h"

namespace sb {

#define SB_COLUMN(Row, field, unit) \
  Column { #field, unit, offsetof(Row, field), std::is_same_v<decltype(Row::field), int64_t> }

std::span<const Column> epoch_columns() {
  static const Column columns[] = {
      SB_COLUMN(EpochRow, epoch, "1"),
      SB_COLUMN(EpochRow, wall_time_max_s, "s"),
      SB_COLUMN(EpochRow, wall_time_mean_s, "s"),
      SB_COLUMN(EpochRow, wall_time_min_s, "s"),
      SB_COLUMN(EpochRow, images_per_s, "images/s"),
      SB_COLUMN(EpochRow, train_loss, "1"),
      SB_COLUMN(EpochRow, test_loss, "1"),
      SB_COLUMN(EpochRow, test_accuracy, "1"),
      SB_COLUMN(EpochRow, learning_rate, "1"),
      SB_COLUMN(EpochRow, exposed_comm_s, "s"),
      SB_COLUMN(EpochRow, energy_j, "J"),
      SB_COLUMN(EpochRow, peak_memory_bytes, "bytes"),
      SB_COLUMN(EpochRow, data_s, "s"),
      SB_COLUMN(EpochRow, forward_s, "s"),
      SB_COLUMN(EpochRow, backward_s, "s"),
      SB_COLUMN(EpochRow, comm_s, "s"),
      SB_COLUMN(EpochRow, optimizer_s, "s"),
      SB_COLUMN(EpochRow, steps_resumed, "1"),
  };
  return columns;
}

std::span<const Column> study_columns() {
  static const Column columns[] = {
      SB_COLUMN(StudyRow, gpus, "1"),
      SB_COLUMN(StudyRow, images_per_s, "images/s"),
      SB_COLUMN(StudyRow, epoch_time_s, "s"),
      SB_COLUMN(StudyRow, speedup, "1"),
      SB_COLUMN(StudyRow, efficiency, "1"),
      SB_COLUMN(StudyRow, exposed_comm_fraction, "1"),
      SB_COLUMN(StudyRow, time_to_accuracy_s, "s"),
  };
  return columns;
}

#undef SB_COLUMN

h5::Handle compound_type(std::span<const Column> columns, size_t row_size) {
  h5::Handle type = h5::Handle::datatype(CHECK_HDF5(H5Tcreate(H5T_COMPOUND, row_size)));
  for (const Column& column : columns)
    CHECK_HDF5(H5Tinsert(type.get(), column.name, column.offset,
                         column.is_integer ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE));
  return type;
}

h5::Handle packed_copy(hid_t type) {
  h5::Handle packed = h5::Handle::datatype(CHECK_HDF5(H5Tcopy(type)));
  CHECK_HDF5(H5Tpack(packed.get()));
  return packed;
}

std::vector<std::string> column_units(std::span<const Column> columns) {
  std::vector<std::string> units;
  for (const Column& column : columns) units.emplace_back(column.unit);
  return units;
}

}  // namespace sb
