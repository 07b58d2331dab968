// verl::rollout: block accounting, greedy parity with full-forward argmax, seeded reproducibility
// across batch compositions, teacher-forced log-probs, prefix sharing, preemption, chunked
// prefill, bad parameters, sleep / wake_up / update_weights, replicas.
#include <catch2/catch.hpp>
#include <set>
#include <torch/torch.h>

#include "verl/core/error.h"
#include "verl/model/model_config.h"
#include "verl/model/transformer.h"
#include "verl/rollout/engine.h"
#include "verl/rollout/paged_attention.h"

using namespace verl::rollout;
using verl::model::CausalLM;
using verl::model::ModelConfig;

namespace {

// scale > 1 sharpens the distributions (seeded outputs then differ clearly between seeds).
std::shared_ptr<CausalLM> tiny_model(torch::Dtype dtype, int64_t seed = 0, double scale = 3.0) {
  verl::Json j = {{"model_type", "qwen2"},       {"vocab_size", 61},         {"hidden_size", 32},
                  {"intermediate_size", 48},     {"num_hidden_layers", 2},   {"num_attention_heads", 4},
                  {"num_key_value_heads", 2},    {"rms_norm_eps", 1e-6},     {"rope_theta", 10000.0},
                  {"max_position_embeddings", 128}, {"tie_word_embeddings", false}, {"eos_token_id", 60}};
  torch::manual_seed(seed);
  auto m = std::make_shared<CausalLM>(ModelConfig::from_json(j));
  // Larger weights than the init, so distributions are far from uniform and outputs differ per seed.
  {
    torch::NoGradGuard ng;
    for (auto& p : m->parameters()) p.mul_(scale);
  }
  m->to(dtype);
  return m;
}

std::vector<std::vector<int64_t>> prompts(int64_t count, int64_t seed = 1) {
  torch::manual_seed(seed);
  std::vector<std::vector<int64_t>> out;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t len = 3 + (i * 7) % 23;
    torch::Tensor t = torch::randint(0, 60, {len}, torch::kLong);
    out.emplace_back(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + len);
  }
  return out;
}

EngineConfig config(int64_t max_num_seqs = 64, int64_t kv_bytes = 0, int64_t max_batched = 512) {
  EngineConfig c;
  c.block_size = 4;
  c.max_num_seqs = max_num_seqs;
  c.kv_cache_bytes = kv_bytes;
  c.max_num_batched_tokens = max_batched;
  return c;
}

SamplingParams sampled(int64_t seed, int64_t n = 1, int64_t max_tokens = 20) {
  SamplingParams p;
  p.temperature = 1.0;
  p.seed = seed;
  p.n = n;
  p.max_tokens = max_tokens;
  return p;
}

// `steps` greedy tokens after `prompt` by the full forward's argmax at every step (no cache): what the engine's greedy
// decoding must give.
std::vector<int64_t> full_forward_greedy(CausalLM& model, std::vector<int64_t> seq, int steps) {
  torch::NoGradGuard ng;
  std::vector<int64_t> expect;
  for (int t = 0; t < steps; ++t) {
    torch::Tensor ids = torch::tensor(seq, torch::kLong).unsqueeze(0);
    const int64_t next = model.forward(ids).select(1, -1).argmax(-1).item<int64_t>();
    expect.push_back(next);
    seq.push_back(next);
  }
  return expect;
}

std::vector<std::vector<int64_t>> tokens_of(const std::vector<RequestOutput>& outs) {
  std::vector<std::vector<int64_t>> t;
  for (const auto& o : outs)
    for (const auto& c : o.outputs) t.push_back(c.token_ids);
  return t;
}

}  // namespace

TEST_CASE("BlockManager: allocation, sharing, copy-on-write, release", "[rollout]") {
  BlockManager bm(6, 4);  // block 0 is scratch: 5 usable
  CHECK(bm.num_free_blocks() == 5);
  std::vector<int64_t> a;
  std::vector<std::pair<int64_t, int64_t>> copies;
  CHECK(bm.blocks_needed(a, 0, 6) == 2);
  auto slots = bm.append_slots(a, 0, 6, copies);
  REQUIRE(a.size() == 2);
  CHECK(slots == std::vector<int64_t>{a[0] * 4, a[0] * 4 + 1, a[0] * 4 + 2, a[0] * 4 + 3, a[1] * 4, a[1] * 4 + 1});
  CHECK(bm.num_free_blocks() == 3);
  std::vector<int64_t> b = a;
  bm.share(b);
  CHECK(bm.ref_count(a[0]) == 2);
  // b writes token 6 into the shared, partially filled block 1: it gets a private copy.
  CHECK(bm.blocks_needed(b, 6, 1) == 1);
  auto s = bm.append_slots(b, 6, 1, copies);
  REQUIRE(copies.size() == 1);
  CHECK(copies[0].first == a[1]);
  CHECK(b[1] == copies[0].second);
  CHECK(b[0] == a[0]);
  CHECK(s[0] == b[1] * 4 + 2);
  CHECK(bm.ref_count(a[1]) == 1);
  // a writes into its (now private) block 1 without a copy.
  CHECK(bm.blocks_needed(a, 6, 1) == 0);
  bm.append_slots(a, 6, 1, copies);
  CHECK(copies.size() == 1);
  CHECK(bm.num_free_blocks() == 2);
  bm.release(a);
  CHECK(bm.num_free_blocks() == 3);  // a's block 1 freed, block 0 still held by b
  bm.release(b);
  CHECK(bm.num_free_blocks() == 5);
  CHECK_THROWS_AS(BlockManager(1, 4), verl::InvalidArgument);
}

