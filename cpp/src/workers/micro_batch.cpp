#include "verl/workers/micro_batch.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "verl/core/error.h"

namespace verl::workers {

RowGroups mini_batch_rows(int64_t n, int64_t mini_batch_size, int64_t epochs, int64_t seed, bool shuffle) {
  VERL_CHECK(mini_batch_size >= 1, "mini_batch_size must be >= 1, got ", mini_batch_size);
  VERL_CHECK(epochs >= 0, "epochs must be >= 0, got ", epochs);
  VERL_CHECK_AS(DataError, n % mini_batch_size == 0, "the batch of ", n, " rows is not divisible by the mini-batch of ",
                mini_batch_size, " rows");
  RowGroups out;
  torch::Generator gen = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed));
  for (int64_t e = 0; e < epochs; ++e) {
    torch::Tensor order;
    if (shuffle) {
      // torch's DataLoader draws its base seed from the generator when an epoch's iterator is
      // created, then RandomSampler draws the permutation, then (its remainder branch) one more
      // permutation of which it keeps nothing.
      torch::empty({}, torch::kLong).random_(gen);
      order = torch::randperm(n, gen, torch::kLong);
      torch::randperm(n, gen, torch::kLong);
    } else {
      order = torch::arange(n, torch::kLong);
    }
    const int64_t* p = order.data_ptr<int64_t>();
    for (int64_t start = 0; start < n; start += mini_batch_size) {
      out.emplace_back(p + start, p + start + mini_batch_size);
    }
  }
  return out;
}

RowGroups fixed_micro_batches(int64_t n, int64_t micro_batch_size) {
  VERL_CHECK(micro_batch_size >= 1, "micro_batch_size must be >= 1, got ", micro_batch_size);
  RowGroups out;
  for (int64_t start = 0; start < n; start += micro_batch_size) {
    std::vector<int64_t> rows(std::min(micro_batch_size, n - start));
    std::iota(rows.begin(), rows.end(), start);
    out.push_back(std::move(rows));
  }
  return out;
}

int64_t attention_workload(int64_t seqlen) { return 24576 * seqlen + seqlen * seqlen; }

namespace {

// verl's karmarkar_karp.Set and .State, compared exactly as their __lt__.
struct KKSet {
  int64_t sum = 0;
  std::vector<std::pair<int64_t, int64_t>> items;  // (index, value)
  void add(int64_t idx, int64_t val) {
    items.emplace_back(idx, val);
    sum += val;
  }
  void merge(const KKSet& other) {
    for (const auto& it : other.items) add(it.first, it.second);
  }
};

bool set_less(const KKSet& a, const KKSet& b) {
  if (a.sum != b.sum) return a.sum < b.sum;
  if (a.items.size() != b.items.size()) return a.items.size() < b.items.size();
  return a.items < b.items;
}

struct KKState {
  std::vector<KKSet> sets;  // always in decreasing order
  void sort_desc() {
    // sorted(reverse=True) is stable: equal sets keep their order.
    std::stable_sort(sets.begin(), sets.end(), [](const KKSet& a, const KKSet& b) { return set_less(b, a); });
  }
  int64_t spread() const { return sets.front().sum - sets.back().sum; }
  void merge(const KKState& other) {
    const size_t k = sets.size();
    for (size_t i = 0; i < k; ++i) sets[i].merge(other.sets[k - 1 - i]);
    sort_desc();
  }
};

// State.__lt__: the state with the largest spread pops first, then the one with the largest set.
bool state_less(const KKState& a, const KKState& b) {
  if (a.spread() != b.spread()) return a.spread() > b.spread();
  return set_less(b.sets.front(), a.sets.front());
}

// CPython's heapq (_siftdown / _siftup), so equal states pop in verl's order.
void sift_down(std::vector<KKState>& heap, size_t startpos, size_t pos) {
  KKState item = std::move(heap[pos]);
  while (pos > startpos) {
    size_t parentpos = (pos - 1) >> 1;
    if (state_less(item, heap[parentpos])) {
      heap[pos] = std::move(heap[parentpos]);
      pos = parentpos;
      continue;
    }
    break;
  }
  heap[pos] = std::move(item);
}

void sift_up(std::vector<KKState>& heap, size_t pos) {
  const size_t endpos = heap.size();
  const size_t startpos = pos;
  KKState item = std::move(heap[pos]);
  size_t childpos = 2 * pos + 1;
  while (childpos < endpos) {
    size_t rightpos = childpos + 1;
    if (rightpos < endpos && !state_less(heap[childpos], heap[rightpos])) childpos = rightpos;
    heap[pos] = std::move(heap[childpos]);
    pos = childpos;
    childpos = 2 * pos + 1;
  }
  heap[pos] = std::move(item);
  sift_down(heap, startpos, pos);
}

void heap_push(std::vector<KKState>& heap, KKState s) {
  heap.push_back(std::move(s));
  sift_down(heap, 0, heap.size() - 1);
}

KKState heap_pop(std::vector<KKState>& heap) {
  KKState last = std::move(heap.back());
  heap.pop_back();
  if (heap.empty()) return last;
  KKState top = std::move(heap.front());
  heap.front() = std::move(last);
  sift_up(heap, 0);
  return top;
}

}  // namespace

