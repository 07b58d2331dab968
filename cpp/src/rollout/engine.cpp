// The rollout engine's core: requests, the step loop (schedule, run the model runner, retire), abort, generate; the
// model, its cache, sampling and the weights are the model runner's (rollout/model_runner.h).
#include "verl/rollout/engine.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <sstream>
#include <thread>

#include "rollout/model_runner.h"
#include "verl/core/error.h"

namespace verl::rollout {

void SamplingParams::validate() const {
  VERL_CHECK(n >= 1, "SamplingParams: n must be >= 1, got ", n);
  VERL_CHECK(std::isfinite(temperature) && temperature >= 0.0, "SamplingParams: temperature must be >= 0, got ",
             temperature);
  VERL_CHECK(top_p > 0.0 && top_p <= 1.0, "SamplingParams: top_p must be in (0, 1], got ", top_p);
  VERL_CHECK(top_k >= -1, "SamplingParams: top_k must be -1 (off), 0 (off) or >= 1, got ", top_k);
  VERL_CHECK(min_p >= 0.0 && min_p <= 1.0, "SamplingParams: min_p must be in [0, 1], got ", min_p);
  VERL_CHECK(max_tokens >= 0, "SamplingParams: max_tokens must be >= 0, got ", max_tokens);
}

namespace {

// The window every decoder layer attends within (Mistral's and Phi-3's sliding_window on every layer), or 0 when
// some layer sees the whole context: only then can a sequence's early blocks be given back (SchedulerConfig).
int64_t window_of_every_layer(const model::ModelConfig& mc) {
  int64_t window = 0;
  for (int64_t layer = 0; layer < mc.num_hidden_layers; ++layer) {
    const int64_t w = mc.sliding_window(layer);
    if (w <= 0) return 0;
    window = layer == 0 ? w : std::min(window, w);
  }
  return window;
}

uint64_t mix_seed(uint64_t a, uint64_t b) {
  uint64_t z = a * 0x9e3779b97f4a7c15ULL + b + 0x632be59bd9b4e019ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The token a sequence holds while the one sampled for that position is still on the device (async scheduling);
// the step that reads it takes its ids from the device.
constexpr int64_t kTokenInFlight = -1;

}  // namespace

// A launched step, its tokens not read back yet (EngineConfig::async_scheduling): the schedule's side here, the
// device's (the sampled rows on their way to the host) the model runner's.
struct Engine::InFlightStep {
  ScheduleOutput work;
  std::vector<Sequence*> rows;  // the sequence of each sampled row, in row order (null: stopped or aborted since)
  size_t num_decode_rows = 0;   // the first rows are decodes (one token each); then prompts completed, their forks
  bool pure_decode = false;     // one decode token per sequence, no prefill, no fork: a step may follow it ahead
  detail::SampledRows sampled;

