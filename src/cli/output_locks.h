// One live run per output file, for the commands that write one (train, scale, comm).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "metrics/output_lock.h"

namespace sb {

// Collective; call it after the cheap checks and before any expensive work or any write. Rank 0 locks
// `out` (OUT.lock), and `checkpoint` where it is given and is not OUT's own default checkpoint
// (OUT.ckpt.h5, which OUT's lock covers). When another live run holds either, every rank throws the same
// sb::UserError. The locks (held on rank 0 only; empty elsewhere) are released when the result is
// destroyed, or by the abort hook when the job is aborted.
std::vector<std::unique_ptr<OutputLock>> lock_outputs(Communicator& world, const std::string& out,
                                                      const std::string& checkpoint = "");

}  // namespace sb
