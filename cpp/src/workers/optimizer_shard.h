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

class VERL_API OptimizerShard {
 public:
  // bucket_numel: elements per rank a collective moves at once (0: about 128 MiB of fp32 in all, whatever N; the
  // tests set a few elements to run the many-bucket path on tiny models).
  OptimizerShard(std::vector<torch::Tensor> parameters, std::shared_ptr<dist::Communicator> communicator,
                 int64_t bucket_numel = 0);

  // This rank's slice of the master weights: the leaf tensor the AdamW updates.
  torch::Tensor& master() { return master_; }
  int64_t world_size() const { return comm_->world_size(); }
  int64_t rank() const { return comm_->rank(); }

  void gather_gradients();
  // Sum over the ranks of the slices' squared gradient norms (float64, on every rank).
  double global_norm_sq() const;
  void scatter_weights();

  // Checkpoints keep the one-process layout (a state tensor per parameter, its shape), whatever N:
  // full(): every rank's slice of a state tensor (slice-shaped) concatenated, padding dropped, as one tensor per
  // parameter (collective: every rank calls it); slice(): this rank's slice of per-parameter full tensors.
  std::vector<torch::Tensor> full(const torch::Tensor& slice_state) const;
  torch::Tensor slice(const std::vector<torch::Tensor>& per_parameter) const;

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
