// verl::rollout::AsyncEngine and Engine::abort: requests submitted one by one from several threads come back equal
// to Engine::generate's outputs for the same seeded requests; streamed tokens concatenate to the outputs; an abort
// frees every KV block and resolves the request with what it had; close() resolves what is still in flight.
#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <thread>
#include <torch/torch.h>

#include "verl/core/error.h"
#include "verl/model/model_config.h"
#include "verl/model/transformer.h"
#include "verl/rollout/async_engine.h"
#include "verl/rollout/engine.h"

using namespace verl::rollout;
using verl::model::CausalLM;
using verl::model::ModelConfig;

namespace {

std::shared_ptr<CausalLM> async_test_model() {
  verl::Json j = {{"model_type", "qwen2"},       {"vocab_size", 61},         {"hidden_size", 32},
                  {"intermediate_size", 48},     {"num_hidden_layers", 2},   {"num_attention_heads", 4},
                  {"num_key_value_heads", 2},    {"rms_norm_eps", 1e-6},     {"rope_theta", 10000.0},
                  {"max_position_embeddings", 256}, {"tie_word_embeddings", false}, {"eos_token_id", 60}};
  torch::manual_seed(0);
  auto m = std::make_shared<CausalLM>(ModelConfig::from_json(j));
  torch::NoGradGuard ng;
  for (auto& p : m->parameters()) p.mul_(3.0);  // peaked distributions: seeds give clearly different outputs
  return m;
}

EngineConfig async_test_config() {
  EngineConfig c;
  c.block_size = 4;
  c.max_num_seqs = 16;
  c.max_num_batched_tokens = 128;
  return c;
}

SamplingParams seeded(int64_t seed, int64_t n, int64_t max_tokens) {
  SamplingParams p;
  p.temperature = 1.0;
  p.top_p = 0.95;
  p.seed = seed;
  p.n = n;
  p.max_tokens = max_tokens;
  return p;
}

std::vector<int64_t> prompt_of(int64_t i) {
  std::vector<int64_t> p;
  for (int64_t t = 0; t < 3 + (i * 5) % 11; ++t) p.push_back((i * 13 + t * 7) % 59);
  return p;
}

}  // namespace

TEST_CASE("AsyncEngine: concurrent submissions equal Engine::generate, streams concatenate to outputs",
          "[rollout][async]") {
  auto model = async_test_model();
  const int64_t count = 6;
  std::vector<std::vector<int64_t>> prompts;
  std::vector<SamplingParams> params;
  for (int64_t i = 0; i < count; ++i) {
    prompts.push_back(prompt_of(i));
    params.push_back(seeded(100 + i, 1 + i % 3, 8 + 3 * i));
  }
  Engine reference(model, async_test_config());
  const std::vector<RequestOutput> want = reference.generate(prompts, params);

  auto engine = std::make_shared<Engine>(model, async_test_config());
  AsyncEngine async(engine);
  std::vector<AsyncEngine::Submission> subs(count);
  std::vector<std::map<int64_t, std::vector<int64_t>>> streamed(count);  // per request: sample -> tokens
  std::mutex streamed_mutex;
  std::vector<std::thread> callers;
  for (int64_t i = 0; i < count; ++i) {
    callers.emplace_back([&, i] {
      std::this_thread::sleep_for(std::chrono::milliseconds(3 * i));  // arrivals while others decode
      subs[i] = async.submit(prompts[i], params[i], [&, i](const TokenEvent& e) {
        std::lock_guard<std::mutex> lock(streamed_mutex);
        streamed[i][e.sample_index].push_back(e.token);
      });
    });
  }
  for (auto& t : callers) t.join();
  for (int64_t i = 0; i < count; ++i) {
    const RequestOutput got = subs[i].result.get();
    REQUIRE(got.request_id == subs[i].request_id);
    REQUIRE(got.outputs.size() == want[i].outputs.size());
    for (size_t k = 0; k < got.outputs.size(); ++k) {
      CHECK(got.outputs[k].token_ids == want[i].outputs[k].token_ids);
      CHECK(got.outputs[k].finish_reason == want[i].outputs[k].finish_reason);
      std::lock_guard<std::mutex> lock(streamed_mutex);
      CHECK(streamed[i][static_cast<int64_t>(k)] == got.outputs[k].token_ids);
    }
  }
  CHECK(async.num_in_flight() == 0);
  CHECK(engine->stats().num_free_blocks == engine->stats().num_blocks);
}

