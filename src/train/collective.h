// Runs a step that may fail with a UserError on some ranks only (a file missing on one node, say), and
// turns that into the same UserError on every rank, so that no rank is left waiting in a collective.
#pragma once
#include <functional>

#include "comm/communicator.h"

namespace sb {
// Collective. If `step` throws UserError (or std::bad_alloc) on any rank, every rank throws an AgreedError with the message of
// the lowest failing rank (prefixed with "rank N: " when N is not 0). Any other exception is not caught:
// it reaches main, which ends the job from that rank.
void run_collectively(Communicator& comm, const std::function<void()>& step);
}  // namespace sb
