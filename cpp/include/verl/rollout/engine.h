// verl::rollout::Engine: generation on the shared model code (verl/model/transformer.h) with a
// paged KV cache, continuous batching (scheduler.h) and per-sequence reproducible sampling
// (sampler.h). EnginePool spreads requests over several engines (data-parallel replicas).
//
// Log-probs: each generated token's log-prob is log_softmax(logits / temperature)[token] of the
// untruncated distribution (top_k / top_p / min_p only restrict what is drawn), float32. This is
// what verl's actor recomputes (it divides the logits by the rollout temperature). For greedy
// requests (temperature 0) it is log_softmax(logits)[token].
//
// Reproducibility: sample i of a request with seed s draws token t with the uniform
// stream_uniform(s + i, t): the output does not depend on what else is batched, on max_num_seqs,
// on preemption, or on prefix sharing -- as far as the model's logits for a row do not depend on
// the batch (CPU GEMMs can differ in the last bits with the batch size; a draw flips only when it
// lands within that rounding of a CDF boundary).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "verl/core/config.h"
#include "verl/core/export.h"
#include "verl/model/transformer.h"
#include "verl/rollout/kv_cache.h"
#include "verl/rollout/sampler.h"
#include "verl/rollout/sampling_params.h"
#include "verl/rollout/scheduler.h"

namespace verl::rollout {

struct VERL_API EngineConfig {
  int64_t block_size = 16;                // tokens per KV block
  int64_t max_num_seqs = 256;             // sequences decoded together
  int64_t max_num_batched_tokens = 2048;  // tokens per forward step (prefill chunking)
  int64_t max_model_len = 0;              // prompt + response limit; 0 = max_position_embeddings
  // KV cache budget in bytes. 0 = enough for max_num_seqs full-length sequences, capped at 4 GiB
  // (the Python front derives it from gpu_memory_utilization on CUDA).
  int64_t kv_cache_bytes = 0;
  std::vector<int64_t> eos_token_ids;     // empty = the model config's eos_token_id(s)
  uint64_t seed = 0;                      // seeds requests that carry no seed, in arrival order
  // Attention reads the paged pool in place through verl::paged_attention where the device has a kernel for it
  // (CPU; CUDA in builds with VERL_WITH_CUDA) instead of gathering each row's blocks for SDPA.
  bool paged_attention_kernel = true;
  // vLLM's automatic prefix caching across requests (kv_cache.h): a request whose prompt starts with the tokens of
  // an earlier one -- a conversation's next turn, a shared system prompt -- reuses their cached KV blocks and
  // prefills only the rest. The cache is cleared by update_weights() and sleep() (its keys/values go stale).
  bool enable_prefix_caching = false;
  // CUDA: decode steps replay CUDA graphs captured per batch-size bucket (the first time a bucket is used)
  // instead of launching every op; true runs them eagerly. vLLM's enforce_eager. No effect on other devices, with
  // paged_attention_kernel off, or under tensor parallelism (the graphs would hold the collectives).
  bool enforce_eager = false;
  // The buckets (vLLM's cudagraph_capture_sizes): a decode batch pads up to the next; one above the largest runs
  // eagerly. Empty: 1, 2, 4, 8, then every multiple of 16 below max_num_seqs, and max_num_seqs.
  std::vector<int64_t> cudagraph_capture_sizes;
  // vLLM's async scheduling: a decode step is launched before the previous step's tokens are read back (its input
  // ids are those tokens, still on the device), so the host's work between two steps -- reading the tokens,
  // retiring finished samples, staging the next inputs, launching the graph -- overlaps the device's. A sample that
  // ends with a stop token is computed one step past its end and that row is dropped, so the outputs are the
  // synchronous loop's as far as a row's logits do not depend on the batch (see Reproducibility above). Unset: on for
  // devices other than the CPU (whose ops run synchronously: nothing to overlap) without tensor parallelism. A step
  // is not launched ahead after one that prefilled or forked, or when it would preempt; requests waiting for a slot
  // are admitted into a step launched ahead as into any other.
  std::optional<bool> async_scheduling;
};

// An engine's settings from verl's actor_rollout_ref.rollout keys: max_num_seqs, max_num_batched_tokens,
// max_model_len (null: prompt_length + response_length), seed, enable_prefix_caching, enforce_eager,
// cudagraph_capture_sizes (null or a list of integers >= 1). ConfigError naming a bad key. What the config does not
// hold (the tokenizer's eos ids) is the caller's to add.
VERL_API EngineConfig engine_config_from(const Config& config);

struct VERL_API CompletionOutput {
  int64_t index = 0;               // sample index within the request
  std::vector<int64_t> token_ids;  // generated tokens (a final EOS / stop id included)
  std::vector<float> logprobs;     // per token (empty when params.logprobs is false)
  std::string finish_reason;       // "stop", "length" or "abort" (Engine::abort)
};

// One token as it is sampled (streaming): sample `sample_index` of request `request_id` drew `token`.
struct VERL_API TokenEvent {
  int64_t request_id = 0;
  int64_t sample_index = 0;
  int64_t token = 0;
  float logprob = 0.0f;  // as CompletionOutput::logprobs (0 when the request asked for none)
};
// Called by step(), on the thread that steps, with the tokens that step sampled (in row order).
using TokenListener = std::function<void(const std::vector<TokenEvent>&)>;

struct VERL_API RequestOutput {
  int64_t request_id = 0;
  std::vector<int64_t> prompt_token_ids;
  std::vector<CompletionOutput> outputs;  // n, by index
};

struct VERL_API EngineStats {
  int64_t num_blocks = 0;        // usable blocks (scratch block excluded)
  int64_t num_free_blocks = 0;
  int64_t block_size = 0;
  int64_t num_preemptions = 0;
  int64_t num_prefill_tokens = 0;  // tokens computed by prefill chunks (prompts + recomputation)
  int64_t num_cached_tokens = 0;   // prompt tokens taken from the prefix cache instead (enable_prefix_caching)
  int64_t num_decode_tokens = 0;  // (async scheduling: with the rows computed one step past a stop)
  int64_t num_steps = 0;
  int64_t peak_used_blocks = 0;
  int64_t num_graph_captures = 0;  // CUDA graphs captured (EngineConfig::enforce_eager), recaptures included
  int64_t num_async_steps = 0;     // decode steps launched before the previous step's tokens were read back
};

namespace detail {
class ModelRunner;  // rollout/model_runner.h: the model, its KV cache, sampling, weight writes, sleep / wake
}  // namespace detail

class VERL_API Engine {
 public:
  // Binds to `model`'s parameters (no copy): the trainer's weight updates are seen at once.
  Engine(std::shared_ptr<model::CausalLM> model, EngineConfig config = {});
  ~Engine();