  // Whether anything of it is still to be read or undone: a live row, or a prompt chunk it prefilled (which
  // update_weights must start again). Otherwise it runs out on the device unread.
  bool needed() const {
    return !work.prefills.empty() ||
           std::any_of(rows.begin(), rows.end(), [](const Sequence* s) { return s != nullptr; });
  }
};

Engine::Engine(std::shared_ptr<model::CausalLM> model, EngineConfig config)
    : model_(std::move(model)), config_(std::move(config)) {
  VERL_CHECK(model_ != nullptr, "Engine: model is null");
  VERL_CHECK(model_->head_kind() == model::HeadKind::kLanguageModel, "Engine: the model must have an LM head");
  const auto& mc = model_->config();
  VERL_CHECK(config_.block_size >= 1, "EngineConfig: block_size must be >= 1, got ", config_.block_size);
  VERL_CHECK(config_.max_num_seqs >= 1, "EngineConfig: max_num_seqs must be >= 1, got ", config_.max_num_seqs);
  VERL_CHECK(config_.max_num_batched_tokens >= 1, "EngineConfig: max_num_batched_tokens must be >= 1, got ",
             config_.max_num_batched_tokens);
  VERL_CHECK(config_.max_model_len >= 0, "EngineConfig: max_model_len must be >= 0, got ", config_.max_model_len);
  VERL_CHECK(config_.kv_cache_bytes >= 0, "EngineConfig: kv_cache_bytes must be >= 0, got ", config_.kv_cache_bytes);
  max_model_len_ = config_.max_model_len > 0 ? config_.max_model_len : mc.max_position_embeddings;
  eos_ = config_.eos_token_ids.empty() ? mc.eos_token_ids : config_.eos_token_ids;
  runner_ = std::make_unique<detail::ModelRunner>(model_, config_, max_model_len_);
  const int64_t num_blocks = runner_->num_blocks();
  scheduler_ = std::make_unique<Scheduler>(SchedulerConfig{config_.max_num_seqs, config_.max_num_batched_tokens,
                                                           config_.enable_prefix_caching, window_of_every_layer(mc)},
                                           num_blocks, config_.block_size);
  async_scheduling_ = config_.async_scheduling.value_or(model_->device().type() != torch::kCPU &&
                                                        model_->tensor_parallel_size() == 1);
  next_seed_ = config_.seed;
  stats_.block_size = config_.block_size;
}

Engine::~Engine() {
  try {
    wait_for_dropped();
  } catch (...) {  // a device error, reported by whatever used the device last
  }
}

void Engine::wait_for_dropped() {
  if (dropped_) dropped_->sampled.wait();
  dropped_.reset();
}

std::unique_lock<std::mutex> Engine::lock_between_steps() const {
  between_steps_waiting_.fetch_add(1, std::memory_order_acq_rel);
  std::unique_lock<std::mutex> lock(step_mutex_);
  between_steps_waiting_.fetch_sub(1, std::memory_order_acq_rel);
  return lock;
}

void Engine::validate(const std::vector<int64_t>& prompt, const SamplingParams& params) const {
  VERL_CHECK(!runner_->sleeping(), "Engine: the engine is asleep (sleep()); call wake_up() first");
  const std::set<std::string>& released = runner_->released_weights();
  VERL_CHECK(released.empty(), "Engine: ", released.size(), " of the model's weights (", *released.begin(),
             ", ...) were released by sleep(release_weights=true); update_weights first");
  params.validate();
  const int64_t vocab = model_->config().vocab_size;
  const int64_t len = static_cast<int64_t>(prompt.size());
  VERL_CHECK(len >= 1, "prompt_token_ids: a prompt must have at least one token");
  for (int64_t t : prompt)
    VERL_CHECK(t >= 0 && t < vocab, "prompt_token_ids: token id ", t, " is outside the vocabulary [0, ", vocab, ")");
  for (int64_t t : params.stop_token_ids)
    VERL_CHECK(t >= 0 && t < vocab, "SamplingParams: stop_token_ids holds ", t, ", outside the vocabulary [0, ", vocab,
               ")");
  VERL_CHECK(len < max_model_len_ || (len == max_model_len_ && params.max_tokens == 0), "prompt_token_ids: prompt length ",
             len, " leaves no room to generate within max_model_len ", max_model_len_);
  // One sample must be able to reach its full length alone, or preemption could not make progress.
  const int64_t full = std::min(len + params.max_tokens, max_model_len_);
  const int64_t blocks = (full + config_.block_size - 1) / config_.block_size;
  VERL_CHECK(blocks <= scheduler_->blocks().num_usable_blocks(), "prompt_token_ids: prompt length ", len,
             " + max_tokens ", params.max_tokens, " needs ", blocks, " KV blocks, the cache holds ",
             scheduler_->blocks().num_usable_blocks(), " (raise kv_cache_bytes)");
  VERL_CHECK(params.n <= config_.max_num_seqs, "SamplingParams: n = ", params.n, " exceeds max_num_seqs ",
             config_.max_num_seqs);
}

int64_t Engine::add_request(const std::vector<int64_t>& prompt, const SamplingParams& params) {
  validate(prompt, params);
  auto req = std::make_unique<Request>();
  req->prompt = prompt;
  req->params = params;
  std::lock_guard<std::mutex> lock(mutex_);
  req->id = next_id_++;
  req->seed = params.seed ? static_cast<uint64_t>(*params.seed) : mix_seed(config_.seed, next_seed_++);
  load_ += params.n * (static_cast<int64_t>(prompt.size()) + params.max_tokens);
  const int64_t id = req->id;
  pending_.push_back(std::move(req));
  return id;
}

int64_t Engine::load() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return load_;
}

bool Engine::has_unfinished_requests() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !pending_.empty() || !requests_.empty() || !finished_early_.empty();
}

