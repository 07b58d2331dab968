// ZeRO-3's shard layout (see workers/shard_layout.h).
#include "workers/shard_layout.h"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

#include "verl/core/error.h"

namespace verl::workers::detail {
namespace {

constexpr const char* kLayerPrefix = "model.layers.";
// Bounds for layouts read from a file: far past any model, small enough that nothing built from them overflows.
constexpr int64_t kMaxLayers = 100'000;
constexpr int64_t kMaxParameters = 1'000'000;
constexpr int64_t kMaxNumel = int64_t{1} << 40;
constexpr int64_t kMaxRanks = 1'000'000;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Elements of `shape` (dimensions >= 0); InvalidArgument past kMaxNumel rather than an overflow.
int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    VERL_CHECK_AS(InvalidArgument, d >= 0 && (d == 0 || n <= kMaxNumel / d), "ShardLayout: shape ", c10::IntArrayRef(shape),
                  " is too large");
    n *= d;
  }
  return n;
}

// Where element e of block k's slice run [e, e + len) of a piece sits: piece j = e / S of block k, kept by rank
// j * t + k, so at (j * t + k) * S + e % S of the image gathered in rank order. Calls fn(image offset, slice offset,
// len) for each run within one rank's piece.
template <typename Fn>
void for_each_run(const ShardLayout::Piece& piece, int64_t S, int64_t t, int64_t k, Fn&& fn) {
  for (int64_t e = piece.block_offset, done = 0; done < piece.slice_numel;) {
    const int64_t j = e / S, within = e % S, len = std::min(S - within, piece.slice_numel - done);
    fn((j * t + k) * S + within, done, len);
    e += len;
    done += len;
  }
}

}  // namespace

size_t ShardLayout::unit_of(const std::string& name) {
  if (name.rfind(kLayerPrefix, 0) != 0) return 0;
  int64_t layer = 0;
  size_t i = std::string(kLayerPrefix).size();
  const size_t begin = i;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i) {
    layer = layer * 10 + (name[i] - '0');
    VERL_CHECK_AS(InvalidArgument, layer < kMaxLayers, "parameter '", name, "': layer index too large");
  }
  VERL_CHECK_AS(InvalidArgument, i > begin && i < name.size() && name[i] == '.', "parameter '", name,
                "' is not model.layers.<index>.<name>");
  return static_cast<size_t>(layer) + 1;
}

