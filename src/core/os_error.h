// Turning an operating-system error (errno) met while writing a file into words a user can act on.
#pragma once
#include <string>

namespace sb {

// What to do about a failed write with this errno, e.g. for ENOSPC "free space on that file system or
// choose another path". Never empty.
std::string write_error_hint(int error_number);

}  // namespace sb
