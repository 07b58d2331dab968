// ZeRO-3 for a CausalLM over data-parallel ranks (see workers/fully_sharded.h).
#include "workers/fully_sharded.h"

#include <algorithm>
#include <utility>

#include "core/tensor_storage.h"
#include "verl/model/tensor_parallel.h"
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

torch::Tensor all_gather(dist::Communicator& comm, const torch::Tensor& mine) {
  return comm.all_gather_flat(as_gatherable(mine.contiguous())).view(mine.scalar_type());
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
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
                                                            torch::Dtype compute_dtype, bool reshard_after_forward,
                                                            int64_t generation_tp) {
  VERL_CHECK(model != nullptr, "FullyShardedModel: the model is null");
  VERL_CHECK(model->parameter_gathering() == nullptr, "FullyShardedModel: the model is already sharded");
  std::shared_ptr<FullyShardedModel> sharded(
      new FullyShardedModel(model, std::move(communicator), compute_dtype, reshard_after_forward, generation_tp));
  model->set_parameter_gathering(sharded);
  return sharded;
}

FullyShardedModel::FullyShardedModel(std::shared_ptr<model::CausalLM> model,
                                     std::shared_ptr<dist::Communicator> communicator, torch::Dtype compute_dtype,
                                     bool reshard_after_forward, int64_t generation_tp)
    : comm_(std::move(communicator)),
      tp_(generation_tp),
      compute_dtype_(compute_dtype),
      reshard_after_forward_(reshard_after_forward) {
  VERL_CHECK(comm_ != nullptr, "FullyShardedModel: the communicator is null");
  VERL_CHECK(model->tensor_parallel_size() == 1, "FullyShardedModel: a tensor-parallel model is not sharded");
  const int64_t n = comm_->world_size();
  VERL_CHECK_AS(ConfigError, tp_ >= 1 && n % tp_ == 0, "actor_rollout_ref.rollout.tensor_model_parallel_size = ", tp_,
                " does not divide the ", n, " data-parallel ranks");
  if (tp_ > 1) (void)model::tensor_parallel_shard_config(model->config(), tp_);  // ConfigError if t does not split it
  const int64_t g = n / tp_;
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
    piece.dim = tp_ > 1 ? model::shard_dim(item.key()) : model::ShardDim::kReplicated;
    piece.chunked = tp_ > 1 && (piece.dim == model::ShardDim::kReplicated ||
                                (piece.dim == model::ShardDim::kRow && ends_with(item.key(), ".bias")));
    piece.slice_shape = piece.shape;
    if (piece.chunked) {
      piece.slice_shape = {(p.numel() + tp_ - 1) / tp_};
    } else if (piece.dim == model::ShardDim::kColumn) {
      piece.slice_shape[0] /= tp_;
    } else if (piece.dim == model::ShardDim::kRow) {
      piece.slice_shape[1] /= tp_;
    } else if (piece.dim == model::ShardDim::kVocab) {
      piece.slice_shape[0] = model::vocab_rows_per_rank(piece.shape[0], tp_);
    }
    piece.slice_numel = 1;
    for (int64_t d : piece.slice_shape) piece.slice_numel *= d;
    piece.block_offset = u.block_numel;
    u.block_numel += piece.slice_numel;
    u.numel += p.numel();
    u.pieces.push_back(std::move(piece));
  }
  parameter_count_ = named.size();
  config_ = model->config();
  head_kind_ = model->head_kind();
  int64_t total = 0;
  for (Unit& u : units_) {
    u.shard_numel = (u.block_numel + g - 1) / g;
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
    // t = 1: the laid-out image is the natural one, gathered into the buffer itself (padding included).
    const int64_t buffer_numel = tp_ == 1 ? n * u.shard_numel : u.numel;
    u.buffer = torch::empty({buffer_numel}, torch::dtype(compute_dtype_).device(device));
    for (Piece& piece : u.pieces) piece.tensor.set_data(u.buffer.narrow(0, piece.offset, piece.numel).view(piece.shape));
    verl::detail::release_storage(u.buffer);  // the parameters view it: they keep their shapes, not their memory
  }
}

