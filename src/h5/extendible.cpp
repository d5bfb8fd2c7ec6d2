#include "h5/extendible.h"

#include "core/check.h"

namespace sb::h5 {

Handle create_extendible(hid_t parent, const char* name, hid_t type, const std::vector<hsize_t>& shape,
                         size_t grow_axis, const std::vector<hsize_t>& chunk) {
  std::vector<hsize_t> max_shape = shape;
  max_shape[grow_axis] = H5S_UNLIMITED;
  Handle space = Handle::dataspace(
      CHECK_HDF5(H5Screate_simple(static_cast<int>(shape.size()), shape.data(), max_shape.data())));
  Handle properties = Handle::property_list(CHECK_HDF5(H5Pcreate(H5P_DATASET_CREATE)));
  CHECK_HDF5(H5Pset_chunk(properties.get(), static_cast<int>(chunk.size()), chunk.data()));
  return Handle::dataset(
      CHECK_HDF5(H5Dcreate2(parent, name, type, space.get(), H5P_DEFAULT, properties.get(), H5P_DEFAULT)));
}

std::vector<hsize_t> shape_of(hid_t dataset) {
  Handle space = Handle::dataspace(CHECK_HDF5(H5Dget_space(dataset)));
  const int rank = CHECK_HDF5(H5Sget_simple_extent_ndims(space.get()));
  std::vector<hsize_t> shape(static_cast<size_t>(rank));
  CHECK_HDF5(H5Sget_simple_extent_dims(space.get(), shape.data(), nullptr));
  return shape;
}

void append_along(hid_t dataset, hid_t memory_type, size_t grow_axis, hsize_t count, const void* data) {
  if (count == 0) return;
  const std::vector<hsize_t> old_shape = shape_of(dataset);
  std::vector<hsize_t> new_shape = old_shape;
  new_shape[grow_axis] += count;
  CHECK_HDF5(H5Dset_extent(dataset, new_shape.data()));

  // The new slab: everything along the fixed axes, the `count` new slices along the grow axis.
  std::vector<hsize_t> start(old_shape.size(), 0);
  start[grow_axis] = old_shape[grow_axis];
  std::vector<hsize_t> block = old_shape;
  block[grow_axis] = count;
  Handle file_space = Handle::dataspace(CHECK_HDF5(H5Dget_space(dataset)));
  CHECK_HDF5(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, block.data(), nullptr));
  Handle memory_space =
      Handle::dataspace(CHECK_HDF5(H5Screate_simple(static_cast<int>(block.size()), block.data(), nullptr)));
  CHECK_HDF5(H5Dwrite(dataset, memory_type, memory_space.get(), file_space.get(), H5P_DEFAULT, data));
}

void read_whole(hid_t dataset, hid_t memory_type, void* out) {
  for (hsize_t extent : shape_of(dataset))
    if (extent == 0) return;  // nothing to read, and `out` may be empty
  CHECK_HDF5(H5Dread(dataset, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out));
}

}  // namespace sb::h5
