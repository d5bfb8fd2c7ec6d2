// The commit a results file names: taken at build time, 12 hex digits with "-dirty" when tracked files
// differed from the commit, or "unknown" outside a git checkout.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "core/build_info.h"

namespace sb {
namespace {

TEST(BuildInfo, GitShaIsAnAbbreviatedCommitWithItsDirtyMarkOrUnknown) {
  const std::string sha = build_git_sha();
  EXPECT_TRUE(std::regex_match(sha, std::regex("[0-9a-f]{12}(-dirty)?")) || sha == "unknown") << sha;
}

}  // namespace
}  // namespace sb
