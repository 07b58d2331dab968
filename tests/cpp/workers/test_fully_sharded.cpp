// ZeRO-3 (workers/fully_sharded.h) over 2 and 4 ranks in one process (threads, dist/thread_group.h), against one
// process on the whole batch: each rank runs its rows with a loss normalised by the global token count (times N, as
// verl's dp_size), so the mean of the ranks' gradients is the one-process gradient. Float64 makes the comparisons
// tight; bf16 compute over fp32 master weights is checked for what mixed precision must keep.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/remove_tree.h"
#include "dist/thread_group.h"
#include "verl/core/error.h"
#include "verl/core/json.h"
#include "verl/model/model_config.h"
#include "verl/model/transformer.h"
#include "verl/workers/optim.h"
#include "verl/model/checkpoint.h"
#include "verl/model/safetensors.h"
#include "verl/workers/sharded_checkpoint.h"
#include "workers/fully_sharded.h"
#include "workers/sharded_checkpoint.h"

using verl::dist::Communicator;
using verl::model::CausalLM;
using verl::workers::Optimizer;
using verl::workers::OptimConfig;
using verl::workers::detail::FullyShardedModel;

namespace {

constexpr int64_t kVocab = 40, kRows = 8, kSeq = 7;

// phi3: the same sizes with Phi-3's fused qkv_proj / gate_up_proj, whose tensor-parallel slices are not row ranges.
std::shared_ptr<CausalLM> tiny_model(bool tied, torch::Dtype dtype, int64_t seed = 5, bool phi3 = false) {
  verl::Json j = {{"model_type", phi3 ? "phi3" : "qwen2"}, {"vocab_size", kVocab}, {"hidden_size", 24},
                  {"intermediate_size", 40},       {"num_hidden_layers", 3},    {"num_attention_heads", 4},
                  {"num_key_value_heads", 2},      {"rms_norm_eps", 1e-6},      {"rope_theta", 10000.0},
                  {"max_position_embeddings", 64}, {"tie_word_embeddings", tied}};
  torch::manual_seed(seed);
  auto m = std::make_shared<CausalLM>(verl::model::ModelConfig::from_json(j));
  torch::NoGradGuard no_grad;
  for (auto& [name, p] : m->named_state()) p.normal_(0.0, 0.2);
  m->to(dtype);
  return m;
}

// The same weights in a separate module.
std::shared_ptr<CausalLM> copy_of(const CausalLM& m) {
  auto c = std::make_shared<CausalLM>(m.config(), m.head_kind());
  c->to(m.dtype());
  torch::NoGradGuard no_grad;
  c->load_state_dict(m.named_state());
  return c;
}

struct Batch {
  torch::Tensor ids, mask, targets;
};

// kRows left-padded rows.
Batch batch() {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(11);
  Batch b;
  b.ids = torch::randint(0, kVocab, {kRows, kSeq}, gen, torch::kLong);
  b.targets = torch::randint(0, kVocab, {kRows, kSeq}, gen, torch::kLong);
  torch::Tensor lens = torch::tensor({7, 3, 5, 6, 2, 7, 4, 5}, torch::kLong);
  b.mask = (torch::arange(kSeq).unsqueeze(0) >= (kSeq - lens).unsqueeze(1)).to(torch::kLong);
  return b;
}

// Token log-likelihood loss over `rows` of the batch, normalised by the batch's tokens and scaled by `dp_size`.
torch::Tensor loss_on(CausalLM& m, const Batch& b, int64_t first, int64_t count, int64_t dp_size, bool packed) {
  const torch::Tensor ids = b.ids.narrow(0, first, count), mask = b.mask.narrow(0, first, count);
  const torch::Tensor targets = b.targets.narrow(0, first, count);
  const double tokens = b.mask.sum().item<double>();
  torch::Tensor nll;
  if (packed) {  // the rows' real tokens end to end
    const torch::Tensor keep = mask.reshape(-1).to(torch::kBool);
    const torch::Tensor lens = mask.sum(1);
    torch::Tensor cu = torch::cat({torch::zeros({1}, torch::kLong), lens.cumsum(0)});
    torch::Tensor logits = m.forward_packed(ids.reshape(-1).masked_select(keep), cu);
    nll = -torch::log_softmax(logits.to(torch::kDouble), -1)
               .gather(-1, targets.reshape(-1).masked_select(keep).unsqueeze(-1))
               .sum();
  } else {
    torch::Tensor logits = m.forward(ids, mask);
    nll = -(torch::log_softmax(logits.to(torch::kDouble), -1).gather(-1, targets.unsqueeze(-1)).squeeze(-1) *
            mask.to(torch::kDouble))
               .sum();
  }
  return nll * static_cast<double>(dp_size) / tokens;
}

OptimConfig adamw(double lr) {
  OptimConfig c;
  c.lr = lr;
  c.clip_grad = 0.5;  // the tiny model's gradient norm is larger: clipping is exercised
  return c;
}

struct Options {
  int world = 2;
  bool tied = false;
  bool reshard_after_forward = true;
  bool checkpointing = false;
  bool packed = false;
  int steps = 2;
  int64_t tp = 1;  // the generation layout's tensor-parallel size
  int64_t fsdp = 0;  // HSDP: the shard groups' size (0: all ranks one group)
  bool forward_prefetch = false;
  // Called on every rank after the steps (a checkpoint written, say).
  std::function<void(int64_t rank, FullyShardedModel&, Optimizer&)> after;
};

struct RankOutcome {
  std::vector<torch::Tensor> first_grads;  // full(), per parameter, after the first backward
  std::map<std::string, torch::Tensor> weights;
  double first_norm = 0;
  int64_t master_bytes = 0, state_bytes = 0, peak_gathered = 0, root_bytes = 0, max_layer_bytes = 0;
};

// `steps` AdamW steps of the sharded model, every rank on its kRows / world rows, with two micro-batches per step.
std::vector<RankOutcome> run_sharded(const CausalLM& initial, const Options& o) {
  const Batch b = batch();
  std::vector<std::shared_ptr<CausalLM>> models;
  for (int r = 0; r < o.world; ++r) {
    models.push_back(copy_of(initial));
    models.back()->set_gradient_checkpointing(o.checkpointing);
  }
  std::vector<RankOutcome> out(static_cast<size_t>(o.world));
  // HSDP: shard groups of F consecutive ranks, replica groups of the ranks at the same place in each.
  const int64_t F = o.fsdp > 0 ? o.fsdp : o.world;
  std::vector<std::shared_ptr<verl::testing::ThreadExchange>> shard_hubs, replica_hubs;
  for (int64_t i = 0; i < o.world / F; ++i) shard_hubs.push_back(std::make_shared<verl::testing::ThreadExchange>(F));
  for (int64_t i = 0; i < F; ++i) replica_hubs.push_back(std::make_shared<verl::testing::ThreadExchange>(o.world / F));
  verl::testing::on_thread_ranks(o.world, [&](int64_t rank, std::shared_ptr<Communicator> comm) {
    std::shared_ptr<CausalLM> m = models[static_cast<size_t>(rank)];
    Optimizer opt(m->parameters(), adamw(1e-2));
    std::shared_ptr<Communicator> replicas;
    if (F < o.world) {
      comm = verl::testing::thread_communicator(static_cast<int>(rank % F), static_cast<int>(F),
                                                shard_hubs[static_cast<size_t>(rank / F)]);
      replicas = verl::testing::thread_communicator(static_cast<int>(rank / F), static_cast<int>(o.world / F),
                                                    replica_hubs[static_cast<size_t>(rank % F)]);
    }
    auto sharded =
        FullyShardedModel::shard(m, comm, m->dtype(), {o.reshard_after_forward, o.forward_prefetch}, o.tp, replicas);
    opt.shard_over(sharded);
    RankOutcome& res = out[static_cast<size_t>(rank)];
    const int64_t rows = kRows / o.world, half = rows / 2;
    for (int step = 0; step < o.steps; ++step) {
      opt.zero_grad();
      for (int64_t first : {rank * rows, rank * rows + half}) {
        loss_on(*m, b, first, half, o.world, o.packed).backward();
        sharded->finish_backward();
      }
      if (step == 0) res.peak_gathered = sharded->peak_gathered_bytes();
      const double norm = opt.step();
      if (step == 0) {
        res.first_norm = norm;
        // The optimizer divided the reduced sum by N and clipped it: undo the clipping for the raw mean gradient.
        const double clip = std::min(1.0, 0.5 / (norm + 1e-6));
        res.first_grads = sharded->full(sharded->master().grad() / clip);
      }
    }
    res.weights = sharded->full_state();
    res.master_bytes = sharded->master_bytes();
    res.state_bytes = opt.state_bytes();
    res.root_bytes = sharded->unit_gathered_bytes(0);
    for (size_t u = 1; u <= 3; ++u) res.max_layer_bytes = std::max(res.max_layer_bytes, sharded->unit_gathered_bytes(u));
    VERL_RANK_ASSERT(CHECK(sharded->gathered_bytes() == 0));  // nothing stays gathered after a step
    if (o.after) o.after(rank, *sharded, opt);
  });
  return out;
}

struct Reference {
  std::vector<torch::Tensor> first_grads;
  std::map<std::string, torch::Tensor> weights;
  double first_norm = 0;
  int64_t state_bytes = 0;
};

Reference run_reference(const CausalLM& initial, const Options& o) {
  const Batch b = batch();
  auto m = copy_of(initial);
  Optimizer opt(m->parameters(), adamw(1e-2));
  Reference ref;
  for (int step = 0; step < o.steps; ++step) {
    opt.zero_grad();
    loss_on(*m, b, 0, kRows / 2, 1, o.packed).backward();
    loss_on(*m, b, kRows / 2, kRows / 2, 1, o.packed).backward();
    if (step == 0)
      for (const auto& p : m->parameters()) ref.first_grads.push_back(p.grad().clone());
    const double norm = opt.step();
    if (step == 0) ref.first_norm = norm;
  }
  ref.weights = m->named_state();
  for (auto& [k, v] : ref.weights) v = v.detach().clone();
  ref.state_bytes = opt.state_bytes();
  return ref;
}

double max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
}

