#include <catch2/catch.hpp>

#include "models/loss_model.h"

namespace stragglersim::models {

TEST_CASE("models: losses state their traits", "[models][loss]") {
  CHECK(make_logistic_loss()->traits().binary_labels);
  CHECK_FALSE(make_logistic_loss()->traits().quadratic);
  CHECK(make_least_squares_loss()->traits().quadratic);
  CHECK_FALSE(make_least_squares_loss()->traits().binary_labels);
}

}  // namespace stragglersim::models
