#include "core/log.h"

#include <cstdio>

#include "core/error.h"

namespace sb {
void log0(const char* format, ...) {
  if (process_rank() > 0) return;
  va_list args;
  va_start(args, format);
  std::vfprintf(stdout, format, args);
  va_end(args);
  std::fflush(stdout);
}
void log_all(const char* format, ...) {
  std::fprintf(stderr, "[rank %d] ", process_rank());
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fflush(stderr);
}
}  // namespace sb
