#include "options.h"

#include <charconv>
#include <sstream>
#include <stdexcept>
#include <string_view>

const char* usage() {
  return "usage: embed [--own-mpi | --subcomm] [--steps N] [--lr X] [--samples N] [--hidden N]\n"
         "             [--seed N] [--log-every N] [--save FILE]\n"
         "  (no mode flag)  kolo::init() initialises MPI, kolo::shutdown() finalises it\n"
         "  --own-mpi       the program calls MPI_Init_thread itself; kolo runs on MPI_COMM_WORLD\n"
         "  --subcomm       the program splits the world in two groups, each training on its own\n"
         "                  with kolo::init(group_comm); group g starts from seed + g\n"
         "  --seed N        seed of the initial weights (default: random, per process)\n"
         "  --save FILE     rank 0 writes the trained weights to FILE\n"
         "                  (with --subcomm, each group's rank 0 writes FILE.<group>)\n";
}

namespace {

template <typename T>
T parse_number(std::string_view flag, std::string_view text, T min) {
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error == std::errc() && end == text.data() + text.size() && value >= min) return value;
  std::ostringstream message;
  message << "bad value for " << flag << ": '" << text << "' (expected a number >= " << min << ")";
  throw std::invalid_argument(message.str());
}

}  // namespace

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    auto value = [&]() -> std::string_view {
      if (i + 1 >= argc) throw std::invalid_argument(std::string(flag) + " needs a value");
      return argv[++i];
    };
    if (flag == "--own-mpi") o.own_mpi = true;
    else if (flag == "--subcomm") o.subcomm = true;
    else if (flag == "--steps") o.steps = parse_number(flag, value(), 0);
    else if (flag == "--lr") o.learning_rate = parse_number(flag, value(), 0.0f);
    else if (flag == "--samples") o.samples = parse_number(flag, value(), 1);
    else if (flag == "--hidden") o.hidden = parse_number(flag, value(), 1);
    else if (flag == "--seed") o.seed = parse_number(flag, value(), 0u);
    else if (flag == "--log-every") o.log_every = parse_number(flag, value(), 1);
    else if (flag == "--save") o.save = value();
    else if (flag == "--help" || flag == "-h") o.help = true;
    else throw std::invalid_argument("unknown flag '" + std::string(flag) + "'");
  }
  if (o.own_mpi && o.subcomm)
    throw std::invalid_argument("--own-mpi and --subcomm are exclusive (--subcomm owns MPI too)");
  return o;
}
