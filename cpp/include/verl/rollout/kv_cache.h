// The rollout engine's paged KV cache: a pool of fixed-size blocks per layer, the bookkeeping
// that hands blocks to sequences (free list, reference counts, copy-on-write), and the
// AttentionCache that writes new keys/values by slot and reads them back by block table.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "verl/core/export.h"
#include "verl/model/transformer.h"
#include "verl/kernels/varlen_attention.h"

namespace verl::rollout {

// Block bookkeeping, no tensors. Block 0 is a scratch block that is never handed out: padding
// tokens write there and padding entries of block tables point there, so every index is valid; so do the entries
// of blocks a sliding window released (release_leading), which nothing reads again.
// Blocks are shared by reference count (the n samples of a prompt hold the prompt's blocks);
// a shared block is copied before it is written (copy-on-write).
//
// Prefix caching (vLLM's automatic prefix caching, when enabled): a full block -- block_size computed tokens -- is
// remembered by its tokens and the chain of blocks before it, so a later sequence whose tokens start the same way
// (a multi-turn conversation's next turn, a shared system prompt) takes those blocks instead of recomputing them.
// The cache holds one reference of each block it remembers; a block only the cache holds is still counted free and
// is reused, least recently released first, when the free list runs out. Lookups compare the tokens themselves (a
// hash only finds the candidate), so a hit is exact.
class VERL_API BlockManager {
 public:
  BlockManager(int64_t num_blocks, int64_t block_size, bool prefix_caching = false);

  int64_t block_size() const { return block_size_; }
  int64_t num_blocks() const { return static_cast<int64_t>(ref_count_.size()); }
  int64_t num_usable_blocks() const { return num_blocks() - 1; }
  // Blocks a sequence can get: the free list plus cached blocks nobody else holds.
  int64_t num_free_blocks() const { return static_cast<int64_t>(free_.size() + evictable_.size()); }
  int64_t ref_count(int64_t block) const { return ref_count_.at(block); }

  // Blocks a sequence holding `table` for `num_tokens` tokens needs before `n_new` more tokens
  // are written: new blocks past the table's end, plus one if the first written block is shared.
  int64_t blocks_needed(const std::vector<int64_t>& table, int64_t num_tokens, int64_t n_new) const;
  // Makes room for tokens [num_tokens, num_tokens + n_new): grows `table`, replaces a shared
  // block about to be written by a private copy (the (src, dst) pair is appended to `copies`,
  // for the cache to copy the data), and returns the tokens' flat slots block * block_size + offset.
  // Throws if blocks run out (the scheduler checks blocks_needed first).
  std::vector<int64_t> append_slots(std::vector<int64_t>& table, int64_t num_tokens, int64_t n_new,
                                    std::vector<std::pair<int64_t, int64_t>>& copies);
  // Another holder of every block of `table` (a forked sample).
  void share(const std::vector<int64_t>& table);
  // Drops this holder's references; blocks nobody holds return to the free list. Clears `table`.
  void release(std::vector<int64_t>& table);
  // Drops this holder's references to table[0, count) -- blocks a sliding window has left behind -- and points
  // those entries at the scratch block, so the table keeps its positions. Returns the blocks released now.
  int64_t release_leading(std::vector<int64_t>& table, int64_t count);

  // Prefix caching (no-ops when it is off). The key of a full block: the key of the block before it (0 for the
  // first) and its block_size tokens.
  bool prefix_caching() const { return prefix_caching_; }
  static uint64_t block_key(uint64_t previous_key, const int64_t* tokens, int64_t block_size);
  // The cached block with exactly these tokens after exactly that chain, now also held by the caller; nullopt if
  // none.
  std::optional<int64_t> take_cached(uint64_t key, uint64_t previous_key, const int64_t* tokens);
  // Remembers `block` (full, held by the caller) under `key` unless that prefix is cached already.
  void remember(int64_t block, uint64_t key, uint64_t previous_key, const int64_t* tokens);
  // Forgets every cached block (their keys/values are stale: new weights, or the pool was released) and starts a
  // new cache epoch.
  void clear_prefix_cache();
  // Bumped by clear_prefix_cache: a sequence admitted in an earlier epoch computed part of its keys/values with the
  // old weights, so its later blocks must not be cached either.
  uint64_t cache_epoch() const { return cache_epoch_; }
  int64_t num_cached_blocks() const { return static_cast<int64_t>(cached_.size()); }

 private:
  struct CachedBlock {
    int64_t block;
    uint64_t previous_key;
    std::vector<int64_t> tokens;
  };
  int64_t allocate();
  void drop_reference(int64_t block);
  void forget(int64_t block);  // removes a cached block from the cache (its cache reference included)
  int64_t block_size_;
  uint64_t cache_epoch_ = 0;
  std::vector<int64_t> ref_count_;
  std::vector<int64_t> free_;
  bool prefix_caching_ = false;
  std::multimap<uint64_t, CachedBlock> cached_;           // key -> block (several on a hash collision)
  std::map<int64_t, uint64_t> key_of_;                   // cached block -> its key
  std::list<int64_t> evictable_;                          // cached blocks only the cache holds, oldest first
  std::map<int64_t, std::list<int64_t>::iterator> evictable_at_;
};

// One forward's view of the paged cache, set by the engine before CausalLM::forward_cached.
struct VERL_API PagedBatch {
  torch::Tensor slot_mapping;  // (bs * q,) int64: flat slot of each new token (padding -> scratch)
  torch::Tensor block_tables;  // (bs, max_blocks) int64: the rows' blocks in order (padding -> 0)
  torch::Tensor positions;     // (bs, q) int64: each new token's position (padding -> 0)

