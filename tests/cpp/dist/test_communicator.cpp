// verl::dist::Communicator's collectives started asynchronously (InFlight), on threads as ranks whose backend runs a
// collective only when it is waited for (dist/thread_group.h), as a real backend may still be moving its bytes.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "dist/thread_group.h"
#include "verl/core/error.h"
#include "verl/dist/communicator.h"

using verl::dist::Communicator;
using verl::dist::InFlight;

namespace {

// Rank r's input: values that differ by rank and element, and whose float64 sum depends on the order it is taken in.
torch::Tensor rank_input(int64_t rank, int64_t numel) {
  return torch::arange(numel, torch::kDouble).mul(0.1).add(1e16 * (rank % 2 == 0 ? 1 : -1)).add(rank / 3.0);
}

}  // namespace

TEST_CASE("Communicator: collectives started asynchronously give what the blocking ones give", "[dist]") {
  constexpr int kWorld = 3;
  std::vector<std::vector<torch::Tensor>> got(kWorld);
  std::vector<int> landed_in_place(kWorld, 0);
  verl::testing::on_thread_ranks(kWorld, [&](int64_t rank, std::shared_ptr<Communicator> comm) {
    const torch::Tensor shard = torch::full({4}, static_cast<double>(rank + 1), torch::kDouble);
    const torch::Tensor flat = rank_input(rank, 6);
    // Three in flight at once, waited for in the order started (every rank starts and waits in the same order).
    torch::Tensor buffer = torch::empty({4 * kWorld}, torch::kDouble);
    InFlight a = comm->all_gather_flat_async(shard, buffer);
    InFlight b = comm->reduce_scatter_sum_async(flat);
    InFlight c = comm->all_gather_flat_async(shard * 10);
    const torch::Tensor ga = a.wait();
    landed_in_place[static_cast<size_t>(rank)] = ga.data_ptr() == buffer.data_ptr();
    got[static_cast<size_t>(rank)] = {ga, b.wait(), c.wait(), comm->all_gather_flat(shard),
                                      comm->reduce_scatter_sum(flat)};
  });
  const torch::Tensor expected_gather = torch::arange(1, kWorld + 1, torch::kDouble).repeat_interleave(4);
  torch::Tensor sum = rank_input(0, 6).clone();
  for (int r = 1; r < kWorld; ++r) sum.add_(rank_input(r, 6));
  for (int r = 0; r < kWorld; ++r) {
    INFO("rank " << r);
    const auto& g = got[static_cast<size_t>(r)];
    CHECK(landed_in_place[static_cast<size_t>(r)] == 1);  // `out` is where the gather writes
    CHECK(torch::equal(g[0], expected_gather));
    CHECK(torch::equal(g[1], sum.chunk(kWorld)[static_cast<size_t>(r)]));
    CHECK(torch::equal(g[2], expected_gather * 10));
    CHECK(torch::equal(g[3], g[0]));  // the blocking calls agree
    CHECK(torch::equal(g[4], g[1]));
  }
}

TEST_CASE("Communicator: over Gloo the reduce-scatter is an all-to-all summed in rank order", "[dist]") {
  for (int world : {2, 3, 4}) {
    INFO("world " << world);
    const int64_t calls_before = verl::testing::ThreadBackend::all_to_all_calls();
    std::vector<std::string> backend(static_cast<size_t>(world));
    std::vector<torch::Tensor> got(static_cast<size_t>(world));
    verl::testing::on_thread_ranks(
        world,
        [&](int64_t rank, std::shared_ptr<Communicator> comm) {
          got[static_cast<size_t>(rank)] = comm->reduce_scatter_sum(rank_input(rank, 5 * world));
          backend[static_cast<size_t>(rank)] = comm->backend();
        },
        /*as_gloo=*/true);
    CHECK(backend == std::vector<std::string>(static_cast<size_t>(world), "gloo"));
    CHECK(verl::testing::ThreadBackend::all_to_all_calls() - calls_before == world);  // one per rank, no reduce-scatter
    // Bitwise: chunk r of ((x0 + x1) + x2) + ... -- the order a reduction over the ranks takes, whichever rank sums.
    torch::Tensor sum = rank_input(0, 5 * world).clone();
    for (int r = 1; r < world; ++r) sum.add_(rank_input(r, 5 * world));
    for (int r = 0; r < world; ++r)
      CHECK(torch::equal(got[static_cast<size_t>(r)], sum.chunk(world)[static_cast<size_t>(r)]));
  }
}

TEST_CASE("Communicator: an InFlight is waited for once; a gather's output must fit", "[dist]") {
  CHECK_FALSE(InFlight().pending());
  CHECK_THROWS_AS(InFlight().wait(), verl::InvalidArgument);
  std::vector<int> ok(2, 0);
  verl::testing::on_thread_ranks(2, [&](int64_t rank, std::shared_ptr<Communicator> comm) {
    const torch::Tensor shard = torch::ones({3});
    bool wrong_out_refused = false;
    try {
      (void)comm->all_gather_flat_async(shard, torch::empty({5}));  // 2 x 3 elements needed; nothing starts
    } catch (const verl::InvalidArgument& e) {
      wrong_out_refused = std::string(e.what()).find("6 elements") != std::string::npos;
    }
    InFlight f = comm->all_gather_flat_async(shard);
    const bool pending = f.pending();
    (void)f.wait();
    bool second_wait_refused = false;
    try {
      (void)f.wait();
    } catch (const verl::InvalidArgument&) {
      second_wait_refused = true;
    }
    ok[static_cast<size_t>(rank)] = wrong_out_refused && pending && !f.pending() && second_wait_refused;
  });
  CHECK(ok == std::vector<int>{1, 1});
}

