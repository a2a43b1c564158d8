#include "tests/test_paths.h"

namespace stragglersim::testing {

const char* source_dir() { return STRAGGLERSIM_SOURCE_DIR; }
const char* cli_binary() { return STRAGGLERSIM_BINARY; }

}  // namespace stragglersim::testing
