#include "metrics/results_schema.h"

#include <cstddef>

#include "core/check.h"

namespace sb {

std::span<const Column> epoch_columns() {
  using Row = EpochRow;
  static const Column columns[] = {SB_EPOCH_COLUMNS(SB_COLUMN_ENTRY)};
  return columns;
}

std::span<const Column> study_columns() {
  using Row = StudyRow;
  static const Column columns[] = {SB_STUDY_COLUMNS(SB_COLUMN_ENTRY)};
  return columns;
}

std::span<const Column> efficiency_split_columns() {
  using Row = EfficiencySplitRow;
  static const Column columns[] = {SB_EFFICIENCY_SPLIT_COLUMNS(SB_COLUMN_ENTRY)};
  return columns;
}

h5::Handle compound_type(std::span<const Column> columns, size_t row_size) {
  h5::Handle type = h5::Handle::datatype(CHECK_HDF5(H5Tcreate(H5T_COMPOUND, row_size)));
  for (const Column& column : columns)
    CHECK_HDF5(H5Tinsert(type.get(), column.name, column.offset,
                         column.type == ColumnType::Int64 ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE));
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