TEST_CASE("The thread test backend pairs collectives by the order they start, as Gloo and NCCL do", "[dist]") {
  // Started in another order on rank 1 but waited for in the same order: a real backend would pair rank 0's first
  // gather with rank 1's first (of another size) and hang or mix them up; the test backend says so.
  auto run = [](int64_t rank, std::shared_ptr<Communicator> comm) {
    const torch::Tensor a = torch::ones({3}), b = torch::ones({5});
    InFlight first, second;
    if (rank == 0) {
      first = comm->all_gather_flat_async(a);
      second = comm->all_gather_flat_async(b);
    } else {
      second = comm->all_gather_flat_async(b);
      first = comm->all_gather_flat_async(a);
    }
    (void)first.wait();
    (void)second.wait();
  };
  CHECK_THROWS_WITH(verl::testing::on_thread_ranks(2, run), Catch::Contains("disagree on the collective"));
}

TEST_CASE("Communicator: the bytes collectives carry any length, in one collective when it fits the first round",
          "[dist]") {
  // A message of `n` bytes whose content depends on the sender and on every position.
  auto message = [](int64_t from, int64_t n) {
    std::vector<char> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = static_cast<char>((i * 131 + from * 17 + i / 251) % 256);
    return out;
  };
  for (int world : {2, 3}) {
    // The first round holds the capacity less 8 bytes (the length) in a broadcast and a gather, less 16 (the length
    // and the longest part's) in a scatter; lengths on either side of those edges, and one message of 3 rounds' size.
    const int64_t capacity = std::clamp<int64_t>((int64_t{1} << 20) / world, 4096, 65536);
    for (int64_t n : {int64_t{0}, int64_t{1}, capacity - 16, capacity - 15, capacity - 8, capacity - 7, 3 * capacity}) {
      INFO("world " << world << ", " << n << " bytes");
      // Rank r's message is n bytes long except rank 1's (empty), so a scatter or a gather mixes lengths.
      auto length = [&](int64_t r) { return r == 1 ? int64_t{0} : n; };
      std::vector<std::vector<char>> broadcast_got(static_cast<size_t>(world)), scatter_got(static_cast<size_t>(world));
      std::vector<std::vector<std::vector<char>>> gather_got(static_cast<size_t>(world));
      std::vector<int64_t> capacities(static_cast<size_t>(world));
      std::vector<std::vector<int64_t>> counts(static_cast<size_t>(world));
      verl::testing::on_thread_ranks(world, [&](int64_t rank, std::shared_ptr<Communicator> comm) {
        capacities[static_cast<size_t>(rank)] = comm->inline_capacity();
        auto counted = [&](auto&& collective) {  // the collectives this rank starts for one bytes collective
          const int64_t before = verl::testing::collectives_started(*comm);
          collective();
          counts[static_cast<size_t>(rank)].push_back(verl::testing::collectives_started(*comm) - before);
        };
        const int64_t root = world - 1;  // not rank 0: the root is an argument
        counted([&] { broadcast_got[static_cast<size_t>(rank)] = comm->broadcast_bytes(rank == root ? message(root, n) : std::vector<char>{}, root); });
        std::vector<std::vector<char>> parts;
        if (rank == root) {
          for (int64_t r = 0; r < world; ++r) parts.push_back(message(r, length(r)));
        }
        counted([&] { scatter_got[static_cast<size_t>(rank)] = comm->scatter_bytes(parts, root); });
        counted([&] { gather_got[static_cast<size_t>(rank)] = comm->gather_bytes(message(rank, length(rank)), root); });
      });
      CHECK(capacities == std::vector<int64_t>(static_cast<size_t>(world), capacity));
      for (int64_t r = 0; r < world; ++r) {
        CHECK(broadcast_got[static_cast<size_t>(r)] == message(world - 1, n));
        CHECK(scatter_got[static_cast<size_t>(r)] == message(r, length(r)));
        if (r == world - 1) {
          REQUIRE(gather_got[static_cast<size_t>(r)].size() == static_cast<size_t>(world));
          for (int64_t from = 0; from < world; ++from)
            CHECK(gather_got[static_cast<size_t>(r)][static_cast<size_t>(from)] == message(from, length(from)));
        } else {
          CHECK(gather_got[static_cast<size_t>(r)].empty());
        }
      }
      // On every rank: one collective per bytes collective while the longest message fits its first round, else two.
      const std::vector<int64_t> expected{n > capacity - 8 ? 2 : 1, n > capacity - 16 ? 2 : 1, n > capacity - 8 ? 2 : 1};
      CHECK(counts == std::vector<std::vector<int64_t>>(static_cast<size_t>(world), expected));
    }
  }
}
