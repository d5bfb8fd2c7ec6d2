// RAII ownership of HDF5 identifiers, and the process-wide HDF5 error setup.
#pragma once
#include <hdf5.h>

#include <string>
#include <utility>

namespace sb::h5 {

// Owns one HDF5 identifier and closes it with the matching H5?close. Failed calls never reach here:
// callers wrap the opening call in CHECK_HDF5, which aborts the job on a negative id.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  ~Handle() { reset(); }
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, -1)), closer_(other.closer_) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, -1);
      closer_ = other.closer_;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  hid_t get() const { return id_; }
  explicit operator bool() const { return id_ >= 0; }
  void reset();

  static Handle file(hid_t id) { return {id, H5Fclose}; }
  static Handle group(hid_t id) { return {id, H5Gclose}; }
  static Handle dataset(hid_t id) { return {id, H5Dclose}; }
  static Handle dataspace(hid_t id) { return {id, H5Sclose}; }
  static Handle datatype(hid_t id) { return {id, H5Tclose}; }
  static Handle attribute(hid_t id) { return {id, H5Aclose}; }
  static Handle property_list(hid_t id) { return {id, H5Pclose}; }

 private:
  hid_t id_ = -1;
  Closer closer_ = nullptr;
};

// Once per process, before the first HDF5 call of ours: stops HDF5 printing its error stack on every
// failed call (some failures are expected, e.g. probing; a CHECK_HDF5 failure says the stack's gist in one
// line, see core/check.h), and ignores SIGXFSZ so that a file-size limit fails a write with EFBIG.
void init_hdf5();

// The linked library's version, e.g. "1.10.8".
std::string hdf5_library_version();

// A file-access property list that does not lock the file. Results files have one writer, and parallel
// file systems without flock (Lustre, NFS) make a locking open fail; readers can then watch a live run.
Handle unlocked_file_access();

}  // namespace sb::h5