void check_against_reference(const Options& o) {
  auto initial = tiny_model(o.tied, torch::kDouble);
  const Reference ref = run_reference(*initial, o);
  const std::vector<RankOutcome> ranks = run_sharded(*initial, o);
  for (int r = 0; r < o.world; ++r) {
    INFO("rank " << r << " of " << o.world);
    const RankOutcome& got = ranks[static_cast<size_t>(r)];
    CHECK(got.first_norm == Approx(ref.first_norm).epsilon(1e-12));
    REQUIRE(got.first_grads.size() == ref.first_grads.size());
    for (size_t i = 0; i < ref.first_grads.size(); ++i) {
      INFO("parameter " << i);
      CHECK(max_diff(got.first_grads[i], ref.first_grads[i]) < 1e-12);
    }
    REQUIRE(got.weights.size() == ref.weights.size());
    for (const auto& [name, w] : ref.weights) {
      INFO(name);
      CHECK(max_diff(got.weights.at(name), w) < 1e-10);
    }
  }
}

}  // namespace

TEST_CASE("ZeRO-3 takes one process's steps: gradients and weights over 2 and 4 ranks", "[dist][workers]") {
  for (int world : {2, 4}) {
    for (bool tied : {false, true}) {
      INFO("world " << world << ", tied " << tied);
      check_against_reference(Options{world, tied});
    }
  }
}

