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

constexpr int64_t kWord = sizeof(int64_t);

// A fixed-size first round: `words` int64 fields, then up to the rest of `capacity` bytes of `bytes`.
torch::Tensor first_round(const std::vector<int64_t>& words, const std::vector<char>& bytes, int64_t capacity) {
  torch::Tensor t = torch::zeros({capacity}, torch::kUInt8);
  auto* p = reinterpret_cast<char*>(t.data_ptr<uint8_t>());
  std::memcpy(p, words.data(), words.size() * kWord);
  const int64_t room = capacity - static_cast<int64_t>(words.size()) * kWord;
  if (!bytes.empty())
    std::memcpy(p + words.size() * kWord, bytes.data(), std::min<size_t>(bytes.size(), static_cast<size_t>(room)));
  return t;
}

int64_t read_word(const uint8_t* p, int64_t index) {
  int64_t v = 0;
  std::memcpy(&v, p + index * kWord, kWord);
  return v;
}

// `bytes` from byte `from` on, zero-padded to `length` bytes (a second round's share).
torch::Tensor rest_of(const std::vector<char>& bytes, int64_t from, int64_t length) {
  torch::Tensor t = torch::zeros({std::max<int64_t>(length, 1)}, torch::kUInt8);
  if (static_cast<int64_t>(bytes.size()) > from)
    std::memcpy(t.data_ptr<uint8_t>(), bytes.data() + from, bytes.size() - static_cast<size_t>(from));
  return t;
}

std::vector<char> tensor_bytes(const torch::Tensor& t, int64_t length) {
  torch::Tensor cpu = t.to(torch::kCPU).contiguous();
  const auto* p = reinterpret_cast<const char*>(cpu.data_ptr<uint8_t>());
  return std::vector<char>(p, p + length);
}

// The dtypes that Gloo and NCCL both take in every collective. Probed collective by collective with torch 2.14's
// ProcessGroupGloo: it refuses int16, uint16/32/64 and the 8-bit floats ("Invalid scalar type") and takes bfloat16;
// NCCL has no int16 or uint16. (ZeRO-3 once sent bf16 as int16 bits because an older Gloo refused bf16; on 2.14 that
// was the refused type, and every torchrun with the default dtype on a CPU with bf16 units failed: issue 40.)
bool every_backend_takes(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat: case torch::kDouble: case torch::kHalf: case torch::kBFloat16:
    case torch::kChar: case torch::kByte: case torch::kInt: case torch::kLong:
      return true;
    default:
      return false;
  }
}

// A collective that only moves data (gather, broadcast, all-to-all) sends another dtype as its bytes: exact, and no
// more bytes than the tensor has. `flat` is one-dimensional and contiguous.
torch::Tensor as_moved(const torch::Tensor& flat) {
  return every_backend_takes(flat.scalar_type()) ? flat : flat.view(torch::kByte);
}

