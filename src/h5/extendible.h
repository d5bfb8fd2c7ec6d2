// Chunked datasets that grow along one axis: the results tables gain a block of rows per epoch.
#pragma once
#include <hdf5.h>

#include <vector>

#include "h5/handle.h"

namespace sb::h5 {

// Creates `name` under `parent` with element type `type`. `shape` is the initial shape (usually 0 along
// `grow_axis`); that axis is unlimited, the others fixed. `chunk` has one entry per axis.
Handle create_extendible(hid_t parent, const char* name, hid_t type, const std::vector<hsize_t>& shape,
                         size_t grow_axis, const std::vector<hsize_t>& chunk);

// Appends `count` slices along `grow_axis`. `data` holds a row-major block of the dataset's shape with
// `count` in place of the grow axis, in elements of `memory_type`.
void append_along(hid_t dataset, hid_t memory_type, size_t grow_axis, hsize_t count, const void* data);

std::vector<hsize_t> shape_of(hid_t dataset);

// Reads the whole dataset, row-major, into `out` (which must hold every element).
void read_whole(hid_t dataset, hid_t memory_type, void* out);

}  // namespace sb::h5