TEST_CASE("ZeRO-3 with gradient checkpointing, packed sequences, and kept weights", "[dist][workers]") {
  SECTION("gradient checkpointing: the backward gathers each layer for its recomputation") {
    check_against_reference(Options{2, false, true, /*checkpointing=*/true});
  }
  SECTION("packed (remove-padding) forward") { check_against_reference(Options{2, false, true, false, /*packed=*/true}); }
  SECTION("reshard_after_forward=false keeps each layer from its forward to its backward") {
    check_against_reference(Options{4, true, /*reshard_after_forward=*/false, true});
  }
  SECTION("forward_prefetch: the next layer's all-gather is in flight while a layer runs") {
    for (bool checkpointing : {false, true}) {
      INFO("gradient checkpointing " << checkpointing);
      Options o{2, false, true, checkpointing, /*packed=*/true};
      o.forward_prefetch = true;
      check_against_reference(o);
      o.world = 4;
      o.tp = 2;
      check_against_reference(o);
    }
  }
}

TEST_CASE("ZeRO-3 laid out for a tensor-parallel rollout (3D-HybridEngine) takes the same steps", "[dist][workers]") {
  for (int world : {2, 4}) {
    for (bool tied : {false, true}) {
      INFO("world " << world << ", t 2, tied " << tied);
      Options o{world, tied};
      o.tp = 2;
      check_against_reference(o);
    }
  }
  Options o{4, false, true, /*checkpointing=*/true, /*packed=*/true};
  o.tp = 2;
  check_against_reference(o);
}

TEST_CASE("HSDP (fsdp_size < N): sharded within groups, replicated across them, takes one process's steps",
          "[dist][workers]") {
  for (const auto& [world, fsdp, tp, tied] : std::vector<std::tuple<int, int64_t, int64_t, bool>>{
           {4, 2, 1, false}, {4, 2, 2, true}, {2, 1, 1, false}, {4, 1, 1, true}}) {
    INFO("N = " << world << ", fsdp_size = " << fsdp << ", t = " << tp);
    Options o;
    o.world = world;
    o.fsdp = fsdp;
    o.tp = tp;
    o.tied = tied;
    check_against_reference(o);
    // Each rank keeps 1/fsdp_size of the weights and of the AdamW state.
    auto initial = tiny_model(tied, torch::kDouble);
    int64_t numel = 0;
    for (const auto& p : initial->parameters()) numel += p.numel();
    for (const RankOutcome& r : run_sharded(*initial, o)) {
      CHECK(r.master_bytes >= 8 * numel / fsdp);
      CHECK(r.master_bytes <= 8 * (numel / fsdp + 64));  // padding: a few elements per unit and TP chunk
      CHECK(r.state_bytes == 2 * r.master_bytes);
    }
  }
}

