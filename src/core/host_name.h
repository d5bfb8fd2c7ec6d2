// This machine's host name, as the lock and working files beside an output record it.
#pragma once
#include <unistd.h>

#include <string>

namespace sb {

// gethostname(), or "host" where it fails (a name is needed, and the PID beside it still tells runs apart).
inline std::string this_host_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "host";
  return host;
}

}  // namespace sb
