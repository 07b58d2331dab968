// Packed causal attention by equal-length groups (verl/model/varlen_attention.h).
#include "verl/kernels/varlen_attention.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <iostream>
#include <map>

#include "core/host_arrays.h"
#include "verl/core/error.h"

namespace verl::kernels {

VarlenLayout VarlenLayout::build(const torch::Tensor& cu_seqlens, int64_t total, torch::Device device) {
  VERL_CHECK(cu_seqlens.dim() == 1 && cu_seqlens.size(0) >= 2,
             "varlen attention: cu_seqlens must be (n+1,) with n >= 1, got ", cu_seqlens.sizes());
  VERL_CHECK(!at::isFloatingType(cu_seqlens.scalar_type()) && cu_seqlens.scalar_type() != torch::kBool,
             "varlen attention: cu_seqlens must be integer, got ", c10::toString(cu_seqlens.scalar_type()));
  VarlenLayout layout;
  layout.cu_seqlens = cu_seqlens.to(torch::kCPU).to(torch::kLong).contiguous();
  layout.total = total;
  const int64_t n = layout.cu_seqlens.size(0) - 1;
  const int64_t* cu = layout.cu_seqlens.data_ptr<int64_t>();
  VERL_CHECK(cu[0] == 0 && cu[n] == total, "varlen attention: cu_seqlens must rise from 0 to total (", total,
             "), got ", layout.cu_seqlens);

  // Sequences by length, groups in order of first appearance.
  std::map<int64_t, size_t> group_of_length;
  std::vector<std::vector<int64_t>> starts;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = cu[i + 1] - cu[i];
    VERL_CHECK(len >= 0, "varlen attention: cu_seqlens must be non-decreasing, got ", layout.cu_seqlens);
    if (len == 0) continue;
    auto [it, inserted] = group_of_length.emplace(len, layout.groups.size());
    if (inserted) {
      layout.groups.push_back({len, 0, cu[i], true, {}});
      starts.emplace_back();
    }
    starts[it->second].push_back(cu[i]);
    layout.max_length = std::max(layout.max_length, len);
  }
  // Every device index (cu_seqlens for flash attention, each scattered group's tokens, the inverse order) reaches the
  // device in one copy (HostArrays: on CUDA, no host synchronisation; a pageable copy per group cost one each).
  detail::HostArrays arrays;
  const size_t cu_at = arrays.add(c10::ArrayRef<int64_t>(cu, n + 1));
  std::vector<size_t> index_at(layout.groups.size(), 0);
  bool in_packed_order = true;
  int64_t offset = 0;  // where the group's rows start in the concatenated output
  std::vector<int64_t> order;  // packed token of each concatenated row
  order.reserve(total);
  for (size_t g = 0; g < layout.groups.size(); ++g) {
    Group& group = layout.groups[g];
    group.count = static_cast<int64_t>(starts[g].size());
    for (size_t j = 0; j < starts[g].size(); ++j)
      group.contiguous = group.contiguous && starts[g][j] == group.first_start + static_cast<int64_t>(j) * group.length;
    in_packed_order = in_packed_order && group.contiguous && group.first_start == offset;
    for (int64_t s : starts[g])
      for (int64_t t = 0; t < group.length; ++t) order.push_back(s + t);
    const int64_t rows = group.count * group.length;
    if (!group.contiguous) index_at[g] = arrays.add(c10::ArrayRef<int64_t>(order.data() + order.size() - rows, rows));
    offset += rows;
  }
  size_t inverse_at = 0;
  if (!in_packed_order) {
    std::vector<int64_t> inverse(total);
    for (int64_t i = 0; i < total; ++i) inverse[order[i]] = i;
    inverse_at = arrays.add(inverse);
  }
  const std::vector<torch::Tensor> staged = arrays.to(device);
  if (device.is_cuda()) layout.cu_seqlens_device = staged[cu_at].to(torch::kInt);
  for (size_t g = 0; g < layout.groups.size(); ++g)
    if (!layout.groups[g].contiguous) layout.groups[g].token_index = staged[index_at[g]];
  if (!in_packed_order) layout.inverse = staged[inverse_at];
  return layout;
}