void Engine::admit_pending() {
  std::vector<std::unique_ptr<Request>> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending.swap(pending_);
  }
  for (auto& req : pending) {
    const SamplingParams& p = req->params;
    if (p.max_tokens == 0) {  // nothing to generate: answer without touching the model
      RequestOutput out{req->id, req->prompt, {}};
      for (int64_t i = 0; i < p.n; ++i) out.outputs.push_back({i, {}, {}, "length"});
      std::lock_guard<std::mutex> lock(mutex_);
      load_ -= p.n * static_cast<int64_t>(req->prompt.size());
      finished_early_.push_back(std::move(out));
      continue;
    }
    auto root = std::make_unique<Sequence>();
    root->request = req.get();
    root->seed = req->seed;
    root->tokens = req->prompt;
    root->prompt_len = static_cast<int64_t>(req->prompt.size());
    root->fork_n = p.n;
    req->num_unfinished = p.n;
    Sequence* r = root.get();
    req->samples.push_back(std::move(root));
    const int64_t id = req->id;
    requests_.emplace(id, std::move(req));
    scheduler_->add(r);
  }
}

bool Engine::append(Sequence* seq, int64_t token, float logprob) {
  const SamplingParams& p = seq->request->params;
  seq->tokens.push_back(token);
  if (p.logprobs) seq->logprobs.push_back(logprob);
  const bool eos = !p.ignore_eos && std::find(eos_.begin(), eos_.end(), token) != eos_.end();
  const bool stop = std::find(p.stop_token_ids.begin(), p.stop_token_ids.end(), token) != p.stop_token_ids.end();
  if (eos || stop)
    seq->finish = FinishReason::kStop;
  else if (seq->num_generated() >= p.max_tokens || static_cast<int64_t>(seq->tokens.size()) >= max_model_len_)
    seq->finish = FinishReason::kLength;
  return seq->finish != FinishReason::kNone;
}

std::vector<RequestOutput> Engine::step() {
  // Operations waiting to run between two steps go first (std::mutex is not fair: a loop that re-locks at once,
  // like AsyncEngine's, could starve them).
  while (between_steps_waiting_.load(std::memory_order_acquire) > 0) std::this_thread::yield();
  std::lock_guard<std::mutex> step_lock(step_mutex_);
  VERL_CHECK(!runner_->sleeping(), "Engine.step: the engine is asleep; call wake_up() first");
  VERL_CHECK(!runner_->weights_released(), "Engine.step: the model's weights were released by sleep(release_weights="
             "true); update_weights first");
  torch::NoGradGuard no_grad;
  admit_pending();
  std::vector<RequestOutput> done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done.swap(finished_early_);
  }
  if (!in_flight_) {
    if (!scheduler_->has_work()) return done;
    ScheduleOutput work = scheduler_->schedule();
    VERL_CHECK_AS(DataError, !work.empty(), "Engine.step: no request fits the KV cache (", scheduler_->num_waiting(),
                  " waiting); raise kv_cache_bytes");
    in_flight_ = launch(std::move(work), torch::Tensor());
    if (!in_flight_) return done;  // prefill chunks of prompts not yet complete: nothing was sampled
  }
  std::unique_ptr<InFlightStep> next = can_launch_ahead(*in_flight_) ? launch_ahead(*in_flight_) : nullptr;
  const std::unique_ptr<InFlightStep> current = std::move(in_flight_);
  std::vector<TokenEvent> events;
  try {
    events = retire(*current, next.get(), done);
  } catch (...) {  // a device error surfacing at the read-back: the step ahead's tokens are lost with it
    if (next) {
      for (Sequence* seq : next->rows)
        if (seq != nullptr && seq->tokens.back() == kTokenInFlight) seq->tokens.pop_back();
      restart_prompts(*next);
    }
    throw;
  }
  if (next && next->needed())
    in_flight_ = std::move(next);
  else if (next)
    dropped_ = std::move(next);
  stats_.num_preemptions = scheduler_->num_preemptions();
  if (token_listener_) token_listener_(events);
  return done;
}

