// Fuzzes read_checkpoint (the --resume path) on a file of hostile bytes. The seed corpus holds a
// valid checkpoint written by `scalebench train --checkpoint-every 1` (run_fuzzers.sh makes it).
//
// Input: the file's bytes. Allowed outcomes: a checkpoint, or sb::UserError. Anything else is a
// finding, including an abort through CHECK_HDF5 (fuzz::abort_on_fatal).
//
// A checkpoint is sealed (a checksum of its HDF5 content in its first 512 bytes, checked before the
// HDF5 library reads anything), so almost every mutation ends at the seal: that is what CI runs, the
// property that no corrupt file reaches libhdf5. With SB_FUZZ_RESEAL=1 in the environment the harness
// reseals each input first, as a forger would, so that mutations reach libhdf5 and the reader's checks
// behind it; libhdf5 1.10 then crashes within seconds on its own bugs (docs/fuzzing.md), so this mode
// is for triage by hand, not for CI.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "fuzz_util.h"
#include "h5/handle.h"
#include "train/checkpoint/checkpoint.h"

using namespace sb;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::abort_on_fatal();  // first, so that it runs after init_hdf5's hook has printed HDF5's stack
  h5::init_hdf5();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A file in a directory, not a memfd: HDF5 refuses to open /proc/self/fd/N.
  static fuzz::ScratchDir dir;
  static const std::string path = dir.path() + "/checkpoint.h5";
  fuzz::write_file(path, data, size);
  static const bool reseal = [] {
    const char* v = std::getenv("SB_FUZZ_RESEAL");
    return v != nullptr && *v != '\0' && *v != '0';
  }();
  if (reseal && size >= 512) seal_checkpoint(path);
  try {
    const Checkpoint c = read_checkpoint(path);
    SB_FUZZ_REQUIRE(c.world_size >= 1);
    SB_FUZZ_REQUIRE(c.rank_buffers.size() == static_cast<size_t>(c.world_size));
    SB_FUZZ_REQUIRE(c.rank_totals.size() == static_cast<size_t>(c.world_size));
  } catch (const UserError& e) {
    fuzz::expected(e);  // the answer to a bad file
  }
  return 0;
}
