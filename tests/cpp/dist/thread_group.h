// Ranks as threads of one test process: a c10d backend whose collectives exchange tensors through shared memory, for
// unit tests of the C++ code that talks to a verl::dist::Communicator (LibTorch's wheels ship no Gloo headers, so a
// test cannot make a Gloo group in C++; the multi-process paths are tested under torchrun in tests/python/dist).
// Implements what Communicator uses: all-reduce (sum, max), reduce-scatter (sum), all-gather, all-to-all, and the
// broadcast, scatter and gather of its bytes collectives.
// The all-gather, the reduce-scatter and the all-to-all run when their Work is waited for, not when they start, as
// a real backend may still be moving the bytes: a caller that reads an output before wait(), or never waits (a
// collective the other ranks then wait for in vain), fails here too. Ranks exchange in the order they wait, the same
// on every rank.
#pragma once

#include <torch/torch.h>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "verl/dist/communicator.h"

namespace verl::testing {

// Where the threads meet: every rank deposits its tensor; once all have, each reads every rank's.
class ThreadExchange {
 public:
  explicit ThreadExchange(int world)
      : world_(world), slots_(static_cast<size_t>(world)), whats_(static_cast<size_t>(world)) {}

  // Every rank's `mine`, in rank order (the same call on every rank, as collectives are). `what` names the
  // collective as the rank started it (its kind, its place in the rank's start order, its size): the ranks must
  // agree, as a real backend pairs collectives by the order they start, not the order they are waited for. Throws
  // on a disagreement, and after a minute without the other ranks (a collective some rank never runs).
  std::vector<torch::Tensor> exchange(int rank, const torch::Tensor& mine, const std::string& what) {
    const auto patience = std::chrono::seconds(60);
    std::unique_lock<std::mutex> lock(mutex_);
    if (!cv_.wait_for(lock, patience, [&] { return !draining_; }))  // the previous round's readers are done
      throw std::runtime_error("ThreadExchange: rank " + std::to_string(rank) + " stuck before " + what);
    slots_[static_cast<size_t>(rank)] = mine.clone();
    whats_[static_cast<size_t>(rank)] = what;
    if (++arrived_ == world_) {
      draining_ = true;
      cv_.notify_all();
    } else if (!cv_.wait_for(lock, patience, [&] { return draining_; })) {
      throw std::runtime_error("ThreadExchange: rank " + std::to_string(rank) + " waited a minute for the other ranks "
                               "at " + what);
    }
    std::vector<torch::Tensor> all = slots_;
    std::string mismatch;
    for (size_t r = 0; r < whats_.size(); ++r)
      if (whats_[r] != whats_[0])
        mismatch = "rank 0 ran " + whats_[0] + ", rank " + std::to_string(r) + " " + whats_[r];
    if (++left_ == world_) {
      arrived_ = left_ = 0;
      draining_ = false;
      cv_.notify_all();
    }
    if (!mismatch.empty())
      throw std::runtime_error("ThreadExchange: the ranks disagree on the collective: " + mismatch);
    return all;
  }

 private:
  int world_;
  std::vector<torch::Tensor> slots_;
  std::vector<std::string> whats_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0, left_ = 0;
  bool draining_ = false;
};

class ThreadBackend : public c10d::Backend {
 public:
  ThreadBackend(int rank, int size, std::shared_ptr<ThreadExchange> hub)
      : c10d::Backend(rank, size), hub_(std::move(hub)) {}

  const std::string getBackendName() const override { return "threads"; }

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override {
    for (auto& t : tensors) {
      std::vector<torch::Tensor> all = hub_->exchange(getRank(), t, started("all_reduce", t));
      torch::Tensor r = all[0].clone();
      for (size_t i = 1; i < all.size(); ++i) {
        if (opts.reduceOp == c10d::ReduceOp::MAX) r = torch::maximum(r, all[i]);
        else r.add_(all[i]);
      }
      t.copy_(r);
    }
    return done();
  }

  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions&) override {
    return deferred([hub = hub_, rank = getRank(), size = getSize(), output, input,
                     what = started("reduce_scatter", input)]() mutable {
      std::vector<torch::Tensor> all = hub->exchange(rank, input, what);
      torch::Tensor sum = all[0].clone();
      for (size_t i = 1; i < all.size(); ++i) sum.add_(all[i]);
      output.copy_(sum.chunk(size)[static_cast<size_t>(rank)]);
    });
  }

  // How many collectives this rank started (tests count what a call costs; see collectives_started).
  int64_t started() const { return started_; }

  // How many all-to-alls any rank started (tests check which path a Communicator took).
  static std::atomic<int64_t>& all_to_all_calls() {
    static std::atomic<int64_t> calls{0};
    return calls;
  }