std::unique_ptr<Engine::InFlightStep> Engine::launch(ScheduleOutput work, const torch::Tensor& ahead_ids) {
  const bool ahead = ahead_ids.defined();
  runner_->copy_blocks(work.copies);
  ++stats_.num_steps;
  if (ahead) ++stats_.num_async_steps;
  stats_.peak_used_blocks = std::max(stats_.peak_used_blocks, scheduler_->blocks().num_usable_blocks() -
                                                                  scheduler_->blocks().num_free_blocks());

  // Rows to sample: (sequence, row of `logits`). A completed root fans out to its n samples.
  std::vector<torch::Tensor> parts;
  std::vector<std::pair<Sequence*, int64_t>> rows;
  int64_t offset = 0;
  std::vector<Sequence*> completed_roots;
  if (!work.decodes.empty()) {
    parts.push_back(runner_->run(work.decodes, ahead_ids));
    for (size_t i = 0; i < work.decodes.size(); ++i) {
      rows.emplace_back(work.decodes[i].seq, offset + i);
      // A root whose last prompt token came as a one-token chunk completes here.
      if (work.decodes[i].seq->fork_n > 1) completed_roots.push_back(work.decodes[i].seq);
    }
    offset += static_cast<int64_t>(work.decodes.size());
    stats_.num_decode_tokens += static_cast<int64_t>(work.decodes.size());
  }
  if (!work.prefills.empty()) {
    parts.push_back(runner_->run(work.prefills));
    for (size_t i = 0; i < work.prefills.size(); ++i) {
      const Chunk& c = work.prefills[i];
      stats_.num_prefill_tokens += c.length;
      if (c.start + c.length != static_cast<int64_t>(c.seq->tokens.size())) continue;  // more chunks to come
      rows.emplace_back(c.seq, offset + i);
      if (c.seq->fork_n > 1) completed_roots.push_back(c.seq);
    }
  }
  // A step launched ahead has its decode chunks marked computed once the previous step's tokens replace their
  // placeholders (the prefix cache keys a full block by its tokens); its prompt chunks' tokens are known (and a root
  // completed here forks below with its computed count).
  if (!ahead) {
    scheduler_->computed(work);
  } else if (!work.prefills.empty()) {
    ScheduleOutput prompts;
    prompts.prefills = std::move(work.prefills);
    scheduler_->computed(prompts);
    work.prefills = std::move(prompts.prefills);
  }
  for (Sequence* root : completed_roots) {
    Request* req = root->request;
    std::vector<Sequence*> children;
    int64_t row = -1;
    for (auto& [s, r] : rows)
      if (s == root) row = r;
    for (int64_t i = 1; i < root->fork_n; ++i) {
      auto child = std::make_unique<Sequence>(*root);
      child->sample_index = i;
      child->seed = req->seed + static_cast<uint64_t>(i);
      child->fork_n = 1;
      child->block_table.clear();
      children.push_back(child.get());
      req->samples.push_back(std::move(child));
      rows.emplace_back(children.back(), row);
    }
    scheduler_->fork(root, children);
  }
  if (rows.empty()) return nullptr;

  const torch::Tensor logits = parts.size() == 1 ? parts[0] : torch::cat(parts, 0);
  std::vector<int64_t> index(rows.size());
  SamplerRows srows;
  auto f = std::make_unique<InFlightStep>();
  for (size_t i = 0; i < rows.size(); ++i) {
    auto [seq, r] = rows[i];
    f->rows.push_back(seq);
    index[i] = r;
    const SamplingParams& p = seq->request->params;
    srows.push(p.temperature, p.top_k, p.top_p, p.min_p,
               stream_uniform(seq->seed, static_cast<uint64_t>(seq->num_generated())));
  }
  f->sampled = runner_->sample(logits, index, srows);
  f->num_decode_rows = work.decodes.size();
  f->pure_decode = work.prefills.empty() && completed_roots.empty();
  f->work = std::move(work);
  return f;
}