TEST_CASE("BlockManager: a sliding window releases a table's leading blocks, its entries the scratch block",
          "[rollout]") {
  BlockManager bm(8, 4);
  std::vector<int64_t> a;
  std::vector<std::pair<int64_t, int64_t>> copies;
  bm.append_slots(a, 0, 14, copies);  // 4 blocks
  std::vector<int64_t> b = a;
  bm.share(b);
  CHECK(bm.num_free_blocks() == 3);
  CHECK(bm.release_leading(a, 2) == 2);
  CHECK(a[0] == 0);
  CHECK(a[1] == 0);
  CHECK(bm.num_free_blocks() == 3);  // b still holds them
  CHECK(bm.release_leading(a, 3) == 1);  // only the newly left block
  CHECK(bm.release_leading(a, 3) == 0);
  std::vector<int64_t> c = a;
  bm.share(c);  // the scratch entries are not references
  CHECK(bm.release_leading(b, 9) == 4);  // past the end: the whole table; a's first 3 blocks are free now
  CHECK(bm.num_free_blocks() == 6);
  bm.release(a);
  bm.release(c);
  CHECK(bm.num_free_blocks() == 7);
}

TEST_CASE("a window on every layer bounds each sequence's KV blocks; tokens as the full forward's", "[rollout]") {
  // Mistral with a 5-token window on every layer: a sequence keeps the blocks of its last 6 positions (one more for a
  // step computed again) plus the one it writes, whatever its length -- and generates what the full forward does.
  verl::Json j = {{"model_type", "mistral"},        {"vocab_size", 61},          {"hidden_size", 32},
                  {"intermediate_size", 48},        {"num_hidden_layers", 2},    {"num_attention_heads", 4},
                  {"num_key_value_heads", 2},       {"rms_norm_eps", 1e-6},      {"rope_theta", 10000.0},
                  {"max_position_embeddings", 128}, {"tie_word_embeddings", false}, {"sliding_window", 5}};
  torch::manual_seed(3);
  auto model = std::make_shared<CausalLM>(ModelConfig::from_json(j));
  {
    torch::NoGradGuard ng;
    for (auto& p : model->parameters()) p.mul_(3.0);
  }
  model->to(torch::kDouble);
  EngineConfig c = config();
  c.block_size = 2;
  Engine engine(model, c);
  const std::vector<std::vector<int64_t>> ps = {{5, 9, 2}, {7, 1, 30, 4, 8, 11, 3, 2, 19}};
  SamplingParams greedy;
  greedy.temperature = 0.0;
  greedy.max_tokens = 40;
  greedy.ignore_eos = true;
  auto outs = engine.generate(ps, {greedy});
  // Each of the 2 rows holds at most ceil(6 / 2) + 1 = 4 blocks at a time (and its prompt's when it starts).
  CHECK(engine.stats().peak_used_blocks <= 2 * 5 + 1);
  CHECK(engine.stats().num_free_blocks == engine.stats().num_blocks);  // everything given back
  for (size_t i = 0; i < ps.size(); ++i) CHECK(outs[i].outputs[0].token_ids == full_forward_greedy(*model, ps[i], 40));
  // Without a window on every layer nothing is released: the rows hold their whole contexts.
  j["sliding_window"] = nullptr;
  torch::manual_seed(3);
  auto full = std::make_shared<CausalLM>(ModelConfig::from_json(j));
  full->to(torch::kDouble);
  Engine unbounded(full, c);
  unbounded.generate(ps, {greedy});
  CHECK(unbounded.stats().peak_used_blocks >= (3 + 40) / 2 + (9 + 40) / 2);
}

TEST_CASE("greedy decoding equals step-by-step full-forward argmax (mixed prompt lengths)", "[rollout]") {
  auto model = tiny_model(torch::kDouble);
  Engine engine(model, config());
  auto ps = prompts(7);
  SamplingParams greedy;
  greedy.temperature = 0.0;
  greedy.max_tokens = 12;
  greedy.ignore_eos = true;
  auto outs = engine.generate(ps, {greedy});
  REQUIRE(outs.size() == ps.size());
  for (size_t i = 0; i < ps.size(); ++i) {
    CHECK(outs[i].prompt_token_ids == ps[i]);
    CHECK(outs[i].outputs[0].token_ids == full_forward_greedy(*model, ps[i], 12));
    CHECK(outs[i].outputs[0].finish_reason == "length");
  }
}

TEST_CASE("rollout log-probs equal teacher-forced log-probs of the temperature-scaled distribution", "[rollout]") {
  // Init-scale weights: logits of magnitude ~1-10, as in a real model. (With weights x3 the
  // logits reach ~100 and float32 rounding alone -- any two kernels -- differs by ~3e-5.)
  auto model = tiny_model(torch::kFloat, 0, 1.0);
  Engine engine(model, config());
  auto ps = prompts(5, 3);
  for (double temp : {0.7, 0.0}) {
    SamplingParams p = sampled(11, 2, 15);
    p.temperature = temp;
    p.ignore_eos = true;
    auto outs = engine.generate(ps, {p});
    torch::NoGradGuard ng;
    for (size_t i = 0; i < ps.size(); ++i)
      for (const auto& c : outs[i].outputs) {
        REQUIRE(c.logprobs.size() == c.token_ids.size());
        std::vector<int64_t> full = ps[i];
        full.insert(full.end(), c.token_ids.begin(), c.token_ids.end());
        torch::Tensor logits = model->forward(torch::tensor(full, torch::kLong).unsqueeze(0)).squeeze(0);
        const int64_t P = ps[i].size(), R = c.token_ids.size();
        torch::Tensor lp = torch::log_softmax(logits.narrow(0, P - 1, R) / (temp == 0.0 ? 1.0 : temp), -1)
                               .gather(1, torch::tensor(c.token_ids, torch::kLong).unsqueeze(1))
                               .squeeze(1);
        torch::Tensor got = torch::tensor(c.logprobs, torch::kFloat);
        CHECK((lp - got).abs().max().item<double>() <= 1e-5);
      }
  }
}

TEST_CASE("seeded outputs do not depend on batch composition or max_num_seqs", "[rollout]") {
  auto model = tiny_model(torch::kDouble);
  auto ps = prompts(9, 5);
  std::vector<SamplingParams> params;
  for (size_t i = 0; i < ps.size(); ++i) params.push_back(sampled(100 + i, 1, 16));
  Engine big(model, config(64));
  auto all = tokens_of(big.generate(ps, params));
  // Different batch: each alone, and a reversed subset, with max_num_seqs 2.
  Engine small(model, config(2));
  for (size_t i = 0; i < ps.size(); ++i) CHECK(tokens_of(small.generate({ps[i]}, {params[i]}))[0] == all[i]);
  std::vector<std::vector<int64_t>> sub = {ps[8], ps[3], ps[0]};
  auto sub_out = tokens_of(small.generate(sub, {params[8], params[3], params[0]}));
  CHECK(sub_out[0] == all[8]);
  CHECK(sub_out[1] == all[3]);
  CHECK(sub_out[2] == all[0]);
  // Different seeds give different samples (the test would be vacuous otherwise).
  auto other = tokens_of(big.generate({ps[0]}, {sampled(999, 1, 16)}));
  CHECK(other[0] != all[0]);
}

