// stragglersim: the command line. All the work is in experiments/cli/cli.cpp.

#include <string>
#include <vector>

#include "experiments/cli/cli.h"

int main(int argc, char** argv) {
  return stragglersim::experiments::run_cli(std::vector<std::string>(argv, argv + argc));
}
