// Typed attributes on an HDF5 object (file root, group or dataset). Strings are variable-length UTF-8,
// which h5py reads back as str. Writing replaces an attribute of the same name.
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sb::h5 {

void write_string_attribute(hid_t object, const char* name, const std::string& value);
void write_string_list_attribute(hid_t object, const char* name, const std::vector<std::string>& values);
void write_int_attribute(hid_t object, const char* name, int64_t value);
void write_double_attribute(hid_t object, const char* name, double value);

bool has_attribute(hid_t object, const char* name);
std::string read_string_attribute(hid_t object, const char* name);  // variable or fixed length
std::vector<std::string> read_string_list_attribute(hid_t object, const char* name);
int64_t read_int_attribute(hid_t object, const char* name);
double read_double_attribute(hid_t object, const char* name);

// `count` fixed-length strings of `width` bytes each, laid end to end in `buffer` (as H5Aread gives
// them), each ending at its first null byte or at its width (null-terminated or null-padded).
std::vector<std::string> split_fixed_length_strings(const char* buffer, size_t width, int64_t count);

}  // namespace sb::h5