  // Equal splits only (empty split sizes), as Communicator asks.
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input, std::vector<int64_t>& out_splits,
                                               std::vector<int64_t>& in_splits,
                                               const c10d::AllToAllOptions&) override {
    TORCH_CHECK(out_splits.empty() && in_splits.empty(), "ThreadBackend: all-to-all with equal splits only");
    ++all_to_all_calls();
    return deferred([hub = hub_, rank = getRank(), size = getSize(), output, input,
                     what = started("all_to_all", input)]() mutable {
      std::vector<torch::Tensor> all = hub->exchange(rank, input, what);
      std::vector<torch::Tensor> mine;  // chunk `rank` of every rank's input, in rank order
      for (const torch::Tensor& t : all) mine.push_back(t.chunk(size)[static_cast<size_t>(rank)]);
      output.copy_(torch::cat(mine));
    });
  }

  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                  const c10d::AllgatherOptions&) override {
    return deferred([hub = hub_, rank = getRank(), output, input, what = started("all_gather", input)]() mutable {
      output.copy_(torch::cat(hub->exchange(rank, input, what)));
    });
  }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& opts) override {
    for (auto& t : tensors) {
      std::vector<torch::Tensor> all = hub_->exchange(getRank(), t, started("broadcast", t));
      t.copy_(all[static_cast<size_t>(opts.rootRank)]);
    }
    return done();
  }

  // Root's input[0][r] to rank r's output[0] (every part the same size, as Communicator sends them).
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& output, std::vector<std::vector<at::Tensor>>& input,
                                         const c10d::ScatterOptions& opts) override {
    const bool root = getRank() == opts.rootRank;
    const torch::Tensor mine = root ? torch::cat(input[0]) : torch::empty({0}, output[0].options());
    std::vector<torch::Tensor> all = hub_->exchange(getRank(), mine, started("scatter", output[0]));
    output[0].copy_(all[static_cast<size_t>(opts.rootRank)].chunk(getSize())[static_cast<size_t>(getRank())]);
    return done();
  }

  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& output, std::vector<at::Tensor>& input,
                                        const c10d::GatherOptions& opts) override {
    std::vector<torch::Tensor> all = hub_->exchange(getRank(), input[0], started("gather", input[0]));
    if (getRank() == opts.rootRank) {
      for (size_t r = 0; r < all.size(); ++r) output[0][r].copy_(all[r]);
    }
    return done();
  }

 private:
  // The name of the collective this rank starts now: its kind, its place in this rank's start order, its size.
  std::string started(const char* kind, const torch::Tensor& t) {
    return std::string(kind) + " #" + std::to_string(started_++) + " of " + std::to_string(t.numel()) + " elements";
  }

  struct Done : c10d::Work {
    bool isCompleted() override { return true; }
    bool wait(std::chrono::milliseconds) override { return true; }
  };
  static c10::intrusive_ptr<c10d::Work> done() { return c10::make_intrusive<Done>(); }
  // Runs `exchange` on the first wait().
  struct Deferred : c10d::Work {
    explicit Deferred(std::function<void()> exchange) : exchange_(std::move(exchange)) {}
    bool isCompleted() override { return exchange_ == nullptr; }
    bool wait(std::chrono::milliseconds) override {
      if (exchange_) {
        std::function<void()> run = std::move(exchange_);
        exchange_ = nullptr;
        run();
      }
      return true;
    }
    std::function<void()> exchange_;
  };
  static c10::intrusive_ptr<c10d::Work> deferred(std::function<void()> exchange) {
    return c10::make_intrusive<Deferred>(std::move(exchange));
  }

  std::shared_ptr<ThreadExchange> hub_;
  int64_t started_ = 0;
};

// The communicator of rank `rank` in a group of `size` threads that meet at `hub` (one hub per group, shared by its
// members): a subgroup of the ranks of on_thread_ranks gets a hub of its own.
// `as_gloo`: the group calls itself Gloo, so a Communicator takes its Gloo-only paths (the reduce-scatter as an
// all-to-all).
inline std::shared_ptr<dist::Communicator> thread_communicator(int rank, int size, std::shared_ptr<ThreadExchange> hub,
                                                               bool as_gloo = false) {
  const auto type = as_gloo ? c10d::ProcessGroup::BackendType::GLOO : c10d::ProcessGroup::BackendType::CUSTOM;
  auto group = c10::make_intrusive<c10d::ProcessGroup>(rank, size);
  group->setDefaultBackend(type);
  group->setBackend(c10::DeviceType::CPU, type, c10::make_intrusive<ThreadBackend>(rank, size, std::move(hub)));
  return std::make_shared<dist::Communicator>(group, torch::kCPU, std::chrono::seconds(60));
}

// How many collectives the rank of `comm` (a thread_communicator) has started.
inline int64_t collectives_started(const dist::Communicator& comm) {
  auto backend = comm.group()->getBackend(c10::DeviceType::CPU);
  const auto* threads = dynamic_cast<const ThreadBackend*>(backend.get());
  if (threads == nullptr) throw std::runtime_error("collectives_started: not a thread_communicator");
  return threads->started();
}

// Catch's assertion macros are not thread-safe (two rank threads failing a CHECK at once corrupted the heap and
// deadlocked a test): an assertion on a rank thread goes through VERL_RANK_ASSERT(CHECK(...)), one at a time. Never
// put a collective inside one (the other ranks would wait for the lock): compute the value first.
inline std::mutex& assertion_mutex() {
  static std::mutex m;
  return m;
}
#define VERL_RANK_ASSERT(...)                                                                \
  do {                                                                                       \
    std::lock_guard<std::mutex> verl_rank_assert_lock_(::verl::testing::assertion_mutex()); \
    __VA_ARGS__;                                                                             \
  } while (0)

// Runs fn(rank, communicator) on `world` threads, the ranks of one group; rethrows the first rank's exception.
inline void on_thread_ranks(int world, const std::function<void(int64_t, std::shared_ptr<dist::Communicator>)>& fn,
                            bool as_gloo = false) {
  auto hub = std::make_shared<ThreadExchange>(world);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        fn(rank, thread_communicator(rank, world, hub, as_gloo));
      } catch (...) {
        errors[static_cast<size_t>(rank)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace verl::testing
