// ZeRO-3 -- FSDP's FULL_SHARD, as verl's actor and critic run under FSDP -- for a CausalLM over the data-parallel
// ranks of a communicator, written on c10d collectives.
//
// The model is cut into units, as verl's FSDP wrap policy cuts it: one per decoder layer, and a root unit with
// everything else (embedding, final norm, LM or value head). Each unit's parameters are laid end to end in a flat
// image padded to a multiple of N (workers/shard_layout.h); rank r keeps elements [r*S, (r+1)*S) of every unit as its master
// weights (the model's dtype: fp32 by default), and the AdamW state of those only (master(): every unit's shard, end
// to end, is the one tensor the optimizer updates). The module's parameters keep their names and shapes but hold
// storage only while their unit is gathered:
//   forward:  a layer's unit is all-gathered in the compute dtype (fsdp_config.dtype) right before the layer runs and
//             freed after it (reshard_after_forward; otherwise kept until its backward); with forward_prefetch the
//             next layer's all-gather starts before this layer runs, and arrives while it computes. The root unit is
//             gathered when the model first reads it and kept until the backward ends or the pass is released;
//   backward: a hook on the layer's output gathers the unit again before the layer's backward (or its recomputation,
//             with gradient checkpointing) and starts the all-gather of the layer before it (FSDP's BACKWARD_PRE
//             prefetch: two layers gathered at a time); once the layer's input gradient is done, the unit's gradients
//             are widened to fp32 and their reduce-scatter (summed over the ranks) starts; it is added into the
//             master gradient when the next unit's starts (one in flight, overlapping the next layer's backward) and
//             the unit is freed. finish_backward() does the same for the root unit and anything left.
// The collectives a pass starts depend only on the layer order, so every rank starts the same ones in the same order.
// A gathered unit's parameters are views of one flat buffer; freeing it releases the buffer's storage and gathering
// re-allocates it, so the tensors autograd saved in the forward see the weights again in the backward (FSDP frees
// and re-allocates the storage of its flat parameter the same way).
//
// Every rank must run the same forwards and backwards in the same order (each gather is a collective): the same
// number of micro-batches on every rank. The rollout engine cannot decode on the sharded module (rows finish at
// different steps on different ranks); it gets the weights through for_each_unit_state().
//
// The generation layout (the 3D-HybridEngine, docs/architecture.md section 5; workers/shard_layout.h defines it). With a
// rollout of tensor-parallel size t, a unit's flat image is laid out by TP slice, and rank (k, j) keeps piece j of
// block k. Training gathers all N pieces and puts the slices back in place (a copy; with t = 1 the image is the
// natural one and the parameters view it directly). The hand-over to the generation layout (for_each_unit_tp_shard)
// is one all-gather among the g = N / t ranks sharing TP rank k: every rank receives about (1/t - 1/N) of the
// weights' bytes and never holds more than one unit's TP slice beside its own copy.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "verl/core/export.h"
#include "verl/dist/communicator.h"
#include "verl/model/tensor_parallel.h"
#include "verl/model/transformer.h"
#include "verl/workers/mixed_precision.h"
#include "workers/optimizer_shard.h"
#include "workers/shard_layout.h"