  // Validates and queues a request (safe to call from another thread while the engine steps);
  // returns its id. Throws InvalidArgument naming the bad parameter.
  int64_t add_request(const std::vector<int64_t>& prompt_token_ids, const SamplingParams& params);
  // One scheduler step (one or two forwards); returns the requests that finished in it.
  std::vector<RequestOutput> step();
  bool has_unfinished_requests() const;
  // Ends a queued or running request at once (waiting for a step in progress): its KV blocks are freed and its
  // output is returned -- the tokens generated so far, finish_reason "abort" for the samples still running (all n
  // samples, empty, before the prompt was computed). nullopt when no such request is in flight (unknown, already
  // finished, or finished and not yet returned by step()).
  std::optional<RequestOutput> abort(int64_t request_id);
  // Every later step() reports its sampled tokens to `listener` (empty: none).
  void set_token_listener(TokenListener listener);
  // Queues all prompts, steps until they finish, returns their outputs in input order. `params`
  // has one entry for all prompts or one per prompt. `on_finished(i, output)`, when given, is called on this thread
  // as prompt i finishes, while the others still decode (the trainer scores finished samples meanwhile). When the
  // call fails (a callback or a step throws), its prompts still in flight are aborted and the exception propagates.
  std::vector<RequestOutput> generate(const std::vector<std::vector<int64_t>>& prompts,
                                      const std::vector<SamplingParams>& params,
                                      const std::function<void(size_t, const RequestOutput&)>& on_finished = {});

  // Copies tensors into the bound model by HF name (dtype converted); unknown names throw. A part of the weights at a
  // time is fine (a sharded trainer hands them over a layer at a time).
  void update_weights(const std::map<std::string, torch::Tensor>& named_tensors);
  // The bound model's weight `name`, to be overwritten in place before an update_weights() that names it (its storage
  // back first if sleep released it): a hand-over that unpacks gathered weights straight into the engine, without a
  // staging copy. Undefined when the model has no such weight of that shape and dtype (a tied model's lm_head.weight).
  // No request may be in flight.
  torch::Tensor weight_for_update(const std::string& name, c10::IntArrayRef shape, torch::Dtype dtype);
  // The same with this rank's tensor-parallel shards (tensor_parallel_shard's, the model's own shapes) instead of the
  // whole tensors: the 3D-HybridEngine's hand-over, which never gathers a whole weight.
  void update_weight_shards(const std::map<std::string, torch::Tensor>& shards);
  // Forgets the prefix cache (EngineConfig::enable_prefix_caching): for weights changed in place, which the engine
  // cannot see (update_weights and sleep clear it themselves).
  void clear_prefix_cache();
  // Releases the KV cache (no request may be in flight); with `release_weights` the model's weights too (verl's
  // rollout sleep level 2): the engine then generates again only after update_weights has given it every weight.
  void sleep(bool release_weights = false);
  void wake_up();  // re-allocates the KV cache
  bool sleeping() const;
  // Weights released by sleep(true) and not yet all given back by update_weights.
  bool weights_released() const;

