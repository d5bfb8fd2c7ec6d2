// Rank-0 logging: every rank may call it, only rank 0 prints.
#pragma once
#include <cstdarg>

namespace sb {
// printf-style; prints to stdout on rank 0 (or before the MPI bootstrap) and flushes.
void log0(const char* format, ...) __attribute__((format(printf, 1, 2)));
// printf-style; prints on every rank to stderr, prefixed with the rank.
void log_all(const char* format, ...) __attribute__((format(printf, 1, 2)));
}  // namespace sb