namespace verl::workers::detail {

class VERL_API FullyShardedModel : public model::ParameterGathering,
                                   public ParameterSharding,
                                   public std::enable_shared_from_this<FullyShardedModel> {
 public:
  // Shards `model` (the whole model in its master dtype, the same on every rank) over `communicator`'s ranks and
  // installs the sharding in it (CausalLM::set_parameter_gathering). `compute_dtype`: the dtype its units are
  // gathered in (the master dtype for no mixed precision); `policy`: when (fsdp_config's switches).
  // `generation_tp`: the rollout's tensor-parallel size t (the layout above; 1: the natural image).
  // `replicas` (HSDP, verl's fsdp_size < N): the ranks that hold this rank's shard in the other shard groups; the
  // gradients reduce-scattered within the group are then summed over them too (the mean over all N ranks), as FSDP's
  // HYBRID_SHARD does. Null: `communicator` is every data-parallel rank.
  static std::shared_ptr<FullyShardedModel> shard(std::shared_ptr<model::CausalLM> model,
                                                  std::shared_ptr<dist::Communicator> communicator,
                                                  torch::Dtype compute_dtype, const GatherPolicy& policy = {},
                                                  int64_t generation_tp = 1,
                                                  std::shared_ptr<dist::Communicator> replicas = nullptr);
  ~FullyShardedModel() override;
  FullyShardedModel(const FullyShardedModel&) = delete;
  FullyShardedModel& operator=(const FullyShardedModel&) = delete;

  // model::ParameterGathering (the model calls these).
  void gather_root() override;
  torch::Tensor run_layer(int64_t layer, const torch::Tensor& input,
                          const std::function<torch::Tensor(const torch::Tensor&)>& forward) override;

  // After a backward (one micro-batch): the gradients of every unit not yet reduced are reduce-scattered into the
  // master gradient, and every unit is freed.
  void finish_backward();
  // Frees every gathered unit: the end of a pass without backward, or weights that changed.
  void release();
  // Multiplies the gradients as they are reduced (1 / loss scale for fp16: they arrive scaled).
  void set_gradient_scale(double scale) { gradient_scale_ = scale; }

  // ParameterSharding: the optimizer's side. Parameter order: the model's parameters() (the one-process optimizer's).
  torch::Tensor& master() override { return master_; }
  int64_t rank() const override { return comm_->rank(); }
  int64_t world_size() const { return comm_->world_size(); }  // of the shard group
  // HSDP: which copy of the shards this rank holds (0 without replicas), and how many there are.
  int64_t replica_rank() const override { return replicas_ ? replicas_->rank() : 0; }
  int64_t replica_count() const { return replicas_ ? replicas_->world_size() : 1; }
  // The reduced gradient sum (over the shard group, then the replicas) becomes the mean over all the ranks.
  void gather_gradients() override;
  double global_norm_sq() const override;
  void scatter_weights() override;  // the gathered copies are stale: freed
  void drop_gradients() override;
  std::vector<torch::Tensor> full(const torch::Tensor& slice_state) const override;
  torch::Tensor slice(const std::vector<torch::Tensor>& per_parameter) const override;
  std::vector<torch::Tensor> stand_ins() const override;

  // The whole model's weights by HF name (the master weights, in `dtype` if given), gathered a unit at a time on every
  // rank (collective). A tied model has no lm_head.weight, as CausalLM::named_state.
  std::map<std::string, torch::Tensor> full_state(std::optional<torch::Dtype> dtype = std::nullopt) const;
  // The same a unit at a time (the root first, then each layer): `fn` gets one unit's whole weights, so no more than
  // one unit is ever gathered beside the caller's copy (the rollout engine takes them so). `into` (optional) names
  // where a weight is unpacked (a contiguous tensor of its shape in `dtype`, e.g. the engine's own, which `fn` then
  // finds already written): no staging copy; an undefined answer gets a fresh tensor. Returns the bytes this rank
  // received in the gathers.
  int64_t for_each_unit_state(torch::Dtype dtype,
                              const std::function<void(const std::map<std::string, torch::Tensor>&)>& fn,
                              const UnpackTarget& into = {}) const;
  // The generation layout's hand-over: `fn` gets this rank's tensor-parallel shards (tensor_parallel_shard(name, W,
  // k, t) of every weight W, in `dtype`), a unit at a time. `slice_group`: the g ranks sharing this rank's TP rank k,
  // ordered by micro-DP group; `tensor_parallel`: this rank's t ranks, ordered by TP rank (both collective). Returns
  // the bytes this rank received.
  int64_t for_each_unit_tp_shard(torch::Dtype dtype, dist::Communicator& slice_group,
                                 dist::Communicator& tensor_parallel,
                                 const std::function<void(const std::map<std::string, torch::Tensor>&)>& fn) const;
  int64_t generation_tp() const { return tp_; }
  // Where every weight sits in the shards (the per-rank checkpoint files record it).
  const ShardLayout& layout() const { return layout_; }
  // Every rank keeps its slice of the whole model's weights `state` (CausalLM::load_state_dict's names and checks,
  // strict). Frees the gathered units.
  void load_full_state(const std::map<std::string, torch::Tensor>& state);
  // Every rank's own master weights as layout() places them (a flat tensor of master().numel() elements: what a
  // per-rank checkpoint file of the same layout holds). Frees the gathered units.
  void load_master(const torch::Tensor& shard);

  torch::Dtype compute_dtype() const { return compute_dtype_; }
  torch::Dtype master_dtype() const { return master_.scalar_type(); }
  const GatherPolicy& policy() const { return policy_; }
  // Memory: bytes of master weights on this rank; bytes of units gathered or arriving now, and the most at once since
  // reset_peak().
  int64_t master_bytes() const { return static_cast<int64_t>(master_.nbytes()); }
  int64_t gathered_bytes() const { return gathered_bytes_; }
  int64_t peak_gathered_bytes() const { return peak_gathered_bytes_; }
  void reset_peak() { peak_gathered_bytes_ = gathered_bytes_; }
  // The unit of the root (index 0) and of decoder layer i (index i + 1): its bytes gathered.
  int64_t unit_gathered_bytes(size_t unit) const;

  // The autograd hooks' entry points (a unit by index). gather() waits for a prefetch() in flight; free() too (the
  // collective must complete on every rank) before it drops the weights.
  void gather(size_t unit);
  void prefetch(size_t unit);
  void reduce_gradients(size_t unit);
  void free(size_t unit);

 private:
  using Unit = ShardLayout::Unit;
  using Piece = ShardLayout::Piece;
  // A unit's gathered weights: the natural image in the compute dtype, with storage only while gathered or arriving.
  struct UnitBuffer {
    torch::Tensor buffer;
    bool held = false;      // gathered or arriving: counted in gathered_bytes_
    bool gathered = false;  // the parameters hold the weights
    dist::InFlight arriving;  // its all-gather, started by prefetch() (see gathers_in_place())
  };
  // A unit's gradient sum in flight (reduce_gradients); added into the master gradient by complete_reduction().
  struct Reduction {
    size_t unit = 0;
    dist::InFlight sum;
  };
  void complete_reduction();

  FullyShardedModel(std::shared_ptr<model::CausalLM> model, std::shared_ptr<dist::Communicator> communicator,
                    torch::Dtype compute_dtype, const GatherPolicy& policy, int64_t generation_tp,
                    std::shared_ptr<dist::Communicator> replicas);
  torch::Tensor unit_shard(const Unit& u) const { return master_.detach().narrow(0, u.master_offset, u.shard_numel); }
  // Every rank's shard of `u` in `slice_state` (master()-shaped) concatenated in rank order (the laid-out image),
  // in `dtype` (16-bit floats gathered as int16); into `out` when given (a contiguous tensor of that size and dtype).
  torch::Tensor gather_unit(const Unit& u, const torch::Tensor& slice_state, torch::Dtype dtype,
                            const torch::Tensor& out = {}) const;
  // Whether a unit's all-gather writes every rank's shard into its buffer itself (t = 1, the model -- and so the
  // buffers -- on the communicator's device: the natural image, padding included); else into an image whose pieces gather() copies
  // (the TP slices put back in place).
  bool gathers_in_place() const { return tp_ == 1 && master_.device() == comm_->device(); }
  // Gradients are summed over the ranks in fp32 (or the master dtype, if wider).
  torch::Dtype reduce_dtype() const { return c10::promoteTypes(master_.scalar_type(), torch::kFloat); }
  // The module's parameter of a piece (a view of its unit's buffer).
  const torch::Tensor& parameter(const Piece& piece) const { return parameters_[piece.parameter]; }

  std::shared_ptr<dist::Communicator> comm_;
  std::shared_ptr<dist::Communicator> replicas_;  // HSDP; null otherwise
  ShardLayout layout_;
  int64_t tp_ = 1;
  torch::Dtype compute_dtype_;
  GatherPolicy policy_;
  std::vector<torch::Tensor> parameters_;  // the module's, in parameters() order
  std::vector<UnitBuffer> buffers_;        // one per unit of layout_
  model::ModelConfig config_;  // the model's, for load_full_state's checks
  model::HeadKind head_kind_ = model::HeadKind::kLanguageModel;
  torch::Tensor master_;
  Reduction reducing_;  // at most one reduce-scatter in flight
  double gradient_scale_ = 1.0;
  int64_t gathered_bytes_ = 0;
  int64_t peak_gathered_bytes_ = 0;
};

}  // namespace verl::workers::detail