TEST_CASE("prefix sharing: n samples prefill the prompt once and equal independent seeded requests", "[rollout]") {
  auto model = tiny_model(torch::kDouble);
  Engine engine(model, config());
  std::vector<int64_t> prompt = prompts(1, 9)[0];
  prompt.resize(10);  // 10 tokens in blocks of 4: 2 full blocks + a half-filled one
  for (auto& t : prompt) t = t % 60;
  const int64_t total = engine.stats().num_blocks;
  SamplingParams p = sampled(42, 8, 9);
  p.ignore_eos = true;
  engine.add_request(prompt, p);
  engine.step();  // prefill + fork + first token of each sample
  EngineStats s = engine.stats();
  CHECK(s.num_prefill_tokens == 10);           // the prompt was computed once, not 8 times
  CHECK(total - s.num_free_blocks == 3);       // and its 3 blocks are held by all 8 samples
  engine.step();  // first decode: 7 samples copy the shared half block, the last keeps it
  s = engine.stats();
  CHECK(total - s.num_free_blocks == 2 + 8);
  CHECK(s.num_decode_tokens == 8);
  std::vector<RequestOutput> outs;
  while (engine.has_unfinished_requests())
    for (auto& o : engine.step()) outs.push_back(std::move(o));
  REQUIRE(outs.size() == 1);
  CHECK(engine.stats().num_free_blocks == total);  // everything returned
  auto shared = tokens_of(outs);
  REQUIRE(shared.size() == 8);
  Engine fresh(model, config());
  std::set<std::vector<int64_t>> distinct;
  for (int64_t i = 0; i < 8; ++i) {
    SamplingParams q = sampled(42 + i, 1, 9);
    q.ignore_eos = true;
    CHECK(tokens_of(fresh.generate({prompt}, {q}))[0] == shared[i]);
    distinct.insert(shared[i]);
  }
  CHECK(distinct.size() > 1);
  CHECK(fresh.stats().num_prefill_tokens == 8 * 10);
}

TEST_CASE("preemption and chunked prefill leave outputs unchanged", "[rollout]") {
  auto model = tiny_model(torch::kDouble);
  auto ps = prompts(8, 7);
  std::vector<SamplingParams> params;
  for (size_t i = 0; i < ps.size(); ++i) {
    params.push_back(sampled(7 + i, 2, 24));
    params.back().ignore_eos = true;
  }
  Engine ample(model, config());
  auto expect = tokens_of(ample.generate(ps, params));
  CHECK(ample.stats().num_preemptions == 0);
  // 24 usable blocks of 4 tokens for 16 sequences of up to ~49 tokens: must preempt.
  const int64_t block_bytes = PagedKVCache::block_bytes(model->config(), 4, torch::kDouble);
  Engine tight(model, config(64, 25 * block_bytes));
  CHECK(tokens_of(tight.generate(ps, params)) == expect);
  CHECK(tight.stats().num_preemptions > 0);
  CHECK(tight.stats().num_free_blocks == 24);
  // Chunks of <= 5 tokens (some prompts end in a one-token chunk, scheduled like a decode).
  Engine chunked(model, config(64, 0, 5));
  CHECK(tokens_of(chunked.generate(ps, params)) == expect);
  int64_t prompt_tokens = 0;
  for (const auto& p : ps) prompt_tokens += static_cast<int64_t>(p.size());
  CHECK(chunked.stats().num_prefill_tokens <= prompt_tokens);
  CHECK(ample.stats().num_prefill_tokens == prompt_tokens);  // each prompt once for its 2 samples
}

TEST_CASE("stop tokens, EOS and max_tokens set the finish reason", "[rollout]") {
  auto model = tiny_model(torch::kDouble);
  Engine engine(model, config());
  auto ps = prompts(1, 2);
  SamplingParams greedy;
  greedy.temperature = 0.0;
  greedy.max_tokens = 10;
  greedy.ignore_eos = true;
  auto free_run = engine.generate(ps, {greedy})[0].outputs[0].token_ids;
  SamplingParams stop = greedy;
  stop.stop_token_ids = {free_run[3]};
  auto out = engine.generate(ps, {stop})[0].outputs[0];
  auto first = std::find(free_run.begin(), free_run.end(), free_run[3]) - free_run.begin();
  CHECK(out.token_ids == std::vector<int64_t>(free_run.begin(), free_run.begin() + first + 1));
  CHECK(out.finish_reason == "stop");
  EngineConfig c = config();
  c.eos_token_ids = {free_run[3]};
  Engine eos_engine(model, c);
  SamplingParams eos = greedy;
  eos.ignore_eos = false;
  auto e = eos_engine.generate(ps, {eos})[0].outputs[0];
  CHECK(e.finish_reason == "stop");
  CHECK(e.token_ids.back() == free_run[3]);
  SamplingParams zero = greedy;
  zero.max_tokens = 0;
  auto z = engine.generate(ps, {zero})[0];
  CHECK(z.outputs[0].token_ids.empty());
  CHECK(z.outputs[0].finish_reason == "length");
}