TEST_CASE("AsyncEngine: abort frees the blocks and resolves with the tokens so far", "[rollout][async]") {
  auto engine = std::make_shared<Engine>(async_test_model(), async_test_config());
  AsyncEngine async(engine);
  SamplingParams long_params = seeded(7, 2, 200);
  long_params.ignore_eos = true;
  std::atomic<int64_t> seen{0};
  std::promise<void> started;
  auto sub = async.submit(prompt_of(1), long_params, [&](const TokenEvent&) {
    if (++seen == 6) started.set_value();  // 3 tokens of each sample
  });
  auto other = async.submit(prompt_of(2), seeded(9, 1, 5));
  started.get_future().wait();
  REQUIRE(async.abort(sub.request_id));
  const RequestOutput out = sub.result.get();
  REQUIRE(out.outputs.size() == 2);
  for (const auto& c : out.outputs) {
    CHECK(c.finish_reason == "abort");
    CHECK(c.token_ids.size() >= 3);
    CHECK(c.token_ids.size() < 200);
    CHECK(c.logprobs.size() == c.token_ids.size());
  }
  CHECK_FALSE(async.abort(sub.request_id));  // no longer in flight
  CHECK(other.result.get().outputs.at(0).token_ids.size() <= 5);  // the rest of the batch carries on
  CHECK(engine->stats().num_free_blocks == engine->stats().num_blocks);
  CHECK_FALSE(engine->has_unfinished_requests());
}

TEST_CASE("Engine::abort before the prompt is computed gives n empty samples", "[rollout][async]") {
  Engine engine(async_test_model(), async_test_config());
  const int64_t id = engine.add_request(prompt_of(3), seeded(1, 3, 10));
  auto out = engine.abort(id);
  REQUIRE(out.has_value());
  REQUIRE(out->outputs.size() == 3);
  for (const auto& c : out->outputs) {
    CHECK(c.token_ids.empty());
    CHECK(c.finish_reason == "abort");
  }
  CHECK_FALSE(engine.abort(id).has_value());
  CHECK_FALSE(engine.has_unfinished_requests());
  CHECK(engine.step().empty());
}

TEST_CASE("AsyncEngine: close resolves what is in flight; submit after close is refused", "[rollout][async]") {
  auto engine = std::make_shared<Engine>(async_test_model(), async_test_config());
  AsyncEngine::Submission sub;
  {
    AsyncEngine async(engine);
    SamplingParams p = seeded(3, 1, 200);
    p.ignore_eos = true;
    sub = async.submit(prompt_of(4), p);
    async.close();
    CHECK_THROWS_AS(async.submit(prompt_of(4), p), verl::InvalidArgument);
    async.close();  // idempotent
  }
  const RequestOutput out = sub.result.get();
  CHECK(out.outputs.at(0).finish_reason == "abort");
  CHECK(engine->stats().num_free_blocks == engine->stats().num_blocks);
}

TEST_CASE("AsyncEngine: a throwing callback is reported, not fatal; close from the engine's thread is refused",
          "[rollout][async]") {
  auto engine = std::make_shared<Engine>(async_test_model(), async_test_config());
  AsyncEngine async(engine);
  std::promise<std::string> close_error;
  auto first = async.submit(prompt_of(2), seeded(2, 1, 6), [](const TokenEvent&) { throw std::runtime_error("tok"); },
                            [&](const std::shared_future<RequestOutput>&) {
                              try {
                                async.close();  // from the engine's own thread
                                close_error.set_value("");
                              } catch (const verl::InvalidArgument& e) {
                                close_error.set_value(e.what());
                              }
                              throw std::runtime_error("done");
                            });
  CHECK(first.result.get().outputs.at(0).token_ids.size() <= 6);
  CHECK_THAT(close_error.get_future().get(), Catch::Contains("engine's own thread"));
  // The thread survived both callbacks: the next request is served.
  CHECK(async.submit(prompt_of(3), seeded(3, 1, 5)).result.get().outputs.at(0).token_ids.size() <= 5);
  // Two threads closing at once: one joins, the other returns.
  std::thread other([&] { async.close(); });
  async.close();
  other.join();
  CHECK(async.num_in_flight() == 0);
}

