// Where the source tree is, for tests that read the repository's recipes, docs and data files.
#pragma once

namespace rota::testing {

/// The absolute path of the source tree the build was configured from. It is compiled into one
/// generated file (tests/CMakeLists.txt), not passed as a compile definition to every test, so
/// no other test object depends on the tree's location and a compiler cache can share them
/// between clones.
const char* source_tree();

}  // namespace rota::testing

/// The source tree's path (a `const char*`), where tests used to get it from the build.
#define ROTA_SOURCE_DIR (::rota::testing::source_tree())