FullyShardedModel::~FullyShardedModel() = default;

// The layout: element e of block k sits in piece j = e / S, which rank j * t + k keeps, so at (j * t + k) * S + e % S
// of the image gathered in rank order.
torch::Tensor FullyShardedModel::pack(const Unit& u, const std::function<torch::Tensor(const Piece&)>& whole,
                                      torch::Dtype dtype) const {
  const int64_t n = world_size(), S = u.shard_numel;
  torch::Tensor image = torch::zeros({n * S}, master_.options().dtype(dtype));
  for (const Piece& piece : u.pieces) {
    const torch::Tensor w = whole(piece);
    if (!w.defined()) continue;  // zeros: a parameter without a gradient
    for (int64_t k = 0; k < tp_; ++k) {
      torch::Tensor slice;
      if (tp_ == 1) {
        slice = w.reshape(-1);
      } else if (piece.chunked) {
        const int64_t c = piece.slice_numel, begin = std::min(piece.numel, k * c), end = std::min(piece.numel, begin + c);
        slice = torch::zeros({c}, w.options());
        if (end > begin) slice.narrow(0, 0, end - begin).copy_(w.reshape(-1).narrow(0, begin, end - begin));
      } else {
        slice = model::tensor_parallel_shard(piece.name, w, k, tp_).reshape(-1);
      }
      for (int64_t e = piece.block_offset, done = 0; done < piece.slice_numel;) {
        const int64_t j = e / S, within = e % S, len = std::min(S - within, piece.slice_numel - done);
        image.narrow(0, (j * tp_ + k) * S + within, len).copy_(slice.narrow(0, done, len));
        e += len;
        done += len;
      }
    }
  }
  return image;
}

void FullyShardedModel::unpack(const Unit& u, const torch::Tensor& image,
                               const std::function<torch::Tensor(const Piece&)>& whole) const {
  const int64_t S = u.shard_numel;
  for (const Piece& piece : u.pieces) {
    torch::Tensor w = whole(piece);
    for (int64_t k = 0; k < tp_; ++k) {
      torch::Tensor slice = torch::empty({piece.slice_numel}, image.options());
      for (int64_t e = piece.block_offset, done = 0; done < piece.slice_numel;) {
        const int64_t j = e / S, within = e % S, len = std::min(S - within, piece.slice_numel - done);
        slice.narrow(0, done, len).copy_(image.narrow(0, (j * tp_ + k) * S + within, len));
        e += len;
        done += len;
      }
      if (tp_ == 1) {
        w.copy_(slice.view(piece.shape));
      } else if (piece.chunked) {
        const int64_t c = piece.slice_numel, begin = std::min(piece.numel, k * c), end = std::min(piece.numel, begin + c);
        if (end > begin) w.view(-1).narrow(0, begin, end - begin).copy_(slice.narrow(0, 0, end - begin));
      } else if (piece.dim == model::ShardDim::kColumn) {
        w.narrow(0, k * piece.slice_shape[0], piece.slice_shape[0]).copy_(slice.view(piece.slice_shape));
      } else if (piece.dim == model::ShardDim::kRow) {
        w.narrow(1, k * piece.slice_shape[1], piece.slice_shape[1]).copy_(slice.view(piece.slice_shape));
      } else {  // vocab rows, the last rank's padded
        const int64_t rows = piece.slice_shape[0], vocab = piece.shape[0];
        const int64_t begin = std::min(vocab, k * rows), end = std::min(vocab, begin + rows);
        if (end > begin) w.narrow(0, begin, end - begin).copy_(slice.view(piece.slice_shape).narrow(0, 0, end - begin));
      }
    }
  }
}

int64_t FullyShardedModel::unit_gathered_bytes(size_t unit) const {
  return static_cast<int64_t>(units_.at(unit).buffer.numel() * units_.at(unit).buffer.element_size());
}

