// A failed HDF5 call says, in one line, which file and the operating system's reason; the whole HDF5
// error stack only when SCALEBENCH_HDF5_TRACE=1 asks for it.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "child_process.h"
#include "core/check.h"
#include "h5/handle.h"
#include "scratch_dir.h"

namespace sb {
namespace {

namespace fs = std::filesystem;

// Creates `path` and writes 1 MiB into it under a file-size limit of 16 KiB, so that a write fails with
// EFBIG ("File too large"), the way a full disk fails one with ENOSPC.
void write_past_the_size_limit(const std::string& path) {
  h5::init_hdf5();  // also ignores SIGXFSZ
  const rlimit limit{16 * 1024, 16 * 1024};
  ::setrlimit(RLIMIT_FSIZE, &limit);
  h5::Handle file = h5::Handle::file(CHECK_HDF5(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT)));
  const hsize_t count = 256 * 1024;
  const std::vector<float> values(count, 1.0f);
  h5::Handle space = h5::Handle::dataspace(CHECK_HDF5(H5Screate_simple(1, &count, nullptr)));
  h5::Handle set = h5::Handle::dataset(
      CHECK_HDF5(H5Dcreate2(file.get(), "values", H5T_IEEE_F32LE, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  CHECK_HDF5(H5Dwrite(set.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()));
  CHECK_HDF5(H5Fflush(file.get(), H5F_SCOPE_LOCAL));
}

using Hdf5FailureMessage = test::ScratchDirTest;

TEST_F(Hdf5FailureMessage, IsOneLineWithTheFileAndTheSystemReason) {
  const std::string path = (dir_ / "big.h5").string();
  const test::ChildResult child = test::run_in_child([&] {
    ::unsetenv("SCALEBENCH_HDF5_TRACE");
    write_past_the_size_limit(path);
  });
  const std::string& said = child.stderr_text;
  EXPECT_EQ(child.exit_code, 3) << said;
  EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1) << said;
  EXPECT_NE(said.find("HDF5 could not write '" + path + "': File too large"), std::string::npos) << said;
  EXPECT_NE(said.find("ulimit -f"), std::string::npos) << said;
  EXPECT_NE(said.find("SCALEBENCH_HDF5_TRACE=1"), std::string::npos) << said;
  EXPECT_EQ(said.find("HDF5-DIAG"), std::string::npos) << said;
}

TEST_F(Hdf5FailureMessage, KeepsTheWholeStackOnRequest) {
  const std::string path = (dir_ / "big.h5").string();
  const test::ChildResult child = test::run_in_child([&] {
    ::setenv("SCALEBENCH_HDF5_TRACE", "1", 1);
    write_past_the_size_limit(path);
  });
  const std::string& said = child.stderr_text;
  EXPECT_EQ(child.exit_code, 3) << said;
  EXPECT_NE(said.find("HDF5-DIAG"), std::string::npos) << said;
  EXPECT_NE(said.find("File too large"), std::string::npos) << said;
}

TEST_F(Hdf5FailureMessage, NamesTheFileThatCannotBeOpened) {
  const std::string path = (dir_ / "missing" / "x.h5").string();
  const test::ChildResult child = test::run_in_child([&] {
    h5::init_hdf5();
    CHECK_HDF5(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  });
  const std::string& said = child.stderr_text;
  EXPECT_EQ(child.exit_code, 3) << said;
  EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1) << said;
  EXPECT_NE(said.find("HDF5 could not open '" + path + "': No such file or directory"), std::string::npos) << said;
}

}  // namespace
}  // namespace sb