TEST_CASE("bad parameters raise InvalidArgument naming the parameter", "[rollout]") {
  auto model = tiny_model(torch::kFloat);
  Engine engine(model, config());
  std::vector<int64_t> ok = {1, 2, 3};
  auto bad = [&](auto edit, const char* name) {
    SamplingParams p;
    edit(p);
    CHECK_THROWS_AS(engine.add_request(ok, p), verl::InvalidArgument);
    CHECK_THROWS_WITH(engine.add_request(ok, p), Catch::Contains(name));
  };
  bad([](SamplingParams& p) { p.top_p = 0.0; }, "top_p");
  bad([](SamplingParams& p) { p.top_p = 1.5; }, "top_p");
  bad([](SamplingParams& p) { p.n = 0; }, "n must");
  bad([](SamplingParams& p) { p.max_tokens = -1; }, "max_tokens");
  bad([](SamplingParams& p) { p.temperature = -0.5; }, "temperature");
  bad([](SamplingParams& p) { p.top_k = -2; }, "top_k");
  bad([](SamplingParams& p) { p.min_p = 1.5; }, "min_p");
  bad([](SamplingParams& p) { p.stop_token_ids = {61}; }, "stop_token_ids");
  SamplingParams p;
  CHECK_THROWS_WITH(engine.add_request(std::vector<int64_t>(128, 1), p), Catch::Contains("max_model_len"));
  CHECK_THROWS_WITH(engine.add_request({1, 61}, p), Catch::Contains("prompt_token_ids"));
  CHECK_THROWS_WITH(engine.add_request({1, -1}, p), Catch::Contains("prompt_token_ids"));
  CHECK_THROWS_WITH(engine.add_request({}, p), Catch::Contains("prompt_token_ids"));
  CHECK_FALSE(engine.has_unfinished_requests());
}

TEST_CASE("requests added while the engine runs; sleep, wake_up and update_weights", "[rollout]") {
  auto model = tiny_model(torch::kDouble);
  Engine engine(model, config());
  auto ps = prompts(3, 4);
  std::vector<SamplingParams> params = {sampled(1), sampled(2), sampled(3)};
  auto expect = tokens_of(Engine(model, config()).generate(ps, params));
  engine.add_request(ps[0], params[0]);
  std::map<int64_t, std::vector<int64_t>> got;
  int steps = 0;
  while (engine.has_unfinished_requests()) {
    for (auto& o : engine.step()) got[o.request_id] = o.outputs[0].token_ids;
    if (++steps == 3) engine.add_request(ps[1], params[1]);
    if (steps == 5) engine.add_request(ps[2], params[2]);
  }
  REQUIRE(got.size() == 3);
  CHECK(got[0] == expect[0]);
  CHECK(got[1] == expect[1]);
  CHECK(got[2] == expect[2]);

  engine.sleep();
  CHECK(engine.sleeping());
  CHECK_THROWS_AS(engine.generate({ps[0]}, {params[0]}), verl::InvalidArgument);
  engine.wake_up();
  CHECK(tokens_of(engine.generate({ps[1]}, {params[1]}))[0] == expect[1]);

  // New weights (another model's) make it generate what that model generates.
  auto other = tiny_model(torch::kDouble, 5);
  auto other_expect = tokens_of(Engine(other, config()).generate({ps[0]}, {params[0]}));
  engine.update_weights(other->named_state());
  CHECK(tokens_of(engine.generate({ps[0]}, {params[0]}))[0] == other_expect[0]);
  CHECK(model->named_state().at("model.norm.weight").equal(other->named_state().at("model.norm.weight")));
  CHECK_THROWS_WITH(engine.update_weights({{"model.nope", torch::zeros({1})}}), Catch::Contains("model.nope"));

  // Sleeping without the weights (the ZeRO-3 rollout copy): they hold no memory until update_weights has given every
  // one back -- a layer at a time is fine -- and generation refuses to run on a partial model.
  const int64_t kept = model->named_state().at("model.embed_tokens.weight").storage().nbytes();
  engine.sleep(/*release_weights=*/true);
  CHECK(engine.weights_released());
  CHECK(model->named_state().at("model.embed_tokens.weight").storage().nbytes() == 0);
  engine.wake_up();
  CHECK_THROWS_WITH(engine.generate({ps[0]}, {params[0]}), Catch::Contains("update_weights first"));
  std::map<std::string, torch::Tensor> root, layers;
  for (const auto& [name, t] : other->named_state()) (name.rfind("model.layers.", 0) == 0 ? layers : root)[name] = t;
  engine.update_weights(root);
  CHECK(engine.weights_released());
  CHECK_THROWS_WITH(engine.generate({ps[0]}, {params[0]}), Catch::Contains("update_weights first"));
  engine.update_weights(layers);
  CHECK_FALSE(engine.weights_released());
  CHECK(model->named_state().at("model.embed_tokens.weight").storage().nbytes() == kept);
  CHECK(tokens_of(engine.generate({ps[0]}, {params[0]}))[0] == other_expect[0]);

  // A hand-over that writes the released weights in place (weight_for_update), then names them to update_weights:
  // generation waits for that, and the weights written are kept (not re-made).
  auto third = tiny_model(torch::kDouble, 11);
  auto third_expect = tokens_of(Engine(third, config()).generate({ps[0]}, {params[0]}));
  engine.sleep(/*release_weights=*/true);
  engine.wake_up();
  std::map<std::string, torch::Tensor> written;
  torch::NoGradGuard no_grad;  // the bound model's weights are leaves that require grad
  for (const auto& [name, t] : third->named_state()) {
    torch::Tensor slot = engine.weight_for_update(name, t.sizes(), t.scalar_type());
    REQUIRE(slot.defined());
    CHECK(slot.storage().nbytes() == static_cast<size_t>(t.nbytes()));
    slot.copy_(t);
    written[name] = slot;
  }
  CHECK(engine.weights_released());
  CHECK_THROWS_WITH(engine.generate({ps[0]}, {params[0]}), Catch::Contains("update_weights first"));
  engine.update_weights(written);
  CHECK_FALSE(engine.weights_released());
  CHECK(tokens_of(engine.generate({ps[0]}, {params[0]}))[0] == third_expect[0]);
  // No such weight, or not of that shape or dtype: undefined.
  CHECK_FALSE(engine.weight_for_update("model.nope", {1}, torch::kDouble).defined());
  CHECK_FALSE(engine.weight_for_update("model.norm.weight", {1}, torch::kDouble).defined());
  CHECK_FALSE(engine.weight_for_update("model.norm.weight", third->named_state().at("model.norm.weight").sizes(),
                                       torch::kFloat)
                  .defined());
}