RowGroups karmarkar_karp(const std::vector<int64_t>& values, int64_t k_partitions, bool equal_size) {
  VERL_CHECK(k_partitions >= 1, "k_partitions must be >= 1, got ", k_partitions);
  const int64_t n = static_cast<int64_t>(values.size());
  std::vector<std::pair<int64_t, int64_t>> sorted_values;  // (value, index), sorted as tuples
  sorted_values.reserve(values.size());
  for (int64_t i = 0; i < n; ++i) sorted_values.emplace_back(values[i], i);
  std::sort(sorted_values.begin(), sorted_values.end());

  std::vector<KKState> heap;
  auto new_state = [&](const std::vector<std::pair<int64_t, int64_t>>& items) {  // (index, value)
    KKState s;
    s.sets.resize(k_partitions);
    for (size_t i = 0; i < items.size(); ++i) s.sets[i].add(items[i].first, items[i].second);
    s.sort_desc();
    return s;
  };
  if (equal_size) {
    VERL_CHECK(n % k_partitions == 0, "karmarkar_karp: ", n, " values are not divisible into ", k_partitions,
               " equal partitions");
    for (int64_t offset = 0; offset < n; offset += k_partitions) {
      std::vector<std::pair<int64_t, int64_t>> items;
      for (int64_t i = 0; i < k_partitions; ++i) {
        items.emplace_back(sorted_values[offset + i].second, sorted_values[offset + i].first);
      }
      heap_push(heap, new_state(items));
    }
  } else {
    for (const auto& [value, idx] : sorted_values) heap_push(heap, new_state({{idx, value}}));
  }
  if (heap.empty()) return RowGroups(k_partitions);
  while (heap.size() > 1) {
    KKState s0 = heap_pop(heap);
    KKState s1 = heap_pop(heap);
    s0.merge(s1);
    heap_push(heap, std::move(s0));
  }
  RowGroups partitions;
  for (const auto& set : heap.front().sets) {
    std::vector<int64_t> part;
    for (const auto& it : set.items) part.push_back(it.first);
    partitions.push_back(std::move(part));
  }
  return partitions;
}

RowGroups get_seqlen_balanced_partitions(const std::vector<int64_t>& values, int64_t k_partitions, bool equal_size) {
  VERL_CHECK(static_cast<int64_t>(values.size()) >= k_partitions, "number of items [", values.size(),
             "] < k_partitions [", k_partitions, "]");
  RowGroups parts = karmarkar_karp(values, k_partitions, equal_size);
  for (size_t i = 0; i < parts.size(); ++i) {
    VERL_CHECK(!parts[i].empty(), "the ", i, "-th partition is empty");
    std::sort(parts[i].begin(), parts[i].end());
  }
  return parts;
}

RowGroups dynamic_micro_batches(const std::vector<int64_t>& seq_lens, int64_t max_token_len, bool balance,
                                std::optional<int64_t> min_num_micro_batch) {
  const int64_t n = static_cast<int64_t>(seq_lens.size());
  if (n == 0) return {};
  const int64_t max_len = *std::max_element(seq_lens.begin(), seq_lens.end());
  VERL_CHECK(max_token_len >= max_len, "max_token_len (", max_token_len,
             ") must be at least the longest sequence (", max_len, " tokens)");
  const int64_t total = std::accumulate(seq_lens.begin(), seq_lens.end(), int64_t{0});
  int64_t num_micro = std::min(n, (total + max_token_len - 1) / max_token_len);
  if (min_num_micro_batch) num_micro = std::max(*min_num_micro_batch, num_micro);
  num_micro = std::max<int64_t>(num_micro, 1);

  std::vector<int64_t> workloads(n);
  for (int64_t i = 0; i < n; ++i) workloads[i] = attention_workload(seq_lens[i]);

  RowGroups parts;
  while (true) {
    VERL_CHECK(num_micro <= n, "cannot keep every micro-batch within max_token_len (", max_token_len, ")");
    parts = get_seqlen_balanced_partitions(workloads, num_micro, /*equal_size=*/false);
    bool within = true;
    for (const auto& p : parts) {
      int64_t tokens = 0;
      for (int64_t i : p) tokens += seq_lens[i];
      if (tokens > max_token_len) within = false;
    }
    if (within) break;
    ++num_micro;
  }
  if (balance) {
    auto key = [&](const std::vector<int64_t>& p) {
      int64_t w = 0;
      for (int64_t i : p) w += workloads[i];
      return std::make_pair(w, p.empty() ? int64_t{0} : p.front());
    };
    std::stable_sort(parts.begin(), parts.end(),
                     [&](const std::vector<int64_t>& a, const std::vector<int64_t>& b) { return key(b) < key(a); });
    // Smaller micro-batches at both ends (verl: idx[::2][::-1] + idx[1::2]).
    RowGroups even, odd;
    for (size_t i = 0; i < parts.size(); ++i) (i % 2 == 0 ? even : odd).push_back(std::move(parts[i]));
    std::reverse(even.begin(), even.end());
    parts = std::move(even);
    for (auto& p : odd) parts.push_back(std::move(p));
  }
  return parts;
}

torch::Tensor restore_order(const RowGroups& groups, int64_t n) {
  torch::Tensor out = torch::full({n}, -1, torch::kLong);
  int64_t* p = out.data_ptr<int64_t>();
  int64_t pos = 0;
  for (const auto& g : groups) {
    for (int64_t row : g) {
      VERL_CHECK(row >= 0 && row < n && p[row] < 0, "restore_order: groups are not a permutation of ", n, " rows");
      p[row] = pos++;
    }
  }
  VERL_CHECK(pos == n, "restore_order: groups cover ", pos, " of ", n, " rows");
  return out;
}

}  // namespace verl::workers
