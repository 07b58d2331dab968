// Continuous batching: decode everything running, fill the token budget with prefill chunks,
// preempt (by recomputation) the newest sequences when the KV cache runs out of blocks.
#include "verl/rollout/scheduler.h"

#include <algorithm>

#include "verl/core/error.h"

namespace verl::rollout {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kAbort: return "abort";
    default: return "";
  }
}

Scheduler::Scheduler(SchedulerConfig config, int64_t num_blocks, int64_t block_size)
    : config_(config), blocks_(num_blocks, block_size, config.enable_prefix_caching) {
  VERL_CHECK(config.max_num_seqs >= 1, "max_num_seqs must be >= 1, got ", config.max_num_seqs);
  VERL_CHECK(config.sliding_window >= 0, "sliding_window must be >= 0, got ", config.sliding_window);
  VERL_CHECK(config.max_num_batched_tokens >= 1, "max_num_batched_tokens must be >= 1, got ",
             config.max_num_batched_tokens);
}

void Scheduler::add(Sequence* seq) { waiting_.push_back(seq); }

int64_t Scheduler::running_slots() const {
  int64_t n = 0;
  for (const Sequence* s : running_) n += s->fork_n;
  return n;
}

void Scheduler::restart(Sequence* seq) {
  blocks_.release(seq->block_table);
  seq->num_computed = 0;
  seq->block_keys.clear();  // re-admission looks its prefix up again
  auto it = std::find(running_.begin(), running_.end(), seq);
  if (it != running_.end()) running_.erase(it);
  waiting_.push_front(seq);
}

void Scheduler::preempt(Sequence* seq) {
  restart(seq);
  ++num_preemptions_;
}

ScheduleOutput Scheduler::schedule() {
  ScheduleOutput out;
  const int64_t bs = blocks_.block_size();
  // 1. One token for every sequence in decode state, preempting from the back when needed.
  for (size_t i = 0; i < running_.size(); ++i) {
    Sequence* seq = running_[i];
    if (seq->num_pending() != 1 || seq->num_computed == 0) continue;
    release_out_of_window(seq);
    bool self_preempted = false;
    while (blocks_.blocks_needed(seq->block_table, seq->num_computed, 1) > blocks_.num_free_blocks()) {
      Sequence* victim = running_.back();
      // Decodes already scheduled this step hold their new slots: never preempt those.
      if (victim == seq) {
        preempt(seq);
        self_preempted = true;
        break;
      }
      for (auto it = out.decodes.begin(); it != out.decodes.end(); ++it)
        VERL_CHECK_AS(DataError, it->seq != victim, "Scheduler: preempting a scheduled sequence");
      preempt(victim);
    }
    if (self_preempted) break;  // everything after it was preempted already
    Chunk c{seq, seq->num_computed, 1, blocks_.append_slots(seq->block_table, seq->num_computed, 1, out.copies)};
    out.decodes.push_back(std::move(c));
  }
  int64_t budget = config_.max_num_batched_tokens - static_cast<int64_t>(out.decodes.size());
  // 2. Continue prefills already running (chunked), limited by tokens and free blocks.
  auto take_chunk = [&](Sequence* seq) -> bool {
    // Prefilling sequences hold no shared block (forks happen after the prompt), so capacity is
    // simply the free blocks plus the room left in the table.
    const int64_t capacity =
        (blocks_.num_free_blocks() + static_cast<int64_t>(seq->block_table.size())) * bs - seq->num_computed;
    const int64_t len = std::min({seq->num_pending(), budget, capacity});
    if (len <= 0) return false;
    Chunk c{seq, seq->num_computed, len, blocks_.append_slots(seq->block_table, seq->num_computed, len, out.copies)};
    out.prefills.push_back(std::move(c));
    budget -= len;
    return true;
  };
  for (Sequence* seq : running_) {
    if (budget <= 0) break;
    if (seq->num_pending() == 1 && seq->num_computed > 0) continue;  // decode, done above
    bool scheduled = false;
    for (const Chunk& c : out.prefills) scheduled |= c.seq == seq;
    if (!scheduled) take_chunk(seq);
  }
  // 3. Admit waiting sequences while tokens, sequence slots and blocks allow. A newcomer must
  // leave a block per running sequence free, so admission does not immediately force preemption.
  int64_t slots = running_slots();
  while (!waiting_.empty() && budget > 0) {
    Sequence* seq = waiting_.front();
    if (slots + seq->fork_n > config_.max_num_seqs) break;
    const int64_t len = std::min(seq->num_pending(), budget);
    const int64_t reserve = static_cast<int64_t>(running_.size()) + seq->fork_n;
    if (blocks_.blocks_needed(seq->block_table, seq->num_computed, len) + reserve > blocks_.num_free_blocks() &&
        !running_.empty())
      break;
    const bool fresh = seq->num_computed == 0 && seq->block_table.empty();
    if (fresh) take_cached_prefix(seq);
    if (!take_chunk(seq)) {
      if (fresh && seq->num_computed > 0) {  // not admitted after all: give the cached blocks back
        num_cached_tokens_ -= seq->num_computed;
        blocks_.release(seq->block_table);
        seq->num_computed = 0;
        seq->block_keys.clear();
      }
      break;
    }
    waiting_.pop_front();
    running_.push_back(seq);
    slots += seq->fork_n;
  }
  return out;
}

