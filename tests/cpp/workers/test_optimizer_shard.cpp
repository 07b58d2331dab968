// ZeRO-2's OptimizerShard over two ranks in one process (two threads, dist/thread_group.h): gradients
// reduce-scattered into each rank's slice and the updated slices gathered back, a bucket at a time -- with buckets of a
// few elements, whose boundaries fall inside parameters and across the ranks' slices, exactly as with one bucket.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <vector>

#include "dist/thread_group.h"
#include "verl/dist/communicator.h"
#include "workers/optimizer_shard.h"

using verl::dist::Communicator;
using verl::workers::detail::OptimizerShard;

namespace {

constexpr int kWorld = 2;

// Parameters of odd sizes (66 elements: slices of 33) with rank-dependent gradients.
std::vector<torch::Tensor> parameters(int64_t rank) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(7);  // not the global one: the ranks are threads
  std::vector<torch::Tensor> ps = {torch::randn({7, 5}, gen), torch::randn({13}, gen), torch::randn({3, 3, 2}, gen)};
  for (size_t i = 0; i < ps.size(); ++i) {
    ps[i].set_requires_grad(true);
    ps[i].mutable_grad() = torch::full_like(ps[i], static_cast<double>(rank + 1)) * (1.0 + static_cast<double>(i)) +
                           torch::arange(ps[i].numel(), torch::kFloat).view(ps[i].sizes()) * 0.01;
  }
  return ps;
}

struct RankResult {
  torch::Tensor slice_grad;
  double norm_sq = 0;
  std::vector<torch::Tensor> weights;  // after the update of the slice and the gather
};

// One step's collectives on every rank with buckets of `bucket` elements: the slice's gradient, the global norm, and
// the parameters after every slice element was decreased by 0.5 * its gradient and gathered back.
std::vector<RankResult> step_with_buckets(int64_t bucket) {
  std::vector<RankResult> results(kWorld);
  verl::testing::on_thread_ranks(kWorld, [&](int64_t rank, std::shared_ptr<Communicator> comm) {
    std::vector<torch::Tensor> ps = parameters(rank);
    OptimizerShard shard(ps, comm, bucket);
    shard.gather_gradients();
    RankResult& r = results[static_cast<size_t>(rank)];
    r.slice_grad = shard.master().grad().clone();
    r.norm_sq = shard.global_norm_sq();
    {
      torch::NoGradGuard no_grad;
      shard.master().sub_(shard.master().grad() * 0.5);
    }
    shard.scatter_weights();
    for (auto& p : ps) r.weights.push_back(p.detach().clone());
  });
  return results;
}

}  // namespace

TEST_CASE("OptimizerShard: many small buckets give exactly one bucket's results", "[dist]") {
  // The expected values, computed without any collective: the mean gradient over the ranks, flattened.
  std::vector<torch::Tensor> flat_grads, flat_weights;
  for (int64_t rank = 0; rank < kWorld; ++rank) {
    std::vector<torch::Tensor> g, w;
    for (auto& p : parameters(rank)) {
      g.push_back(p.grad().reshape(-1));
      w.push_back(p.detach().reshape(-1));
    }
    flat_grads.push_back(torch::cat(g));
    flat_weights.push_back(torch::cat(w));
  }
  const torch::Tensor mean_grad = (flat_grads[0] + flat_grads[1]) / 2.0;
  const torch::Tensor updated = flat_weights[0] - mean_grad * 0.5;
  REQUIRE(mean_grad.numel() == 66);

  const std::vector<RankResult> one = step_with_buckets(0);
  for (int64_t bucket : {1, 4, 7, 32, 33, 1000}) {
    INFO("bucket " << bucket);
    const std::vector<RankResult> many = step_with_buckets(bucket);
    for (int64_t rank = 0; rank < kWorld; ++rank) {
      const RankResult& r = many[static_cast<size_t>(rank)];
      CHECK(torch::equal(r.slice_grad, one[static_cast<size_t>(rank)].slice_grad));
      CHECK(torch::allclose(r.slice_grad, mean_grad.narrow(0, rank * 33, 33), 1e-6, 1e-6));
      CHECK(r.norm_sq == Approx(mean_grad.to(torch::kDouble).pow(2).sum().item<double>()).epsilon(1e-6));
      std::vector<torch::Tensor> w;
      for (const auto& t : r.weights) w.push_back(t.reshape(-1));
      const torch::Tensor got = torch::cat(w);
      CHECK(torch::equal(got, torch::cat([&] {
                                 std::vector<torch::Tensor> v;
                                 for (const auto& t : one[static_cast<size_t>(rank)].weights) v.push_back(t.reshape(-1));
                                 return v;
                               }())));
      CHECK(torch::allclose(got, updated, 1e-6, 1e-6));
    }
  }
  CHECK_THROWS(step_with_buckets(-1));
}
