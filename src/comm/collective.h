// The collectives of the `comm` sweep, one row each, as nccl-tests makes each collective one small file
// over a shared harness. A row says how the collective counts its bytes, how busy the links are for them
// (nccl-tests' bus-bandwidth factor, doc/PERFORMANCE.md), where its input and result lie, what the result
// must be, and its MPI call; the NCCL call of each is in comm/cuda/nccl_collective_calls.cpp.
//
// Counts follow nccl-tests: `count` is the elements of the whole array (the sweep's size / element size),
// which is what each rank sends and receives in an all-reduce and a broadcast, what each rank sends in a
// reduce-scatter (and receives count / ranks of), and what each rank receives in an all-gather (having
// sent count / ranks). Rank r's input element j is always CheckPattern::value(r, j).
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "comm/check_pattern.h"

namespace sb {

// The code in the results file's `collective` column (0 for files written before the column).
enum class CollectiveKind { AllReduce = 0, ReduceScatter = 1, AllGather = 2, Broadcast = 3 };

// One call of the MPI runner. In place, `send` is null: the input lies in `receive` (Collective::in_place).
struct MpiCollectiveCall {
  const void* send;
  void* receive;
  int64_t per_rank;  // Collective::per_rank_count
  MPI_Datatype type;
  MPI_Comm comm;
  int rank;
};

struct Collective {
  CollectiveKind kind;
  const char* name;   // the --collectives name: "all-reduce"
  const char* redop;  // nccl-tests' redop column: "sum", or "none" where nothing is reduced
  int root;           // nccl-tests' root column: -1, or the broadcast's root
  // busbw = algbw x factor (nccl-tests' doc/PERFORMANCE.md).
  double (*busbw_factor)(int ranks);
  // The largest whole-array count <= count that this collective carries on `ranks` (0: none).
  int64_t (*usable_count)(int64_t count, int ranks);
  // The count argument of the call: elements per rank where the array is split, else the whole.
  int64_t (*per_rank_count)(int64_t count, int ranks);
  int64_t (*send_count)(int64_t count, int ranks);     // elements of each rank's input
  int64_t (*receive_count)(int64_t count, int ranks);  // elements of each rank's result
  // In place, one buffer of `count` elements: where this rank's input and its result start. MPI and
  // NCCL place an in-place reduce-scatter's result differently (MPI at the start, NCCL at rank's block).
  int64_t (*in_place_input_offset)(int rank, int64_t per_rank);
  int64_t (*in_place_result_offset)(int rank, int64_t per_rank, bool mpi);
  // Element j of rank `rank`'s result, exact for the pattern's values.
  double (*expected)(const CheckPattern& pattern, int rank, int64_t per_rank, int64_t j);
  // The MPI call (blocking, or non-blocking under the collective watchdog, as every host collective).
  void (*run_mpi)(const MpiCollectiveCall& call);
};

// The rows (comm/collective_*.cpp), in code order.
extern const Collective kAllReduce;
extern const Collective kReduceScatter;
extern const Collective kAllGather;
extern const Collective kBroadcast;

const Collective& collective_of(CollectiveKind kind);
std::vector<std::string> collective_names();  // every name, indexed by code
// The collectives of --collectives, in the given order; UserError naming the option for an unknown or
// repeated name.
std::vector<CollectiveKind> parse_collectives(const std::vector<std::string>& names);

// The rows' shared pieces.
int64_t whole_count(int64_t count, int ranks);                 // count as it is
int64_t split_count(int64_t count, int ranks);                 // count / ranks
int64_t multiple_of_ranks(int64_t count, int ranks);           // count rounded down to a multiple of ranks
int64_t at_start(int rank, int64_t per_rank);                  // 0
int64_t at_rank_block(int rank, int64_t per_rank);             // rank x per_rank
int64_t result_at_start(int rank, int64_t per_rank, bool mpi);  // 0

}  // namespace sb
