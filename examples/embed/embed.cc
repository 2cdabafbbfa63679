// embed: a plain C++ training loop, made data-parallel with kolo.
//
// The program trains its own two-layer perceptron (mlp.h: parameters in std::vector<float>,
// a hand-written backward pass) by full-batch gradient descent on a synthetic data set
// (dataset.h). It knows nothing of kolo's model layer. Every line that data parallelism
// needed is marked "// kolo:", at the end of the line or, for a block, on the line before
// it (the block ends at the next blank line). Without them this is the single-process
// program it started as. docs/embedding.md walks through them.
//
//   mpirun -np 2 ./embed              kolo initialises MPI, and finalises it in shutdown()
//   mpirun -np 2 ./embed --own-mpi    the program owns MPI; kolo runs on MPI_COMM_WORLD
//   mpirun -np 4 ./embed --subcomm    the program owns MPI and splits the world into two
//                                     groups that train independently, one kolo per group
//
// Every rank ends by printing its weights' checksum: equal checksums, equal weights.
#include <cinttypes>
#include <cstdio>
#include <exception>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <mpi.h>

#include <kolo/kolo_mpi.h>  // kolo: kolo.h, and init(MPI_Comm) for --subcomm

#include "dataset.h"
#include "mlp.h"
#include "options.h"

namespace {

constexpr uint32_t kDataSeed = 2024;  // the data set is the same in every run

struct Outcome {
  Metrics metrics;
  uint64_t checksum = 0;
};

// --seed N: N, plus the group's index with --subcomm. Otherwise each process picks its own.
uint32_t initial_seed(const Options& opt, int group) {
  return opt.seed ? *opt.seed + static_cast<uint32_t>(group) : std::random_device{}();
}

// Trains on this rank's part of the data. `label` prefixes the output ("" or "group 1, ").
Outcome train(const Options& opt, uint32_t seed, const std::string& label) {
  const Dataset all = make_dataset(opt.samples, opt.features, kDataSeed);
  const Dataset mine = shard(all, kolo::rank(), kolo::size());  // kolo: this rank's part only
  const bool rank0 = kolo::rank() == 0;                         // kolo: one rank reports

  Mlp model = make_mlp(opt.features, opt.hidden, seed);
  // kolo: start every rank from rank 0's weights, whatever their own initialisation did.
  for (auto& [name, weights] : model.tensors())
    kolo::broadcast("init/" + name, kolo::view(*weights), 0);

  Mlp grad;
  Metrics m;
  for (int step = 0;; ++step) {
    m = evaluate(model, mine, &grad);  // kolo: mine, was all

    // kolo: the mean over the ranks of equal shards' metrics is the whole data set's.
    std::vector<float> metrics = {m.loss, m.accuracy};
    kolo::allreduce("metrics", kolo::view(metrics));
    m = {metrics[0], metrics[1]};

    const bool report = step % opt.log_every == 0 || step == opt.steps;
    if (report && rank0)  // kolo: && rank0
      std::printf("%sstep %4d: loss %.4f, accuracy %.4f\n", label.c_str(), step, m.loss,
                  m.accuracy);
    if (step == opt.steps) break;

    // kolo: average the gradient over the ranks. Starting every tensor's allreduce before
    // waiting for any lets kolo fuse them into one message.
    std::vector<kolo::Handle> pending;
    for (auto& [name, g] : grad.tensors())
      pending.push_back(kolo::allreduce_async("grad/" + name, kolo::view(*g)));
    for (const kolo::Handle& h : pending) h.wait().throw_if_error();

    descend(model, grad, opt.learning_rate);
  }

  if (!opt.save.empty() && rank0) save_text(model, opt.save);  // kolo: && rank0
  return {m, checksum(model)};
}

void print_outcome(const std::string& label, const Outcome& outcome) {
  std::printf("%srank %d of %d: final loss %.6f, accuracy %.4f, weights checksum %016" PRIx64 "\n",
              label.c_str(), kolo::rank(), kolo::size(),  // kolo:
              outcome.metrics.loss, outcome.metrics.accuracy, outcome.checksum);
  std::fflush(stdout);
}

// kolo owns MPI: kolo::init() initialises it with MPI_THREAD_MULTIPLE, and kolo::shutdown()
// finalises it. The simplest mode, for a program that makes no MPI calls of its own.
void run_kolo_owns_mpi(const Options& opt) {
  kolo::init();  // kolo:
  print_outcome("", train(opt, initial_seed(opt, 0), ""));
  kolo::shutdown();  // kolo:
}

// The program owns MPI, because it uses MPI for more than kolo: it initialises MPI itself,
// hands kolo a communicator, makes its own MPI calls next to kolo's, and finalises MPI
// after kolo::shutdown(). With --subcomm the world is split into two groups (the first and
// the second half of the ranks), each a separate kolo job training from its own seed.
void run_program_owns_mpi(int& argc, char**& argv, const Options& opt) {
  int provided = 0;
  // kolo: kolo's background thread calls MPI while the program runs, so it needs
  // MPI_THREAD_MULTIPLE (kolo::init() checks it too, and says so).
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided < MPI_THREAD_MULTIPLE)
    throw std::runtime_error("this MPI does not provide MPI_THREAD_MULTIPLE, which kolo needs");

  int world_rank = 0, world_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);

  int group = 0;
  MPI_Comm group_comm = MPI_COMM_NULL;
  if (opt.subcomm) {
    group = 2 * world_rank / world_size;
    MPI_Comm_split(MPI_COMM_WORLD, group, world_rank, &group_comm);
    kolo::init(group_comm);  // kolo: kolo works on its own duplicate of group_comm
  } else {
    kolo::init();  // kolo: finds MPI initialised: uses MPI_COMM_WORLD, never finalises MPI
  }
  const std::string label = opt.subcomm ? "group " + std::to_string(group) + ", " : "";
  Options run = opt;
  if (opt.subcomm && !opt.save.empty()) run.save += "." + std::to_string(group);
  const Outcome outcome = train(run, initial_seed(opt, group), label);
  print_outcome(label, outcome);

  // The program's own collective on the world while kolo's threads still run on their
  // duplicates: the two never mix. Which group reached the lowest loss?
  struct { float loss; int group; } mine{outcome.metrics.loss, group}, best{};
  MPI_Allreduce(&mine, &best, 1, MPI_FLOAT_INT, MPI_MINLOC, MPI_COMM_WORLD);
  if (world_rank == 0) std::printf("lowest loss: group %d (%.6f)\n", best.group, best.loss);

  kolo::shutdown();  // kolo: before MPI_Finalize; kolo leaves MPI to its owner
  if (group_comm != MPI_COMM_NULL) MPI_Comm_free(&group_comm);
  MPI_Finalize();
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  try {
    opt = parse_options(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "embed: %s\n%s", e.what(), usage());
    return 2;
  }
  if (opt.help) {
    std::printf("%s", usage());
    return 0;
  }
  try {
    if (opt.own_mpi || opt.subcomm) run_program_owns_mpi(argc, argv, opt);
    else run_kolo_owns_mpi(opt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "embed: %s\n", e.what());
    // A rank that gives up alone would leave the others waiting in a collective.
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
  return 0;
}
