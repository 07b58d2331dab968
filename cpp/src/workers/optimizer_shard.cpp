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

OptimizerShard::OptimizerShard(std::vector<torch::Tensor> parameters, std::shared_ptr<dist::Communicator> communicator)
    : parameters_(std::move(parameters)), comm_(std::move(communicator)) {
  VERL_CHECK(comm_ != nullptr, "OptimizerShard: the communicator is null");
  VERL_CHECK(!parameters_.empty(), "OptimizerShard: no parameters");
  const auto dtype = parameters_.front().scalar_type();
  const auto device = parameters_.front().device();
  for (const auto& p : parameters_) {
    VERL_CHECK(p.scalar_type() == dtype && p.device() == device, "OptimizerShard: the parameters must share one dtype ",
               "and device (the master weights), got ", p.scalar_type(), " on ", p.device(), " and ", dtype, " on ",
               device);
    numel_ += p.numel();
  }
  const int64_t n = comm_->world_size();
  slice_numel_ = (numel_ + n - 1) / n;
  master_ = torch::zeros({slice_numel_}, parameters_.front().options().requires_grad(false));
  master_.set_requires_grad(true);
}

void OptimizerShard::gather_gradients() {
  torch::NoGradGuard no_grad;
  const int64_t begin = rank() * slice_numel_;
  for_each_piece(parameters_, begin, begin + slice_numel_, [&](size_t i, int64_t flat, int64_t at, int64_t len) {
    master_.narrow(0, flat - begin, len).copy_(parameters_[i].detach().reshape(-1).narrow(0, at, len));
  });
  std::vector<torch::Tensor> pieces;
  pieces.reserve(parameters_.size() + 1);
  for (auto& p : parameters_) {
    pieces.push_back(p.grad().defined() ? p.grad().reshape(-1) : torch::zeros({p.numel()}, p.options()));
  }
  const int64_t padding = slice_numel_ * world_size() - numel_;
  if (padding > 0) pieces.push_back(torch::zeros({padding}, parameters_.front().options()));
  torch::Tensor grad = comm_->reduce_scatter_sum(torch::cat(pieces));
  grad.div_(static_cast<double>(world_size()));
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
  const torch::Tensor flat = comm_->all_gather_flat(master_.detach());
  int64_t offset = 0;
  for (auto& p : parameters_) {
    p.copy_(flat.narrow(0, offset, p.numel()).view(p.sizes()));  // bumps the version: the compute copy refreshes
    offset += p.numel();
  }
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
    out.narrow(0, flat - begin, len).copy_(per_parameter[i].reshape(-1).narrow(0, at, len));
  });
  return out;
}

}  // namespace verl::workers::detail