  // Packed prefill (one row, bs = 1, q = every chunk's tokens end to end; no padding), one of:
  // - `prompts`: every chunk starts its sequence, so its tokens attend to each other only: causal attention within
  //   the chunks of this layout over the new keys/values (varlen_causal_attention: one flash-attention varlen call
  //   on CUDA in bf16/fp16). block_tables and positions are unused.
  // - `token_rows`: every new token is a row of the paged-attention kernel, reading its sequence's blocks up to its
  //   position: block_tables (q, max_blocks) is its sequence's table, positions (q, 1) its position. Only where
  //   the kernel takes several query tokens per row (PagedKVCache::uses_kernel(2)).
  std::shared_ptr<const kernels::VarlenLayout> prompts;
  bool token_rows = false;
};

// How Engine::run packs a forward of prefill chunks (PagedKVCache::packed_prefill).
enum class PackedPrefill { kPadded, kPrompts, kTokenRows };

// Keys/values of every layer in blocks: pool (num_blocks, block_size, kv_heads, head_dim).
// attend() writes the new tokens by slot, then attends causally by position (query t of row i
// sees the row's tokens 0..positions[i, t]). Where the device has a verl::paged_attention kernel
// (CPU; CUDA in builds with VERL_WITH_CUDA) and paged_attention_kernel is on, the kernel reads the
// blocks in place and the mask is unused -- on CUDA for decode steps (one query token per row) only:
// its scratch grows with query tokens x context. A packed prefill (PagedBatch::prompts / token_rows) needs no mask
// either. Otherwise each row's blocks are gathered into (bs, kv_heads, max_blocks * block_size, head_dim) and SDPA
// runs under the caller's mask (bs, 1, q, max_blocks * block_size) bool (true = attend).
class VERL_API PagedKVCache : public model::AttentionCache {
 public:
  PagedKVCache(const model::ModelConfig& config, int64_t num_blocks, int64_t block_size, torch::Dtype dtype,
               torch::Device device);

  // Bytes of one block across all layers (keys and values).
  static int64_t block_bytes(const model::ModelConfig& config, int64_t block_size, torch::Dtype dtype);

  int64_t num_blocks() const { return num_blocks_; }
  int64_t block_size() const { return block_size_; }
  bool allocated() const { return !k_.empty(); }
  void free();      // releases the pools (sleep)
  void allocate();  // (re-)creates zeroed pools (wake up)

  // The next forward's tokens; on CPU their slots are checked against the pool here, once per step.
  void set_batch(PagedBatch batch);
  // Whether attend() for q_len query tokens per row runs the paged-attention kernel; if not, it needs the mask.
  bool uses_kernel(int64_t q_len) const {
    return paged_attention_kernel_ && device_has_kernel_ && (q_len == 1 || device_.is_cpu());
  }
  bool needs_mask(int64_t q_len) const { return !uses_kernel(q_len); }
  // How a forward of prefill chunks runs, given whether every chunk starts its sequence. Without the kernel:
  // padded, through the gather path. Where the kernel takes several query tokens per row (CPU) it attends for every
  // token, as token rows: per token the attention arithmetic of a decode step, whatever the chunks are batched with
  // (the agent-loop trainer test relies on it: the same prompts batched otherwise give the same log-probs to the
  // bit). Where it takes one (CUDA), chunks that all start their sequences attend within themselves when flash
  // attention can run (bf16 / fp16: varlen_causal_attention's one call; other dtypes would run an SDPA per prompt
  // length), others go padded through the gather path.
  PackedPrefill packed_prefill(bool all_start) const {
    if (!uses_kernel(1)) return PackedPrefill::kPadded;
    if (uses_kernel(2)) return PackedPrefill::kTokenRows;
    const bool flash_dtype = dtype_ == torch::kBFloat16 || dtype_ == torch::kHalf;
    return all_start && flash_dtype ? PackedPrefill::kPrompts : PackedPrefill::kPadded;
  }
  void set_paged_attention_kernel(bool on);  // re-allocates the pools if the choice changes
  // Copies whole blocks src -> dst in every layer (copy-on-write).
  void copy_blocks(const std::vector<std::pair<int64_t, int64_t>>& copies);

  // With `sliding_window` > 0, query t of row i sees positions (positions[i, t] - sliding_window, positions[i, t]]
  // only, in every path (kernel, packed prefill, gathered under `mask`).
  torch::Tensor attend(int64_t layer, const torch::Tensor& q, const torch::Tensor& k_new, const torch::Tensor& v_new,
                       const torch::Tensor& mask, int64_t sliding_window) override;

  const torch::Tensor& keys(int64_t layer) const { return k_.at(layer); }
  const torch::Tensor& values(int64_t layer) const { return v_.at(layer); }

 private:
  int64_t num_layers_, kv_heads_, head_dim_, num_blocks_, block_size_;
  torch::Dtype dtype_;
  torch::Device device_;
  std::vector<torch::Tensor> k_, v_;  // per layer (num_blocks, block_size, kv_heads, head_dim)
  PagedBatch batch_;
  bool paged_attention_kernel_ = true;
  bool device_has_kernel_ = false;  // verl::paged_attention has a kernel for device_
};

}  // namespace verl::rollout