TEST_CASE("3D-HybridEngine hand-over: each rank gets its tensor-parallel shards from its slice group alone",
          "[dist][workers]") {
  constexpr int kWorld = 4, kTp = 2, kG = kWorld / kTp;
  for (auto [tied, phi3] : {std::pair{false, false}, std::pair{true, false}, std::pair{false, true}}) {
    INFO("tied " << tied << ", phi3 " << phi3);
    auto initial = tiny_model(tied, torch::kDouble, 5, phi3);
    const auto whole = initial->named_state();
    std::vector<std::shared_ptr<CausalLM>> models;
    for (int r = 0; r < kWorld; ++r) models.push_back(copy_of(*initial));
    // Rank r: TP rank k = r % t in micro-DP group j = r / t; slice group k = {k, k + t, ...}, TP group j.
    std::vector<std::shared_ptr<verl::testing::ThreadExchange>> slice_hubs, tp_hubs;
    for (int k = 0; k < kTp; ++k) slice_hubs.push_back(std::make_shared<verl::testing::ThreadExchange>(kG));
    for (int j = 0; j < kG; ++j) tp_hubs.push_back(std::make_shared<verl::testing::ThreadExchange>(kTp));
    std::vector<std::map<std::string, torch::Tensor>> shards(kWorld);
    std::vector<int64_t> received(kWorld), naive(kWorld), largest_unit(kWorld);
    std::vector<char> layout_round_trips(kWorld, 0);
    std::vector<std::map<std::string, torch::Tensor>> whole_again(kWorld);
    verl::testing::on_thread_ranks(kWorld, [&](int64_t rank, std::shared_ptr<Communicator> comm) {
      const int k = static_cast<int>(rank) % kTp, j = static_cast<int>(rank) / kTp;
      auto slice_group = verl::testing::thread_communicator(j, kG, slice_hubs[static_cast<size_t>(k)]);
      auto tensor_parallel = verl::testing::thread_communicator(k, kTp, tp_hubs[static_cast<size_t>(j)]);
      auto sharded = FullyShardedModel::shard(models[static_cast<size_t>(rank)], comm, torch::kDouble, {}, kTp);
      // The layout as a checkpoint stores it (the fused projections' row segments included) reads back the same.
      layout_round_trips[static_cast<size_t>(rank)] =
          verl::workers::detail::ShardLayout::from_json(sharded->layout().to_json(), "layout") == sharded->layout();
      auto& mine = shards[static_cast<size_t>(rank)];
      received[static_cast<size_t>(rank)] = sharded->for_each_unit_tp_shard(
          torch::kDouble, *slice_group, *tensor_parallel, [&](const std::map<std::string, torch::Tensor>& unit) {
            int64_t bytes = 0;
            for (const auto& [name, t] : unit) {
              mine[name] = t.clone();
              bytes += static_cast<int64_t>(t.nbytes());
            }
            largest_unit[static_cast<size_t>(rank)] = std::max(largest_unit[static_cast<size_t>(rank)], bytes);
          });
      // The whole weights back from the TP-slice image (unpack: a fused projection's parts put back in place).
      auto& gathered = whole_again[static_cast<size_t>(rank)];
      naive[static_cast<size_t>(rank)] = sharded->for_each_unit_state(torch::kDouble, [&](const auto& unit) {
        for (const auto& [name, t] : unit) gathered[name] = t.clone();
      });
    });
    int64_t weight_bytes = 0;
    for (const auto& [name, w] : whole) weight_bytes += static_cast<int64_t>(w.nbytes());
    for (int r = 0; r < kWorld; ++r) {
      INFO("rank " << r);
      const auto& mine = shards[static_cast<size_t>(r)];
      CHECK(layout_round_trips[static_cast<size_t>(r)]);
      REQUIRE(whole_again[static_cast<size_t>(r)].size() == whole.size());
      for (const auto& [name, w] : whole) CHECK(torch::equal(whole_again[static_cast<size_t>(r)].at(name), w));
      REQUIRE(mine.size() == whole.size());
      for (const auto& [name, w] : whole) {
        INFO(name);
        const auto expected = verl::model::tensor_parallel_shard(initial->config(), name, w, r % kTp, kTp);
        CHECK(torch::equal(mine.at(name), expected));  // bitwise
        if (phi3 && name == "model.layers.0.self_attn.qkv_proj.weight") {  // [q rows of k; k rows of k; v rows of k]
          const int64_t k = r % kTp;
          CHECK(torch::equal(expected, torch::cat({w.narrow(0, 12 * k, 12), w.narrow(0, 24 + 6 * k, 6),
                                                   w.narrow(0, 36 + 6 * k, 6)})));
        }
      }
      // DESIGN.md section 8: (1/t - 1/N) of the weights' bytes, plus the padding of each unit's pieces and the
      // replicated weights' chunks (norms; a few hundred bytes here) -- against (N - 1)/N for a full all-gather.
      const double ideal = (1.0 / kTp - 1.0 / kWorld) * static_cast<double>(weight_bytes);
      CHECK(received[static_cast<size_t>(r)] >= ideal);
      CHECK(received[static_cast<size_t>(r)] <= ideal + 0.03 * weight_bytes);
      CHECK(naive[static_cast<size_t>(r)] >= (kWorld - 1.0) / kWorld * static_cast<double>(weight_bytes));
      CHECK(largest_unit[static_cast<size_t>(r)] < weight_bytes / kTp);  // a unit's TP shards at a time
    }
  }
}

TEST_CASE("ZeRO-3 hand-over at t = 1: the whole weights, unpacked into the targets given (the engine's own)",
          "[dist][workers]") {
  constexpr int kWorld = 3;
  for (bool tied : {false, true}) {
    INFO("tied " << tied);
    auto initial = tiny_model(tied, torch::kDouble);
    const auto whole = initial->named_state();
    std::vector<std::shared_ptr<CausalLM>> models;
    for (int r = 0; r < kWorld; ++r) models.push_back(copy_of(*initial));
    // Each rank's destination: a fresh model's weights (as an engine's), except one weight it declines to give.
    std::vector<std::shared_ptr<CausalLM>> targets;
    for (int r = 0; r < kWorld; ++r) targets.push_back(tiny_model(tied, torch::kDouble, /*seed=*/99));
    const std::string declined = "model.layers.0.mlp.up_proj.weight";
    std::vector<int> written_in_place(kWorld, 1), fresh_for_declined(kWorld, 0);
    std::vector<std::string> refused(kWorld);
    verl::testing::on_thread_ranks(kWorld, [&](int64_t rank, std::shared_ptr<Communicator> comm) {
      auto sharded = FullyShardedModel::shard(models[static_cast<size_t>(rank)], comm, torch::kDouble, {}, 1);
      auto target = targets[static_cast<size_t>(rank)]->named_parameters(true);
      sharded->for_each_unit_state(
          torch::kDouble,
          [&](const std::map<std::string, torch::Tensor>& unit) {
            for (const auto& [name, t] : unit) {
              if (name == declined) {
                fresh_for_declined[static_cast<size_t>(rank)] = torch::equal(t, whole.at(name));
              } else if (!t.is_same(target[name])) {
                written_in_place[static_cast<size_t>(rank)] = 0;
              }
            }
          },
          [&](const std::string& name, c10::IntArrayRef shape, torch::Dtype dtype) {
            const torch::Tensor* t = target.find(name);
            return name == declined || t == nullptr || t->sizes() != shape || t->scalar_type() != dtype ? torch::Tensor()
                                                                                                        : *t;
          });
      // A target of the wrong shape is refused before anything is written into it (every rank refuses alike, after
      // the unit's gather).
      try {
        sharded->for_each_unit_state(torch::kDouble, [](const auto&) {},
                                     [](const std::string&, c10::IntArrayRef, torch::Dtype) {
                                       return torch::zeros({3}, torch::kDouble);
                                     });
      } catch (const verl::InvalidArgument& e) {
        refused[static_cast<size_t>(rank)] = e.what();
      }
    });
    for (int r = 0; r < kWorld; ++r) {
      INFO("rank " << r);
      CHECK(written_in_place[static_cast<size_t>(r)] == 1);
      CHECK(fresh_for_declined[static_cast<size_t>(r)] == 1);
      CHECK_THAT(refused[static_cast<size_t>(r)], Catch::Contains("not a contiguous"));
      for (const auto& [name, w] : whole) {
        if (name == declined) continue;
        INFO(name);
        CHECK(torch::equal(targets[static_cast<size_t>(r)]->named_parameters(true)[name], w));  // bitwise
      }
    }
  }
}