  EngineStats stats() const;
  const EngineConfig& config() const { return config_; }
  int64_t max_model_len() const { return max_model_len_; }
  std::shared_ptr<model::CausalLM> model() const { return model_; }
  // Tokens of queued and running work (prompt + max_tokens, times n): the load EnginePool balances.
  int64_t load() const;

 private:
  void validate(const std::vector<int64_t>& prompt, const SamplingParams& params) const;
  void admit_pending();
  // Checks the names, recomputes what is in flight, then has the runner write the weights.
  void write_weights(const std::map<std::string, torch::Tensor>& named_tensors, bool shards);
  // Appends a sampled token; true when the sequence finished.
  bool append(Sequence* seq, int64_t token, float logprob);

  // Async scheduling (EngineConfig::async_scheduling): a launched step whose tokens are not read back yet.
  struct InFlightStep;
  // Runs `work`'s forwards and samples its rows, queueing the tokens' copy to the host; null when no row completes
  // (prefill chunks only). `ahead_ids` (rows,): the decode ids when they are the previous step's sampled tokens,
  // still in flight -- the step is launched ahead, and the scheduler hears of its tokens once those are read back.
  std::unique_ptr<InFlightStep> launch(ScheduleOutput work, const torch::Tensor& ahead_ids);
  // Whether the token in flight for `seq` is its last by length (max_tokens, max_model_len).
  bool last_by_length(const Sequence& seq) const;
  // Whether the step after `f` can be launched before f's tokens are read back: f decoded every running sequence
  // and nothing else, some row goes on past f's token, and the blocks for the next tokens are free (no
  // preemption).
  bool can_launch_ahead(const InFlightStep& f) const;
  // The next step: decodes of f's rows, less those that end by length with f's token (which leave the scheduler
  // now), and whatever waiting requests the scheduler admits.
  std::unique_ptr<InFlightStep> launch_ahead(const InFlightStep& f);
  // Reads f's tokens back (the step's one host synchronisation) and appends them; `next`, the step launched ahead
  // of it, loses the rows of the samples that finished. Returns the token events for the listener.
  std::vector<TokenEvent> retire(InFlightStep& f, InFlightStep* next, std::vector<RequestOutput>& done);
  // New weights between two steps: the step launched ahead read the old ones, so its tokens are dropped, its decode
  // positions computed again by the next step and the sequences it prefilled restarted, as the synchronous loop
  // would have run them all after the update (update_weights).
  void recompute_in_flight();
  // The sequences a step launched ahead prefilled (prompt chunks; the prompts it completed and their forks, each on
  // its own) computed again from their first token: its keys, values and sampled tokens are not to be used.
  void restart_prompts(const InFlightStep& f);
  // Waits for the last step left to run out unread (dropped_), before its memory is released or overwritten.
  void wait_for_dropped();

  std::shared_ptr<model::CausalLM> model_;
  EngineConfig config_;
  int64_t max_model_len_ = 0;
  std::vector<int64_t> eos_;
  std::unique_ptr<detail::ModelRunner> runner_;
  std::unique_ptr<Scheduler> scheduler_;
  bool async_scheduling_ = false;
  std::unique_ptr<InFlightStep> in_flight_;  // between two step() calls: the step launched ahead, if any
  std::unique_ptr<InFlightStep> dropped_;    // the last step launched ahead that nothing will read
  std::map<int64_t, std::unique_ptr<Request>> requests_;
  std::vector<std::unique_ptr<Request>> pending_;  // added, not yet seen by the scheduler
  std::vector<RequestOutput> finished_early_;      // max_tokens = 0 requests
  mutable std::mutex mutex_;                       // guards pending_, next_id_, load_
  mutable std::mutex step_mutex_;                  // one step / generate at a time
  mutable std::atomic<int> between_steps_waiting_{0};      // callers of lock_between_steps() not yet in
  // step_mutex_ for an operation between two steps (abort, update_weights, sleep, ...): step() lets it in first.
  std::unique_lock<std::mutex> lock_between_steps() const;
  int64_t next_id_ = 0;
  uint64_t next_seed_ = 0;
  int64_t load_ = 0;
  EngineStats stats_;
  TokenListener token_listener_;  // guarded by step_mutex_
};

// Data-parallel replicas: each request goes to the engine with the least outstanding load
// (ties: the lowest index), every engine runs in its own thread, results come back in input order.
class VERL_API EnginePool {
 public:
  explicit EnginePool(std::vector<std::shared_ptr<Engine>> engines);
  std::vector<RequestOutput> generate(const std::vector<std::vector<int64_t>>& prompts,
                                      const std::vector<SamplingParams>& params);
  // The replica each request of the last generate() went to.
  const std::vector<int64_t>& last_assignment() const { return assignment_; }
  size_t size() const { return engines_.size(); }

 private:
  std::vector<std::shared_ptr<Engine>> engines_;
  std::vector<int64_t> assignment_;
};

}  // namespace verl::rollout
