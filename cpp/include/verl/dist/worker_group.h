// verl::dist::WorkerGroup: how the trainer (the single controller, rank 0) runs work on every rank (the
// multi-controller workers) -- HybridFlow's split. Each worker registers its methods once on every rank, each with its
// dispatch mode (verl's @register(dispatch_mode=...)); the controller then calls group.call(name, data) and the
// method's mode says how `data` travels -- verl's DP_COMPUTE_PROTO: the rows are split into world_size contiguous
// chunks in order, rank r runs the method on chunk r, and the results come back to the controller concatenated in
// rank order. Every other rank sits in serve(), running what the controller calls, until the controller's release().
//
// Methods may use collectives among all ranks (a gradient all-reduce): every rank runs the same method at the same
// time. A method that throws on any rank makes call() throw on the controller, naming the rank.
//
// Two implementations: LocalWorkerGroup (one process: call() runs the method on the whole batch) and
// CollectiveWorkerGroup (c10d, verl/dist/communicator.h). make_worker_group picks by the communicator.
//
// A CollectiveWorkerGroup may also be a pool the controller feeds without computing in it (verl's one-step
// off-policy rollout pool: the trainer's controller and the rollout ranks): rows are then split over ranks 1.. only,
// and the controller's results are its workers'. Broadcast calls still run on every rank, the controller included.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "verl/core/export.h"
#include "verl/data/data_proto.h"
#include "verl/dist/communicator.h"

namespace verl::dist {

// A method's input is this rank's chunk; meta_info carries the caller's meta_info plus kRowOffsetKey, the
// index of the chunk's first row in the whole batch (per-row seeds stay those of one process).
using WorkerMethod = std::function<DataProto(const DataProto& chunk)>;

inline constexpr const char* kRowOffsetKey = "dp_row_offset";

// A method's result carrying its metrics in meta_info "metrics" (gathered into lists over the ranks by call()).
VERL_API DataProto with_metrics(DataProto result, const std::map<std::string, double>& metrics);

enum class Dispatch {
  kSplit,      // verl's DP_COMPUTE_PROTO: rows split into world_size equal chunks (DataError if they do not divide)
  kPadSplit,   // the same after padding with copies of the first rows up to a multiple of world_size (verl's
               // pad_dataproto_to_divisor); results unpadded. For passes where a duplicated row costs only time.
  kBroadcast,  // ONE_TO_ALL: every rank gets the whole batch; the controller's own result is returned
};

class VERL_API WorkerGroup {
 public:
  virtual ~WorkerGroup() = default;
  virtual int64_t rank() const = 0;
  virtual int64_t world_size() const = 0;
  bool is_controller() const { return rank() == 0; }
  // The communicator of a multi-process group; null for LocalWorkerGroup.
  virtual std::shared_ptr<Communicator> communicator() const = 0;

  // Registers (or replaces) a method on this rank with its dispatch mode. Register the same names and modes on every
  // rank before the first call. ranks_per_chunk = k > 1 (kSplit / kPadSplit): the ranks form world_size / k
  // consecutive groups of k that run one chunk together (a tensor-parallel rollout replica, verl's rollout mesh): the
  // rows are split into world_size / k chunks, every rank of group g gets chunk g, and the results (and metrics) are
  // the groups' first ranks'.
  void register_method(const std::string& name, WorkerMethod method, Dispatch dispatch = Dispatch::kSplit,
                       int64_t ranks_per_chunk = 1);
  bool has_method(const std::string& name) const { return methods_.count(name) != 0; }

  // Controller only: runs `name` on every rank with `data` dispatched as its registration says; the results in
  // order. The results' meta_info "metrics" are gathered into lists (DataProto::concat), one entry per rank.
  DataProto call(const std::string& name, const DataProto& data);
  // Workers only: runs the controller's calls until it calls release(). Returns immediately in a LocalWorkerGroup.
  virtual void serve() = 0;
  // Controller only: ends the workers' serve(). No-op in a LocalWorkerGroup.
  virtual void release() = 0;

 protected:
  // The call as the group runs it, `name`'s registration resolved.
  virtual DataProto dispatch_call(const std::string& name, const DataProto& data, Dispatch dispatch,
                                  int64_t ranks_per_chunk) = 0;
  DataProto run_method(const std::string& name, const DataProto& chunk) const;

 private:
  struct Registered {
    WorkerMethod method;
    Dispatch dispatch = Dispatch::kSplit;
    int64_t ranks_per_chunk = 1;
  };
  std::map<std::string, Registered> methods_;
};

// One process: call() runs the method on the whole batch.
class VERL_API LocalWorkerGroup : public WorkerGroup {
 public:
  int64_t rank() const override { return 0; }
  int64_t world_size() const override { return 1; }
  std::shared_ptr<Communicator> communicator() const override { return nullptr; }
  void serve() override {}
  void release() override {}

 protected:
  DataProto dispatch_call(const std::string& name, const DataProto& data, Dispatch dispatch,
                          int64_t ranks_per_chunk) override;
};

// Ranks of a c10d process group; rank 0 is the controller. `controller_computes` false: a pool (see above), of at
// least one worker besides the controller.
class VERL_API CollectiveWorkerGroup : public WorkerGroup {
 public:
  explicit CollectiveWorkerGroup(std::shared_ptr<Communicator> communicator, bool controller_computes = true);
  int64_t rank() const override { return comm_->rank(); }
  int64_t world_size() const override { return comm_->world_size(); }
  std::shared_ptr<Communicator> communicator() const override { return comm_; }
  void serve() override;
  void release() override;

 protected:
  DataProto dispatch_call(const std::string& name, const DataProto& data, Dispatch dispatch,
                          int64_t ranks_per_chunk) override;

 private:
  // Runs one call on this rank: the header (method, dispatch) and the chunk come from the controller; the result
  // (or this rank's error) goes back. Returns false for the controller's release.
  bool serve_one();
  DataProto run_and_gather(const std::string& name, const DataProto& chunk, int64_t pad_rows, Dispatch dispatch,
                           int64_t ranks_per_chunk);

  // The ranks split calls run on: all of them, or those after the controller in a pool.
  int64_t first_computing_rank() const { return controller_computes_ ? 0 : 1; }

  std::shared_ptr<Communicator> comm_;
  bool controller_computes_ = true;
};

// LocalWorkerGroup for a null communicator or a world of one, else CollectiveWorkerGroup.
VERL_API std::unique_ptr<WorkerGroup> make_worker_group(std::shared_ptr<Communicator> communicator);

}  // namespace verl::dist
