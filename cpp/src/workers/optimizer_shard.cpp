// The ZeRO-2 slice of an optimizer over data-parallel ranks (see workers/optimizer_shard.h).
#include "workers/optimizer_shard.h"

#include <algorithm>
#include <utility>

#include "verl/core/error.h"

namespace verl::workers::detail {
namespace {

// Calls fn(parameter index, flat offset of the parameter, offset in the parameter, length) for every piece of the
// parameters that falls inside the flat range [begin, end).
template <typename Fn>
void for_each_piece(const std::vector<torch::Tensor>& parameters, int64_t begin, int64_t end, Fn&& fn) {
  int64_t offset = 0;
  for (size_t i = 0; i < parameters.size(); ++i) {
    const int64_t n = parameters[i].numel();
    const int64_t lo = std::max(begin, offset), hi = std::min(end, offset + n);
    if (lo < hi) fn(i, lo, lo - offset, hi - lo);
    offset += n;
  }
}

}  // namespace

OptimizerShard::OptimizerShard(std::vector<torch::Tensor> parameters, std::shared_ptr<dist::Communicator> communicator,
                               int64_t bucket_numel)
    : parameters_(std::move(parameters)), comm_(std::move(communicator)), bucket_override_(bucket_numel) {
  VERL_CHECK(comm_ != nullptr, "OptimizerShard: the communicator is null");
  VERL_CHECK(bucket_numel >= 0, "OptimizerShard: bucket_numel must be >= 0, got ", bucket_numel);
  VERL_CHECK(!parameters_.empty(), "OptimizerShard: no parameters");
  const auto dtype = parameters_.front().scalar_type();
  const auto device = parameters_.front().device();
  for (const auto& p : parameters_) {
    VERL_CHECK(p.scalar_type() == dtype && p.device() == device, "OptimizerShard: the parameters must share one dtype ",
               "and device (the master weights), got ", p.scalar_type(), " on ", p.device(), " and ", dtype, " on ",
               device);
    VERL_CHECK(p.is_contiguous(), "OptimizerShard: a parameter is not contiguous");  // written through view(-1)
    numel_ += p.numel();
  }
  const int64_t n = comm_->world_size();
  slice_numel_ = (numel_ + n - 1) / n;
  master_ = torch::zeros({slice_numel_}, parameters_.front().options().requires_grad(false));
  master_.set_requires_grad(true);
}

// The collectives move one bucket at a time: rank r's elements [off, off + len) of its slice, for every r, packed
// rank after rank into a buffer of N * len elements, so no full-size flat copy of the gradients or the weights
// ever exists beside the parameters. About 128 MiB of fp32 per buffer, whatever N.
int64_t OptimizerShard::bucket_numel() const {
  if (bucket_override_ > 0) return std::min(bucket_override_, slice_numel_);
  return std::max<int64_t>(1, std::min<int64_t>(slice_numel_, (int64_t{1} << 25) / world_size()));
}

void OptimizerShard::gather_gradients() {
  torch::NoGradGuard no_grad;
  // The slice follows the parameters (a checkpoint load or any write since the last step reaches the master slice).
  master_.detach().copy_(slice(parameters_));
  torch::Tensor grad = torch::empty({slice_numel_}, master_.options().requires_grad(false));
  const int64_t b = bucket_numel();
  for (int64_t off = 0; off < slice_numel_; off += b) {
    const int64_t len = std::min(b, slice_numel_ - off);
    torch::Tensor bucket = torch::zeros({world_size() * len}, grad.options());  // padding and absent grads stay 0
    for (int64_t r = 0; r < world_size(); ++r) {
      const int64_t begin = r * slice_numel_ + off;
      for_each_piece(parameters_, begin, begin + len, [&](size_t i, int64_t flat, int64_t at, int64_t n) {
        const torch::Tensor& g = parameters_[i].grad();
        if (g.defined()) bucket.narrow(0, r * len + flat - begin, n).copy_(g.reshape(-1).narrow(0, at, n));
      });
    }
    grad.narrow(0, off, len).copy_(comm_->reduce_scatter_sum(bucket));
  }
  grad.div_(static_cast<double>(world_size()));  // the mean over ranks, as DDP / FSDP average
  master_.mutable_grad() = grad;
  for (auto& p : parameters_) p.mutable_grad() = torch::Tensor();  // the full gradients are not needed any more
}

double OptimizerShard::global_norm_sq() const {
  const torch::Tensor& g = master_.grad();
  const double local = g.defined() ? g.to(torch::kFloat64).pow(2).sum().item<double>() : 0.0;
  return comm_->all_reduce_sum(local);
}

void OptimizerShard::scatter_weights() {
  torch::NoGradGuard no_grad;
  const int64_t b = bucket_numel();
  for (int64_t off = 0; off < slice_numel_; off += b) {
    const int64_t len = std::min(b, slice_numel_ - off);
    const torch::Tensor bucket = comm_->all_gather_flat(master_.detach().narrow(0, off, len).contiguous());
    for (int64_t r = 0; r < world_size(); ++r) {
      const int64_t begin = r * slice_numel_ + off;
      for_each_piece(parameters_, begin, begin + len, [&](size_t i, int64_t flat, int64_t at, int64_t n) {
        // Writes through the parameter bump its version: the compute copy refreshes.
        parameters_[i].view(-1).narrow(0, at, n).copy_(bucket.narrow(0, r * len + flat - begin, n));
      });
    }
  }
}

void OptimizerShard::drop_gradients() {
  for (auto& p : parameters_) p.mutable_grad() = torch::Tensor();
}

std::vector<torch::Tensor> OptimizerShard::stand_ins() const {
  std::vector<torch::Tensor> out;
  for (const auto& p : parameters_) out.push_back(torch::empty_like(p.detach()));
  return out;
}

std::vector<torch::Tensor> OptimizerShard::full(const torch::Tensor& slice_state) const {
  const torch::Tensor flat = comm_->all_gather_flat(slice_state.detach().reshape(-1));
  std::vector<torch::Tensor> out;
  int64_t offset = 0;
  for (const auto& p : parameters_) {
    out.push_back(flat.narrow(0, offset, p.numel()).view(p.sizes()).clone());
    offset += p.numel();
  }
  return out;
}

torch::Tensor OptimizerShard::slice(const std::vector<torch::Tensor>& per_parameter) const {
  VERL_CHECK(per_parameter.size() == parameters_.size(), "OptimizerShard: ", per_parameter.size(),
             " state tensors for ", parameters_.size(), " parameters");
  torch::Tensor out = torch::zeros({slice_numel_}, per_parameter.front().options());
  const int64_t begin = rank() * slice_numel_;
  for_each_piece(parameters_, begin, begin + slice_numel_, [&](size_t i, int64_t flat, int64_t at, int64_t len) {
    out.narrow(0, flat - begin, len).copy_(per_parameter[i].detach().reshape(-1).narrow(0, at, len));
  });
  return out;
}

}  // namespace verl::workers::detail
