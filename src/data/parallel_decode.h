// Decoding a data set's files at once, one thread per file: inflating a gzip stream is one core's work,
// so the files of a split (images, labels; train, test) decode side by side.
#pragma once
#include <functional>
#include <vector>

namespace sb {

enum class Decode { Serial, Parallel };

// Runs every task (each on its own thread with Decode::Parallel, one after the other with Serial) and
// waits for all; then rethrows the exception of the first task, in list order, that threw, so the
// error a user sees does not depend on which thread finished first.
void run_decode_tasks(const std::vector<std::function<void()>>& tasks, Decode mode);

}  // namespace sb