TEST_CASE("AsyncEngine: a request that leaves the engine behind its back fails instead of hanging",
          "[rollout][async]") {
  auto engine = std::make_shared<Engine>(async_test_model(), async_test_config());
  AsyncEngine async(engine);
  SamplingParams p = seeded(1, 1, 200);
  p.ignore_eos = true;
  std::promise<void> started;
  std::atomic<bool> once{false};
  auto sub = async.submit(prompt_of(5), p, [&](const TokenEvent&) {
    if (!once.exchange(true)) started.set_value();
  });
  started.get_future().wait();
  REQUIRE(engine->abort(sub.request_id).has_value());  // on the Engine itself, not through AsyncEngine::abort
  CHECK_THROWS_WITH(sub.result.get(), Catch::Contains("left the engine without an output"));
  CHECK(async.num_in_flight() == 0);
  // Bad requests are refused at submit, as Engine::add_request refuses them.
  CHECK_THROWS_AS(async.submit({}, seeded(1, 1, 4)), verl::InvalidArgument);
  CHECK(async.submit(prompt_of(5), seeded(1, 1, 4)).result.get().outputs.at(0).token_ids.size() <= 4);
}

TEST_CASE("Prefix caching: a conversation's next turn prefills only its new tokens, with the same output",
          "[rollout][prefix_cache]") {
  auto model = async_test_model();
  EngineConfig cached_config = async_test_config();
  cached_config.enable_prefix_caching = true;
  Engine cached(model, cached_config);
  Engine plain(model, async_test_config());
  SamplingParams greedy;
  greedy.temperature = 0.0;
  greedy.max_tokens = 9;
  greedy.ignore_eos = true;
  std::vector<int64_t> turn = prompt_of(7);  // the first turn's prompt
  int64_t expected_cached = 0;
  for (int t = 0; t < 4; ++t) {
    const RequestOutput a = cached.generate({turn}, {greedy}).at(0);
    const RequestOutput b = plain.generate({turn}, {greedy}).at(0);
    CHECK(a.outputs[0].token_ids == b.outputs[0].token_ids);
    // The cached keys/values came from another forward (other chunk shapes: fp32 GEMMs round differently, ~1e-7
    // relative on this model's logits of magnitude ~30), so log-probs agree to rounding, tokens exactly.
    for (size_t i = 0; i < a.outputs[0].logprobs.size(); ++i)
      CHECK(a.outputs[0].logprobs[i] == Approx(b.outputs[0].logprobs[i]).margin(5e-5));
    CHECK(cached.stats().num_cached_tokens == expected_cached);
    // Next turn: the conversation so far (prompt + answer) + a "tool result" of 5 tokens. Every full block of
    // the previous prompt + answer is cached (the answer's last token was never computed, so its block only if
    // it was full before it).
    const int64_t computed = static_cast<int64_t>(turn.size() + a.outputs[0].token_ids.size()) - 1;
    turn.insert(turn.end(), a.outputs[0].token_ids.begin(), a.outputs[0].token_ids.end());
    for (int64_t k = 0; k < 5; ++k) turn.push_back((t * 11 + k * 3) % 59);
    expected_cached += std::min(computed / 4, (static_cast<int64_t>(turn.size()) - 1) / 4) * 4;
  }
  CHECK(cached.stats().num_cached_tokens > 40);
  CHECK(plain.stats().num_cached_tokens == 0);
  CHECK(cached.stats().num_prefill_tokens < plain.stats().num_prefill_tokens);
  // Cached blocks count as free; new weights forget them.
  CHECK(cached.stats().num_free_blocks == cached.stats().num_blocks);
  const int64_t reused = cached.stats().num_cached_tokens;
  cached.update_weights(model->named_state());
  const RequestOutput again = cached.generate({turn}, {greedy}).at(0);
  CHECK(cached.stats().num_cached_tokens == reused);  // nothing reused after the update
  CHECK(again.outputs[0].token_ids == plain.generate({turn}, {greedy}).at(0).outputs[0].token_ids);
}

