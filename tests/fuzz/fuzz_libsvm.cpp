// Fuzz target: the LIBSVM reader, dense and sparse. Every input must load or raise DataError.

#include <cstddef>
#include <cstdint>

#include "models/dataset.h"
#include "models/libsvm_reader.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stragglersim;
  const std::string path = fuzz::write_input(data, size, "input.svm");
  for (const bool dense : {true, false}) {
    models::LibsvmOptions options;
    options.dense = dense;
    options.max_dense_bytes = fuzz::kFuzzMemoryLimit;
    options.max_sparse_bytes = fuzz::kFuzzMemoryLimit;
    fuzz::refused_as<models::DataError>([&] { (void)models::read_libsvm(path, options); });
  }
  return 0;
}