ShardLayout::ShardLayout(std::vector<ShardedParameter> parameters, int64_t world_size, int64_t generation_tp)
    : parameters_(std::move(parameters)), world_size_(world_size), tp_(generation_tp) {
  VERL_CHECK_AS(InvalidArgument, world_size_ >= 1 && world_size_ <= kMaxRanks, "ShardLayout: world size ",
                world_size_);
  VERL_CHECK_AS(InvalidArgument, tp_ >= 1 && world_size_ % tp_ == 0, "ShardLayout: tensor-parallel size ", tp_,
                " does not divide the ", world_size_, " ranks");
  VERL_CHECK_AS(InvalidArgument, static_cast<int64_t>(parameters_.size()) <= kMaxParameters, "ShardLayout: ",
                parameters_.size(), " parameters");
  const int64_t g = world_size_ / tp_;
  std::set<std::string> names;
  for (const ShardedParameter& p : parameters_)
    VERL_CHECK_AS(InvalidArgument, names.insert(p.name).second, "ShardLayout: parameter '", p.name, "' twice");
  size_t unit_count = 1;
  for (const ShardedParameter& p : parameters_) unit_count = std::max(unit_count, unit_of(p.name) + 1);
  units_.resize(unit_count);
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const ShardedParameter& p = parameters_[i];
    Unit& u = units_[unit_of(p.name)];
    Piece piece;
    piece.parameter = i;
    piece.name = p.name;
    piece.shape = p.shape;
    piece.segments = p.segments;
    piece.offset = u.numel;
    piece.numel = numel_of(p.shape);
    VERL_CHECK_AS(InvalidArgument, u.numel <= kMaxNumel, "ShardLayout: unit of parameter '", p.name,
                  "' is too large");
    piece.dim = tp_ > 1 ? model::shard_dim(p.name) : model::ShardDim::kReplicated;
    piece.chunked = tp_ > 1 && (piece.dim == model::ShardDim::kReplicated ||
                                (piece.dim == model::ShardDim::kRow && ends_with(p.name, ".bias")));
    piece.slice_shape = piece.shape;
    if (!piece.chunked && piece.dim != model::ShardDim::kReplicated) {
      // What tensor_parallel_shard splits: a column-parallel weight or bias (2-D or 1-D), a row-parallel weight and
      // the vocabulary's rows (2-D).
      const size_t axis = piece.dim == model::ShardDim::kRow ? 1 : 0;
      const size_t rank = piece.shape.size();
      VERL_CHECK_AS(InvalidArgument, rank == 2 || (rank == 1 && piece.dim == model::ShardDim::kColumn),
                    "ShardLayout: parameter '", p.name, "' of shape ", c10::IntArrayRef(p.shape),
                    " is not a tensor-parallel split weight");
      if (piece.dim == model::ShardDim::kVocab) {
        piece.slice_shape[0] = model::vocab_rows_per_rank(piece.shape[0], tp_);
      } else {
        VERL_CHECK_AS(InvalidArgument, piece.shape[axis] % tp_ == 0, "ShardLayout: parameter '", p.name,
                      "' of shape ", c10::IntArrayRef(p.shape), " does not split ", tp_, " ways");
        const bool fused = model::is_fused_projection(p.name);
        VERL_CHECK_AS(InvalidArgument, fused == !p.segments.empty(), "ShardLayout: parameter '", p.name, "' ",
                      fused ? "is a fused projection without its row segments" : "has row segments but is not fused");
        int64_t rows = 0;
        for (int64_t seg : p.segments) {
          VERL_CHECK_AS(InvalidArgument, seg > 0 && seg % tp_ == 0 && seg <= kMaxNumel, "ShardLayout: parameter '",
                        p.name, "' has a row segment of ", seg, " that does not split ", tp_, " ways");
          rows += seg;
        }
        VERL_CHECK_AS(InvalidArgument, !fused || rows == piece.shape[0], "ShardLayout: parameter '", p.name,
                      "' has ", piece.shape[0], " rows, its segments ", rows);
        piece.slice_shape[axis] /= tp_;
      }
    } else if (piece.chunked) {
      piece.slice_shape = {(piece.numel + tp_ - 1) / tp_};
    }
    piece.slice_numel = numel_of(piece.slice_shape);
    piece.block_offset = u.block_numel;
    u.block_numel += piece.slice_numel;
    u.numel += piece.numel;
    u.pieces.push_back(std::move(piece));
  }
  for (Unit& u : units_) {
    u.shard_numel = (u.block_numel + g - 1) / g;
    u.master_offset = shard_numel_;
    shard_numel_ += u.shard_numel;
  }
}

torch::Tensor ShardLayout::pack(size_t unit, const std::function<torch::Tensor(const Piece&)>& whole,
                                const torch::TensorOptions& options) const {
  const Unit& u = units_.at(unit);
  const int64_t S = u.shard_numel;
  torch::Tensor image = torch::zeros({world_size_ * S}, options);
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
        slice = model::tensor_parallel_shard(piece.name, w, k, tp_, piece.segments).reshape(-1);
      }
      for_each_run(piece, S, tp_, k, [&](int64_t at, int64_t from, int64_t len) {
        image.narrow(0, at, len).copy_(slice.narrow(0, from, len));
      });
    }
  }
  return image;
}

