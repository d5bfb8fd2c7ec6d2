// Checks that only one rank can make (e.g. rank 0 owns the output file) must still stop every rank
// together: a UserError thrown on one rank alone would leave the others waiting in a collective.
#pragma once
#include <functional>

#include "comm/communicator.h"

namespace sb {

// Collective. Runs `check` on `root` only. A sb::UserError it throws is rethrown as an AgreedError,
// with the same message, on every rank; any other exception is a bug and aborts the job.
void check_on_root(Communicator& comm, int root, const std::function<void()>& check);

}  // namespace sb