TEST_CASE("EnginePool spreads requests least-loaded first and keeps input order", "[rollout]") {
  auto model = tiny_model(torch::kDouble);
  auto ps = prompts(6, 8);
  std::vector<SamplingParams> params;
  for (size_t i = 0; i < ps.size(); ++i) params.push_back(sampled(50 + i, 1 + i % 2, 10));
  auto expect = tokens_of(Engine(model, config()).generate(ps, params));
  EnginePool pool({std::make_shared<Engine>(model, config()), std::make_shared<Engine>(model, config())});
  auto outs = pool.generate(ps, params);
  CHECK(tokens_of(outs) == expect);
  for (size_t i = 0; i < ps.size(); ++i) CHECK(outs[i].prompt_token_ids == ps[i]);
  // Least loaded first: the first two requests go to different replicas.
  const auto& a = pool.last_assignment();
  CHECK(a[0] == 0);
  CHECK(a[1] == 1);
  CHECK(std::count(a.begin(), a.end(), 0) >= 2);
  CHECK(std::count(a.begin(), a.end(), 1) >= 2);
}

TEST_CASE("CPU paged-attention kernel equals gather + SDPA", "[rollout]") {
  auto model = tiny_model(torch::kDouble);
  auto ps = prompts(6, 12);
  std::vector<SamplingParams> params;
  for (size_t i = 0; i < ps.size(); ++i) params.push_back(sampled(3 + i, 2, 14));
  EngineConfig fused = config(64, 0, 7), gather = config(64, 0, 7);
  gather.paged_attention_kernel = false;
  auto a = Engine(model, fused).generate(ps, params);
  auto b = Engine(model, gather).generate(ps, params);
  CHECK(tokens_of(a) == tokens_of(b));
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = 0; j < a[i].outputs.size(); ++j)
      for (size_t t = 0; t < a[i].outputs[j].logprobs.size(); ++t)
        CHECK(std::abs(a[i].outputs[j].logprobs[t] - b[i].outputs[j].logprobs[t]) < 1e-5);
  // Direct: ragged causal queries over scattered blocks against a plain masked softmax.
  torch::manual_seed(3);
  const int64_t blocks = 9, bsz = 3, kvh = 2, heads = 4, d = 8;
  torch::Tensor kp = torch::randn({blocks, bsz, kvh, d}, torch::kDouble), vp = torch::randn_like(kp);
  torch::Tensor tables = torch::tensor({4, 1, 7, 2, 8, 0}, torch::kLong).view({2, 3});
  torch::Tensor pos = torch::tensor({5, 6, 7, 0, 1, 0}, torch::kLong).view({2, 3});
  torch::Tensor q = torch::randn({2, heads, 3, d}, torch::kDouble);
  torch::Tensor got = paged_attention_cpu(q, kp, vp, tables, pos, 0.3);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < 3; ++t) {
        const int64_t len = pos[i][t].item<int64_t>() + 1;
        std::vector<torch::Tensor> ks, vs;
        for (int64_t j = 0; j < len; ++j) {
          const int64_t b = tables[i][j / bsz].item<int64_t>();
          ks.push_back(kp[b][j % bsz][h / 2]);
          vs.push_back(vp[b][j % bsz][h / 2]);
        }
        torch::Tensor w = torch::softmax(torch::stack(ks).matmul(q[i][h][t]) * 0.3, 0);
        torch::Tensor ref = w.matmul(torch::stack(vs));
        CHECK((got[i][h][t] - ref).abs().max().item<double>() < 1e-12);
      }
}

TEST_CASE("generate reports each prompt as it finishes, while the others decode", "[rollout]") {
  auto model = tiny_model(torch::kDouble);
  Engine engine(model, config());
  auto ps = prompts(3, 4);
  std::vector<SamplingParams> params;
  for (int64_t max_tokens : {9, 2, 5}) {
    SamplingParams p = sampled(11, 2, max_tokens);
    p.ignore_eos = true;
    params.push_back(p);
  }
  const auto plain = engine.generate(ps, params);
  std::vector<size_t> order;
  std::vector<int64_t> tokens_done_then;  // generated tokens of prompt 0 (the longest) when each one finished
  const auto streamed = engine.generate(ps, params, [&](size_t i, const RequestOutput& out) {
    order.push_back(i);
    CHECK(out.outputs.size() == 2);
    CHECK(engine.has_unfinished_requests() == (order.size() < 3));
    tokens_done_then.push_back(engine.stats().num_decode_tokens);
  });
  CHECK(order == std::vector<size_t>{1, 2, 0});  // shortest first
  CHECK(tokens_of(streamed) == tokens_of(plain));
  CHECK(tokens_done_then.front() < tokens_done_then.back());

  SECTION("a callback that throws leaves nothing of the call in the engine") {
    CHECK_THROWS_WITH(engine.generate(ps, params, [](size_t, const RequestOutput&) { throw std::runtime_error("no"); }),
                      "no");
    CHECK_FALSE(engine.has_unfinished_requests());
    CHECK(tokens_of(engine.generate(ps, params)) == tokens_of(plain));
  }
}

EngineConfig with_async(EngineConfig c, bool on) {
  c.async_scheduling = on;
  return c;
}

// The same tokens and finish reasons, and log-probs within float32 rounding: a step launched ahead also computes the
// rows of samples that stopped, and a CPU GEMM's last bits can depend on the batch size (engine.h).
void check_same_outputs(const std::vector<RequestOutput>& a, const std::vector<RequestOutput>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i].outputs.size() == b[i].outputs.size());
    for (size_t j = 0; j < a[i].outputs.size(); ++j) {
      INFO("request " << i << " sample " << j);
      CHECK(a[i].outputs[j].token_ids == b[i].outputs[j].token_ids);
      const std::vector<float>& la = a[i].outputs[j].logprobs;
      const std::vector<float>& lb = b[i].outputs[j].logprobs;
      REQUIRE(la.size() == lb.size());
      for (size_t t = 0; t < la.size(); ++t) CHECK(std::abs(la[t] - lb[t]) <= 1e-6f);
      CHECK(a[i].outputs[j].finish_reason == b[i].outputs[j].finish_reason);
    }
  }
}

