// A fit on times made from a known α and β gives them back: exactly without noise, within
// a stated tolerance with seeded noise.
#include <catch2/catch.hpp>

#include <random>

#include "sim/calibration.h"

using namespace kolo::sim;

namespace {

const LinkCost kTruth{.alpha = 12.5e-6, .beta = 1.0 / 2.8e9};  // this machine's TCP link, roughly

// The sizes and rank counts of baselines.md's MPI_Allreduce sweep.
std::vector<Sample> synthetic(Collective collective, double noise, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> jitter(1 - noise, 1 + noise);
  std::vector<Sample> samples;
  for (int ranks : {2, 4})
    for (double bytes = 4096; bytes <= 256.0 * (1 << 20); bytes *= 4)
      samples.push_back({bytes, ranks, cost(collective, ranks, bytes, kTruth) * jitter(random)});
  return samples;
}

}  // namespace

TEST_CASE("a calibration on exact times recovers alpha and beta") {
  for (Collective c : {Collective::ring_allreduce, Collective::recursive_doubling_allreduce, Collective::ring_allgather,
                       Collective::binomial_broadcast}) {
    INFO(to_string(c));
    const Fit fit = fit_link(c, synthetic(c, 0, 1));
    CHECK(fit.link.alpha == Approx(kTruth.alpha).epsilon(1e-9));
    CHECK(fit.link.beta == Approx(kTruth.beta).epsilon(1e-9));
    CHECK(fit.max_relative_error < 1e-9);
  }
}

TEST_CASE("a calibration on times with 2% seeded noise recovers alpha and beta within 5%") {
  for (unsigned seed : {1u, 2u, 3u}) {
    const Fit fit = fit_link(Collective::ring_allreduce, synthetic(Collective::ring_allreduce, 0.02, seed));
    CHECK(fit.link.alpha == Approx(kTruth.alpha).epsilon(0.05));
    CHECK(fit.link.beta == Approx(kTruth.beta).epsilon(0.05));
    CHECK(fit.max_relative_error > 0);
    CHECK(fit.max_relative_error < 0.05);
  }
}

TEST_CASE("the fit's residual grows with the noise") {
  const Fit quiet = fit_link(Collective::ring_allreduce, synthetic(Collective::ring_allreduce, 0.01, 7));
  const Fit noisy = fit_link(Collective::ring_allreduce, synthetic(Collective::ring_allreduce, 0.10, 7));
  CHECK(noisy.rms_residual_s > quiet.rms_residual_s);
}

TEST_CASE("samples of a single size and rank count cannot separate alpha from beta") {
  const std::vector<Sample> same{{1e6, 2, 1e-3}, {1e6, 2, 1.1e-3}};
  CHECK_THROWS_AS(fit_link(Collective::ring_allreduce, same), std::invalid_argument);
}
