// gtest main for MPI tests: every rank runs every test; rank 0 prints gtest's report, and every other
// rank prints its own failures (with its rank), so that a failure on rank 1 is not a silent exit code.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "core/error.h"

namespace {

class OtherRankFailures : public ::testing::EmptyTestEventListener {
 public:
  explicit OtherRankFailures(int rank) : rank_(rank) {}
  // The name is kept here: asking gtest for the current test inside OnTestPartResult would take the lock
  // that gtest holds while reporting the result (a deadlock).
  void OnTestStart(const ::testing::TestInfo& test) override {
    test_ = std::string(test.test_suite_name()) + "." + test.name();
  }
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] FAILED %s at %s:%d\n%s\n", rank_, test_.c_str(),
                 result.file_name() ? result.file_name() : "?", result.line_number(), result.message());
    std::fflush(stderr);
  }

 private:
  int rank_;
  std::string test_;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  sb::set_process_identity(rank, host);
  ::testing::InitGoogleTest(&argc, argv);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new OtherRankFailures(rank));
  }
  int failed = RUN_ALL_TESTS();
  // A test that fails on any rank fails the job on every rank.
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any_failed ? 1 : 0;
}