TEST_CASE("Prefix caching: a small cache evicts the least recently used blocks and stays exact",
          "[rollout][prefix_cache]") {
  auto model = async_test_model();
  EngineConfig small = async_test_config();
  small.enable_prefix_caching = true;
  small.kv_cache_bytes = PagedKVCache::block_bytes(model->config(), small.block_size, model->dtype()) * 24;
  small.max_num_seqs = 4;
  Engine cached(model, small);
  Engine plain(model, async_test_config());
  std::vector<std::vector<int64_t>> prompts;
  std::vector<SamplingParams> params;
  for (int64_t i = 0; i < 12; ++i) {
    std::vector<int64_t> p = {1, 2, 3, 4, 5, 6, 7, 8};  // a shared 2-block "system prompt"
    const std::vector<int64_t> rest = prompt_of(i);
    p.insert(p.end(), rest.begin(), rest.end());
    prompts.push_back(p);
    params.push_back(seeded(50 + i, 1 + i % 2, 10));
  }
  for (int round = 0; round < 2; ++round) {
    const auto a = cached.generate(prompts, params);
    const auto b = plain.generate(prompts, params);
    for (size_t i = 0; i < a.size(); ++i)
      for (size_t k = 0; k < a[i].outputs.size(); ++k) CHECK(a[i].outputs[k].token_ids == b[i].outputs[k].token_ids);
  }
  CHECK(cached.stats().num_cached_tokens >= 8 * 11);  // the shared prefix at least, after the first request
  CHECK(cached.stats().num_free_blocks == cached.stats().num_blocks);
}

TEST_CASE("Prefix caching: a request running across update_weights caches none of its later blocks",
          "[rollout][prefix_cache]") {
  // Its blocks after the update hold keys/values computed over the old weights' earlier layers: a later request
  // with the same prefix must recompute them, not take them as exact hits.
  auto model = async_test_model();
  EngineConfig config = async_test_config();
  config.enable_prefix_caching = true;
  Engine cached(model, config);
  SamplingParams greedy;
  greedy.temperature = 0.0;
  greedy.max_tokens = 12;
  greedy.ignore_eos = true;
  const std::vector<int64_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8};  // two full blocks
  const int64_t running = cached.add_request(prompt, greedy);
  cached.step();  // prefill (its two blocks are cached) and the first token
  cached.step();
  // New weights while it runs.
  auto new_model = async_test_model();
  {
    torch::NoGradGuard ng;
    for (auto& p : new_model->parameters()) p.mul_(0.9);
  }
  cached.update_weights(new_model->named_state());
  SamplingParams one = greedy;
  one.max_tokens = 1;
  cached.add_request(prompt, one);  // computes and caches the prompt's blocks again, under the new weights
  std::vector<int64_t> full;
  while (cached.has_unfinished_requests()) {
    for (const RequestOutput& out : cached.step()) {
      if (out.request_id != running) continue;
      full = prompt;
      full.insert(full.end(), out.outputs[0].token_ids.begin(), out.outputs[0].token_ids.end());
    }
  }
  REQUIRE(full.size() == 20);
  const int64_t before = cached.stats().num_cached_tokens;
  SamplingParams next = greedy;
  next.max_tokens = 4;
  const RequestOutput a = cached.generate({full}, {next}).at(0);
  CHECK(cached.stats().num_cached_tokens - before == 8);  // the prompt's two blocks only
  Engine plain(new_model, async_test_config());
  const RequestOutput b = plain.generate({full}, {next}).at(0);
  CHECK(a.outputs[0].token_ids == b.outputs[0].token_ids);
  for (size_t i = 0; i < a.outputs[0].logprobs.size(); ++i)
    CHECK(a.outputs[0].logprobs[i] == Approx(b.outputs[0].logprobs[i]).margin(5e-5));
}

TEST_CASE("AsyncEngine: held, it starts no step; requests submitted meanwhile enter one step together",
          "[rollout][async]") {
  auto engine = std::make_shared<Engine>(async_test_model(), async_test_config());
  AsyncEngine async(engine);
  async.hold();
  std::vector<AsyncEngine::Submission> subs;
  for (int64_t i = 0; i < 3; ++i) subs.push_back(async.submit(prompt_of(i), seeded(i, 1, 4)));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(engine->stats().num_steps == 0);
  // An abort is not held up (its caller may be the one holding).
  CHECK(async.abort(subs[2].request_id));
  CHECK(subs[2].result.get().outputs.at(0).finish_reason == "abort");
  async.release();
  for (int64_t i = 0; i < 2; ++i) CHECK(subs[static_cast<size_t>(i)].result.get().outputs.at(0).token_ids.size() <= 4);
  CHECK_THROWS_AS(async.release(), verl::InvalidArgument);
}