TEST_CASE("async scheduling gives the synchronous loop's outputs and token events", "[rollout]") {
  auto model = tiny_model(torch::kDouble);
  auto ps = prompts(10, 11);
  std::vector<SamplingParams> params;
  for (size_t i = 0; i < ps.size(); ++i) {
    // n 1..3, max_tokens 6..33, three stop ids besides EOS: samples end at many different steps, by stop and length.
    SamplingParams p = sampled(300 + static_cast<int64_t>(i), 1 + static_cast<int64_t>(i) % 3,
                               6 + 3 * static_cast<int64_t>(i));
    p.stop_token_ids = {7, 19, 33};
    if (i == 4) p.temperature = 0.0;
    params.push_back(p);
  }
  const int64_t block_bytes = PagedKVCache::block_bytes(model->config(), 4, torch::kDouble);
  EngineConfig prefix_cached = config();
  prefix_cached.enable_prefix_caching = true;
  // Ample blocks; 30 usable blocks (preemption); prefill chunks of <= 5 tokens; prefix caching (a second generate
  // reuses the first's blocks); 4 sequences at a time (requests wait, and are admitted into steps launched ahead).
  for (const EngineConfig& c :
       {config(), config(64, 31 * block_bytes), config(64, 0, 5), prefix_cached, config(4)}) {
    std::vector<TokenEvent> events[2];
    std::vector<RequestOutput> outs[2], again[2];
    EngineStats stats[2];
    for (int on = 0; on < 2; ++on) {
      Engine engine(model, with_async(c, on == 1));
      engine.set_token_listener([&events, on](const std::vector<TokenEvent>& ev) {
        events[on].insert(events[on].end(), ev.begin(), ev.end());
      });
      outs[on] = engine.generate(ps, params);
      again[on] = engine.generate(ps, params);
      stats[on] = engine.stats();
      CHECK(stats[on].num_free_blocks == stats[on].num_blocks);  // every block back, the dropped rows' too
    }
    check_same_outputs(outs[1], outs[0]);
    check_same_outputs(again[1], outs[0]);
    // Each sample's token events, in order. (Where requests wait -- for a slot, a prefill chunk, after preemption --
    // admission lags a step ahead, so the samples' events interleave differently; otherwise in the same order too.)
    REQUIRE(events[1].size() == events[0].size());
    std::map<std::pair<int64_t, int64_t>, std::vector<TokenEvent>> per_sample[2];
    for (int on = 0; on < 2; ++on)
      for (const TokenEvent& e : events[on]) per_sample[on][{e.request_id, e.sample_index}].push_back(e);
    REQUIRE(per_sample[1].size() == per_sample[0].size());
    for (const auto& [sample, want] : per_sample[0]) {
      const std::vector<TokenEvent>& got = per_sample[1][sample];
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        CHECK(got[i].token == want[i].token);
        CHECK(std::abs(got[i].logprob - want[i].logprob) <= 1e-6f);
      }
    }
    const bool nothing_waits = c.kv_cache_bytes == 0 && c.max_num_batched_tokens > 5 && c.max_num_seqs == 64;
    if (nothing_waits)
      for (size_t i = 0; i < events[0].size(); ++i) {
        CHECK(events[1][i].request_id == events[0][i].request_id);
        CHECK(events[1][i].sample_index == events[0][i].sample_index);
      }
    CHECK(stats[0].num_async_steps == 0);
    // Steps that prefill (prompts, chunks, recomputation after preemption) run synchronously. With ample blocks and
    // whole prompts per step, every step but each generate's first two (the prefill, the first decode) was launched
    // ahead: samples that stop or end by length do not drain the pipeline.
    CHECK(stats[1].num_async_steps > 0);
    if (nothing_waits) CHECK(stats[1].num_async_steps == stats[1].num_steps - 4);
    if (c.max_num_seqs == 4) CHECK(2 * stats[1].num_async_steps > stats[1].num_steps);
    CHECK(stats[1].num_preemptions == stats[0].num_preemptions);
    CHECK(stats[1].num_cached_tokens == stats[0].num_cached_tokens);
    if (c.kv_cache_bytes > 0) CHECK(stats[1].num_preemptions > 0);
    if (c.enable_prefix_caching) CHECK(stats[1].num_cached_tokens > 0);
  }
  // Both ways of ending were exercised: samples that stopped early (their row ahead dropped) and ran to length.
  int stopped = 0, lengths = 0;
  for (const auto& o : Engine(model, config()).generate(ps, params))
    for (const auto& c : o.outputs) (c.finish_reason == "stop" ? stopped : lengths)++;
  CHECK(stopped >= 5);
  CHECK(lengths >= 3);
}

TEST_CASE("async scheduling: aborts and new requests while a step is in flight", "[rollout]") {
  auto model = tiny_model(torch::kDouble);
  auto ps = prompts(4, 4);
  std::vector<SamplingParams> params = {sampled(1, 2, 20), sampled(2, 1, 20), sampled(3, 1, 20), sampled(4, 1, 9)};
  for (auto& p : params) p.ignore_eos = true;
  const auto expect = Engine(model, config()).generate(ps, params);
  Engine engine(model, with_async(config(), true));
  std::vector<int64_t> ids;
  for (size_t i = 0; i < 3; ++i) ids.push_back(engine.add_request(ps[i], params[i]));
  for (int i = 0; i < 3; ++i) CHECK(engine.step().empty());  // prefill + fork, then decodes, each launching one ahead
  REQUIRE(engine.stats().num_async_steps > 0);
  // The aborted request keeps the tokens read back so far: three per sample, the synchronous run's first three.
  const std::optional<RequestOutput> aborted = engine.abort(ids[0]);
  REQUIRE(aborted);
  REQUIRE(aborted->outputs.size() == 2);
  for (size_t j = 0; j < 2; ++j) {
    const std::vector<int64_t>& full = expect[0].outputs[j].token_ids;
    CHECK(aborted->outputs[j].token_ids == std::vector<int64_t>(full.begin(), full.begin() + 3));
    CHECK(aborted->outputs[j].finish_reason == "abort");
  }
  // A request that arrives while a step is in flight is admitted into the next step, launched ahead or not.
  ids.push_back(engine.add_request(ps[3], params[3]));
  std::map<int64_t, RequestOutput> got;
  while (engine.has_unfinished_requests())
    for (auto& o : engine.step()) got[o.request_id] = std::move(o);
  REQUIRE(got.size() == 3);
  for (size_t i = 1; i < 4; ++i) CHECK(got[ids[i]].outputs[0].token_ids == expect[i].outputs[0].token_ids);
  CHECK(engine.stats().num_free_blocks == engine.stats().num_blocks);

  // Everything aborted while a step is in flight: nothing is left, and the engine sleeps and generates again.
  const int64_t a = engine.add_request(ps[1], params[1]), b = engine.add_request(ps[2], params[2]);
  const int64_t ahead = engine.stats().num_async_steps;
  for (int i = 0; i < 3; ++i) engine.step();
  CHECK(engine.stats().num_async_steps > ahead);
  CHECK(engine.abort(a));
  CHECK(engine.abort(b));
  CHECK_FALSE(engine.has_unfinished_requests());
  CHECK(engine.step().empty());
  CHECK(engine.stats().num_free_blocks == engine.stats().num_blocks);
  engine.sleep();
  engine.wake_up();
  check_same_outputs(engine.generate({ps[1], ps[2]}, {params[1], params[2]}), {expect[1], expect[2]});
}

