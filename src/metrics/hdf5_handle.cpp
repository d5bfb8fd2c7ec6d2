#include "metrics/hdf5_handle.h"

#include <cstdio>
#include <mutex>

#include "core/check.h"
#include "core/error.h"

namespace sb::h5 {

void Handle::reset() {
  if (id_ >= 0) CHECK_HDF5(closer_(std::exchange(id_, -1)));
}

void init_hdf5() {
  static std::once_flag once;
  std::call_once(once, [] {
    CHECK_HDF5(H5open());
    CHECK_HDF5(H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr));
    // Runs after fatal_call's own line. The stack holds the failed call's errors: every HDF5 API call
    // clears it on entry, and nothing calls HDF5 between the failure and the abort.
    add_abort_hook([] { H5Eprint2(H5E_DEFAULT, stderr); });
  });
}

std::string hdf5_library_version() {
  unsigned major = 0, minor = 0, release = 0;
  CHECK_HDF5(H5get_libversion(&major, &minor, &release));
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

Handle unlocked_file_access() {
  Handle fapl = Handle::property_list(CHECK_HDF5(H5Pcreate(H5P_FILE_ACCESS)));
#if H5_VERSION_GE(1, 12, 1) || (H5_VERS_MAJOR == 1 && H5_VERS_MINOR == 10 && H5_VERS_RELEASE >= 7)
  CHECK_HDF5(H5Pset_file_locking(fapl.get(), false, true));
#endif
  return fapl;
}

}  // namespace sb::h5