bool Engine::last_by_length(const Sequence& seq) const {
  return seq.num_generated() + 1 >= seq.request->params.max_tokens ||
         static_cast<int64_t>(seq.tokens.size()) + 1 >= max_model_len_;
}

bool Engine::can_launch_ahead(const InFlightStep& f) const {
  if (!async_scheduling_ || !f.pure_decode) return false;
  // The running sequences are f's live rows, in the scheduler's order, so the next step's decodes are those, less
  // the ones that end by length. Waiting requests may be admitted into it: they see the slots and blocks free before
  // f's samples are retired (admission lags a step, as in vLLM).
  const std::vector<Sequence*>& running = scheduler_->running();
  if (running.size() > f.rows.size()) return false;
  size_t live = 0;
  for (const Sequence* seq : f.rows) {
    if (seq == nullptr) continue;  // stopped or aborted after f was launched
    if (live == running.size() || running[live] != seq) return false;
    ++live;
  }
  if (live != running.size()) return false;
  int64_t blocks = 0, rows = 0;
  for (const Sequence* seq : running) {
    if (last_by_length(*seq)) continue;
    blocks += scheduler_->blocks().blocks_needed(seq->block_table, seq->num_computed, 1);
    ++rows;
  }
  return rows > 0 && blocks <= scheduler_->blocks().num_free_blocks();
}

std::unique_ptr<Engine::InFlightStep> Engine::launch_ahead(const InFlightStep& f) {
  std::vector<Sequence*> kept;
  std::vector<int64_t> kept_rows;
  for (size_t i = 0; i < f.rows.size(); ++i) {
    Sequence* seq = f.rows[i];
    if (seq == nullptr) continue;
    if (last_by_length(*seq)) {
      // Nothing is computed past its end: it leaves the scheduler (its blocks free) now, its output when retired.
      scheduler_->finish(seq);
      continue;
    }
    seq->tokens.push_back(kTokenInFlight);
    kept.push_back(seq);
    kept_rows.push_back(static_cast<int64_t>(i));
  }
  try {
    ScheduleOutput work = scheduler_->schedule();
    runner_->copy_blocks(work.copies);  // the block tables point at the copies now, whatever happens next
    work.copies.clear();
    // A step() on another stream (another thread's) than f's: its inputs are f's tokens, written by f's stream.
    const torch::Tensor& previous = f.sampled.tokens;
    f.sampled.order_next_step();
    bool same_rows = work.decodes.size() == kept.size();
    for (size_t i = 0; same_rows && i < kept.size(); ++i) same_rows = work.decodes[i].seq == kept[i];
    VERL_CHECK_AS(DataError, same_rows, "Engine.step: internal error: the step scheduled ahead does not decode the "
                  "previous step's ", kept.size(), " continuing rows");
    const torch::Tensor ids =
        kept.size() == f.rows.size() ? previous : previous.index_select(0, runner_->to_device(kept_rows));
    return launch(std::move(work), ids);
  } catch (...) {
    for (Sequence* seq : kept) seq->tokens.pop_back();
    throw;
  }
}

