// The collective sweep's pieces on one process: the size list, the dtypes, the table of collectives (their
// bandwidth factors and byte counts), the check pattern's exactness, the run order, the expected-value
// check of every collective, and the /comm table of the results file. The MPI runner itself is tested
// on 1, 2 and 4 ranks in tests/mpi/test_collective_sweep.cpp.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "comm/allreduce_sweep.h"
#include "comm/collective.h"
#include "core/error.h"
#include "metrics/comm_results.h"
#include "h5/attributes.h"
#include "h5/extendible.h"

namespace sb {
namespace {

TEST(SweepSizes, PowersOfTwoWithinTheRange) {
  EXPECT_EQ(power_of_two_sizes(1024, 1 << 20),
            (std::vector<int64_t>{1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576}));
  EXPECT_EQ(power_of_two_sizes(1000, 5000), (std::vector<int64_t>{1024, 2048, 4096}));
  EXPECT_EQ(power_of_two_sizes(4096, 4096), (std::vector<int64_t>{4096}));
  EXPECT_EQ(power_of_two_sizes(1, 4), (std::vector<int64_t>{1, 2, 4}));
  const std::vector<int64_t> huge = power_of_two_sizes(int64_t{1} << 61, INT64_MAX);  // no overflow
  EXPECT_EQ(huge, (std::vector<int64_t>{int64_t{1} << 61, int64_t{1} << 62}));
}

TEST(SweepSizes, EmptyRangesAreRefusedNamingTheOptions) {
  try {
    power_of_two_sizes(4096, 1024);
    FAIL() << "a reversed range was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("--max-bytes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--min-bytes"), std::string::npos) << e.what();
  }
  EXPECT_THROW(power_of_two_sizes(3000, 4000), UserError);  // no power of two inside
  EXPECT_THROW(power_of_two_sizes(0, 4000), UserError);
}

TEST(SweepDtypes, ParseNamesSizesAndCodes) {
  EXPECT_EQ(parse_sweep_dtypes({"fp32", "bf16", "fp16", "fp64"}),
            (std::vector<SweepDtype>{SweepDtype::Fp32, SweepDtype::Bf16, SweepDtype::Fp16, SweepDtype::Fp64}));
  EXPECT_EQ(sweep_dtype_bytes(SweepDtype::Fp32), 4);
  EXPECT_EQ(sweep_dtype_bytes(SweepDtype::Fp64), 8);
  EXPECT_EQ(sweep_dtype_bytes(SweepDtype::Bf16), 2);
  EXPECT_EQ(sweep_dtype_bytes(SweepDtype::Fp16), 2);
  const std::vector<std::string> names = sweep_dtype_names();  // indexed by the code in the results file
  for (SweepDtype d : {SweepDtype::Fp32, SweepDtype::Fp64, SweepDtype::Bf16, SweepDtype::Fp16})
    EXPECT_EQ(names.at(static_cast<size_t>(d)), sweep_dtype_name(d));
  EXPECT_TRUE(mpi_can_reduce(SweepDtype::Fp32));
  EXPECT_TRUE(mpi_can_reduce(SweepDtype::Fp64));
  EXPECT_FALSE(mpi_can_reduce(SweepDtype::Bf16));
  EXPECT_FALSE(mpi_can_reduce(SweepDtype::Fp16));
  EXPECT_THROW(parse_sweep_dtypes({"fp8"}), UserError);
  EXPECT_THROW(parse_sweep_dtypes({"fp32", "fp32"}), UserError);
  EXPECT_THROW(parse_sweep_dtypes({}), UserError);
}

TEST(SweepBandwidth, NcclTestsFormulas) {
  EXPECT_DOUBLE_EQ(algbw_gbps(1'000'000'000, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(algbw_gbps(68'701'776, 277e-6), 68'701'776 / 277e-6 / 1e9);
  EXPECT_DOUBLE_EQ(allreduce_busbw_factor(1), 0.0);
  EXPECT_DOUBLE_EQ(allreduce_busbw_factor(2), 1.0);
  EXPECT_DOUBLE_EQ(allreduce_busbw_factor(4), 1.5);
  EXPECT_DOUBLE_EQ(allreduce_busbw_factor(8), 1.75);
  EXPECT_DOUBLE_EQ(busbw_gbps(10.0, 4), 15.0);
  // The design note's figure: the WRN's 68.7 MB of fp32 gradients in 277 us on 2 GPUs: about 248 GB/s
  // of bus bandwidth (busbw = algbw on 2 ranks).
  EXPECT_NEAR(busbw_gbps(algbw_gbps(17'175'444 * 4, 277e-6), 2), 248.0, 1.0);
}

TEST(SweepPoints, EachDtypeWithTheModelSizeInOrder) {
  const std::vector<SweepPoint> points =
      sweep_points(kAllReduce, 1, {2, 4, 8, 16}, {SweepDtype::Fp32, SweepDtype::Bf16}, /*model_elements=*/3);
  // fp32: 4 -> 1, 8 -> 2, 16 -> 4 elements (2 bytes hold no fp32), the model's 3 between 2 and 4.
  // bf16: 1, 2, 4, 8 elements, the model's 3 between 2 and 4.
  std::vector<int64_t> counts, bytes;
  for (const SweepPoint& p : points) counts.push_back(p.count), bytes.push_back(p.bytes());
  EXPECT_EQ(counts, (std::vector<int64_t>{1, 2, 3, 4, 1, 2, 3, 4, 8}));
  EXPECT_EQ(bytes, (std::vector<int64_t>{4, 8, 12, 16, 2, 4, 6, 8, 16}));
  EXPECT_TRUE(points[2].is_model_size);
  EXPECT_TRUE(points[6].is_model_size);
  EXPECT_EQ(points[3].dtype, SweepDtype::Fp32);
  EXPECT_EQ(points[4].dtype, SweepDtype::Bf16);
  int model_rows = 0;
  for (const SweepPoint& p : points) model_rows += p.is_model_size;
  EXPECT_EQ(model_rows, 2);

  // The mnist-cnn's gradients come after every smaller power of two; no model, no extra row.
  const std::vector<SweepPoint> mnist = sweep_points(kAllReduce, 4, {1024, 1 << 20}, {SweepDtype::Fp32}, 1'199'882);
  ASSERT_EQ(mnist.size(), 3u);
  EXPECT_EQ(mnist[2].bytes(), 1'199'882 * 4);
  EXPECT_EQ(sweep_points(kAllReduce, 2, {1024}, {SweepDtype::Fp32}, 0).size(), 1u);
  for (const SweepPoint& p : points) EXPECT_EQ(p.collective, CollectiveKind::AllReduce);
}

// The sum of the pattern over all ranks is what expected_sum says, and stays an integer the dtype holds
// exactly, for rank counts up to and past the dtype's exact range.
TEST(CheckPattern, SumsAreExactIntegersInEveryDtype) {
  struct Case { SweepDtype dtype; double exact; };
  for (const Case c : {Case{SweepDtype::Bf16, 256}, Case{SweepDtype::Fp16, 2048}, Case{SweepDtype::Fp32, 16777216}}) {
    for (int ranks : {1, 2, 3, 4, 8, 37, 64, 256, 257, 1000}) {
      const CheckPattern pattern(c.dtype, ranks);
      double largest = 0;
      bool varies = false;
      for (int64_t i = 0; i < 2 * ranks + 16; ++i) {
        double sum = 0;
        for (int r = 0; r < ranks; ++r) {
          const double v = pattern.value(r, i);
          ASSERT_GE(v, 0.0);
          ASSERT_EQ(v, std::floor(v));
          sum += v;
        }
        ASSERT_EQ(sum, pattern.expected_sum(i)) << sweep_dtype_name(c.dtype) << " ranks " << ranks << " i " << i;
        largest = std::max(largest, sum);
        varies |= pattern.value(0, i) != pattern.value(0, 0);
      }
      EXPECT_LE(largest, c.exact) << sweep_dtype_name(c.dtype) << " ranks " << ranks;
      EXPECT_GT(largest, 0.0);
      EXPECT_TRUE(varies) << "a constant buffer would hide misplaced elements";
    }
  }
  // Ranks hold different data, so a reduction that ignores a peer is caught.
  const CheckPattern two(SweepDtype::Fp32, 2);
  EXPECT_NE(two.value(0, 5), two.value(1, 5));
}

TEST(SweepDtype, NcclTestsTypeNames) {
  EXPECT_STREQ(nccl_tests_type_name(SweepDtype::Fp32), "float");
  EXPECT_STREQ(nccl_tests_type_name(SweepDtype::Fp64), "double");
  EXPECT_STREQ(nccl_tests_type_name(SweepDtype::Bf16), "bfloat16");
  EXPECT_STREQ(nccl_tests_type_name(SweepDtype::Fp16), "half");
}

TEST(CommResults, TableAndAttributesRoundTrip) {
  namespace fs = std::filesystem;
  std::string dir = (fs::temp_directory_path() / "sb_comm_unit_XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const std::string path = dir + "/comm.h5";
  RunMetadata metadata;
  metadata.command_line = "scalebench comm";
  metadata.config_json = R"({"command":"comm"})";
  metadata.hosts = {"h0"};
  metadata.gpu_models = {"cpu"};
  CommTableInfo info;
  info.backend = "mpi";
  info.iterations = 20;
  info.warmup_iterations = 5;
  info.dtype_names = sweep_dtype_names();
  info.collective_names = collective_names();
  info.skipped_dtypes = {"bf16"};
  info.note = "bf16 skipped";
  info.model = "mnist-cnn";
  info.model_elements = 1199882;

  CommResultsFile file(path, metadata, info);
  CommRow row;
  row.bytes = 4096, row.count = 1024, row.dtype = 0, row.time_us_max_rank = 2.5, row.wrong = 0, row.is_model_size = 0;
  row.oop_time_us_mean = 3.5, row.oop_wrong = 1;
  file.append(row);
  row.bytes = 1199882 * 4, row.count = 1199882, row.is_model_size = 1, row.wrong = 7, row.collective = 2;
  file.append(row);
  {
    // While the sweep runs, the path holds a published copy with every appended row.
    h5::Handle access = h5::unlocked_file_access();
    h5::Handle f = h5::Handle::file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, access.get()));
    ASSERT_TRUE(f);
    EXPECT_EQ(h5::read_int_attribute(f.get(), "complete"), 0);
    EXPECT_EQ(h5::read_string_attribute(f.get(), "end_time"), "");
    h5::Handle partial = h5::Handle::dataset(H5Dopen2(f.get(), "comm", H5P_DEFAULT));
    ASSERT_TRUE(partial);
    EXPECT_EQ(h5::shape_of(partial.get()), (std::vector<hsize_t>{2}));
  }
  file.close();

  h5::Handle f = h5::Handle::file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  ASSERT_TRUE(f);
  EXPECT_EQ(h5::read_int_attribute(f.get(), "complete"), 1);
  EXPECT_NE(h5::read_string_attribute(f.get(), "end_time"), "");
  EXPECT_EQ(h5::read_string_attribute(f.get(), "config_json"), R"({"command":"comm"})");
  h5::Handle table = h5::Handle::dataset(H5Dopen2(f.get(), "comm", H5P_DEFAULT));
  ASSERT_TRUE(table);
  EXPECT_EQ(h5::shape_of(table.get()), (std::vector<hsize_t>{2}));
  std::vector<CommRow> rows(2);
  h5::Handle type = compound_type(comm_columns(), sizeof(CommRow));
  h5::read_whole(table.get(), type.get(), rows.data());
  EXPECT_EQ(rows[0].count, 1024);
  EXPECT_EQ(rows[0].time_us_max_rank, 2.5);
  EXPECT_EQ(rows[0].oop_time_us_mean, 3.5);
  EXPECT_EQ(rows[0].oop_wrong, 1);
  EXPECT_EQ(rows[1].bytes, 1199882 * 4);
  EXPECT_EQ(rows[1].wrong, 7);
  EXPECT_EQ(rows[1].is_model_size, 1);
  EXPECT_EQ(rows[0].collective, 0);
  EXPECT_EQ(rows[1].collective, 2);
  EXPECT_EQ(h5::read_string_list_attribute(table.get(), "collective_names"),
            (std::vector<std::string>{"all-reduce", "reduce-scatter", "all-gather", "broadcast"}));
  EXPECT_EQ(h5::read_string_list_attribute(table.get(), "dtype_names"), sweep_dtype_names());
  EXPECT_EQ(h5::read_string_list_attribute(table.get(), "skipped_dtypes"), std::vector<std::string>{"bf16"});
  EXPECT_EQ(h5::read_string_list_attribute(table.get(), "units").size(), comm_columns().size());
  EXPECT_EQ(h5::read_string_attribute(table.get(), "backend"), "mpi");
  EXPECT_EQ(h5::read_int_attribute(table.get(), "comm_version"), kCommTableVersion);
  EXPECT_EQ(h5::read_int_attribute(table.get(), "model_elements"), 1199882);
  table = {};
  f = {};
  std::vector<std::string> left;  // the working and staging copies are gone
  for (const auto& entry : fs::directory_iterator(dir)) left.push_back(entry.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"comm.h5"});
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sb
