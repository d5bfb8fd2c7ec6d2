// What this binary was built from: the source tree's commit, with "-dirty" when tracked files differed
// from it at build time ("unknown" outside a git checkout). Defined in a file generated at every build
// (cmake/git_sha.cmake).
#pragma once

namespace sb {
const char* build_git_sha();
}  // namespace sb
