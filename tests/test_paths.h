#pragma once
// Where the checkout and the stragglersim executable of this build are. Defined in
// tests/test_paths.cpp, the one test unit compiled with their absolute paths, so that every other
// test unit is the same in any clone (and a compiler cache shared between clones hits on it).

namespace stragglersim::testing {

/// The checkout's root folder (absolute).
const char* source_dir();
/// The stragglersim executable of this build (absolute).
const char* cli_binary();

}  // namespace stragglersim::testing