namespace {

// Whether ATen's flash attention takes these inputs: CUDA, half precision, a head size it was built for. The GPU's
// generation (flash needs sm80+) is learned from the first call on each device: kUnknown -> kYes / kNo.
enum FlashState : int { kUnknown = 0, kYes = 1, kNo = 2 };
std::array<std::atomic<int>, 64> flash_state{};

bool flash_shapes(const torch::Tensor& q) {
  const int64_t d = q.size(2);
  return q.is_cuda() && (q.scalar_type() == torch::kBFloat16 || q.scalar_type() == torch::kHalf) && d % 8 == 0 &&
         d <= 256 && q.get_device() < static_cast<int64_t>(flash_state.size());
}

// One flash-attention varlen call over the packed sequences: q (heads, total, d) as (total, heads, d) views.
// A sliding window of w keys is flash attention's window (w - 1 to the left, none to the right).
torch::Tensor flash_varlen(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                           const VarlenLayout& layout, double scale, int64_t sliding_window) {
  const std::optional<int64_t> left = sliding_window > 0 ? std::optional<int64_t>(sliding_window - 1) : std::nullopt;
  const std::optional<int64_t> right = sliding_window > 0 ? std::optional<int64_t>(0) : std::nullopt;
  auto out = at::_flash_attention_forward(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1),
                                          layout.cu_seqlens_device, layout.cu_seqlens_device, layout.max_length,
                                          layout.max_length, /*dropout_p=*/0.0, /*is_causal=*/true,
                                          /*return_debug_mask=*/false, scale, left, right);
  return std::get<0>(out).transpose(0, 1);
}

}  // namespace

torch::Tensor varlen_causal_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                      const VarlenLayout& layout, double scale, int64_t sliding_window) {
  VERL_CHECK(q.dim() == 3 && k.dim() == 3 && v.dim() == 3 && q.size(1) == layout.total &&
                 k.size(1) == layout.total && v.size(1) == layout.total && k.sizes() == v.sizes() &&
                 q.size(2) == k.size(2) && k.size(0) > 0 && q.size(0) % k.size(0) == 0,
             "varlen attention: expected q (heads, ", layout.total, ", d), k/v (kv_heads, ", layout.total,
             ", d), got q ", q.sizes(), ", k ", k.sizes(), ", v ", v.sizes());
  const int64_t heads = q.size(0), kv_heads = k.size(0), d = q.size(2);
  if (layout.groups.empty()) return q.new_empty({heads, 0, d});
  if (layout.cu_seqlens_device.defined() && flash_shapes(q)) {
    std::atomic<int>& state = flash_state[static_cast<size_t>(q.get_device())];
    if (state.load() == kYes) return flash_varlen(q, k, v, layout, scale, sliding_window);
    if (state.load() == kUnknown) {
      try {
        torch::Tensor out = flash_varlen(q, k, v, layout, scale, sliding_window);
        state.store(kYes);
        return out;
      } catch (const c10::OutOfMemoryError&) {
        throw;
      } catch (const c10::Error& e) {  // e.g. a GPU older than flash attention's sm80: SDPA per group from now on
        state.store(kNo);
        std::cerr << "verl: flash attention is unavailable on cuda:" << q.get_device()
                  << "; packed attention runs SDPA per group of equal lengths (" << e.what_without_backtrace()
                  << ")\n";
      }
    }
  }

  std::vector<torch::Tensor> outputs;
  outputs.reserve(layout.groups.size());
  for (const VarlenLayout::Group& g : layout.groups) {
    // (h, count * length, d) -> (count, h, length, d): one batch of equal-length sequences.
    auto batch = [&](const torch::Tensor& x) {
      torch::Tensor rows = g.contiguous ? x.narrow(1, g.first_start, g.count * g.length)
                                        : x.index_select(1, g.token_index);
      return rows.reshape({x.size(0), g.count, g.length, d}).transpose(0, 1);
    };
    // A window shorter than the group's sequences: an explicit band mask (causal within the window).
    std::optional<torch::Tensor> band;
    if (sliding_window > 0 && sliding_window < g.length) {
      torch::Tensor idx = torch::arange(g.length, torch::dtype(torch::kLong).device(q.device()));
      torch::Tensor distance = idx.unsqueeze(1) - idx.unsqueeze(0);
      band = (distance >= 0).logical_and(distance < sliding_window);
    }
    torch::Tensor out = at::scaled_dot_product_attention(batch(q), batch(k), batch(v), band, 0.0,
                                                         /*is_causal=*/!band.has_value(), scale,
                                                         /*enable_gqa=*/kv_heads != heads);
    outputs.push_back(out.transpose(0, 1).reshape({heads, g.count * g.length, d}));
  }
  torch::Tensor out = outputs.size() == 1 ? outputs.front() : torch::cat(outputs, 1);
  return layout.inverse.defined() ? out.index_select(1, layout.inverse) : out;
}

}  // namespace verl::kernels