std::vector<TokenEvent> Engine::retire(InFlightStep& f, InFlightStep* next, std::vector<RequestOutput>& done) {
  f.sampled.wait();
  const int32_t* tok = f.sampled.token_ids();
  const float* lp = f.sampled.logprobs();
  std::vector<TokenEvent> events;
  if (token_listener_) {
    for (size_t i = 0; i < f.rows.size(); ++i) {
      const Sequence* seq = f.rows[i];
      if (seq == nullptr) continue;
      events.push_back({seq->request->id, seq->sample_index, tok[i], seq->request->params.logprobs ? lp[i] : 0.0f});
    }
  }
  size_t ahead = 0;  // next's first rows are f's in order, less those that ended by length (launch_ahead)
  for (size_t i = 0; i < f.rows.size(); ++i) {
    Sequence* seq = f.rows[i];
    if (seq == nullptr) continue;
    const bool continued = next != nullptr && ahead < next->rows.size() && next->rows[ahead] == seq;
    if (continued) seq->tokens.pop_back();  // the placeholder the step ahead was scheduled with
    const bool finished = append(seq, tok[i], lp[i]);
    if (continued && finished) next->rows[ahead] = nullptr;  // that row computed past the end: dropped
    ahead += continued ? 1 : 0;
    if (!finished) continue;
    scheduler_->finish(seq);  // (again, for those launch_ahead let go: a no-op)
    Request* req = seq->request;
    if (--req->num_unfinished > 0) continue;
    RequestOutput out{req->id, req->prompt, {}};
    for (auto& s : req->samples)
      out.outputs.push_back({s->sample_index,
                             std::vector<int64_t>(s->tokens.begin() + s->prompt_len, s->tokens.end()),
                             s->logprobs, finish_reason_name(s->finish)});
    {
      std::lock_guard<std::mutex> lock(mutex_);
      load_ -= req->params.n * (static_cast<int64_t>(req->prompt.size()) + req->params.max_tokens);
    }
    done.push_back(std::move(out));
    requests_.erase(req->id);
  }
  if (next) {  // its tokens are all known now: the live rows' decode chunks are computed (its first rows)
    ScheduleOutput live;
    for (size_t i = 0; i < next->work.decodes.size(); ++i)
      if (next->rows[i] != nullptr) live.decodes.push_back(std::move(next->work.decodes[i]));
    scheduler_->computed(live);
    next->work.decodes.clear();
  }
  return events;
}

std::optional<RequestOutput> Engine::abort(int64_t request_id) {
  std::unique_lock<std::mutex> step_lock = lock_between_steps();
  auto unload = [&](const Request& req) {
    std::lock_guard<std::mutex> lock(mutex_);
    load_ -= req.params.n * (static_cast<int64_t>(req.prompt.size()) + req.params.max_tokens);
  };
  auto empty_output = [](const Request& req) {
    RequestOutput out{req.id, req.prompt, {}};
    for (int64_t i = 0; i < req.params.n; ++i) out.outputs.push_back({i, {}, {}, finish_reason_name(FinishReason::kAbort)});
    return out;
  };
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if ((*it)->id != request_id) continue;
      RequestOutput out = empty_output(**it);
      load_ -= (*it)->params.n * (static_cast<int64_t>((*it)->prompt.size()) + (*it)->params.max_tokens);
      pending_.erase(it);
      return out;
    }
  }
  auto it = requests_.find(request_id);
  if (it == requests_.end()) return std::nullopt;
  Request& req = *it->second;
  for (auto& sample : req.samples) {
    if (sample->finish != FinishReason::kNone) continue;
    scheduler_->finish(sample.get());  // frees its blocks, wherever it is (running, waiting)
    sample->finish = FinishReason::kAbort;
  }
  if (in_flight_) {  // the step in flight computes its samples' rows to no one
    for (Sequence*& seq : in_flight_->rows)
      if (seq != nullptr && seq->request == &req) seq = nullptr;
    auto& prompts = in_flight_->work.prefills;
    const auto of_req = [&](const Chunk& c) { return c.seq->request == &req; };
    prompts.erase(std::remove_if(prompts.begin(), prompts.end(), of_req), prompts.end());
    if (!in_flight_->needed()) dropped_ = std::move(in_flight_);
  }
  RequestOutput out = empty_output(req);
  if (req.samples.size() == static_cast<size_t>(req.params.n)) {  // forked: every sample has its own tokens
    for (auto& sample : req.samples) {
      out.outputs[static_cast<size_t>(sample->sample_index)] = {
          sample->sample_index, std::vector<int64_t>(sample->tokens.begin() + sample->prompt_len, sample->tokens.end()),
          sample->logprobs, finish_reason_name(sample->finish)};
    }
  }
  unload(req);
  requests_.erase(it);
  return out;
}

void Engine::set_token_listener(TokenListener listener) {
  std::unique_lock<std::mutex> step_lock = lock_between_steps();
  token_listener_ = std::move(listener);
}

