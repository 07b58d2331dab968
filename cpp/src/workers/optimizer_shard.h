// ZeRO stage 2 for verl::workers::Optimizer (Optimizer::shard_over): over N data-parallel ranks, every rank keeps
// 1/N of the master weights' flat image and the AdamW state of that slice only, as verl's FSDP shards them.
//
// The trainable parameters (one dtype and device: the fp32 master weights) are laid end to end in a flat image,
// padded with zeros to a multiple of N; rank r owns elements [r*S, (r+1)*S), S = padded/N. One step:
//   gather_gradients: the parameters' gradients are reduce-scattered a bucket at a time (summed, then divided by N:
//                     the mean over ranks, as DDP / FSDP average) into the slice's gradient; the full gradients are
//                     dropped; the slice itself is refreshed from the parameters (a checkpoint load or any write
//                     since the last step reaches the master slice)
//   global_norm_sq:   the squared L2 norm of the whole gradient, summed over the ranks' slices
//   (AdamW updates the slice; the padding has zero gradient and stays zero)
//   scatter_weights:  the updated slices all-gathered (a bucket at a time) into every rank's parameters
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "verl/core/export.h"
#include "verl/dist/communicator.h"

namespace verl::workers::detail {

// How an Optimizer's parameters are spread over data-parallel ranks (Optimizer::shard_over): the AdamW updates one
// flat slice per rank, master(), and the sharding moves gradients into it and weights out of it. Implemented by
// OptimizerShard (ZeRO-2: every rank keeps the whole parameters) and FullyShardedModel (ZeRO-3,
// workers/fully_sharded.h: the parameters themselves are sharded).
class VERL_API ParameterSharding {
 public:
  virtual ~ParameterSharding() = default;
  // This rank's slice of the master weights: the leaf tensor the AdamW updates.
  virtual torch::Tensor& master() = 0;
  virtual int64_t rank() const = 0;
  // HSDP: which copy of the shards this rank holds (0 without replicas); only copy 0 writes checkpoints.
  virtual int64_t replica_rank() const { return 0; }
  // Before the update: master().grad() holds the mean over the ranks of the gradient's slice.
  virtual void gather_gradients() = 0;
  // Sum over the ranks of the slices' squared gradient norms (float64, on every rank).
  virtual double global_norm_sq() const = 0;
  // After the update: the parameters follow the updated slices.
  virtual void scatter_weights() = 0;
  // Drops the gradients kept outside master() (Optimizer::zero_grad).
  virtual void drop_gradients() = 0;

  // Checkpoints keep the one-process layout (a state tensor per parameter, its shape), whatever N:
  // full(): every rank's slice of a state tensor (master()-shaped) gathered into one tensor per parameter, in the
  // optimizer's parameter order (collective: every rank calls it); slice(): this rank's slice of per-parameter full
  // tensors; stand_ins(): uninitialised tensors of the parameters' whole shapes and master dtype.
  virtual std::vector<torch::Tensor> full(const torch::Tensor& slice_state) const = 0;
  virtual torch::Tensor slice(const std::vector<torch::Tensor>& per_parameter) const = 0;
  virtual std::vector<torch::Tensor> stand_ins() const = 0;
};

class VERL_API OptimizerShard : public ParameterSharding {
 public:
  // bucket_numel: elements per rank a collective moves at once (0: about 128 MiB of fp32 in all, whatever N; the
  // tests set a few elements to run the many-bucket path on tiny models).
  OptimizerShard(std::vector<torch::Tensor> parameters, std::shared_ptr<dist::Communicator> communicator,
                 int64_t bucket_numel = 0);

  torch::Tensor& master() override { return master_; }
  int64_t world_size() const { return comm_->world_size(); }
  int64_t rank() const override { return comm_->rank(); }

  void gather_gradients() override;
  double global_norm_sq() const override;
  void scatter_weights() override;
  void drop_gradients() override;

  std::vector<torch::Tensor> full(const torch::Tensor& slice_state) const override;
  torch::Tensor slice(const std::vector<torch::Tensor>& per_parameter) const override;
  std::vector<torch::Tensor> stand_ins() const override;

 private:
  std::vector<torch::Tensor> parameters_;
  std::shared_ptr<dist::Communicator> comm_;
  int64_t bucket_numel() const;

  int64_t bucket_override_ = 0;
  int64_t numel_ = 0;        // real elements of the flat image
  int64_t slice_numel_ = 0;  // S
  torch::Tensor master_;
};

}  // namespace verl::workers::detail
