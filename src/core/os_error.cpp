#include "core/os_error.h"

#include <cerrno>

namespace sb {

std::string write_error_hint(int error_number) {
  switch (error_number) {
    case ENOSPC:
      return "free space on that file system or choose another path";
    case EDQUOT:
      return "free space within your disk quota or choose another path";
    case EFBIG:
      return "the file outgrew the file-size limit (ulimit -f) or the file system's; raise it or choose another path";
    case EACCES:
    case EPERM:
    case EROFS:
      return "check the permissions of that path or choose another one";
    default:
      return "check that path and its file system, or choose another path";
  }
}

}  // namespace sb