std::vector<RequestOutput> Engine::generate(const std::vector<std::vector<int64_t>>& prompts,
                                            const std::vector<SamplingParams>& params,
                                            const std::function<void(size_t, const RequestOutput&)>& on_finished) {
  VERL_CHECK(params.size() == 1 || params.size() == prompts.size(), "Engine.generate: sampling_params has ",
             params.size(), " entries for ", prompts.size(), " prompts (give 1 or one per prompt)");
  for (size_t i = 0; i < prompts.size(); ++i) validate(prompts[i], params[params.size() == 1 ? 0 : i]);
  std::map<int64_t, size_t> slot;
  for (size_t i = 0; i < prompts.size(); ++i) slot[add_request(prompts[i], params[params.size() == 1 ? 0 : i])] = i;
  std::vector<RequestOutput> out(prompts.size());
  size_t remaining = prompts.size();
  try {
    while (remaining > 0) {
      bool idle;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        idle = !scheduler_->has_work() && !in_flight_ && pending_.empty() && finished_early_.empty();
      }
      // Never spin: with nothing scheduled, waiting or queued, no step can finish a request.
      VERL_CHECK_AS(DataError, !idle, "Engine.generate: ", remaining, " requests are neither queued nor running");
      for (RequestOutput& r : step()) {
        auto it = slot.find(r.request_id);
        if (it == slot.end()) continue;  // someone else's request: dropped, as vLLM's LLM.generate does
        const size_t index = it->second;
        out[index] = std::move(r);
        slot.erase(it);
        --remaining;
        if (on_finished) on_finished(index, out[index]);
      }
    }
  } catch (...) {
    for (const auto& [id, unused] : slot) abort(id);  // a failed call leaves none of its requests in the engine
    throw;
  }
  return out;
}

void Engine::update_weights(const std::map<std::string, torch::Tensor>& named_tensors) {
  write_weights(named_tensors, /*shards=*/false);
}

torch::Tensor Engine::weight_for_update(const std::string& name, c10::IntArrayRef shape, torch::Dtype dtype) {
  std::unique_lock<std::mutex> step_lock = lock_between_steps();
  VERL_CHECK(!scheduler_->has_work() && !in_flight_ && pending_.empty(),
             "Engine.weight_for_update: requests are still in flight");
  wait_for_dropped();  // the weight is written in place
  return runner_->weight_for_update(name, shape, dtype);
}

void Engine::update_weight_shards(const std::map<std::string, torch::Tensor>& shards) {
  write_weights(shards, /*shards=*/true);
}

void Engine::write_weights(const std::map<std::string, torch::Tensor>& named_tensors, bool shards) {
  std::unique_lock<std::mutex> step_lock = lock_between_steps();
  runner_->check_weight_names(named_tensors);  // an unknown name changes nothing
  recompute_in_flight();
  runner_->write_weights(named_tensors, shards);
  scheduler_->blocks().clear_prefix_cache();  // keys/values of the old weights
}

void Engine::recompute_in_flight() {
  if (!in_flight_) return;
  const int64_t block_size = config_.block_size;
  const std::vector<Sequence*>& rows = in_flight_->rows;
  for (size_t i = 0; i < in_flight_->num_decode_rows; ++i) {
    Sequence* seq = rows[i];
    if (seq == nullptr) continue;
    --seq->num_computed;  // the next step computes that position again; its block stays allocated
    const size_t full_blocks = static_cast<size_t>(seq->num_computed / block_size);
    if (seq->block_keys.size() > full_blocks) seq->block_keys.resize(full_blocks);
  }
  // Sequences it prefilled (admitted into it) start again, all of their keys and values from the new weights, as if
  // admitted after the update.
  restart_prompts(*in_flight_);
  dropped_ = std::move(in_flight_);
}

