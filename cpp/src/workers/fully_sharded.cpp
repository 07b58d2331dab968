// ZeRO-3 for a CausalLM over data-parallel ranks (see workers/fully_sharded.h).
#include "workers/fully_sharded.h"

#include <algorithm>
#include <utility>

#include "core/tensor_storage.h"
#include "verl/model/tensor_parallel.h"
#include "verl/core/error.h"

namespace verl::workers::detail {
namespace {

torch::Tensor all_gather(dist::Communicator& comm, const torch::Tensor& mine) {
  return comm.all_gather_flat(mine.contiguous());
}

// The world size of `communicator`, which a rollout of tensor-parallel size `tp` must divide (ConfigError naming
// the key).
int64_t checked_world_size(const std::shared_ptr<dist::Communicator>& communicator, int64_t tp) {
  VERL_CHECK(communicator != nullptr, "FullyShardedModel: the communicator is null");
  const int64_t n = communicator->world_size();
  VERL_CHECK_AS(ConfigError, tp >= 1 && n % tp == 0, "actor_rollout_ref.rollout.tensor_model_parallel_size = ", tp,
                " does not divide the ", n, " data-parallel ranks");
  return n;
}

std::vector<ShardedParameter> parameter_specs(const model::CausalLM& model) {
  std::vector<ShardedParameter> out;
  for (const auto& item : model.named_parameters(/*recurse=*/true))
    out.push_back({item.key(), item.value().sizes().vec(), model::fused_row_segments(model.config(), item.key())});
  return out;
}

// Identity in the forward; in the backward -- once the gradient of a layer's input is complete, so the layer's own
// backward is done -- the layer's unit reduces its gradients and frees its weights.
struct ReduceAfterBackward : public torch::autograd::Function<ReduceAfterBackward> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x, int64_t owner, int64_t unit) {
    ctx->saved_data["owner"] = owner;
    ctx->saved_data["unit"] = unit;
    return x.view_as(x);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out) {
    auto* owner = reinterpret_cast<FullyShardedModel*>(ctx->saved_data["owner"].toInt());
    const auto unit = static_cast<size_t>(ctx->saved_data["unit"].toInt());
    owner->reduce_gradients(unit);
    owner->free(unit);
    return {grad_out[0], torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

std::shared_ptr<FullyShardedModel> FullyShardedModel::shard(std::shared_ptr<model::CausalLM> model,
                                                            std::shared_ptr<dist::Communicator> communicator,
                                                            torch::Dtype compute_dtype, const GatherPolicy& policy,
                                                            int64_t generation_tp,
                                                            std::shared_ptr<dist::Communicator> replicas) {
  VERL_CHECK(model != nullptr, "FullyShardedModel: the model is null");
  VERL_CHECK(model->parameter_gathering() == nullptr, "FullyShardedModel: the model is already sharded");
  std::shared_ptr<FullyShardedModel> sharded(
      new FullyShardedModel(model, std::move(communicator), compute_dtype, policy, generation_tp, std::move(replicas)));
  model->set_parameter_gathering(sharded);
  return sharded;
}

FullyShardedModel::FullyShardedModel(std::shared_ptr<model::CausalLM> model,
                                     std::shared_ptr<dist::Communicator> communicator, torch::Dtype compute_dtype,
                                     const GatherPolicy& policy, int64_t generation_tp,
                                     std::shared_ptr<dist::Communicator> replicas)
    : comm_(std::move(communicator)),
      replicas_(std::move(replicas)),
      layout_(parameter_specs(*model), checked_world_size(comm_, generation_tp), generation_tp),
      tp_(generation_tp),
      compute_dtype_(compute_dtype),
      policy_(policy) {
  VERL_CHECK(model->tensor_parallel_size() == 1, "FullyShardedModel: a tensor-parallel model is not sharded");
  if (tp_ > 1) (void)model::tensor_parallel_shard_config(model->config(), tp_);  // ConfigError if t does not split it
  const int64_t n = comm_->world_size();
  const torch::Dtype master_dtype = model->dtype();
  const torch::Device device = model->device();
  for (const auto& item : model->named_parameters(/*recurse=*/true)) {
    const torch::Tensor& p = item.value();
    VERL_CHECK(p.scalar_type() == master_dtype && p.device() == device, "FullyShardedModel: parameter ", item.key(),
               " is ", p.scalar_type(), " on ", p.device(), ", the model ", master_dtype, " on ", device);
    parameters_.push_back(p);
  }
  config_ = model->config();
  head_kind_ = model->head_kind();
  // This rank's slice of every unit, then the module's parameters become views of the (freed) unit buffers.
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> whole;
  for (const torch::Tensor& p : parameters_) whole.push_back(p.detach());
  master_ = layout_.slice(whole, rank());
  master_.set_requires_grad(true);
  for (const Unit& u : layout_.units()) {
    // t = 1: the laid-out image is the natural one, gathered into the buffer itself (padding included).
    const int64_t buffer_numel = tp_ == 1 ? n * u.shard_numel : u.numel;
    UnitBuffer b{torch::empty({buffer_numel}, torch::dtype(compute_dtype_).device(device))};
    for (const Piece& piece : u.pieces)
      parameters_[piece.parameter].set_data(b.buffer.narrow(0, piece.offset, piece.numel).view(piece.shape));
    verl::detail::release_storage(b.buffer);  // the parameters view it: they keep their shapes, not their memory
    buffers_.push_back(std::move(b));
  }
}

FullyShardedModel::~FullyShardedModel() {
  try {
    release();  // nothing left in flight reading the master weights or writing a unit buffer
  } catch (...) {  // a failed peer: the job is ending anyway
  }
}

int64_t FullyShardedModel::unit_gathered_bytes(size_t unit) const {
  const torch::Tensor& b = buffers_.at(unit).buffer;
  return static_cast<int64_t>(b.numel() * b.element_size());
}

torch::Tensor FullyShardedModel::gather_unit(const Unit& u, const torch::Tensor& slice_state, torch::Dtype dtype,
                                             const torch::Tensor& out) const {
  const torch::Tensor mine = slice_state.detach().narrow(0, u.master_offset, u.shard_numel).to(dtype).contiguous();
  if (!out.defined()) return all_gather(*comm_, mine);
  comm_->all_gather_flat_async(mine, out).wait();
  return out;
}

void FullyShardedModel::prefetch(size_t unit) {
  UnitBuffer& b = buffers_.at(unit);
  if (b.held) return;  // gathered, or arriving
  const Unit& u = layout_.units()[unit];
  torch::NoGradGuard no_grad;
  b.held = true;
  gathered_bytes_ += unit_gathered_bytes(unit);
  peak_gathered_bytes_ = std::max(peak_gathered_bytes_, gathered_bytes_);
  const torch::Tensor mine = unit_shard(u).to(compute_dtype_).contiguous();
  if (gathers_in_place()) {
    verl::detail::reallocate_storage(b.buffer, static_cast<size_t>(unit_gathered_bytes(unit)));
    b.arriving = comm_->all_gather_flat_async(mine, b.buffer);
  } else {
    b.arriving = comm_->all_gather_flat_async(mine);
  }
}

void FullyShardedModel::gather(size_t unit) {
  UnitBuffer& b = buffers_.at(unit);
  if (b.gathered) return;
  prefetch(unit);  // unless it is already arriving
  torch::NoGradGuard no_grad;
  const torch::Tensor image = b.arriving.wait();
  if (!gathers_in_place()) {
    verl::detail::reallocate_storage(b.buffer, static_cast<size_t>(unit_gathered_bytes(unit)));
    if (tp_ == 1) {
      b.buffer.copy_(image);
    } else {  // the TP slices back in place (the image is dropped after: one unit's copy in flight)
      // Written through views of the buffer, not the parameters: their version counters (which the tensors autograd
      // saved check) stay as they were.
      layout_.unpack(unit, image, [&](const Piece& piece) {
        return b.buffer.narrow(0, piece.offset, piece.numel).view(piece.shape);
      });
    }
  }
  b.gathered = true;
}

void FullyShardedModel::free(size_t unit) {
  UnitBuffer& b = buffers_.at(unit);
  if (b.arriving.pending()) (void)b.arriving.wait();  // every rank completes the collective it started
  if (!b.held) return;
  verl::detail::release_storage(b.buffer);
  gathered_bytes_ -= unit_gathered_bytes(unit);
  b.held = b.gathered = false;
}

void FullyShardedModel::release() {
  complete_reduction();
  for (size_t i = 0; i < buffers_.size(); ++i) free(i);
}

void FullyShardedModel::gather_root() { gather(0); }

torch::Tensor FullyShardedModel::run_layer(int64_t layer, const torch::Tensor& input,
                                           const std::function<torch::Tensor(const torch::Tensor&)>& forward) {
  const auto unit = static_cast<size_t>(layer) + 1;
  VERL_CHECK(layer >= 0 && unit < buffers_.size(), "FullyShardedModel: no decoder layer ", layer);
  const bool grad = torch::GradMode::is_enabled();
  torch::Tensor x = input;
  if (grad && input.requires_grad())
    x = ReduceAfterBackward::apply(input, reinterpret_cast<int64_t>(this), static_cast<int64_t>(unit));
  gather(unit);
  if (policy_.forward_prefetch && unit + 1 < buffers_.size()) prefetch(unit + 1);
  torch::Tensor y;
  try {
    y = forward(x);
  } catch (...) {
    try {
      release();  // the prefetch in flight completes before its buffer can go
    } catch (...) {
    }
    throw;
  }
  if (!grad || policy_.reshard_after_forward) free(unit);
  if (grad && y.requires_grad()) {
    std::weak_ptr<FullyShardedModel> self = weak_from_this();
    y.register_hook([self, unit](torch::Tensor) {
      if (auto owner = self.lock()) {
        owner->gather(unit);
        if (unit > 1) owner->prefetch(unit - 1);  // the layer before: its backward comes next (unit 0 is the root)
      }
    });
  }
  return y;
}

void FullyShardedModel::reduce_gradients(size_t unit) {
  const Unit& u = layout_.units().at(unit);
  torch::NoGradGuard no_grad;
  bool any = false;
  for (const Piece& piece : u.pieces) any = any || parameter(piece).grad().defined();
  if (!any) return;  // the same on every rank: they ran the same backward
  torch::Tensor flat = layout_.pack(unit, [&](const Piece& piece) { return parameter(piece).grad(); },
                                    master_.options().dtype(reduce_dtype()));
  for (const Piece& piece : u.pieces) parameters_[piece.parameter].mutable_grad().reset();
  if (gradient_scale_ != 1.0) flat.mul_(gradient_scale_);
  complete_reduction();  // the previous unit's: one in flight at a time
  reducing_ = {unit, comm_->reduce_scatter_sum_async(flat)};
}

void FullyShardedModel::complete_reduction() {
  if (!reducing_.sum.pending()) return;
  const Unit& u = layout_.units().at(reducing_.unit);
  torch::NoGradGuard no_grad;
  const torch::Tensor mine = reducing_.sum.wait().to(master_.scalar_type());
  torch::Tensor& grad = master_.mutable_grad();
  if (!grad.defined()) grad = torch::zeros_like(master_.detach());
  grad.narrow(0, u.master_offset, u.shard_numel).add_(mine);
}

void FullyShardedModel::finish_backward() {
  for (size_t i = 0; i < buffers_.size(); ++i) reduce_gradients(i);
  release();  // the last reduction completes first
}

void FullyShardedModel::gather_gradients() {
  finish_backward();  // anything a caller left
  torch::Tensor& grad = master_.mutable_grad();
  if (grad.defined()) {  // on every rank alike: they ran the same backward
    torch::NoGradGuard no_grad;
    if (replicas_ && replicas_->world_size() > 1) {  // summed in fp32 (or the master dtype, if wider)
      torch::Tensor wide = grad.to(reduce_dtype());
      replicas_->all_reduce_sum_(wide);
      grad.copy_(wide);
    }
    grad.div_(static_cast<double>(world_size() * replica_count()));  // the mean over ranks, as FSDP averages
  }
}

double FullyShardedModel::global_norm_sq() const {
  const torch::Tensor& g = master_.grad();
  const double local = g.defined() ? g.to(torch::kFloat64).pow(2).sum().item<double>() : 0.0;
  return comm_->all_reduce_sum(local);
}

void FullyShardedModel::scatter_weights() { release(); }

void FullyShardedModel::drop_gradients() {
  if (reducing_.sum.pending()) (void)reducing_.sum.wait();  // completed on every rank, its sum dropped
  for (torch::Tensor& p : parameters_) p.mutable_grad().reset();
}

std::vector<torch::Tensor> FullyShardedModel::full(const torch::Tensor& slice_state) const {
  VERL_CHECK(slice_state.numel() == master_.numel(), "FullyShardedModel::full: a state of ", slice_state.numel(),
             " elements for shards of ", master_.numel());
  std::vector<torch::Tensor> out(parameters_.size());
  for (size_t i = 0; i < layout_.units().size(); ++i) {
    const Unit& u = layout_.units()[i];
    for (const Piece& piece : u.pieces) out[piece.parameter] = torch::empty(piece.shape, slice_state.options());
    layout_.unpack(i, gather_unit(u, slice_state, slice_state.scalar_type()),
                   [&](const Piece& piece) { return out[piece.parameter]; });
  }
  return out;
}

torch::Tensor FullyShardedModel::slice(const std::vector<torch::Tensor>& per_parameter) const {
  return layout_.slice(per_parameter, rank());
}

std::vector<torch::Tensor> FullyShardedModel::stand_ins() const {
  std::vector<torch::Tensor> out;
  for (const ShardedParameter& p : layout_.parameters()) out.push_back(torch::empty(p.shape, master_.options()));
  return out;
}

std::map<std::string, torch::Tensor> FullyShardedModel::full_state(std::optional<torch::Dtype> dtype) const {
  std::map<std::string, torch::Tensor> out;
  for_each_unit_state(dtype.value_or(master_dtype()), [&](const std::map<std::string, torch::Tensor>& unit) {
    out.insert(unit.begin(), unit.end());
  });
  return out;
}

int64_t FullyShardedModel::for_each_unit_state(
    torch::Dtype dtype, const std::function<void(const std::map<std::string, torch::Tensor>&)>& fn,
    const UnpackTarget& into) const {
  torch::NoGradGuard no_grad;
  int64_t received = 0, largest = 0;
  for (const Unit& u : layout_.units()) largest = std::max(largest, u.shard_numel);
  // Every unit's image lands in one buffer of the largest's size: one unit gathered at a time, no allocation per unit.
  const torch::Tensor buffer = torch::empty({largest * world_size()}, master_.options().dtype(dtype));
  for (size_t i = 0; i < layout_.units().size(); ++i) {
    const Unit& u = layout_.units()[i];
    // Narrowed before the gather when `dtype` is narrower: half the bytes move (as the units' own gathers).
    const torch::Tensor image = gather_unit(u, master_, dtype, buffer.narrow(0, 0, u.shard_numel * world_size()));
    received += (world_size() - 1) * u.shard_numel * static_cast<int64_t>(image.element_size());
    std::map<std::string, torch::Tensor> state;
    for (const Piece& piece : u.pieces) {
      torch::Tensor target = into ? into(piece.name, piece.shape, dtype) : torch::Tensor();
      if (target.defined()) {
        VERL_CHECK(target.sizes() == c10::IntArrayRef(piece.shape) && target.scalar_type() == dtype &&
                       target.device() == image.device() && target.is_contiguous(),
                   "FullyShardedModel: the target of ", piece.name, " is ", target.scalar_type(), " ", target.sizes(),
                   " on ", target.device(), ", not a contiguous ", dtype, " ", c10::IntArrayRef(piece.shape), " on ",
                   image.device());
      } else {
        target = torch::empty(piece.shape, image.options());
      }
      state.emplace(piece.name, std::move(target));
    }
    layout_.unpack(i, image, [&](const Piece& piece) { return state.at(piece.name); });
    fn(state);
  }
  return received;
}

int64_t FullyShardedModel::for_each_unit_tp_shard(
    torch::Dtype dtype, dist::Communicator& slice_group, dist::Communicator& tensor_parallel,
    const std::function<void(const std::map<std::string, torch::Tensor>&)>& fn) const {
  VERL_CHECK(tp_ > 1, "FullyShardedModel: for_each_unit_tp_shard needs the generation layout (generation_tp > 1)");
  const int64_t g = world_size() / tp_, k = rank() % tp_;
  VERL_CHECK(slice_group.world_size() == g && slice_group.rank() == rank() / tp_ &&
                 tensor_parallel.world_size() == tp_ && tensor_parallel.rank() == k,
             "FullyShardedModel: rank ", rank(), " needs the slice group of its ", g, " ranks with TP rank ", k,
             " (at ", rank() / tp_, ") and its tensor-parallel group of ", tp_, " (at ", k, "); got ",
             slice_group.world_size(), " ranks (at ", slice_group.rank(), ") and ", tensor_parallel.world_size(),
             " (at ", tensor_parallel.rank(), ")");
  torch::NoGradGuard no_grad;
  int64_t received = 0;
  for (const Unit& u : layout_.units()) {
    // Block k whole: this rank's TP slice of every weight, from the g ranks that keep its pieces.
    const torch::Tensor block = all_gather(slice_group, unit_shard(u).to(dtype));
    received += (g - 1) * u.shard_numel * static_cast<int64_t>(block.element_size());
    std::map<std::string, torch::Tensor> shards;
    for (const Piece& piece : u.pieces) {
      const torch::Tensor slice = block.narrow(0, piece.block_offset, piece.slice_numel);
      if (!piece.chunked) {
        shards.emplace(piece.name, slice.view(piece.slice_shape));
        continue;
      }
      // A replicated weight (or a row-parallel bias): its t chunks from the tensor-parallel group.
      const torch::Tensor whole = all_gather(tensor_parallel, slice).narrow(0, 0, piece.numel).view(piece.shape);
      received += (tp_ - 1) * piece.slice_numel * static_cast<int64_t>(block.element_size());
      shards.emplace(piece.name, model::tensor_parallel_shard(piece.name, whole, k, tp_));
    }
    fn(shards);
  }
  return received;
}

void FullyShardedModel::load_full_state(const std::map<std::string, torch::Tensor>& state) {
  model::check_state_dict(config_, head_kind_, state, /*strict=*/true, "FullyShardedModel.load_full_state");
  std::vector<torch::Tensor> whole;
  for (const ShardedParameter& p : layout_.parameters()) whole.push_back(state.at(p.name));
  release();  // the gathered copies hold the old weights, and nothing may still be reading the master ones
  torch::NoGradGuard no_grad;
  master_.detach().copy_(slice(whole));
}

void FullyShardedModel::load_master(const torch::Tensor& shard) {
  VERL_CHECK_AS(CheckpointError, shard.dim() == 1 && shard.numel() == master_.numel(), "FullyShardedModel: a shard of ",
                shard.numel(), " elements for master weights of ", master_.numel());
  release();  // the gathered copies hold the old weights, and nothing may still be reading the master ones
  torch::NoGradGuard no_grad;
  master_.detach().copy_(shard);
}

}  // namespace verl::workers::detail
