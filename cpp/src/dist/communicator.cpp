// c10d collectives, blocking or started (InFlight), with timeouts and typed errors (see verl/dist/communicator.h).
#include "verl/dist/communicator.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include <torch/csrc/autograd/variable.h>
#include <torch/version.h>

#include "core/untrusted.h"
#include "verl/core/error.h"

// torch 2.13 renamed _reduce_scatter_base / _allgather_base to *_single (the old names warn as deprecated).
#define VERL_TORCH_HAS_SINGLE_COLLECTIVES (TORCH_VERSION_MAJOR * 100 + TORCH_VERSION_MINOR >= 213)

namespace verl::dist {
namespace {

torch::Tensor bytes_tensor(const std::vector<char>& bytes, int64_t length, const torch::Device& device) {
  torch::Tensor t = torch::zeros({std::max<int64_t>(length, 1)}, torch::kUInt8);
  if (!bytes.empty()) std::memcpy(t.data_ptr<uint8_t>(), bytes.data(), bytes.size());
  return t.to(device);
}

std::vector<char> tensor_bytes(const torch::Tensor& t, int64_t length) {
  torch::Tensor cpu = t.to(torch::kCPU).contiguous();
  const auto* p = reinterpret_cast<const char*>(cpu.data_ptr<uint8_t>());
  return std::vector<char>(p, p + length);
}

// The collective wrote into `result`; `tensor` must hold it and show that it changed (its version counter moves, as
// with any in-place op: MixedPrecision and autograd rely on it).
void write_back(torch::Tensor& tensor, const torch::Tensor& result) {
  if (result.is_same(tensor)) {
    torch::autograd::impl::bump_version(tensor);
  } else {
    torch::NoGradGuard no_grad;
    tensor.copy_(result);
  }
}

}  // namespace

Communicator::Communicator(c10::intrusive_ptr<c10d::ProcessGroup> group, torch::Device device,
                           std::chrono::milliseconds timeout)
    : group_(std::move(group)), device_(device), timeout_(timeout) {
  VERL_CHECK(group_.defined(), "Communicator: the process group is null");
  VERL_CHECK(timeout_.count() > 0, "Communicator: the timeout must be positive");
  rank_ = group_->getRank();
  world_size_ = group_->getSize();
  backend_ = group_->getBackendName();
  reduce_scatter_by_all_to_all_ = backend_ == "gloo" && world_size_ > 1;
}

torch::Tensor Communicator::to_device(const torch::Tensor& t) const { return t.to(device_).contiguous(); }

void Communicator::wait(const c10::intrusive_ptr<c10d::Work>& work, const char* what) const {
  try {
    work->wait(timeout_);
  } catch (const std::exception& e) {
    VERL_FAIL(DistributedError, "collective ", what, " failed on rank ", rank_, " of ", world_size_, " (", backend_,
              ", timeout ", timeout_.count() / 1000.0, " s): another rank died, hung or disagreed on the call: ",
              untrusted::escape(e.what(), 600));
  }
}

void Communicator::all_reduce_(torch::Tensor& tensor, c10d::ReduceOp::RedOpType op, const char* what) {
  std::vector<torch::Tensor> buffers{to_device(tensor)};
  c10d::AllreduceOptions options;
  options.reduceOp = c10d::ReduceOp(op);
  wait(group_->allreduce(buffers, options), what);
  write_back(tensor, buffers[0]);
}

void Communicator::all_reduce_sum_(torch::Tensor& tensor) { all_reduce_(tensor, c10d::ReduceOp::SUM, "all_reduce(sum)"); }
void Communicator::all_reduce_max_(torch::Tensor& tensor) { all_reduce_(tensor, c10d::ReduceOp::MAX, "all_reduce(max)"); }

torch::Tensor Communicator::reduce_scatter_sum(const torch::Tensor& flat) {
  return reduce_scatter_sum_async(flat).wait();
}

torch::Tensor Communicator::all_gather_flat(const torch::Tensor& shard) { return all_gather_flat_async(shard).wait(); }

InFlight Communicator::reduce_scatter_sum_async(const torch::Tensor& flat) {
  VERL_CHECK(flat.dim() == 1 && flat.numel() % world_size_ == 0, "reduce_scatter: a flat tensor whose length divides by ",
             world_size_, " is needed, got ", flat.sizes());
  InFlight f;
  f.comm_ = this;
  f.home_ = flat.device();
  f.what_ = "reduce_scatter";
  torch::Tensor input = to_device(flat);
  f.keep_ = {input};
  if (reduce_scatter_by_all_to_all_) {
    // Rank r receives every rank's chunk r; wait() adds them up in rank order.
    f.output_ = torch::empty_like(input);
    std::vector<int64_t> equal_splits;  // empty: world_size equal chunks
#if VERL_TORCH_HAS_SINGLE_COLLECTIVES
    f.work_ = group_->all_to_all_single(f.output_, input, equal_splits, equal_splits);
#else
    f.work_ = group_->alltoall_base(f.output_, input, equal_splits, equal_splits);
#endif
    f.summed_chunks_ = world_size_;
    return f;
  }
  f.output_ = torch::empty({flat.numel() / world_size_}, input.options());
  c10d::ReduceScatterOptions options;
  options.reduceOp = c10d::ReduceOp(c10d::ReduceOp::SUM);
#if VERL_TORCH_HAS_SINGLE_COLLECTIVES
  f.work_ = group_->reduce_scatter_single(f.output_, input, options);
#else
  f.work_ = group_->_reduce_scatter_base(f.output_, input, options);
#endif
  return f;
}

InFlight Communicator::all_gather_flat_async(const torch::Tensor& shard, const torch::Tensor& out) {
  VERL_CHECK(shard.dim() == 1, "all_gather: a flat tensor is needed, got ", shard.sizes());
  InFlight f;
  f.comm_ = this;
  f.what_ = "all_gather";
  torch::Tensor input = to_device(shard);
  f.keep_ = {input};
  if (out.defined()) {
    VERL_CHECK(out.dim() == 1 && out.numel() == shard.numel() * world_size_ && out.is_contiguous() &&
                   out.scalar_type() == shard.scalar_type() && out.device() == device_,
               "all_gather: the output must be a contiguous ", shard.scalar_type(), " tensor of ",
               shard.numel() * world_size_, " elements on ", device_, ", got ", out.scalar_type(), " ", out.sizes(),
               " on ", out.device());
    f.output_ = out;
    f.home_ = out.device();
  } else {
    f.output_ = torch::empty({shard.numel() * world_size_}, input.options());
    f.home_ = shard.device();
  }
#if VERL_TORCH_HAS_SINGLE_COLLECTIVES
  f.work_ = group_->all_gather_single(f.output_, input);
#else
  f.work_ = group_->_allgather_base(f.output_, input);
#endif
  return f;
}

torch::Tensor InFlight::wait() {
  VERL_CHECK(pending(), "InFlight::wait: no collective in flight (waited for already?)");
  c10::intrusive_ptr<c10d::Work> work = std::move(work_);
  work_.reset();
  comm_->wait(work, what_);
  keep_.clear();
  torch::Tensor out = std::move(output_);
  if (summed_chunks_ > 0) {
    torch::NoGradGuard no_grad;
    const std::vector<torch::Tensor> chunks = out.chunk(summed_chunks_);
    torch::Tensor sum = chunks[0].clone();
    for (size_t i = 1; i < chunks.size(); ++i) sum.add_(chunks[i]);
    out = sum;
  }
  return out.to(home_);
}

double Communicator::all_reduce_sum(double value) {
  torch::Tensor t = torch::tensor({value}, torch::kFloat64);
  all_reduce_sum_(t);
  return t.item<double>();
}

void Communicator::broadcast_(torch::Tensor& tensor, int64_t root) {
  VERL_CHECK(root >= 0 && root < world_size_, "broadcast: root ", root, " is not a rank of ", world_size_);
  std::vector<torch::Tensor> buffers{to_device(tensor)};
  c10d::BroadcastOptions options;
  options.rootRank = root;
  wait(group_->broadcast(buffers, options), "broadcast");
  write_back(tensor, buffers[0]);
}

void Communicator::barrier() {
  // A one-element all-reduce rather than c10d's barrier: NCCL's barrier needs a device guess, and a reduction
  // waits on every rank just as well.
  torch::Tensor t = torch::zeros({1}, torch::kFloat32);
  all_reduce_(t, c10d::ReduceOp::SUM, "barrier");
}

std::vector<char> Communicator::broadcast_bytes(const std::vector<char>& bytes, int64_t root) {
  torch::Tensor length = torch::tensor({static_cast<int64_t>(bytes.size())}, torch::kLong);
  broadcast_(length, root);
  const int64_t n = length.item<int64_t>();
  torch::Tensor payload = bytes_tensor(rank_ == root ? bytes : std::vector<char>{}, n, device_);
  broadcast_(payload, root);
  return tensor_bytes(payload, n);
}

std::vector<std::vector<char>> Communicator::gather_bytes(const std::vector<char>& bytes, int64_t root) {
  VERL_CHECK(root >= 0 && root < world_size_, "gather: root ", root, " is not a rank of ", world_size_);
  // Lengths first (every rank learns the longest), then the payloads padded to it.
  torch::Tensor lengths = torch::zeros({world_size_}, torch::kLong);
  lengths[rank_] = static_cast<int64_t>(bytes.size());
  all_reduce_sum_(lengths);
  const int64_t longest = std::max<int64_t>(lengths.max().item<int64_t>(), 1);
  std::vector<torch::Tensor> input{bytes_tensor(bytes, longest, device_)};
  std::vector<std::vector<torch::Tensor>> output;
  if (rank_ == root) {
    output.emplace_back();
    for (int64_t r = 0; r < world_size_; ++r) output[0].push_back(torch::empty({longest}, input[0].options()));
  }
  c10d::GatherOptions options;
  options.rootRank = root;
  wait(group_->gather(output, input, options), "gather");
  std::vector<std::vector<char>> out;
  if (rank_ != root) return out;
  for (int64_t r = 0; r < world_size_; ++r) out.push_back(tensor_bytes(output[0][r], lengths[r].item<int64_t>()));
  return out;
}

std::vector<char> Communicator::scatter_bytes(const std::vector<std::vector<char>>& parts, int64_t root) {
  VERL_CHECK(root >= 0 && root < world_size_, "scatter: root ", root, " is not a rank of ", world_size_);
  torch::Tensor lengths = torch::zeros({world_size_}, torch::kLong);
  if (rank_ == root) {
    VERL_CHECK(static_cast<int64_t>(parts.size()) == world_size_, "scatter: ", parts.size(), " parts for ",
               world_size_, " ranks");
    for (int64_t r = 0; r < world_size_; ++r) lengths[r] = static_cast<int64_t>(parts[static_cast<size_t>(r)].size());
  }
  broadcast_(lengths, root);
  const int64_t longest = std::max<int64_t>(lengths.max().item<int64_t>(), 1);
  std::vector<torch::Tensor> output{torch::empty({longest}, torch::TensorOptions().dtype(torch::kUInt8).device(device_))};
  std::vector<std::vector<torch::Tensor>> input;
  if (rank_ == root) {
    input.emplace_back();
    for (const auto& part : parts) input[0].push_back(bytes_tensor(part, longest, device_));
  }
  c10d::ScatterOptions options;
  options.rootRank = root;
  wait(group_->scatter(output, input, options), "scatter");
  return tensor_bytes(output[0], lengths[rank_].item<int64_t>());
}

}  // namespace verl::dist