void Engine::restart_prompts(const InFlightStep& f) {
  std::vector<Sequence*> restart;
  for (const Chunk& c : f.work.prefills) restart.push_back(c.seq);
  for (size_t i = f.num_decode_rows; i < f.rows.size(); ++i)  // prompts completed there, and their forks
    if (f.rows[i] != nullptr && std::find(restart.begin(), restart.end(), f.rows[i]) == restart.end())
      restart.push_back(f.rows[i]);
  for (Sequence* seq : restart)
    if (seq->finish == FinishReason::kNone) scheduler_->restart(seq);
}

void Engine::clear_prefix_cache() {
  std::unique_lock<std::mutex> step_lock = lock_between_steps();
  scheduler_->blocks().clear_prefix_cache();
}

void Engine::sleep(bool release_weights) {
  std::unique_lock<std::mutex> step_lock = lock_between_steps();
  VERL_CHECK(!scheduler_->has_work() && !in_flight_ && pending_.empty(), "Engine.sleep: requests are still in flight");
  wait_for_dropped();  // its memory goes back
  scheduler_->blocks().clear_prefix_cache();
  runner_->sleep(release_weights);
}

bool Engine::weights_released() const {
  std::unique_lock<std::mutex> step_lock = lock_between_steps();
  return runner_->weights_released();
}

void Engine::wake_up() {
  std::unique_lock<std::mutex> step_lock = lock_between_steps();
  runner_->wake_up();
}

bool Engine::sleeping() const { return runner_->sleeping(); }

EngineStats Engine::stats() const {
  // Between steps: an AsyncEngine's thread may be stepping (the counters and block lists change there).
  std::unique_lock<std::mutex> step_lock = lock_between_steps();
  EngineStats s = stats_;
  s.num_blocks = scheduler_->blocks().num_usable_blocks();
  s.num_free_blocks = scheduler_->blocks().num_free_blocks();
  s.num_preemptions = scheduler_->num_preemptions();
  s.num_cached_tokens = scheduler_->num_cached_tokens();
  s.num_graph_captures = runner_->num_graph_captures();
  return s;
}

// ---- EnginePool ------------------------------------------------------------------------------

EnginePool::EnginePool(std::vector<std::shared_ptr<Engine>> engines) : engines_(std::move(engines)) {
  VERL_CHECK(!engines_.empty(), "EnginePool: at least one engine is needed");
  for (auto& e : engines_) VERL_CHECK(e != nullptr, "EnginePool: an engine is null");
}

std::vector<RequestOutput> EnginePool::generate(const std::vector<std::vector<int64_t>>& prompts,
                                                const std::vector<SamplingParams>& params) {
  VERL_CHECK(params.size() == 1 || params.size() == prompts.size(), "EnginePool.generate: sampling_params has ",
             params.size(), " entries for ", prompts.size(), " prompts (give 1 or one per prompt)");
  const size_t n = engines_.size();
  std::vector<int64_t> load(n);
  for (size_t e = 0; e < n; ++e) load[e] = engines_[e]->load();
  assignment_.assign(prompts.size(), 0);
  std::vector<std::vector<std::vector<int64_t>>> sub_prompts(n);
  std::vector<std::vector<SamplingParams>> sub_params(n);
  std::vector<std::vector<size_t>> origin(n);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const SamplingParams& p = params[params.size() == 1 ? 0 : i];
    const size_t e = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    assignment_[i] = static_cast<int64_t>(e);
    load[e] += p.n * (static_cast<int64_t>(prompts[i].size()) + p.max_tokens);
    sub_prompts[e].push_back(prompts[i]);
    sub_params[e].push_back(p);
    origin[e].push_back(i);
  }
  std::vector<std::vector<RequestOutput>> results(n);
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  for (size_t e = 0; e < n; ++e) {
    if (sub_prompts[e].empty()) continue;
    threads.emplace_back([&, e] {
      try {
        results[e] = engines_[e]->generate(sub_prompts[e], sub_params[e]);
      } catch (...) {
        errors[e] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& err : errors)
    if (err) std::rethrow_exception(err);
  std::vector<RequestOutput> out(prompts.size());
  for (size_t e = 0; e < n; ++e)
    for (size_t j = 0; j < results[e].size(); ++j) out[origin[e][j]] = std::move(results[e][j]);
  return out;
}

}  // namespace verl::rollout