void Scheduler::computed(const ScheduleOutput& out) {
  for (const Chunk& c : out.decodes) c.seq->num_computed += c.length;
  for (const Chunk& c : out.prefills) c.seq->num_computed += c.length;
  if (!blocks_.prefix_caching()) return;
  for (const Chunk& c : out.decodes) remember_full_blocks(c.seq);
  for (const Chunk& c : out.prefills) remember_full_blocks(c.seq);
}

void Scheduler::take_cached_prefix(Sequence* seq) {
  if (!blocks_.prefix_caching()) return;
  seq->cache_epoch = blocks_.cache_epoch();
  const int64_t bs = blocks_.block_size();
  const int64_t len = static_cast<int64_t>(seq->tokens.size());
  uint64_t previous = 0;
  for (int64_t k = 0; (k + 1) * bs <= len - 1; ++k) {
    const int64_t* tokens = seq->tokens.data() + k * bs;
    const uint64_t key = BlockManager::block_key(previous, tokens, bs);
    const std::optional<int64_t> block = blocks_.take_cached(key, previous, tokens);
    if (!block) break;
    seq->block_table.push_back(*block);
    seq->block_keys.push_back(key);
    seq->num_computed += bs;
    num_cached_tokens_ += bs;
    previous = key;
  }
}

void Scheduler::release_out_of_window(Sequence* seq) {
  // Positions before num_computed - window are read by no later step: the next one reads num_computed - window + 1
  // on, a step computed again (Engine::recompute_in_flight) num_computed - window. Block k holds positions
  // [k * bs, (k + 1) * bs).
  const int64_t keep_from = seq->num_computed - config_.sliding_window;
  if (config_.sliding_window <= 0 || keep_from <= 0) return;
  blocks_.release_leading(seq->block_table, keep_from / blocks_.block_size());
}

void Scheduler::remember_full_blocks(Sequence* seq) {
  // Weights changed since it was admitted (update_weights while it ran): its blocks mix old and new keys/values.
  if (seq->cache_epoch != blocks_.cache_epoch()) return;
  const int64_t bs = blocks_.block_size();
  while (static_cast<int64_t>(seq->block_keys.size()) < seq->num_computed / bs) {
    const size_t k = seq->block_keys.size();
    const uint64_t previous = k == 0 ? 0 : seq->block_keys[k - 1];
    const int64_t* tokens = seq->tokens.data() + static_cast<int64_t>(k) * bs;
    const uint64_t key = BlockManager::block_key(previous, tokens, bs);
    blocks_.remember(seq->block_table[k], key, previous, tokens);
    seq->block_keys.push_back(key);
  }
}

std::vector<Sequence*> Scheduler::fork(Sequence* root, const std::vector<Sequence*>& children) {
  auto pos = std::find(running_.begin(), running_.end(), root);
  VERL_CHECK_AS(DataError, pos != running_.end(), "Scheduler.fork: the root is not running");
  for (Sequence* child : children) {
    child->block_table = root->block_table;
    child->num_computed = root->num_computed;
    child->block_keys = root->block_keys;
    child->cache_epoch = root->cache_epoch;
    blocks_.share(child->block_table);
  }
  root->fork_n = 1;
  running_.insert(pos + 1, children.begin(), children.end());
  return children;
}

void Scheduler::finish(Sequence* seq) {
  blocks_.release(seq->block_table);
  auto it = std::find(running_.begin(), running_.end(), seq);
  if (it != running_.end()) running_.erase(it);
  // An aborted request's sequence may be waiting (not yet admitted, or preempted).
  auto w = std::find(waiting_.begin(), waiting_.end(), seq);
  if (w != waiting_.end()) waiting_.erase(w);
}

}  // namespace verl::rollout
