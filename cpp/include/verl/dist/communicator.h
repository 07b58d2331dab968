// verl::dist::Communicator: the collectives of one training job's ranks, over a c10d process group -- Gloo on CPU,
// NCCL on CUDA -- created once from the launcher's rendezvous (torchrun: torch.distributed.init_process_group in
// Python; a C++ application passes the group it created). Every collective is blocking and waits at most `timeout`
// (actor_rollout_ref.nccl_timeout, honoured for Gloo too): a rank that died or hangs makes the others throw
// DistributedError naming the collective, instead of hanging.
//
// Tensors given to a collective may live anywhere; they travel on device() (the CPU for Gloo, this rank's GPU for
// NCCL) and come back where they were. Any dtype goes: one that a backend refuses (Gloo: int16, the unsigned
// types, the 8-bit floats) travels as its bytes in a gather or broadcast and is reduced in a wider dtype.
//
// The all-gather and the reduce-scatter also start asynchronously (ZeRO-3's prefetch: the next layer's weights
// arrive while this one computes): the call returns an InFlight at once, and InFlight::wait() gives what the blocking
// call would have (same timeout, same errors). Every rank must still start the same collectives in the same order;
// several may be in flight at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/types.h>

#include "verl/core/export.h"

namespace verl::dist {

class Communicator;

// A collective started by Communicator::*_async, not yet waited for. Wait for it exactly once before its inputs change
// or its output's memory goes: the backend keeps reading and writing them until it is done (the tensors it holds do
// not keep a storage that the caller releases or swaps out, as ZeRO-3 does with its unit buffers).
class VERL_API InFlight {
 public:
  InFlight() = default;
  // One owner per collective: moved, never copied (two copies could both wait, or one be dropped unawaited).
  InFlight(InFlight&&) noexcept = default;
  InFlight& operator=(InFlight&&) noexcept = default;
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
  // Whether a collective is in flight (false once waited for, and for a default-constructed one).
  bool pending() const { return work_.defined(); }
  // Blocks until the collective is done; its result where the input was (the all-gather's rank-order concatenation,
  // the reduce-scatter's slice of the sum). DistributedError on a timeout or a failed peer.
  torch::Tensor wait();

 private:
  friend class Communicator;
  const Communicator* comm_ = nullptr;
  c10::intrusive_ptr<c10d::Work> work_;
  std::vector<torch::Tensor> keep_;  // the inputs, alive until the collective is done
  torch::Tensor output_;
  torch::Device home_ = torch::kCPU;
  int64_t summed_chunks_ = 0;  // > 0: output_ holds that many chunks, summed in rank order on wait (see below)
  torch::ScalarType dtype_ = torch::kFloat;  // the caller's: output_ may hold its bytes or a wider type
  const char* what_ = "";
};

class VERL_API Communicator {
 public:
  // `group` is used as given (its rank and size); `device` is where its collectives run (a CUDA device for NCCL).
  Communicator(c10::intrusive_ptr<c10d::ProcessGroup> group, torch::Device device,
               std::chrono::milliseconds timeout = std::chrono::minutes(10));

  int64_t rank() const { return rank_; }
  int64_t world_size() const { return world_size_; }
  const torch::Device& device() const { return device_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  const std::string& backend() const { return backend_; }
  const c10::intrusive_ptr<c10d::ProcessGroup>& group() const { return group_; }

  // In place, every rank gets the result (bitwise the same on every rank).
  void all_reduce_sum_(torch::Tensor& tensor);
  void all_reduce_max_(torch::Tensor& tensor);
  // `tensor` takes root's values on every rank (same shape and dtype everywhere).
  void broadcast_(torch::Tensor& tensor, int64_t root);
  // `flat` (the same length on every rank, a multiple of world_size) summed over the ranks; this rank's
  // 1/world_size slice of the sum (slice r for rank r).
  torch::Tensor reduce_scatter_sum(const torch::Tensor& flat);
  // Every rank's `shard` (the same length everywhere) concatenated in rank order, on every rank.
  torch::Tensor all_gather_flat(const torch::Tensor& shard);
  // The same two, started (see InFlight). `out` (optional): where the all-gather writes, a contiguous tensor of
  // world_size * shard.numel() elements of shard's dtype on device(), returned by wait() (ZeRO-3 gathers into its
  // unit buffer so, without a copy).
  InFlight reduce_scatter_sum_async(const torch::Tensor& flat);
  InFlight all_gather_flat_async(const torch::Tensor& shard, const torch::Tensor& out = {});
  // Sum of `value` over the ranks (float64), on every rank.
  double all_reduce_sum(double value);
  void barrier();

  // Bytes of any length. Each takes one collective when the message fits in inline_capacity() bytes (less 8 to 16
  // of lengths), two otherwise.
  // Root's `bytes` on every rank.
  std::vector<char> broadcast_bytes(const std::vector<char>& bytes, int64_t root);
  // Root gets every rank's bytes in rank order; other ranks get an empty vector.
  std::vector<std::vector<char>> gather_bytes(const std::vector<char>& bytes, int64_t root);
  // Rank r gets parts[r] of root's `parts` (world_size entries on root; ignored elsewhere).
  std::vector<char> scatter_bytes(const std::vector<std::vector<char>>& parts, int64_t root);
  // The size of the bytes collectives' first round: 1 MiB / world_size, within 4 to 64 KiB.
  int64_t inline_capacity() const;

 private:
  void all_reduce_(torch::Tensor& tensor, c10d::ReduceOp::RedOpType op, const char* what);
  friend class InFlight;
  void wait(const c10::intrusive_ptr<c10d::Work>& work, const char* what) const;
  torch::Tensor to_device(const torch::Tensor& t) const;

  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  torch::Device device_;
  std::chrono::milliseconds timeout_;
  int64_t rank_ = 0;
  int64_t world_size_ = 1;
  std::string backend_;
  // Gloo's reduce-scatter moves twice the bytes an all-to-all does (measured on this machine's 2 ranks: 24 ms vs 15 ms
  // for 16 MB); over Gloo it is an all-to-all of the chunks and their sum in rank order here.
  bool reduce_scatter_by_all_to_all_ = false;
};

}  // namespace verl::dist