TEST_CASE("ZeRO-3 memory: each rank holds 1/N of the weights and of the AdamW state", "[dist][workers]") {
  auto initial = tiny_model(false, torch::kDouble);
  int64_t whole = 0;
  for (const auto& p : initial->parameters()) whole += p.numel();
  for (int world : {2, 4}) {
    for (bool reshard : {true, false}) {
      for (bool prefetch : {false, true}) {
        INFO("world " << world << ", reshard_after_forward " << reshard << ", forward_prefetch " << prefetch);
        Options o{world, false, reshard};
        o.forward_prefetch = prefetch;
        o.steps = 1;
        const std::vector<RankOutcome> ranks = run_sharded(*initial, o);
        for (const RankOutcome& r : ranks) {
          // Every unit (root + 3 layers) padded to a multiple of N: at most N - 1 elements each.
          CHECK(r.master_bytes >= whole * 8 / world);
          CHECK(r.master_bytes <= (whole / world + 4) * 8);
          CHECK(r.state_bytes == 2 * r.master_bytes);  // exp_avg and exp_avg_sq of the shard only
          // Gathered or arriving at once: resharding after forward, the root and two layers -- the one running and
          // the one prefetched (the backward always prefetches; the forward with forward_prefetch); everything
          // otherwise (3 layers).
          if (reshard) {
            CHECK(r.peak_gathered == r.root_bytes + 2 * r.max_layer_bytes);
          } else {
            CHECK(r.peak_gathered == r.root_bytes + 3 * r.max_layer_bytes);
          }
        }
      }
    }
  }
}

TEST_CASE("ZeRO-3 in mixed precision: bf16 compute moves fp32 master weights at lr 1e-6", "[dist][workers]") {
  auto initial = tiny_model(false, torch::kFloat);
  const Batch b = batch();
  std::vector<std::shared_ptr<CausalLM>> models = {copy_of(*initial), copy_of(*initial)};
  std::vector<double> moved(2), gathered_dtype_ok(2);
  verl::testing::on_thread_ranks(2, [&](int64_t rank, std::shared_ptr<Communicator> comm) {
    std::shared_ptr<CausalLM> m = models[static_cast<size_t>(rank)];
    Optimizer opt(m->parameters(), adamw(1e-6));
    auto sharded = FullyShardedModel::shard(m, comm, torch::kBFloat16);
    opt.shard_over(sharded);
    VERL_RANK_ASSERT(CHECK(sharded->master().scalar_type() == torch::kFloat));
    VERL_RANK_ASSERT(CHECK(m->dtype() == torch::kBFloat16));  // the module computes in bf16
    opt.zero_grad();
    loss_on(*m, b, rank * 4, 4, 2, false).backward();
    sharded->finish_backward();
    VERL_RANK_ASSERT(CHECK(sharded->master().grad().scalar_type() == torch::kFloat));  // reduced in fp32
    opt.step();
    const auto after = sharded->full_state();
    double most = 0;
    for (const auto& [name, w] : initial->named_state()) most = std::max(most, max_diff(after.at(name), w));
    moved[static_cast<size_t>(rank)] = most;
    VERL_RANK_ASSERT(CHECK(after.at("model.norm.weight").scalar_type() == torch::kFloat));
  });
  // AdamW's first step moves every weight with a gradient by about lr; bf16 weights (spacing 2^-8 relative) could not.
  for (double m : moved) {
    CHECK(m > 5e-7);
    CHECK(m < 2e-6);
  }
}

