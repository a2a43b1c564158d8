// Fuzz target: the CSV reader, with and without a header. Every input must load or raise
// DataError.

#include <cstddef>
#include <cstdint>

#include "models/csv_reader.h"
#include "models/dataset.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stragglersim;
  const std::string path = fuzz::write_input(data, size, "input.csv");
  for (const bool header : {true, false}) {
    models::CsvOptions options;
    options.header = header;
    fuzz::refused_as<models::DataError>([&] { (void)models::read_csv(path, options); });
  }
  return 0;
}