TEST_CASE("async scheduling: new weights between two steps reach the next token, as in the synchronous loop",
          "[rollout]") {
  // Two copies of one model (update_weights writes the bound model in place), one per engine.
  auto model_sync = tiny_model(torch::kDouble), model_async = tiny_model(torch::kDouble);
  const auto new_weights = tiny_model(torch::kDouble, 5)->named_state();
  auto ps = prompts(4, 12);
  std::vector<SamplingParams> params;
  for (size_t i = 0; i < ps.size(); ++i) params.push_back(sampled(40 + static_cast<int64_t>(i), 2, 16));
  EngineConfig cached = config();
  cached.enable_prefix_caching = true;  // the dropped step's full blocks must not stay remembered
  std::vector<RequestOutput> outs[2];
  for (int on = 0; on < 2; ++on) {
    Engine engine(on == 1 ? model_async : model_sync, with_async(cached, on == 1));
    for (size_t i = 0; i < ps.size(); ++i) engine.add_request(ps[i], params[i]);
    for (int i = 0; i < 6; ++i)
      for (auto& o : engine.step()) outs[on].push_back(std::move(o));
    if (on == 1) CHECK(engine.stats().num_async_steps > 0);
    engine.update_weights(new_weights);
    while (engine.has_unfinished_requests())
      for (auto& o : engine.step()) outs[on].push_back(std::move(o));
    CHECK(engine.stats().num_free_blocks == engine.stats().num_blocks);
  }
  auto by_id = [](std::vector<RequestOutput>& v) {
    std::sort(v.begin(), v.end(), [](const RequestOutput& a, const RequestOutput& b) {
      return a.request_id < b.request_id;
    });
  };
  by_id(outs[0]);
  by_id(outs[1]);
  check_same_outputs(outs[1], outs[0]);
  // The new weights changed the samples (the test would be vacuous otherwise).
  Engine old_weights(tiny_model(torch::kDouble), config());
  CHECK(tokens_of(old_weights.generate(ps, params)) != tokens_of(outs[0]));
}

TEST_CASE("async scheduling: a request that sampled nothing before update_weights generates what the new weights do",
          "[rollout]") {
  // Three sequences at a time, so requests are admitted into steps launched ahead; the update comes at many points
  // of a run. A request admitted into the step in flight is computed again from its prompt. (Whole prompts per step:
  // with chunked prefill, a prompt can have chunks computed before the update without having sampled.)
  auto ps = prompts(6, 13);
  std::vector<SamplingParams> params;
  for (size_t i = 0; i < ps.size(); ++i) {
    // Different lengths: samples end while others go on, so slots free up under a step launched ahead.
    const auto k = static_cast<int64_t>(i);
    params.push_back(sampled(70 + k, 1 + k % 2, 4 + 3 * (k % 3)));
    params.back().ignore_eos = true;
    if (k % 2 == 1) params.back().stop_token_ids = {3, 11, 29, 41, 52};
  }
  auto new_model = tiny_model(torch::kDouble, 5);
  const auto new_weights = new_model->named_state();
  std::vector<std::vector<std::vector<int64_t>>> fresh;  // each request's samples from the new weights alone
  for (size_t i = 0; i < ps.size(); ++i)
    fresh.push_back(tokens_of(Engine(new_model, config()).generate({ps[i]}, {params[i]})));
  int checked = 0;
  for (const EngineConfig& c : {config(3)}) {
    for (int update_at = 1; update_at <= 24; ++update_at) {
      INFO("update after step " << update_at);
      Engine engine(tiny_model(torch::kDouble), with_async(c, true));
      std::set<int64_t> sampled_before;
      bool updated = false;
      engine.set_token_listener([&](const std::vector<TokenEvent>& ev) {
        for (const TokenEvent& e : ev)
          if (!updated) sampled_before.insert(e.request_id);
      });
      std::vector<int64_t> ids;
      for (size_t i = 0; i < ps.size(); ++i) ids.push_back(engine.add_request(ps[i], params[i]));
      std::map<int64_t, RequestOutput> got;
      for (int step = 0; engine.has_unfinished_requests(); ++step) {
        if (step == update_at) {
          engine.update_weights(new_weights);
          updated = true;
        }
        for (auto& o : engine.step()) got[o.request_id] = std::move(o);
      }
      CHECK(engine.stats().num_free_blocks == engine.stats().num_blocks);
      REQUIRE(got.size() == ps.size());
      for (size_t i = 0; i < ps.size(); ++i) {
        if (sampled_before.count(ids[i])) continue;
        CHECK(tokens_of({got[ids[i]]}) == fresh[i]);
        ++checked;
      }
    }
  }
  CHECK(checked > 12);
}