TEST_CASE("ZeRO-3 state: full_state / load_full_state and the optimizer's one-process checkpoint", "[dist][workers]") {
  auto initial = tiny_model(true, torch::kDouble);
  const auto dir = std::filesystem::temp_directory_path() / ("verl_fsdp_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string archive = (dir / "optim.pt").string();
  const Batch b = batch();
  std::vector<std::shared_ptr<CausalLM>> models = {copy_of(*initial), copy_of(*initial)};
  verl::testing::on_thread_ranks(2, [&](int64_t rank, std::shared_ptr<Communicator> comm) {
    std::shared_ptr<CausalLM> m = models[static_cast<size_t>(rank)];
    Optimizer opt(m->parameters(), adamw(1e-2));
    auto sharded = FullyShardedModel::shard(m, comm, m->dtype());
    opt.shard_over(sharded);
    VERL_RANK_ASSERT(CHECK_THROWS_AS(m->named_state(), verl::InvalidArgument));  // the module's own view is not the weights
    // Round trip: the initial weights come back whole on every rank.
    auto state = sharded->full_state();
    VERL_RANK_ASSERT(CHECK(state.count("lm_head.weight") == 0));  // tied
    for (const auto& [name, w] : initial->named_state()) VERL_RANK_ASSERT(CHECK(max_diff(state.at(name), w) == 0.0));
    state["model.norm.weight"] = state["model.norm.weight"] * 2.0;
    state["lm_head.weight"] = state["model.embed_tokens.weight"];  // a tied HF checkpoint's alias is accepted
    sharded->load_full_state(state);
    const torch::Tensor norm = sharded->full_state().at("model.norm.weight");  // a collective: outside the lock
    VERL_RANK_ASSERT(CHECK(max_diff(norm, initial->named_state().at("model.norm.weight") * 2.0) == 0.0));
    state.erase("model.norm.weight");
    VERL_RANK_ASSERT(CHECK_THROWS_AS(sharded->load_full_state(state), verl::CheckpointError));
    state["model.norm.weight"] = torch::zeros({3});
    VERL_RANK_ASSERT(CHECK_THROWS_WITH(sharded->load_full_state(state), Catch::Contains("model.norm.weight")));
    sharded->load_full_state(initial->named_state());
    // One step, then the optimizer writes the one-process archive (rank 0).
    opt.zero_grad();
    loss_on(*m, b, rank * 4, 4, 2, false).backward();
    sharded->finish_backward();
    opt.step();
    opt.save(archive);
  });
  // The one-process optimizer on the same batch holds the same moments as the archive.
  auto ref_model = copy_of(*initial);
  Optimizer ref(ref_model->parameters(), adamw(1e-2));
  ref.zero_grad();
  loss_on(*ref_model, b, 0, kRows, 1, false).backward();
  ref.step();
  auto loaded_model = copy_of(*initial);
  Optimizer loaded(loaded_model->parameters(), adamw(1e-2));
  loaded.load(archive);
  const auto params = ref_model->parameters();
  for (const auto& p : params) {
    const auto& a = static_cast<const torch::optim::AdamWParamState&>(*ref.adamw().state().at(p.unsafeGetTensorImpl()));
    const auto lp = loaded_model->parameters()[static_cast<size_t>(&p - params.data())];
    const auto& b2 = static_cast<const torch::optim::AdamWParamState&>(*loaded.adamw().state().at(lp.unsafeGetTensorImpl()));
    CHECK(a.step() == b2.step());
    CHECK(max_diff(a.exp_avg(), b2.exp_avg()) < 1e-12);
    CHECK(max_diff(a.exp_avg_sq(), b2.exp_avg_sq()) < 1e-12);
  }
  verl::remove_tree(dir);
}

namespace {

// The moments of a sharded optimizer, whole (every rank calls it).
std::vector<torch::Tensor> full_moment(FullyShardedModel& sharded, const Optimizer& opt, bool squared) {
  const verl::workers::AdamWMoments m = opt.shard_moments();
  return sharded.full(squared ? m.exp_avg_sq.front() : m.exp_avg.front());
}

// What a sharded run saved: whole weights and moments, and each rank's own slices.
struct Saved {
  std::map<std::string, torch::Tensor> weights;
  std::vector<torch::Tensor> exp_avg, exp_avg_sq;
  std::vector<torch::Tensor> masters, rank_exp_avg;
  int64_t scheduler_steps = 0;
};

// Loads `dir` at `world` ranks with a rollout layout of `tp` into fresh (other) weights; checks every rank ends with
// the saved whole weights and moments, bit for bit (a copy, however it is re-sliced). `masters`: each rank's master
// shard after the load. (The ranks record; the checks run on the test's thread: Catch's assertions are not
// thread-safe.)
void check_loads_at(const std::filesystem::path& dir, const Saved& saved, int world, int64_t tp,
                    std::vector<torch::Tensor>* masters = nullptr) {
  auto other = tiny_model(false, torch::kDouble, /*seed=*/99);
  std::vector<std::shared_ptr<CausalLM>> models;
  for (int r = 0; r < world; ++r) models.push_back(copy_of(*other));
  struct Loaded {
    std::map<std::string, torch::Tensor> weights;
    std::vector<torch::Tensor> exp_avg, exp_avg_sq;
    int64_t scheduler_steps = 0, step = 0;
    torch::Tensor master;
  };
  std::vector<Loaded> loaded(static_cast<size_t>(world));
  verl::testing::on_thread_ranks(world, [&](int64_t rank, std::shared_ptr<Communicator> comm) {
    std::shared_ptr<CausalLM> m = models[static_cast<size_t>(rank)];
    Optimizer opt(m->parameters(), adamw(1e-2));
    auto sharded = FullyShardedModel::shard(m, comm, m->dtype(), {}, tp);
    opt.shard_over(sharded);
    verl::workers::detail::load_shard(dir, *sharded, opt);
    Loaded& l = loaded[static_cast<size_t>(rank)];
    l.weights = sharded->full_state();
    l.exp_avg = full_moment(*sharded, opt, false);
    l.exp_avg_sq = full_moment(*sharded, opt, true);
    l.scheduler_steps = opt.scheduler_step_count();
    l.step = opt.shard_moments().step;
    l.master = sharded->master().detach().clone();
  });
  for (int r = 0; r < world; ++r) {
    INFO("loaded at N = " << world << ", t = " << tp << ", rank " << r);
    const Loaded& l = loaded[static_cast<size_t>(r)];
    REQUIRE(l.weights.size() == saved.weights.size());
    for (const auto& [name, w] : l.weights) CHECK(torch::equal(w, saved.weights.at(name)));
    REQUIRE(l.exp_avg.size() == saved.exp_avg.size());
    for (size_t i = 0; i < l.exp_avg.size(); ++i) {
      CHECK(torch::equal(l.exp_avg[i], saved.exp_avg[i]));
      CHECK(torch::equal(l.exp_avg_sq[i], saved.exp_avg_sq[i]));
    }
    CHECK(l.scheduler_steps == saved.scheduler_steps);
    CHECK(l.step == 2);
  }
  if (masters) {
    masters->clear();
    for (const Loaded& l : loaded) masters->push_back(l.master);
  }
}

}  // namespace

TEST_CASE("ZeRO-3 checkpoints: every rank writes its shard; they load at any N and t and merge whole",
          "[dist][workers]") {
  auto initial = tiny_model(false, torch::kDouble);
  const auto dir = std::filesystem::temp_directory_path() / ("verl_fsdp_shards_" + std::to_string(::getpid()));
  verl::remove_tree(dir);
  // Rank 0's part first, as the trainer writes it: config.json (naming the master dtype) and no weights.
  verl::model::SaveOptions config_only;
  config_only.write_weights = false;
  config_only.config_dtype = torch::kDouble;
  verl::model::save_pretrained(*initial, dir, config_only);
  CHECK_FALSE(std::filesystem::exists(dir / "model.safetensors"));
  CHECK_FALSE(verl::workers::is_sharded_checkpoint(dir));

  // Two steps at N = 2 laid out for a TP-2 rollout (the TP-slice image), then every rank writes its files.
  Saved saved;
  saved.masters.resize(2);
  saved.rank_exp_avg.resize(2);
  Options o;
  o.world = 2;
  o.tp = 2;
  o.after = [&](int64_t rank, FullyShardedModel& sharded, Optimizer& opt) {
    opt.scheduler_step();
    verl::workers::detail::save_shard(dir, sharded, opt);
    const auto exp_avg = full_moment(sharded, opt, false), exp_avg_sq = full_moment(sharded, opt, true);
    saved.masters[static_cast<size_t>(rank)] = sharded.master().detach().clone();
    saved.rank_exp_avg[static_cast<size_t>(rank)] = opt.shard_moments().exp_avg.front().clone();
    if (rank == 0) {
      saved.exp_avg = exp_avg;
      saved.exp_avg_sq = exp_avg_sq;
      saved.scheduler_steps = opt.scheduler_step_count();
    }
  };
  const std::vector<RankOutcome> trained = run_sharded(*initial, o);
  saved.weights = trained[0].weights;
  for (const char* f : {"model_world_size_2_rank_0.safetensors", "model_world_size_2_rank_1.safetensors",
                        "optim_world_size_2_rank_0.safetensors", "optim_world_size_2_rank_1.safetensors"})
    CHECK(std::filesystem::exists(dir / f));
  CHECK(verl::workers::is_sharded_checkpoint(dir));
  // No rank's file holds the whole model: each holds its half (the weights, no padding to speak of).
  int64_t whole_bytes = 0;
  for (const auto& [name, w] : saved.weights) whole_bytes += static_cast<int64_t>(w.nbytes());
  for (int r = 0; r < 2; ++r) {
    const auto bytes = static_cast<int64_t>(std::filesystem::file_size(dir / verl::workers::model_shard_file_name(2, r)));
    CHECK(bytes < whole_bytes * 6 / 10);
    CHECK(bytes > whole_bytes * 4 / 10);
  }

  SECTION("joined: the weights the ranks gather, and a model from config.json") {
    const auto joined = verl::workers::load_sharded_weights(dir);
    REQUIRE(joined.size() == saved.weights.size());
    for (const auto& [name, w] : saved.weights) CHECK(torch::equal(joined.at(name), w));
    auto model = verl::workers::load_sharded_pretrained(dir);
    CHECK(model->dtype() == torch::kDouble);
    for (const auto& [name, w] : model->named_state()) CHECK(torch::equal(w, saved.weights.at(name)));
  }
  SECTION("the same layout reads its own files: masters and moments bit for bit") {
    std::vector<torch::Tensor> masters;
    check_loads_at(dir, saved, 2, 2, &masters);
    for (size_t r = 0; r < 2; ++r) CHECK(torch::equal(masters[r], saved.masters[r]));
  }
  SECTION("other layouts re-slice on load: N = 4 with t = 1 and t = 2, N = 1") {
    check_loads_at(dir, saved, 4, 1);
    check_loads_at(dir, saved, 4, 2);
    auto m = tiny_model(false, torch::kDouble, 99);
    Optimizer opt(m->parameters(), adamw(1e-2));
    verl::workers::detail::load_shard(dir, *m, opt);
    for (const auto& [name, w] : m->named_state()) CHECK(torch::equal(w, saved.weights.at(name)));
    const auto params = m->parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      const auto& st = static_cast<const torch::optim::AdamWParamState&>(
          *opt.adamw().state().at(params[i].unsafeGetTensorImpl()));
      CHECK(st.step() == 2);
      CHECK(torch::equal(st.exp_avg(), saved.exp_avg[i]));
      CHECK(torch::equal(st.exp_avg_sq(), saved.exp_avg_sq[i]));
    }
    CHECK(opt.scheduler_step_count() == saved.scheduler_steps);
  }
  SECTION("a missing, inconsistent or foreign file is a CheckpointError naming it") {
    auto m = tiny_model(false, torch::kDouble, 99);
    Optimizer opt(m->parameters(), adamw(1e-2));
    const auto rank1 = dir / "model_world_size_2_rank_1.safetensors";
    const auto moved = dir / "elsewhere";
    std::filesystem::rename(rank1, moved);
    CHECK_THROWS_WITH(verl::workers::detail::load_shard(dir, *m, opt),
                      Catch::Contains("lacks 'model_world_size_2_rank_1.safetensors'") &&
                          Catch::Contains("written by 2 ranks"));
    // Rank 0's weights where rank 1's belong: its metadata names rank 0.
    std::filesystem::copy_file(dir / "model_world_size_2_rank_0.safetensors", rank1);
    CHECK_THROWS_WITH(verl::workers::load_sharded_weights(dir), Catch::Contains("names another rank"));
    std::filesystem::remove(rank1);
    // A shard of the wrong size.
    verl::model::save_file(rank1, verl::model::NamedTensors{{"weights", torch::zeros({3}, torch::kDouble)}},
                           verl::model::SafeTensorsFile(moved).metadata());
    CHECK_THROWS_WITH(verl::workers::load_sharded_weights(dir), Catch::Contains("rank_1.safetensors") &&
                                                                    Catch::Contains("the layout needs"));
    std::filesystem::rename(moved, rank1);
    // A model of another shape (two layers, not three).
    verl::Json shallow = initial->config().to_json();
    shallow["num_hidden_layers"] = 2;
    auto two = std::make_shared<CausalLM>(verl::model::ModelConfig::from_json(shallow));
    two->to(torch::kDouble);
    Optimizer two_opt(two->parameters(), adamw(1e-2));
    CHECK_THROWS_WITH(verl::workers::detail::load_shard(dir, *two, two_opt), Catch::Contains("model.layers.2"));
    // A step count no run reaches (it would overflow the next step's step + 1).
    const auto optim0 = dir / "optim_world_size_2_rank_0.safetensors";
    const auto optim_saved = dir / "optim_saved";
    std::filesystem::copy_file(optim0, optim_saved);
    {
      const verl::model::SafeTensorsFile f(optim_saved);
      auto optim_meta = f.metadata();
      optim_meta["step"] = "4611686018427387904";
      verl::model::save_file(optim0, f.load_all(), optim_meta);
    }
    CHECK_THROWS_WITH(verl::workers::detail::load_shard(dir, *m, opt), Catch::Contains("'step' is not a count"));
    std::filesystem::rename(optim_saved, optim0);
    // An optimizer with amsgrad needs moments the checkpoint lacks: refused before the weights change.
    OptimConfig ams = adamw(1e-2);
    ams.amsgrad = true;
    auto fresh = tiny_model(false, torch::kDouble, 99);
    const auto before = fresh->named_state().at("model.norm.weight").clone();
    Optimizer ams_opt(fresh->parameters(), ams);
    CHECK_THROWS_WITH(verl::workers::detail::load_shard(dir, *fresh, ams_opt), Catch::Contains("max_exp_avg_sq"));
    CHECK(torch::equal(fresh->named_state().at("model.norm.weight"), before));
    // A malformed layout.
    auto meta = verl::model::SafeTensorsFile(dir / "model_world_size_2_rank_0.safetensors").metadata();
    meta["verl_cpp_shard_layout"] = R"({"world_size": 2, "generation_tp": 2, "parameters": [["lm_head.weight", [3, 5]]]})";
    verl::model::save_file(dir / "model_world_size_2_rank_0.safetensors",
                           verl::model::NamedTensors{{"weights", saved.masters[0]}}, meta);
    CHECK_THROWS_AS(verl::workers::load_sharded_weights(dir), verl::CheckpointError);
  }
  verl::remove_tree(dir);
}

