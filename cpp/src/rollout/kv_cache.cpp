// Paged KV cache: block bookkeeping (free list, reference counts, copy-on-write) and the
// slot-mapped writes / block-table reads of the rollout engine's attention.
#include "verl/rollout/kv_cache.h"

#include <algorithm>
#include <cmath>

#include "core/host_arrays.h"
#include "verl/core/error.h"
#include "kernels/ops.h"

namespace verl::rollout {

BlockManager::BlockManager(int64_t num_blocks, int64_t block_size, bool prefix_caching)
    : block_size_(block_size), prefix_caching_(prefix_caching) {
  VERL_CHECK(block_size > 0, "block_size must be positive, got ", block_size);
  VERL_CHECK(num_blocks >= 2, "the KV cache budget holds ", num_blocks,
             " blocks; at least 2 are needed (raise kv_cache_bytes / gpu_memory_utilization)");
  ref_count_.assign(num_blocks, 0);
  ref_count_[0] = 1;  // scratch block, never free
  // Hand out low block ids first (pop from the back).
  for (int64_t b = num_blocks - 1; b >= 1; --b) free_.push_back(b);
}

int64_t BlockManager::allocate() {
  if (free_.empty() && !evictable_.empty()) forget(evictable_.front());  // the least recently released
  VERL_CHECK_AS(DataError, !free_.empty(), "KV cache out of blocks");
  const int64_t b = free_.back();
  free_.pop_back();
  ref_count_[b] = 1;
  return b;
}

void BlockManager::drop_reference(int64_t b) {
  VERL_CHECK_AS(DataError, b > 0 && ref_count_[b] > 0, "BlockManager.release: block ", b, " is not held");
  --ref_count_[b];
  if (ref_count_[b] == 0) {
    free_.push_back(b);
  } else if (ref_count_[b] == 1 && key_of_.count(b) != 0) {  // only the cache holds it now
    evictable_at_[b] = evictable_.insert(evictable_.end(), b);
  }
}

void BlockManager::forget(int64_t b) {
  auto key = key_of_.find(b);
  if (key == key_of_.end()) return;
  auto range = cached_.equal_range(key->second);
  for (auto it = range.first; it != range.second; ++it) {
    if (it->second.block == b) {
      cached_.erase(it);
      break;
    }
  }
  key_of_.erase(key);
  auto at = evictable_at_.find(b);
  if (at != evictable_at_.end()) {
    evictable_.erase(at->second);
    evictable_at_.erase(at);
  }
  drop_reference(b);  // the cache's own reference
}

uint64_t BlockManager::block_key(uint64_t previous_key, const int64_t* tokens, int64_t block_size) {
  uint64_t h = previous_key ^ 0x9e3779b97f4a7c15ULL;
  for (int64_t i = 0; i < block_size; ++i) {  // splitmix64 over the chain and the tokens
    h += static_cast<uint64_t>(tokens[i]) + 0x9e3779b97f4a7c15ULL;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    h ^= h >> 31;
  }
  return h == 0 ? 1 : h;  // 0 is "no previous block"
}

std::optional<int64_t> BlockManager::take_cached(uint64_t key, uint64_t previous_key, const int64_t* tokens) {
  if (!prefix_caching_) return std::nullopt;
  auto range = cached_.equal_range(key);
  for (auto it = range.first; it != range.second; ++it) {
    const CachedBlock& c = it->second;
    if (c.previous_key != previous_key || !std::equal(c.tokens.begin(), c.tokens.end(), tokens)) continue;
    auto at = evictable_at_.find(c.block);
    if (at != evictable_at_.end()) {  // held again: no longer evictable
      evictable_.erase(at->second);
      evictable_at_.erase(at);
    }
    ++ref_count_[c.block];
    return c.block;
  }
  return std::nullopt;
}

void BlockManager::remember(int64_t block, uint64_t key, uint64_t previous_key, const int64_t* tokens) {
  if (!prefix_caching_ || key_of_.count(block) != 0) return;
  auto range = cached_.equal_range(key);
  for (auto it = range.first; it != range.second; ++it) {
    const CachedBlock& c = it->second;
    if (c.previous_key == previous_key && std::equal(c.tokens.begin(), c.tokens.end(), tokens)) return;
  }
  cached_.emplace(key, CachedBlock{block, previous_key, std::vector<int64_t>(tokens, tokens + block_size_)});
  key_of_[block] = key;
  ++ref_count_[block];  // the cache's reference
}

void BlockManager::clear_prefix_cache() {
  ++cache_epoch_;
  std::vector<int64_t> blocks;
  for (const auto& [block, key] : key_of_) blocks.push_back(block);
  for (int64_t b : blocks) forget(b);
}

int64_t BlockManager::blocks_needed(const std::vector<int64_t>& table, int64_t num_tokens, int64_t n_new) const {
  const int64_t have = static_cast<int64_t>(table.size());
  const int64_t need_total = (num_tokens + n_new + block_size_ - 1) / block_size_;
  int64_t needed = std::max<int64_t>(0, need_total - have);
  const int64_t first = num_tokens / block_size_;
  if (n_new > 0 && first < have && ref_count_[table[first]] > 1) ++needed;
  return needed;
}

std::vector<int64_t> BlockManager::append_slots(std::vector<int64_t>& table, int64_t num_tokens, int64_t n_new,
                                                std::vector<std::pair<int64_t, int64_t>>& copies) {
  const int64_t first = num_tokens / block_size_;
  if (n_new > 0 && first < static_cast<int64_t>(table.size()) && ref_count_[table[first]] > 1) {
    const int64_t copy = allocate();
    copies.emplace_back(table[first], copy);
    --ref_count_[table[first]];
    table[first] = copy;
  }
  const int64_t need_total = (num_tokens + n_new + block_size_ - 1) / block_size_;
  while (static_cast<int64_t>(table.size()) < need_total) table.push_back(allocate());
  std::vector<int64_t> slots(n_new);
  for (int64_t i = 0; i < n_new; ++i) {
    const int64_t t = num_tokens + i;
    slots[i] = table[t / block_size_] * block_size_ + t % block_size_;
  }
  return slots;
}

void BlockManager::share(const std::vector<int64_t>& table) {
  for (int64_t b : table) {
    if (b == 0) continue;  // released by a sliding window
    auto at = evictable_at_.find(b);
    if (at != evictable_at_.end()) {
      evictable_.erase(at->second);
      evictable_at_.erase(at);
    }
    ++ref_count_[b];
  }
}

void BlockManager::release(std::vector<int64_t>& table) {
  for (int64_t b : table)
    if (b != 0) drop_reference(b);  // 0: released by a sliding window already
  table.clear();
}

int64_t BlockManager::release_leading(std::vector<int64_t>& table, int64_t count) {
  // Released entries form a prefix: walk back from the last one to release until one is released already.
  int64_t released = 0;
  for (int64_t i = std::min<int64_t>(count, static_cast<int64_t>(table.size())) - 1; i >= 0 && table[i] != 0; --i) {
    drop_reference(table[i]);
    table[i] = 0;
    ++released;
  }
  return released;
}

// ---- PagedKVCache ----------------------------------------------------------------------------

PagedKVCache::PagedKVCache(const model::ModelConfig& config, int64_t num_blocks, int64_t block_size,
                           torch::Dtype dtype, torch::Device device)
    : num_layers_(config.num_hidden_layers),
      kv_heads_(config.num_key_value_heads),
      head_dim_(config.head_dim),
      num_blocks_(num_blocks),
      block_size_(block_size),
      dtype_(dtype),
      device_(device),
      device_has_kernel_(
          kernels::has_kernel("paged_attention", c10::computeDispatchKey(std::nullopt, std::nullopt, device))) {
  allocate();
}

int64_t PagedKVCache::block_bytes(const model::ModelConfig& config, int64_t block_size, torch::Dtype dtype) {
  return 2 * config.num_hidden_layers * block_size * config.num_key_value_heads * config.head_dim *
         static_cast<int64_t>(c10::elementSize(dtype));
}

void PagedKVCache::free() {
  k_.clear();
  v_.clear();
  batch_ = {};
}

void PagedKVCache::allocate() {
  if (allocated()) return;
  const auto opts = torch::TensorOptions().dtype(dtype_).device(device_);
  // The gather path (decode or prefill) reads unwritten slots under a false mask, so they must be finite: zeros.
  // The kernels never read past a row's position: empty, so untouched blocks cost no RSS.
  const bool gathers = !uses_kernel(1) || !uses_kernel(2);
  const std::vector<int64_t> shape = {num_blocks_, block_size_, kv_heads_, head_dim_};
  for (int64_t i = 0; i < num_layers_; ++i) {
    k_.push_back(gathers ? torch::zeros(shape, opts) : torch::empty(shape, opts));
    v_.push_back(gathers ? torch::zeros(shape, opts) : torch::empty(shape, opts));
  }
}

void PagedKVCache::set_paged_attention_kernel(bool on) {
  if (on == paged_attention_kernel_) return;
  const bool was_allocated = allocated();
  free();
  paged_attention_kernel_ = on;
  if (was_allocated) allocate();
}

void PagedKVCache::copy_blocks(const std::vector<std::pair<int64_t, int64_t>>& copies) {
  if (copies.empty()) return;
  std::vector<int64_t> src, dst;
  for (auto [s, d] : copies) {
    src.push_back(s);
    dst.push_back(d);
  }
  detail::HostArrays arrays;  // one copy to the device (on CUDA, no host synchronisation)
  arrays.add(src);
  arrays.add(dst);
  const std::vector<torch::Tensor> staged = arrays.to(device_);
  const torch::Tensor &s = staged[0], &d = staged[1];
  torch::NoGradGuard no_grad;
  for (int64_t i = 0; i < num_layers_; ++i) {
    k_[i].index_copy_(0, d, k_[i].index_select(0, s));
    v_[i].index_copy_(0, d, v_[i].index_select(0, s));
  }
}

void PagedKVCache::set_batch(PagedBatch batch) {
  if (batch.slot_mapping.device().is_cpu()) {
    batch.slot_mapping = batch.slot_mapping.to(torch::kLong).contiguous();
    const int64_t num_slots = num_blocks_ * block_size_;
    const int64_t* sp = batch.slot_mapping.data_ptr<int64_t>();
    for (int64_t r = 0; r < batch.slot_mapping.numel(); ++r)
      VERL_CHECK(sp[r] >= 0 && sp[r] < num_slots, "PagedKVCache: slot ", sp[r], " outside the pool of ", num_slots);
  }
  VERL_CHECK(!(batch.prompts && batch.token_rows), "PagedKVCache: a packed prefill is either prompts or token rows");
  VERL_CHECK(!batch.prompts || batch.prompts->total == batch.slot_mapping.numel(), "PagedKVCache: the prompts' layout ",
             "holds ", batch.prompts ? batch.prompts->total : 0, " tokens, the slot mapping ",
             batch.slot_mapping.numel());
  VERL_CHECK(!batch.token_rows || uses_kernel(2),
             "PagedKVCache: token rows need a paged-attention kernel that takes several query tokens per row");
  batch_ = std::move(batch);
}

torch::Tensor PagedKVCache::attend(int64_t layer, const torch::Tensor& q, const torch::Tensor& k_new,
                                   const torch::Tensor& v_new, const torch::Tensor& mask, int64_t sliding_window) {
  VERL_CHECK(allocated(), "PagedKVCache: the KV cache is released (sleep); call wake_up() first");
  const int64_t bs = q.size(0), heads = q.size(1), q_len = q.size(2), d = q.size(3);
  const int64_t groups = heads / kv_heads_;
  VERL_CHECK(!(batch_.prompts || batch_.token_rows) || bs == 1, "PagedKVCache: a packed prefill has one row, got ",
             bs);  // checked before the pool is written
  kernels::kv_cache_write(k_[layer], batch_.slot_mapping, k_new);
  kernels::kv_cache_write(v_[layer], batch_.slot_mapping, v_new);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  if (batch_.prompts)  // (1, heads, total, d): the packed chunks attend within themselves
    return kernels::varlen_causal_attention(q[0], k_new[0], v_new[0], *batch_.prompts, scale, sliding_window)
        .unsqueeze(0);
  if (batch_.token_rows) {  // (1, heads, total, d) -> total rows of one query token each, and back
    const torch::Tensor out = kernels::paged_attention(q[0].transpose(0, 1).unsqueeze(2), k_[layer], v_[layer],
                                                       batch_.block_tables, batch_.positions, scale,
                                                       /*allow_simd=*/true, sliding_window);
    return out.squeeze(2).transpose(0, 1).unsqueeze(0);
  }
  if (uses_kernel(q_len))
    return kernels::paged_attention(q, k_[layer], v_[layer], batch_.block_tables, batch_.positions, scale,
                                    /*allow_simd=*/true, sliding_window);
  // Read: each row's blocks in order -> (bs, kv_heads, ctx, d).
  const int64_t max_blocks = batch_.block_tables.size(1), ctx = max_blocks * block_size_;
  torch::Tensor flat = batch_.block_tables.reshape({-1});
  torch::Tensor k = k_[layer].index_select(0, flat).view({bs, ctx, kv_heads_, head_dim_}).transpose(1, 2);
  torch::Tensor v = v_[layer].index_select(0, flat).view({bs, ctx, kv_heads_, head_dim_}).transpose(1, 2);
  // Grouped-query attention without repeating keys/values: the `groups` query heads of a kv head
  // become extra query rows of that kv head (exact: each query row attends independently).
  torch::Tensor qg = q.reshape({bs, kv_heads_, groups * q_len, d});
  torch::Tensor m = mask;
  if (sliding_window > 0) {  // slot c of the gathered context holds position c
    const torch::Tensor pos = batch_.positions.to(m.device(), torch::kLong);  // (bs, q)
    const torch::Tensor slot = torch::arange(ctx, pos.options()).view({1, 1, ctx});
    m = m.logical_and((slot > pos.unsqueeze(-1) - sliding_window).unsqueeze(1));  // (bs, 1, q, ctx)
  }
  if (groups > 1 && q_len > 1)
    m = mask.unsqueeze(2).expand({bs, 1, groups, q_len, ctx}).reshape({bs, 1, groups * q_len, ctx});
  torch::Tensor out = at::scaled_dot_product_attention(qg, k, v, m, 0.0, false, scale);
  return out.reshape({bs, heads, q_len, d});
}

}  // namespace verl::rollout