torch::Tensor FullyShardedModel::gather_unit(const Unit& u, const torch::Tensor& slice_state,
                                             torch::Dtype dtype) const {
  return all_gather(*comm_, slice_state.detach().narrow(0, u.master_offset, u.shard_numel).to(dtype));
}

void FullyShardedModel::gather(size_t unit) {
  Unit& u = units_.at(unit);
  if (u.gathered) return;
  torch::NoGradGuard no_grad;
  verl::detail::reallocate_storage(u.buffer, static_cast<size_t>(unit_gathered_bytes(unit)));
  u.gathered = true;
  gathered_bytes_ += unit_gathered_bytes(unit);
  peak_gathered_bytes_ = std::max(peak_gathered_bytes_, gathered_bytes_);
  const torch::Tensor image = gather_unit(u, master_, compute_dtype_);
  if (tp_ == 1) {
    u.buffer.copy_(image);
  } else {  // the TP slices back in place (the image is dropped after: one unit's copy in flight)
    // Written through views of the buffer, not the parameters: their version counters (which the tensors autograd
    // saved check) stay as they were.
    unpack(u, image, [&](const Piece& piece) { return u.buffer.narrow(0, piece.offset, piece.numel).view(piece.shape); });
  }
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
  torch::Tensor flat = pack(u, [](const Piece& piece) { return piece.tensor.grad(); }, reduce_dtype);
  for (const Piece& piece : u.pieces) piece.tensor.mutable_grad().reset();
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

std::vector<torch::Tensor> FullyShardedModel::full(const torch::Tensor& slice_state) const {
  VERL_CHECK(slice_state.numel() == master_.numel(), "FullyShardedModel::full: a state of ", slice_state.numel(),
             " elements for shards of ", master_.numel());
  std::vector<torch::Tensor> out(parameter_count_);
  for (const Unit& u : units_) {
    for (const Piece& piece : u.pieces) out[piece.parameter] = torch::empty(piece.shape, slice_state.options());
    unpack(u, gather_unit(u, slice_state, slice_state.scalar_type()),
           [&](const Piece& piece) { return out[piece.parameter]; });
  }
  return out;
}

torch::Tensor FullyShardedModel::slice(const std::vector<torch::Tensor>& per_parameter) const {
  VERL_CHECK(per_parameter.size() == parameter_count_, "FullyShardedModel: ", per_parameter.size(),
             " tensors for ", parameter_count_, " parameters");
  int64_t total = 0;  // master_'s size (the constructor slices before master_ exists)
  for (const Unit& u : units_) total += u.shard_numel;
  torch::Tensor out = torch::zeros({total}, per_parameter.front().options());
  for (const Unit& u : units_) {
    // The whole unit laid out, of which this rank keeps its piece (a unit's copy at a time).
    const torch::Tensor image = pack(u, [&](const Piece& piece) { return per_parameter[piece.parameter].detach(); },
                                     per_parameter.front().scalar_type());
    out.narrow(0, u.master_offset, u.shard_numel).copy_(image.narrow(0, rank() * u.shard_numel, u.shard_numel));
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
    const torch::Tensor image = gather_unit(u, master_, dtype);
    received += (world_size() - 1) * u.shard_numel * static_cast<int64_t>(image.element_size());
    std::map<std::string, torch::Tensor> state;
    for (const Piece& piece : u.pieces) state.emplace(piece.name, torch::empty(piece.shape, image.options()));
    unpack(u, image, [&](const Piece& piece) { return state.at(piece.name); });
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
  for (const Unit& u : units_) {
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
  std::vector<torch::Tensor> whole(parameter_count_);
  for (const Unit& u : units_)
    for (const Piece& piece : u.pieces) whole[piece.parameter] = state.at(piece.name);
  torch::NoGradGuard no_grad;
  master_.detach().copy_(slice(whole));
  release();  // the gathered copies hold the old weights
}

}  // namespace verl::workers::detail