TEST_CASE("ZeRO-3 checkpoints of Phi-3 laid out for a tensor-parallel rollout merge whole and load at t = 1",
          "[dist][workers]") {
  // The fused projections' TP slices are not row ranges: the files record the row segments, and the merger puts each
  // part back where it came from.
  auto initial = tiny_model(false, torch::kDouble, 5, /*phi3=*/true);
  const auto whole = initial->named_state();
  const auto dir = std::filesystem::temp_directory_path() / ("verl_fsdp_phi3_" + std::to_string(::getpid()));
  verl::remove_tree(dir);
  verl::model::SaveOptions config_only;
  config_only.write_weights = false;
  config_only.config_dtype = torch::kDouble;
  verl::model::save_pretrained(*initial, dir, config_only);
  constexpr int kWorld = 2;
  std::vector<std::shared_ptr<CausalLM>> models;
  for (int r = 0; r < kWorld; ++r) models.push_back(copy_of(*initial));
  verl::testing::on_thread_ranks(kWorld, [&](int64_t rank, std::shared_ptr<Communicator> comm) {
    std::shared_ptr<CausalLM> m = models[static_cast<size_t>(rank)];
    Optimizer opt(m->parameters(), adamw(1e-2));
    auto sharded = FullyShardedModel::shard(m, comm, torch::kDouble, {}, /*generation_tp=*/2);
    opt.shard_over(sharded);
    verl::workers::detail::save_shard(dir, *sharded, opt);
  });
  const auto joined = verl::workers::load_sharded_weights(dir);
  REQUIRE(joined.size() == whole.size());
  for (const auto& [name, w] : whole) {
    INFO(name);
    CHECK(torch::equal(joined.at(name), w));
  }
  auto one = tiny_model(false, torch::kDouble, 99, /*phi3=*/true);
  Optimizer opt(one->parameters(), adamw(1e-2));
  verl::workers::detail::load_shard(dir, *one, opt);
  for (const auto& [name, w] : one->named_state()) CHECK(torch::equal(w, whole.at(name)));
  verl::remove_tree(dir);
}