void ShardLayout::unpack(size_t unit, const torch::Tensor& image,
                         const std::function<torch::Tensor(const Piece&)>& whole) const {
  const Unit& u = units_.at(unit);
  const int64_t S = u.shard_numel;
  for (const Piece& piece : u.pieces) {
    torch::Tensor w = whole(piece);
    if (tp_ == 1 && w.is_contiguous()) {  // the runs land in the weight itself, no staging slice
      torch::Tensor flat = w.view(-1);
      for_each_run(piece, S, tp_, 0, [&](int64_t at, int64_t from, int64_t len) {
        flat.narrow(0, from, len).copy_(image.narrow(0, at, len));
      });
      continue;
    }
    for (int64_t k = 0; k < tp_; ++k) {
      torch::Tensor slice = torch::empty({piece.slice_numel}, image.options());
      for_each_run(piece, S, tp_, k, [&](int64_t at, int64_t from, int64_t len) {
        slice.narrow(0, from, len).copy_(image.narrow(0, at, len));
      });
      if (tp_ == 1) {
        w.copy_(slice.view(piece.shape));
      } else if (piece.chunked) {
        const int64_t c = piece.slice_numel, begin = std::min(piece.numel, k * c), end = std::min(piece.numel, begin + c);
        if (end > begin) w.view(-1).narrow(0, begin, end - begin).copy_(slice.narrow(0, 0, end - begin));
      } else if (piece.dim == model::ShardDim::kColumn) {
        model::tensor_parallel_unshard_column(w, slice.view(piece.slice_shape), k, tp_, piece.segments);
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

torch::Tensor ShardLayout::slice(const std::vector<torch::Tensor>& per_parameter, int64_t rank) const {
  VERL_CHECK(per_parameter.size() == parameters_.size(), "ShardLayout: ", per_parameter.size(), " tensors for ",
             parameters_.size(), " parameters");
  VERL_CHECK(rank >= 0 && rank < world_size_, "ShardLayout: rank ", rank, " of ", world_size_);
  torch::Tensor out = torch::zeros({shard_numel_}, per_parameter.front().options());
  for (size_t i = 0; i < units_.size(); ++i) {
    const Unit& u = units_[i];
    // The whole unit laid out, of which the rank keeps its piece (a unit's copy at a time).
    const torch::Tensor image = pack(i, [&](const Piece& piece) { return per_parameter[piece.parameter].detach(); },
                                     per_parameter.front().options());
    out.narrow(0, u.master_offset, u.shard_numel).copy_(image.narrow(0, rank * u.shard_numel, u.shard_numel));
  }
  return out;
}

std::vector<torch::Tensor> ShardLayout::join(const std::function<torch::Tensor(int64_t rank)>& rank_state) const {
  std::vector<torch::Tensor> states;
  for (int64_t r = 0; r < world_size_; ++r) {
    states.push_back(rank_state(r));
    VERL_CHECK(states.back().dim() == 1 && states.back().numel() == shard_numel_, "ShardLayout::join: rank ", r,
               "'s state has ", states.back().numel(), " elements, the layout ", shard_numel_);
  }
  std::vector<torch::Tensor> out(parameters_.size());
  for (size_t i = 0; i < units_.size(); ++i) {
    const Unit& u = units_[i];
    std::vector<torch::Tensor> pieces;
    for (const torch::Tensor& s : states) pieces.push_back(s.narrow(0, u.master_offset, u.shard_numel));
    const torch::Tensor image = torch::cat(pieces);
    for (const Piece& piece : u.pieces) out[piece.parameter] = torch::empty(piece.shape, image.options());
    unpack(i, image, [&](const Piece& piece) { return out[piece.parameter]; });
  }
  return out;
}

Json ShardLayout::to_json() const {
  Json params = Json::array();
  for (const ShardedParameter& p : parameters_) {
    params.push_back(p.segments.empty() ? Json::array({p.name, p.shape}) : Json::array({p.name, p.shape, p.segments}));
  }
  return Json{{"world_size", world_size_}, {"generation_tp", tp_}, {"parameters", std::move(params)}};
}

ShardLayout ShardLayout::from_json(const Json& j, const std::string& source) {
  auto fail = [&](const std::string& why) -> ShardLayout {
    VERL_FAIL(CheckpointError, source, ": invalid shard layout: ", why);
  };
  if (!j.is_object()) return fail("not a JSON object");
  auto integer = [&](const char* key) -> int64_t {
    if (!j.contains(key) || !j[key].is_number_integer()) fail(std::string("'") + key + "' is not an integer");
    return j[key].get<int64_t>();
  };
  const int64_t world = integer("world_size"), tp = integer("generation_tp");
  if (!j.contains("parameters") || !j["parameters"].is_array()) return fail("'parameters' is not a list");
  if (static_cast<int64_t>(j["parameters"].size()) > kMaxParameters) return fail("too many parameters");
  std::vector<ShardedParameter> parameters;
  for (const Json& p : j["parameters"]) {
    if (!p.is_array() || (p.size() != 2 && p.size() != 3) || !p[0].is_string() || !p[1].is_array() ||
        p[1].size() > 8 || (p.size() == 3 && (!p[2].is_array() || p[2].size() > 8)))
      return fail("a parameter is not [name, [shape]] or [name, [shape], [segments]]");
    ShardedParameter sp{p[0].get<std::string>(), {}};
    for (const Json& d : p[1]) {
      if (!d.is_number_integer()) return fail("parameter '" + sp.name + "' has a non-integer dimension");
      sp.shape.push_back(d.get<int64_t>());
    }
    if (p.size() == 3) {
      for (const Json& d : p[2]) {
        if (!d.is_number_integer()) return fail("parameter '" + sp.name + "' has a non-integer row segment");
        sp.segments.push_back(d.get<int64_t>());
      }
    }
    parameters.push_back(std::move(sp));
  }
  try {
    return ShardLayout(std::move(parameters), world, tp);
  } catch (const InvalidArgument& e) {
    return fail(e.what());
  } catch (const ConfigError& e) {  // vocab_rows_per_rank's checks
    return fail(e.what());
  }
}

}  // namespace verl::workers::detail
