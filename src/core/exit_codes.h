// The exit codes of the scalebench program, in one place (docs/decisions.md, "Exit codes").
#pragma once

namespace sb {
inline constexpr int kExitBadInput = 2;     // an option, a file or a value is wrong: one sentence says which
inline constexpr int kExitFailure = 3;      // a failed library call, an unexpected error, the collective watchdog,
                                            // or (comm) an all-reduce that returned wrong results
inline constexpr int kExitDiverged = 4;     // the training loss became NaN or infinite
inline constexpr int kExitInterrupted = 75; // EX_TEMPFAIL: a stop signal ended the run; resume (or rerun) later
}  // namespace sb
