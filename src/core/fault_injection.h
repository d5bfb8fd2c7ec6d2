// A test hook, cheap enough for every build: SCALEBENCH_FAULT=RANK:POINT makes rank RANK fail at the named
// point, so that tests can show a fault on one rank ends the whole job with one sentence. Points:
//   load  std::bad_alloc while the data set loads (a rank out of host memory)
//   step  std::runtime_error at the start of the second training step of a run
// Unset (the normal case), it does nothing.
#pragma once

namespace sb {
// Throws the point's exception when SCALEBENCH_FAULT names this rank and `point`; `count` is how many
// times this point was reached before (the step fault fires at count 1).
void inject_fault_if_asked(const char* point, long count = 0);
}  // namespace sb