// A reduction computes another dtype in a wider one that every backend takes (floats in float32, integers and bool
// in int64), and the result is narrowed back.
torch::ScalarType reduced_in(torch::ScalarType t) {
  if (every_backend_takes(t)) return t;
  if (c10::isFloatingType(t)) return torch::kFloat;
  VERL_CHECK(t == torch::kShort || t == torch::kUInt16 || t == torch::kUInt32 || t == torch::kBool,
             "no collective backend reduces ", t, " and it has no wider type that keeps every value");
  return torch::kLong;
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
  std::vector<torch::Tensor> buffers{to_device(tensor).to(reduced_in(tensor.scalar_type()))};
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
  f.dtype_ = flat.scalar_type();
  torch::Tensor input = to_device(flat).to(reduced_in(flat.scalar_type()));
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
  f.dtype_ = shard.scalar_type();
  torch::Tensor input = as_moved(to_device(shard));
  f.keep_ = {input};
  if (out.defined()) {
    VERL_CHECK(out.dim() == 1 && out.numel() == shard.numel() * world_size_ && out.is_contiguous() &&
                   out.scalar_type() == shard.scalar_type() && out.device() == device_,
               "all_gather: the output must be a contiguous ", shard.scalar_type(), " tensor of ",
               shard.numel() * world_size_, " elements on ", device_, ", got ", out.scalar_type(), " ", out.sizes(),
               " on ", out.device());
    f.output_ = as_moved(out);
    f.home_ = out.device();
  } else {
    f.output_ = torch::empty({input.numel() * world_size_}, input.options());
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
  if (out.scalar_type() != dtype_) {  // moved as bytes, or reduced in a wider dtype
    const bool moved_as_bytes = out.scalar_type() == torch::kByte;
    out = moved_as_bytes ? out.view(dtype_) : out.to(dtype_);
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
  const torch::Tensor moved = to_device(tensor);
  std::vector<torch::Tensor> buffers{as_moved(moved.view(-1))};  // a view of `moved`: the collective writes into it
  c10d::BroadcastOptions options;
  options.rootRank = root;
  wait(group_->broadcast(buffers, options), "broadcast");
  write_back(tensor, moved);
}

void Communicator::barrier() {
  // A one-element all-reduce rather than c10d's barrier: NCCL's barrier needs a device guess, and a reduction
  // waits on every rank just as well.
  torch::Tensor t = torch::zeros({1}, torch::kFloat32);
  all_reduce_(t, c10d::ReduceOp::SUM, "barrier");
}

// The bytes collectives move a message of any length. A first round of fixed size (inline_capacity) carries its
// length and, when it fits, the whole message: one collective instead of a length exchange plus a payload, since on
// Gloo a collective costs more in latency than in bytes (measured here, 2 ranks: a 16-float all-reduce 1.6 ms, a
// broadcast 0.2 ms; a worker-group call made six of them). Longer messages follow in a second round that every rank
// knows to take part in from the first.
int64_t Communicator::inline_capacity() const {
  // Every rank receives world_size times it in a gather: 1 MiB in all, 4 to 64 KiB each.
  return std::clamp<int64_t>((int64_t{1} << 20) / world_size_, 4096, 65536);
}

std::vector<char> Communicator::broadcast_bytes(const std::vector<char>& bytes, int64_t root) {
  VERL_CHECK(root >= 0 && root < world_size_, "broadcast: root ", root, " is not a rank of ", world_size_);
  const int64_t capacity = inline_capacity(), room = capacity - kWord;
  const bool sends = rank_ == root;
  // (Other ranks' `bytes` are overwritten by root's.)
  torch::Tensor first = first_round({static_cast<int64_t>(bytes.size())}, bytes, capacity);
  broadcast_(first, root);
  first = first.to(torch::kCPU);
  const uint8_t* p = first.data_ptr<uint8_t>();
  const int64_t length = read_word(p, 0);
  VERL_CHECK_AS(DistributedError, length >= 0, "broadcast: rank ", rank_, " read a length of ", length, " from root ",
                root, " (the ranks disagree on the call)");
  if (length > room) {
    torch::Tensor rest = sends ? rest_of(bytes, room, length - room) : torch::zeros({length - room}, torch::kUInt8);
    broadcast_(rest, root);
    if (!sends) {
      std::vector<char> out(p + kWord, p + capacity);
      const std::vector<char> tail = tensor_bytes(rest, length - room);
      out.insert(out.end(), tail.begin(), tail.end());
      return out;
    }
  }
  return sends ? bytes : std::vector<char>(p + kWord, p + kWord + length);
}

std::vector<std::vector<char>> Communicator::gather_bytes(const std::vector<char>& bytes, int64_t root) {
  VERL_CHECK(root >= 0 && root < world_size_, "gather: root ", root, " is not a rank of ", world_size_);
  // The first round is an all-gather, so that every rank learns every length and knows whether a second round (a
  // gather of what did not fit, to root alone) follows.
  const int64_t capacity = inline_capacity(), room = capacity - kWord;
  torch::Tensor all =
      all_gather_flat(first_round({static_cast<int64_t>(bytes.size())}, bytes, capacity)).to(torch::kCPU);
  const uint8_t* p = all.data_ptr<uint8_t>();
  std::vector<int64_t> lengths;
  for (int64_t r = 0; r < world_size_; ++r) {
    lengths.push_back(read_word(p + r * capacity, 0));
    VERL_CHECK_AS(DistributedError, lengths.back() >= 0, "gather: rank ", rank_, " read a length of ", lengths.back(),
                  " from rank ", r, " (the ranks disagree on the call)");
  }
  const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
  std::vector<std::vector<char>> out;
  if (rank_ == root) {
    for (int64_t r = 0; r < world_size_; ++r) {
      const uint8_t* q = p + r * capacity + kWord;
      out.emplace_back(q, q + std::min(lengths[static_cast<size_t>(r)], room));
    }
  }
  if (longest > room) {
    std::vector<torch::Tensor> input{rest_of(bytes, room, longest - room).to(device_)};
    std::vector<std::vector<torch::Tensor>> output;
    if (rank_ == root) {
      output.emplace_back();
      for (int64_t r = 0; r < world_size_; ++r) output[0].push_back(torch::empty({longest - room}, input[0].options()));
    }
    c10d::GatherOptions options;
    options.rootRank = root;
    wait(group_->gather(output, input, options), "gather");
    if (rank_ == root) {
      for (int64_t r = 0; r < world_size_; ++r) {
        const int64_t more = lengths[static_cast<size_t>(r)] - room;
        if (more <= 0) continue;
        const std::vector<char> tail = tensor_bytes(output[0][static_cast<size_t>(r)], more);
        out[static_cast<size_t>(r)].insert(out[static_cast<size_t>(r)].end(), tail.begin(), tail.end());
      }
    }
  }
  return out;
}

std::vector<char> Communicator::scatter_bytes(const std::vector<std::vector<char>>& parts, int64_t root) {
  VERL_CHECK(root >= 0 && root < world_size_, "scatter: root ", root, " is not a rank of ", world_size_);
  const int64_t capacity = inline_capacity(), room = capacity - 2 * kWord;
  // The first round gives each rank its own part's length and the longest part's (which sizes the second round).
  int64_t longest = 0;
  std::vector<std::vector<torch::Tensor>> input;
  if (rank_ == root) {
    VERL_CHECK(static_cast<int64_t>(parts.size()) == world_size_, "scatter: ", parts.size(), " parts for ",
               world_size_, " ranks");
    for (const auto& part : parts) longest = std::max<int64_t>(longest, static_cast<int64_t>(part.size()));
    input.emplace_back();
    for (const auto& part : parts)
      input[0].push_back(first_round({static_cast<int64_t>(part.size()), longest}, part, capacity).to(device_));
  }
  auto scatter = [&](std::vector<std::vector<torch::Tensor>>& in, int64_t length) {
    std::vector<torch::Tensor> output{torch::empty({length}, torch::TensorOptions().dtype(torch::kUInt8).device(device_))};
    c10d::ScatterOptions options;
    options.rootRank = root;
    wait(group_->scatter(output, in, options), "scatter");
    return output[0];
  };
  const torch::Tensor first = scatter(input, capacity).to(torch::kCPU);
  const uint8_t* p = first.data_ptr<uint8_t>();
  const int64_t length = read_word(p, 0);
  longest = read_word(p, 1);
  VERL_CHECK_AS(DistributedError, length >= 0 && length <= longest, "scatter: rank ", rank_, " read a length of ",
                length, " (longest ", longest, ") from root ", root, " (the ranks disagree on the call)");
  std::vector<char> out(p + 2 * kWord, p + 2 * kWord + std::min(length, room));
  if (longest > room) {
    std::vector<std::vector<torch::Tensor>> rest;
    if (rank_ == root) {
      rest.emplace_back();
      for (const auto& part : parts) rest[0].push_back(rest_of(part, room, longest - room).to(device_));
    }
    if (length > room) {
      const std::vector<char> tail = tensor_bytes(scatter(rest, longest - room), length - room);
      out.insert(out.end(), tail.begin(), tail.end());
    } else {
      scatter(rest, longest - room);
    }
  }
  return out;
}

}  // namespace verl::dist
