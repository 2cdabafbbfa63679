// Parses the example's flags (options.h).
#include "options.h"

#include <cmath>
#include <stdexcept>
#include <string_view>
#include <type_traits>

const char* usage() {
  return "usage: libtorch_mnist [--epochs N] [--train-limit N] [--test-limit N] [--lr X]\n"
         "                      [--batch-size N] [--test-batch-size N] [--log-interval N] [--data DIR]\n"
         "  --train-limit N  train on the first N images only (default: all 60000)\n"
         "  --test-limit N   test on the first N images only (default: all 10000)\n"
         "  --lr X           one process's learning rate (default 0.01); N ranks use N * X\n"
         "  --data DIR       the gzip IDX files (default: /usr/share/datasets/fashion-mnist)\n";
}

namespace {

template <typename T>
T number(std::string_view flag, const std::string& text, T min) {
  size_t end = 0;
  T value{};
  try {
    if constexpr (std::is_floating_point_v<T>) value = std::stod(text, &end);
    else value = std::stoll(text, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  // !(value >= min): nan is not a number >= min either; inf is refused as well.
  if (end == 0 || end != text.size() || !(value >= min) || !std::isfinite(static_cast<double>(value))) {
    throw std::invalid_argument("bad value for " + std::string(flag) + ": '" + text + "' (expected a finite number >= " +
                                std::to_string(min) + ")");
  }
  return value;
}

}  // namespace

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(std::string(flag) + " needs a value");
      return argv[++i];
    };
    if (flag == "--epochs") o.epochs = number<int64_t>(flag, value(), 1);
    else if (flag == "--train-limit") o.train_limit = number<int64_t>(flag, value(), 0);
    else if (flag == "--test-limit") o.test_limit = number<int64_t>(flag, value(), 0);
    else if (flag == "--lr") o.learning_rate = number<double>(flag, value(), 0.0);
    else if (flag == "--batch-size") o.train_batch_size = number<int64_t>(flag, value(), 1);
    else if (flag == "--test-batch-size") o.test_batch_size = number<int64_t>(flag, value(), 1);
    else if (flag == "--log-interval") o.log_interval = number<int64_t>(flag, value(), 1);
    else if (flag == "--data") o.data_root = value();
    else if (flag == "--help" || flag == "-h") o.help = true;
    else throw std::invalid_argument("unknown flag '" + std::string(flag) + "'");
  }
  return o;
}