TEST_CASE("async scheduling: a prompt chunk admitted into a step whose rows all stopped is computed again after "
          "update_weights", "[rollout]") {
  // Greedy, two sequences at a time, 5-token steps. Step 2 (the first decode) is in flight when step 3 is launched
  // ahead: A ends by length with its step-2 token, so its slot goes to P, whose 12-token prompt gets a 4-token chunk
  // beside C's decode; C's step-2 token is a stop id, so when step 2 is read back step 3 has no row left, only P's
  // chunk, computed with the old weights. update_weights then must start P again.
  auto model = tiny_model(torch::kDouble);
  SamplingParams greedy;
  greedy.temperature = 0.0;
  greedy.ignore_eos = true;
  greedy.max_tokens = 10;
  // C: a 2-token prompt whose first two greedy tokens differ (the second is its stop id). A's and C's prompts fit
  // step 1 together.
  std::vector<int64_t> c_prompt;
  std::vector<int64_t> c_free;
  for (int64_t seed = 20; seed < 60 && c_prompt.empty(); ++seed) {
    std::vector<int64_t> candidate = prompts(1, seed)[0];
    candidate.resize(2);
    std::vector<int64_t> run = Engine(model, config()).generate({candidate}, {greedy})[0].outputs[0].token_ids;
    if (run[0] != run[1]) {
      c_prompt = candidate;
      c_free = run;
    }
  }
  REQUIRE(!c_prompt.empty());
  SamplingParams a_params = greedy, c_params = greedy;
  a_params.max_tokens = 2;
  c_params.stop_token_ids = {c_free[1]};
  std::vector<int64_t> p_prompt = prompts(1, 77)[0];
  p_prompt.resize(12, 5);
  auto new_model = tiny_model(torch::kDouble, 5);
  const std::vector<int64_t> p_fresh =
      Engine(new_model, config()).generate({p_prompt}, {greedy})[0].outputs[0].token_ids;

  Engine engine(model, with_async(config(2, 0, 5), true));
  std::vector<int64_t> a_prompt = prompts(1, 3)[0];
  a_prompt.resize(2);
  engine.add_request(a_prompt, a_params);
  const int64_t c = engine.add_request(c_prompt, c_params);
  const int64_t p = engine.add_request(p_prompt, greedy);
  engine.step();  // A and C prefilled, their first tokens
  std::vector<RequestOutput> done = engine.step();  // step 2 (decodes), step 3 launched ahead with P's chunk
  REQUIRE(engine.stats().num_async_steps == 1);
  REQUIRE(done.size() == 2);  // A by length, C by its stop id: step 3 has no row left
  CHECK(engine.stats().num_prefill_tokens == 2 + 2 + 4);
  engine.update_weights(new_model->named_state());
  std::map<int64_t, RequestOutput> got;
  while (engine.has_unfinished_requests())
    for (auto& o : engine.step()) got[o.request_id] = std::move(o);
  REQUIRE(got.count(p));
  CHECK(got[p].outputs[0].token_ids == p_fresh);  // P from the new weights alone
  for (const RequestOutput& o : done)
    if (o.request_id == c) CHECK(o.outputs[0].token_ids == std::vector<int64_t>(c_free.begin(), c_free.begin() + 2));
  CHECK(engine.stats().num_free_blocks == engine.stats().num_blocks);
}

TEST_CASE("CUDA decode graphs give the eager engine's tokens and log-probs, across buckets, sleep and new weights",
          "[rollout][cuda]") {
  if (!torch::cuda::is_available()) {
    WARN("CUDA not available; skipped");
    return;
  }
  auto model = tiny_model(torch::kFloat, 0, 1.0);
  model->to(torch::kCUDA);
  EngineConfig eager_config = config();
  eager_config.enforce_eager = true;
  Engine eager(model, eager_config), graphed(model, config());
  auto ps = prompts(9, 3);
  std::vector<SamplingParams> params;
  for (size_t i = 0; i < ps.size(); ++i) {
    params.push_back(sampled(50 + static_cast<int64_t>(i), 2, 12));
    params.back().ignore_eos = true;
  }
  auto same = [](const std::vector<RequestOutput>& a, const std::vector<RequestOutput>& b) {
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      REQUIRE(a[i].outputs.size() == b[i].outputs.size());
      for (size_t j = 0; j < a[i].outputs.size(); ++j) {
        CHECK(a[i].outputs[j].token_ids == b[i].outputs[j].token_ids);
        const auto& la = a[i].outputs[j].logprobs;
        const auto& lb = b[i].outputs[j].logprobs;
        REQUIRE(la.size() == lb.size());
        for (size_t t = 0; t < la.size(); ++t) CHECK(std::abs(la[t] - lb[t]) < 1e-4);
      }
    }
  };
  // 18 rows (bucket 32), then one row (bucket 1).
  same(graphed.generate(ps, params), eager.generate(ps, params));
  // Async scheduling (the default on CUDA): steps launched before the previous step's tokens are read back, with
  // their ids on the device, give the synchronous loop's outputs.
  CHECK(graphed.stats().num_async_steps > 0);
  Engine synchronous(model, with_async(config(), false));
  same(graphed.generate(ps, params), synchronous.generate(ps, params));
  CHECK(synchronous.stats().num_async_steps == 0);
  same(graphed.generate({ps[4]}, {sampled(7, 1, 12)}), eager.generate({ps[4]}, {sampled(7, 1, 12)}));
  CHECK(graphed.stats().num_graph_captures >= 2);
  CHECK(eager.stats().num_graph_captures == 0);
  // Sleep drops the graphs and their pool, wake_up re-creates the KV pools: captured again, into a fresh pool; new
  // weights are copied in place: the graphs still read the right ones.
  const int64_t captured = graphed.stats().num_graph_captures;
  graphed.sleep();
  graphed.wake_up();
  same(graphed.generate(ps, params), eager.generate(ps, params));
  CHECK(graphed.stats().num_graph_captures > captured);
  auto other = tiny_model(torch::kFloat, 5, 1.0);
  graphed.update_weights(other->named_state());  // the shared model: both engines see the new weights
  same(graphed.generate(ps, params), eager.generate(ps, params));
  // Batches above the largest size run eagerly.
  EngineConfig small = config();
  small.cudagraph_capture_sizes = {1, 2};
  Engine limited(model, small);
  same(limited.generate(ps, params), eager.generate(ps, params));
}
