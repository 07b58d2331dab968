// ZeRO-3 for a CausalLM over data-parallel ranks (see workers/fully_sharded.h).
#include "workers/fully_sharded.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <utility>

#include "core/tensor_storage.h"
#include "verl/core/error.h"

namespace verl::workers::detail {
namespace {

constexpr const char* kLayerPrefix = "model.layers.";

// The unit of a parameter: 0 for the root, i + 1 for decoder layer i.
size_t unit_of(const std::string& name) {
  if (name.rfind(kLayerPrefix, 0) != 0) return 0;
  return static_cast<size_t>(std::stoll(name.substr(std::string(kLayerPrefix).size()))) + 1;
}

// 16-bit floats travel as int16: the all-gather only moves bytes, and not every backend reduces or gathers bf16.
torch::Tensor as_gatherable(const torch::Tensor& t) {
  return t.element_size() == 2 && t.is_floating_point() ? t.view(torch::kShort) : t;
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
                                                            torch::Dtype compute_dtype, bool reshard_after_forward) {
  VERL_CHECK(model != nullptr, "FullyShardedModel: the model is null");
  VERL_CHECK(model->parameter_gathering() == nullptr, "FullyShardedModel: the model is already sharded");
  std::shared_ptr<FullyShardedModel> sharded(
      new FullyShardedModel(model, std::move(communicator), compute_dtype, reshard_after_forward));
  model->set_parameter_gathering(sharded);
  return sharded;
}

FullyShardedModel::FullyShardedModel(std::shared_ptr<model::CausalLM> model,
                                     std::shared_ptr<dist::Communicator> communicator, torch::Dtype compute_dtype,
                                     bool reshard_after_forward)
    : comm_(std::move(communicator)), compute_dtype_(compute_dtype), reshard_after_forward_(reshard_after_forward) {
  VERL_CHECK(comm_ != nullptr, "FullyShardedModel: the communicator is null");
  VERL_CHECK(model->tensor_parallel_size() == 1, "FullyShardedModel: a tensor-parallel model is not sharded");
  const auto named = model->named_parameters(/*recurse=*/true);
  const torch::Dtype master_dtype = model->dtype();
  const torch::Device device = model->device();
  units_.resize(model->model->layer_ptrs.size() + 1);
  for (size_t i = 0; i < named.size(); ++i) {
    const auto& item = named[i];
    const torch::Tensor& p = item.value();
    VERL_CHECK(p.scalar_type() == master_dtype && p.device() == device, "FullyShardedModel: parameter ", item.key(),
               " is ", p.scalar_type(), " on ", p.device(), ", the model ", master_dtype, " on ", device);
    Unit& u = units_.at(unit_of(item.key()));
    Piece piece{i, item.key(), p, p.sizes().vec(), u.numel, p.numel()};
    u.numel += p.numel();
    u.pieces.push_back(std::move(piece));
  }
  parameter_count_ = named.size();
  // HF state dicts of tied models carry lm_head.weight as an alias of the embedding (CausalLM::load_state_dict).
  tied_lm_head_ = model->head_kind() == model::HeadKind::kLanguageModel && model->config().tie_word_embeddings;
  const int64_t n = comm_->world_size();
  int64_t total = 0;
  for (Unit& u : units_) {
    u.shard_numel = (u.numel + n - 1) / n;
    u.master_offset = total;
    total += u.shard_numel;
  }
  // This rank's slice of every unit, then the module's parameters become views of the (freed) unit buffers.
  torch::NoGradGuard no_grad;
  master_ = torch::zeros({total}, torch::dtype(master_dtype).device(device));
  std::vector<torch::Tensor> whole(parameter_count_);
  for (const Unit& u : units_)
    for (const Piece& piece : u.pieces) whole[piece.parameter] = piece.tensor.detach();
  master_.copy_(slice(whole));
  master_.set_requires_grad(true);
  for (Unit& u : units_) {
    u.buffer = torch::empty({n * u.shard_numel}, torch::dtype(compute_dtype_).device(device));
    for (Piece& piece : u.pieces) piece.tensor.set_data(u.buffer.narrow(0, piece.offset, piece.numel).view(piece.shape));
    verl::detail::release_storage(u.buffer);  // the parameters view it: they keep their shapes, not their memory
  }
}

FullyShardedModel::~FullyShardedModel() = default;

int64_t FullyShardedModel::unit_gathered_bytes(size_t unit) const {
  return static_cast<int64_t>(units_.at(unit).buffer.numel() * units_.at(unit).buffer.element_size());
}

void FullyShardedModel::gather(size_t unit) {
  Unit& u = units_.at(unit);
  if (u.gathered) return;
  torch::NoGradGuard no_grad;
  verl::detail::reallocate_storage(u.buffer, static_cast<size_t>(unit_gathered_bytes(unit)));
  u.gathered = true;
  gathered_bytes_ += unit_gathered_bytes(unit);
  peak_gathered_bytes_ = std::max(peak_gathered_bytes_, gathered_bytes_);
  const torch::Tensor mine = unit_shard(u).to(compute_dtype_).contiguous();
  as_gatherable(u.buffer).copy_(comm_->all_gather_flat(as_gatherable(mine)));
}

void FullyShardedModel::free(size_t unit) {
  Unit& u = units_.at(unit);
  if (!u.gathered) return;
  verl::detail::release_storage(u.buffer);
  u.gathered = false;
  gathered_bytes_ -= unit_gathered_bytes(unit);
}

void FullyShardedModel::release() {
  for (size_t i = 0; i < units_.size(); ++i) free(i);
}

void FullyShardedModel::gather_root() { gather(0); }

torch::Tensor FullyShardedModel::run_layer(int64_t layer, const torch::Tensor& input,
                                           const std::function<torch::Tensor(const torch::Tensor&)>& forward) {
  const auto unit = static_cast<size_t>(layer) + 1;
  VERL_CHECK(layer >= 0 && unit < units_.size(), "FullyShardedModel: no decoder layer ", layer);
  const bool grad = torch::GradMode::is_enabled();
  torch::Tensor x = input;
  if (grad && input.requires_grad())
    x = ReduceAfterBackward::apply(input, reinterpret_cast<int64_t>(this), static_cast<int64_t>(unit));
  gather(unit);
  torch::Tensor y = forward(x);
  if (!grad || reshard_after_forward_) free(unit);
  if (grad && y.requires_grad()) {
    std::weak_ptr<FullyShardedModel> self = weak_from_this();
    y.register_hook([self, unit](torch::Tensor) {
      if (auto owner = self.lock()) owner->gather(unit);
    });
  }
  return y;
}

void FullyShardedModel::reduce_gradients(size_t unit) {
  Unit& u = units_.at(unit);
  torch::NoGradGuard no_grad;
  bool any = false;
  for (const Piece& piece : u.pieces) any = any || piece.tensor.grad().defined();
  if (!any) return;  // the same on every rank: they ran the same backward
  // Widened to fp32 (or the master dtype, if wider) before the sum over the ranks.
  const torch::Dtype reduce_dtype = c10::promoteTypes(master_.scalar_type(), torch::kFloat);
  torch::Tensor flat = torch::zeros({world_size() * u.shard_numel}, master_.options().dtype(reduce_dtype));
  for (const Piece& piece : u.pieces) {
    torch::Tensor& g = piece.tensor.mutable_grad();
    if (!g.defined()) continue;
    flat.narrow(0, piece.offset, piece.numel).copy_(g.reshape(-1));
    g.reset();
  }
  if (gradient_scale_ != 1.0) flat.mul_(gradient_scale_);
  const torch::Tensor mine = comm_->reduce_scatter_sum(flat).to(master_.scalar_type());
  torch::Tensor& grad = master_.mutable_grad();
  if (!grad.defined()) grad = torch::zeros_like(master_.detach());
  grad.narrow(0, u.master_offset, u.shard_numel).add_(mine);
}

void FullyShardedModel::finish_backward() {
  for (size_t i = 0; i < units_.size(); ++i) reduce_gradients(i);
  release();
}

void FullyShardedModel::gather_gradients() {
  finish_backward();  // anything a caller left
  torch::Tensor& grad = master_.mutable_grad();
  if (grad.defined()) {
    torch::NoGradGuard no_grad;
    grad.div_(static_cast<double>(world_size()));  // the mean over ranks, as FSDP averages
  }
}

double FullyShardedModel::global_norm_sq() const {
  const torch::Tensor& g = master_.grad();
  const double local = g.defined() ? g.to(torch::kFloat64).pow(2).sum().item<double>() : 0.0;
  return comm_->all_reduce_sum(local);
}

void FullyShardedModel::scatter_weights() { release(); }

void FullyShardedModel::drop_gradients() {
  for (Unit& u : units_)
    for (Piece& piece : u.pieces) piece.tensor.mutable_grad().reset();
}

torch::Tensor FullyShardedModel::gather_unit(const Unit& u, const torch::Tensor& slice_state) const {
  return comm_->all_gather_flat(slice_state.detach().narrow(0, u.master_offset, u.shard_numel).contiguous());
}

std::vector<torch::Tensor> FullyShardedModel::full(const torch::Tensor& slice_state) const {
  VERL_CHECK(slice_state.numel() == master_.numel(), "FullyShardedModel::full: a state of ", slice_state.numel(),
             " elements for shards of ", master_.numel());
  std::vector<torch::Tensor> out(parameter_count_);
  for (const Unit& u : units_) {
    const torch::Tensor flat = gather_unit(u, slice_state);
    for (const Piece& piece : u.pieces)
      out[piece.parameter] = flat.narrow(0, piece.offset, piece.numel).view(piece.shape).clone();
  }
  return out;
}

torch::Tensor FullyShardedModel::slice(const std::vector<torch::Tensor>& per_parameter) const {
  VERL_CHECK(per_parameter.size() == parameter_count_, "FullyShardedModel: ", per_parameter.size(),
             " tensors for ", parameter_count_, " parameters");
  int64_t total = 0;  // master_'s size (the constructor slices before master_ exists)
  for (const Unit& u : units_) total += u.shard_numel;
  torch::Tensor out = torch::zeros({total}, per_parameter.front().options());
  const int64_t r = rank();
  for (const Unit& u : units_) {
    const int64_t begin = r * u.shard_numel, end = begin + u.shard_numel;
    for (const Piece& piece : u.pieces) {
      const int64_t lo = std::max(begin, piece.offset), hi = std::min(end, piece.offset + piece.numel);
      if (lo >= hi) continue;
      out.narrow(0, u.master_offset + lo - begin, hi - lo)
          .copy_(per_parameter[piece.parameter].detach().reshape(-1).narrow(0, lo - piece.offset, hi - lo));
    }
  }
  return out;
}

std::vector<torch::Tensor> FullyShardedModel::stand_ins() const {
  std::vector<torch::Tensor> out(parameter_count_);
  for (const Unit& u : units_)
    for (const Piece& piece : u.pieces) out[piece.parameter] = torch::empty(piece.shape, master_.options());
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
    torch::Dtype dtype, const std::function<void(const std::map<std::string, torch::Tensor>&)>& fn) const {
  torch::NoGradGuard no_grad;
  int64_t received = 0;
  for (const Unit& u : units_) {
    // Narrowed before the gather when `dtype` is narrower: half the bytes move (as the units' own gathers).
    const torch::Tensor mine = unit_shard(u).to(dtype).contiguous();
    const torch::Tensor flat = comm_->all_gather_flat(as_gatherable(mine)).view(dtype);
    received += (world_size() - 1) * static_cast<int64_t>(mine.nbytes());
    std::map<std::string, torch::Tensor> state;
    for (const Piece& piece : u.pieces)
      state.emplace(piece.name, flat.narrow(0, piece.offset, piece.numel).view(piece.shape));
    fn(state);
  }
  return received;
}

void FullyShardedModel::load_full_state(const std::map<std::string, torch::Tensor>& state) {
  std::vector<torch::Tensor> whole(parameter_count_);
  std::vector<std::string> missing, mismatched;
  std::set<std::string> known;
  for (const Unit& u : units_) {
    for (const Piece& piece : u.pieces) {
      known.insert(piece.name);
      auto it = state.find(piece.name);
      if (it == state.end()) {
        missing.push_back(piece.name);
      } else if (it->second.sizes() != torch::IntArrayRef(piece.shape)) {
        std::ostringstream s;
        s << piece.name << " (given " << it->second.sizes() << ", model " << torch::IntArrayRef(piece.shape) << ")";
        mismatched.push_back(s.str());
      } else {
        whole[piece.parameter] = it->second;
      }
    }
  }
  std::vector<std::string> unexpected;
  for (const auto& [name, t] : state)
    if (!known.count(name) && !(name == "lm_head.weight" && tied_lm_head_)) unexpected.push_back(name);
  if (!missing.empty() || !mismatched.empty() || !unexpected.empty()) {
    std::ostringstream err;
    auto list = [&](const char* what, const std::vector<std::string>& names) {
      if (names.empty()) return;
      err << " " << what << ": [";
      for (size_t i = 0; i < names.size(); ++i) err << (i ? ", " : "") << names[i];
      err << "];";
    };
    list("missing", missing);
    list("unexpected", unexpected);
    list("shape mismatch", mismatched);
    VERL_FAIL(CheckpointError, "FullyShardedModel.load_full_state:", err.str());
  }
  torch::NoGradGuard no_grad;
  master_.detach().copy_(slice(whole));
  release();  // the gathered copies hold the old weights
}

}  // namespace verl::workers::detail
