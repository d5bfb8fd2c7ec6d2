#include "h5/attributes.h"

#include <stdexcept>

#include "core/check.h"
#include "h5/handle.h"

namespace sb::h5 {
namespace {

Handle utf8_string_type() {
  Handle type = Handle::datatype(CHECK_HDF5(H5Tcopy(H5T_C_S1)));
  CHECK_HDF5(H5Tset_size(type.get(), H5T_VARIABLE));
  CHECK_HDF5(H5Tset_cset(type.get(), H5T_CSET_UTF8));
  return type;
}

// Creates `name` afresh (deleting an older one: its type or shape may differ) and writes `data`.
void write_attribute(hid_t object, const char* name, hid_t type, hid_t space, const void* data) {
  if (has_attribute(object, name)) CHECK_HDF5(H5Adelete(object, name));
  Handle attribute = Handle::attribute(CHECK_HDF5(H5Acreate2(object, name, type, space, H5P_DEFAULT, H5P_DEFAULT)));
  CHECK_HDF5(H5Awrite(attribute.get(), type, data));
}

Handle open_attribute(hid_t object, const char* name) {
  if (!has_attribute(object, name))
    throw std::out_of_range(std::string("no attribute '") + name + "' in the results file");
  return Handle::attribute(CHECK_HDF5(H5Aopen(object, name, H5P_DEFAULT)));
}

// Opens a one-value attribute whose stored type is of one of the given classes (numbers convert).
Handle open_scalar(hid_t object, const char* name, H5T_class_t want, H5T_class_t also) {
  Handle attribute = open_attribute(object, name);
  Handle type = Handle::datatype(CHECK_HDF5(H5Aget_type(attribute.get())));
  const H5T_class_t type_class = H5Tget_class(type.get());
  Handle space = Handle::dataspace(CHECK_HDF5(H5Aget_space(attribute.get())));
  if ((type_class != want && type_class != also) || CHECK_HDF5(H5Sget_simple_extent_npoints(space.get())) != 1)
    throw std::invalid_argument(std::string("attribute '") + name + "' is not a single number of the expected type");
  return attribute;
}

// Reads every string of an attribute, whether stored as variable- or fixed-length strings.
std::vector<std::string> read_strings(hid_t object, const char* name) {
  Handle attribute = open_attribute(object, name);
  Handle file_type = Handle::datatype(CHECK_HDF5(H5Aget_type(attribute.get())));
  if (H5Tget_class(file_type.get()) != H5T_STRING)
    throw std::invalid_argument(std::string("attribute '") + name + "' does not hold strings");
  Handle space = Handle::dataspace(CHECK_HDF5(H5Aget_space(attribute.get())));
  const hssize_t count = CHECK_HDF5(H5Sget_simple_extent_npoints(space.get()));
  std::vector<std::string> strings;
  strings.reserve(static_cast<size_t>(count));
  if (CHECK_HDF5(H5Tis_variable_str(file_type.get())) > 0) {
    Handle memory_type = utf8_string_type();
    std::vector<char*> pointers(static_cast<size_t>(count) + 1, nullptr);
    CHECK_HDF5(H5Aread(attribute.get(), memory_type.get(), pointers.data()));
    for (hssize_t i = 0; i < count; ++i) {
      strings.emplace_back(pointers[i] ? pointers[i] : "");
      if (pointers[i]) CHECK_HDF5(H5free_memory(pointers[i]));  // HDF5 allocated each string
    }
  } else {
    const size_t width = H5Tget_size(file_type.get());
    Handle memory_type = Handle::datatype(CHECK_HDF5(H5Tcopy(H5T_C_S1)));
    CHECK_HDF5(H5Tset_size(memory_type.get(), width));
    std::vector<char> buffer(width * static_cast<size_t>(count) + 1, '\0');
    CHECK_HDF5(H5Aread(attribute.get(), memory_type.get(), buffer.data()));
    strings = split_fixed_length_strings(buffer.data(), width, count);
  }
  return strings;
}

}  // namespace

std::vector<std::string> split_fixed_length_strings(const char* buffer, size_t width, int64_t count) {
  std::vector<std::string> strings;
  for (int64_t i = 0; i < count; ++i) {
    const char* start = buffer + static_cast<size_t>(i) * width;
    size_t length = 0;
    while (length < width && start[length] != '\0') ++length;
    strings.emplace_back(start, length);
  }
  return strings;
}

void write_string_attribute(hid_t object, const char* name, const std::string& value) {
  Handle type = utf8_string_type();
  Handle space = Handle::dataspace(CHECK_HDF5(H5Screate(H5S_SCALAR)));
  const char* text = value.c_str();
  write_attribute(object, name, type.get(), space.get(), &text);
}

void write_string_list_attribute(hid_t object, const char* name, const std::vector<std::string>& values) {
  Handle type = utf8_string_type();
  const hsize_t count = values.size();
  Handle space = Handle::dataspace(CHECK_HDF5(H5Screate_simple(1, &count, nullptr)));
  std::vector<const char*> texts;
  texts.reserve(values.size() + 1);
  for (const std::string& value : values) texts.push_back(value.c_str());
  texts.push_back(nullptr);  // keeps data() valid for an empty list
  write_attribute(object, name, type.get(), space.get(), texts.data());
}

void write_int_attribute(hid_t object, const char* name, int64_t value) {
  Handle space = Handle::dataspace(CHECK_HDF5(H5Screate(H5S_SCALAR)));
  write_attribute(object, name, H5T_NATIVE_INT64, space.get(), &value);
}

void write_double_attribute(hid_t object, const char* name, double value) {
  Handle space = Handle::dataspace(CHECK_HDF5(H5Screate(H5S_SCALAR)));
  write_attribute(object, name, H5T_NATIVE_DOUBLE, space.get(), &value);
}

bool has_attribute(hid_t object, const char* name) { return CHECK_HDF5(H5Aexists(object, name)) > 0; }

std::string read_string_attribute(hid_t object, const char* name) {
  std::vector<std::string> strings = read_strings(object, name);
  if (strings.size() != 1) throw std::invalid_argument(std::string("attribute '") + name + "' is not one string");
  return strings.front();
}

std::vector<std::string> read_string_list_attribute(hid_t object, const char* name) {
  return read_strings(object, name);
}

int64_t read_int_attribute(hid_t object, const char* name) {
  Handle attribute = open_scalar(object, name, H5T_INTEGER, H5T_INTEGER);
  int64_t value = 0;
  CHECK_HDF5(H5Aread(attribute.get(), H5T_NATIVE_INT64, &value));
  return value;
}

double read_double_attribute(hid_t object, const char* name) {
  Handle attribute = open_scalar(object, name, H5T_FLOAT, H5T_INTEGER);
  double value = 0;
  CHECK_HDF5(H5Aread(attribute.get(), H5T_NATIVE_DOUBLE, &value));
  return value;
}

}  // namespace sb::h5
