#include "h5/handle.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/check.h"
#include "core/error.h"
#include "core/os_error.h"

namespace sb::h5 {
namespace {

// What HDF5's error stack says about a failed call. HDF5 records an operating-system error as
// "..., errno = N, error message = '...'" in the description (a format its sources promise to keep), and
// names the file as "name = '...'" or "filename = '...'".
struct FailureDescription {
  std::string innermost;      // the description where the error was detected
  std::string system_reason;  // e.g. "No space left on device"; "" when no system call failed
  int error_number = 0;
  std::string action;         // "write", "read", "open" or "use": what failed on the file
  std::string file;           // "" when no entry names one
};

std::string quoted_after(const std::string& text, const char* key) {
  const size_t start = text.find(key);
  if (start == std::string::npos) return "";
  const size_t begin = start + std::strlen(key);
  const size_t end = text.find('\'', begin);
  return end == std::string::npos ? "" : text.substr(begin, end - begin);
}

std::string action_in(const std::string& description) {
  for (const char* action : {"write", "read", "open", "creat"}) {
    if (description.find(action) != std::string::npos) return std::strcmp(action, "creat") == 0 ? "create" : action;
  }
  return "use";
}

herr_t note_entry(unsigned, const H5E_error2_t* entry, void* data) {
  auto& failure = *static_cast<FailureDescription*>(data);
  const std::string description = entry->desc ? entry->desc : "";
  if (failure.innermost.empty()) failure.innermost = description;
  if (failure.file.empty()) failure.file = quoted_after(description, "name = '");
  if (failure.system_reason.empty()) {
    failure.system_reason = quoted_after(description, "error message = '");
    if (!failure.system_reason.empty()) {
      failure.action = action_in(description);
      if (const size_t at = description.find("errno = "); at != std::string::npos)
        failure.error_number = std::atoi(description.c_str() + at + 8);
    }
  }
  return 0;
}

bool trace_wanted() {
  const char* value = std::getenv("SCALEBENCH_HDF5_TRACE");
  return value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0;
}

}  // namespace

void Handle::reset() {
  if (id_ >= 0) CHECK_HDF5(closer_(std::exchange(id_, -1)));
}

void init_hdf5() {
  static std::once_flag once;
  std::call_once(once, [] {
    CHECK_HDF5(H5open());
    CHECK_HDF5(H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr));
    // A file-size limit (ulimit -f) must fail the write (EFBIG), which is then reported with the file's
    // name, rather than kill the process with SIGXFSZ and leave a core file and no explanation.
    std::signal(SIGXFSZ, SIG_IGN);
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

namespace sb::detail {

void hdf5_call_failed(const char* file, int line, const char* call) {
  // The stack holds the failed call's errors: every HDF5 API call clears it on entry, and walking or
  // printing it does not.
  h5::FailureDescription failure;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, h5::note_entry, &failure);
  const bool trace = h5::trace_wanted();
  if (trace) H5Eprint2(H5E_DEFAULT, stderr);
  std::string message;
  if (!failure.system_reason.empty()) {
    message = "HDF5 could not " + failure.action + " " + (failure.file.empty() ? "its file" : "'" + failure.file + "'") +
              ": " + failure.system_reason + "; " + write_error_hint(failure.error_number);
  } else {
    message = "HDF5 returned an error" + (failure.innermost.empty() ? "" : " (" + failure.innermost + ")");
  }
  if (!trace) message += "; SCALEBENCH_HDF5_TRACE=1 prints HDF5's error stack";
  fatal_call(file, line, call, message);
}

}  // namespace sb::detail
