// verl::rollout::Scheduler: continuous batching over the paged KV cache. Bookkeeping only (no
// tensors): which sequences run this step, which tokens each computes, which blocks they write.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "verl/core/export.h"
#include "verl/rollout/kv_cache.h"
#include "verl/rollout/sampling_params.h"

namespace verl::rollout {

enum class FinishReason { kNone, kStop, kLength, kAbort };
VERL_API const char* finish_reason_name(FinishReason r);  // "", "stop", "length", "abort"

struct Request;

// One sample of a request. tokens = prompt + generated; tokens [0, num_computed) have KV in the
// cache. Until its prompt is computed a request is a single "root" sequence with fork_n = n:
// the prompt is prefilled once and then forks into n samples sharing its blocks.
struct VERL_API Sequence {
  Request* request = nullptr;
  int64_t sample_index = 0;
  uint64_t seed = 0;  // the sample's random stream (request seed + sample_index)
  std::vector<int64_t> tokens;
  int64_t prompt_len = 0;
  int64_t num_computed = 0;
  std::vector<int64_t> block_table;
  std::vector<float> logprobs;  // one per generated token
  std::vector<uint64_t> block_keys;  // prefix caching: the keys of its leading full blocks (BlockManager::block_key)
  uint64_t cache_epoch = 0;          // prefix caching: BlockManager::cache_epoch() when it was admitted
  int64_t fork_n = 1;
  FinishReason finish = FinishReason::kNone;
  int64_t num_generated() const { return static_cast<int64_t>(tokens.size()) - prompt_len; }
  int64_t num_pending() const { return static_cast<int64_t>(tokens.size()) - num_computed; }
};

struct VERL_API Request {
  int64_t id = 0;
  std::vector<int64_t> prompt;
  SamplingParams params;
  uint64_t seed = 0;
  std::vector<std::unique_ptr<Sequence>> samples;  // by sample_index once forked
  int64_t num_unfinished = 0;
};

// A contiguous run of a sequence's tokens computed in this step: tokens [start, start + length).
struct VERL_API Chunk {
  Sequence* seq = nullptr;
  int64_t start = 0;
  int64_t length = 0;
  std::vector<int64_t> slots;  // flat cache slot of each token
};

struct VERL_API SchedulerConfig {
  int64_t max_num_seqs = 256;             // running sequences (a root counts as its n samples)
  int64_t max_num_batched_tokens = 2048;  // tokens computed per step (decodes + prefill chunks)
  // A new sequence starts from the cached blocks of its longest cached prefix (BlockManager's prefix caching).
  bool enable_prefix_caching = false;
  // The window every layer of the model attends within (0: some layer sees the whole context). A running sequence
  // then gives back the blocks wholly before its window (the next token at position p reads p - window + 1 on; one
  // position more is kept for a step computed again), so its cache holds about the window, not the sequence.
  int64_t sliding_window = 0;
};

struct VERL_API ScheduleOutput {
  std::vector<Chunk> decodes;   // one token each
  std::vector<Chunk> prefills;  // prompt (or recompute) chunks
  std::vector<std::pair<int64_t, int64_t>> copies;  // copy-on-write block copies (src, dst), before the forward
  bool empty() const { return decodes.empty() && prefills.empty(); }
};

class VERL_API Scheduler {
 public:
  Scheduler(SchedulerConfig config, int64_t num_blocks, int64_t block_size);

  void add(Sequence* seq);  // a new root, at the back of the waiting queue
  // Picks this step's work: every running sequence in decode state gets one token; the remaining
  // token budget goes to prefill chunks of running then waiting sequences (in order). When blocks
  // run out the most recently admitted sequences are preempted: blocks freed, back to the front
  // of the waiting queue, recomputed later from their tokens.
  ScheduleOutput schedule();
  // After the forward: marks the chunks' tokens computed.
  void computed(const ScheduleOutput& out);
  // A root whose prompt is computed forks into its n samples (children share every block).
  // Returns the new sequences (sample_index 1..n-1), placed right after the root.
  std::vector<Sequence*> fork(Sequence* root, const std::vector<Sequence*>& children);
  void finish(Sequence* seq);  // frees its blocks, leaves the running set (or the waiting queue)
  // A running sequence computed again from its first token: its blocks freed, at the front of the waiting queue (as
  // a preemption, not counted as one).
  void restart(Sequence* seq);

  bool has_work() const { return !running_.empty() || !waiting_.empty(); }
  int64_t num_running() const { return static_cast<int64_t>(running_.size()); }
  int64_t num_waiting() const { return static_cast<int64_t>(waiting_.size()); }
  int64_t num_preemptions() const { return num_preemptions_; }
  int64_t num_cached_tokens() const { return num_cached_tokens_; }  // prompt tokens taken from the prefix cache
  const BlockManager& blocks() const { return blocks_; }
  BlockManager& blocks() { return blocks_; }
  const std::vector<Sequence*>& running() const { return running_; }

 private:
  int64_t running_slots() const;  // sequences the running set will hold (roots count fork_n)
  void preempt(Sequence* seq);
  // Prefix caching: a sequence about to start takes the cached blocks of its prompt's longest cached prefix
  // (leaving at least its last token to compute, whose logits are needed).
  void take_cached_prefix(Sequence* seq);
  // Prefix caching: the sequence's newly completed full blocks are remembered.
  void remember_full_blocks(Sequence* seq);
  // SchedulerConfig::sliding_window: the blocks the sequence's window has left behind go back to the pool.
  void release_out_of_window(Sequence* seq);

  SchedulerConfig config_;
  BlockManager blocks_;
  std::deque<Sequence*> waiting_;
  std::vector<Sequence*> running_;  // admission order
  int64_t num_preemptions_ = 0;
  int64_t num_cached_tokens_ = 0;
};

}  // namespace verl::rollout
