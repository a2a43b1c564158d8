// Fuzz target: the IDX reader (plain and, through zlib, gzip), as labels (1 dimension) and
// images (3 dimensions). Every input must load or raise DataError.

#include <cstddef>
#include <cstdint>

#include "models/dataset.h"
#include "models/idx_reader.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stragglersim;
  const std::string path = fuzz::write_input(data, size, "input.idx");
  for (const int dimensions : {1, 3}) {
    fuzz::refused_as<models::DataError>([&] { (void)models::read_idx_bytes(path, dimensions); });
  }
  return 0;
}
