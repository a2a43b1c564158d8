# Run at build time (cmake -P) by the stragglersim_git_revision target: writes OUTPUT, a .cpp
# defining kGitRevision, with `git rev-parse --short=12 HEAD` of SOURCE_DIR ("unknown" outside
# a git checkout). The file is rewritten only when the revision changed, so an unchanged
# revision recompiles nothing.
execute_process(COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE revision
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE status)
if(NOT status EQUAL 0 OR NOT revision)
  set(revision "unknown")
endif()
set(content "// Generated at build time by tools/git_revision.cmake.
#include \"experiments/build_info.h\"

namespace stragglersim::experiments {

const char* const kGitRevision = \"${revision}\";

}  // namespace stragglersim::experiments
")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
else()
  set(old "")
endif()
if(NOT old STREQUAL content)
  file(WRITE "${OUTPUT}" "${content}")
endif()
