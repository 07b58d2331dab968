// Per-rank checkpoint files of ZeRO-3 models (see verl/workers/sharded_checkpoint.h).
#include "workers/sharded_checkpoint.h"

#include <charconv>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/untrusted.h"
#include "verl/core/error.h"
#include "verl/model/model_config.h"
#include "verl/model/safetensors.h"
#include "workers/shard_layout.h"

namespace verl::workers {
namespace fs = std::filesystem;
using detail::ShardLayout;
using untrusted::display_path;

namespace {

constexpr std::string_view kModelPrefix = "model_world_size_";
constexpr std::string_view kRank0Suffix = "_rank_0.safetensors";
// The metadata keys of the files.
constexpr const char* kLayoutKey = "verl_cpp_shard_layout";
constexpr const char* kRankKey = "rank";
constexpr const char* kStepKey = "step";
constexpr const char* kSchedulerStepKey = "scheduler_step";
constexpr const char* kSkippedStepsKey = "skipped_steps";
constexpr const char* kWeights = "weights";
constexpr const char* kExpAvg = "exp_avg";
constexpr const char* kExpAvgSq = "exp_avg_sq";
constexpr const char* kMaxExpAvgSq = "max_exp_avg_sq";

std::optional<int64_t> parse_int(std::string_view text) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// The N of the model_world_size_N_rank_0.safetensors files in `dir` (none: empty).
std::vector<int64_t> world_sizes_in(const fs::path& dir) {
  std::vector<int64_t> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= kModelPrefix.size() + kRank0Suffix.size() || name.rfind(kModelPrefix, 0) != 0 ||
        name.compare(name.size() - kRank0Suffix.size(), kRank0Suffix.size(), kRank0Suffix) != 0)
      continue;
    const std::string_view digits(name.data() + kModelPrefix.size(),
                                  name.size() - kModelPrefix.size() - kRank0Suffix.size());
    if (auto n = parse_int(digits); n && *n >= 1) out.push_back(*n);
  }
  return out;
}

// A sharded checkpoint directory, opened: every rank's files mapped and checked against rank 0's layout.
struct ShardFiles {
  fs::path dir;
  int64_t world_size = 0;
  std::unique_ptr<ShardLayout> layout;
  torch::ScalarType dtype = torch::kFloat;
  std::vector<model::SafeTensorsFile> model;
  std::vector<model::SafeTensorsFile> optim;  // empty when not opened
  int64_t step = 0;                            // AdamW's step count, the same in every rank's optimizer file
  int64_t scheduler_step = 0;
  int64_t skipped_steps = 0;
  bool stepped = false;  // the optimizer files hold moments
  bool amsgrad = false;

  std::string shown(const fs::path& file) const { return "sharded checkpoint file '" + display_path(file) + "'"; }
};

// Counts (ranks, steps) above this are not from a real run; bounding them keeps the step arithmetic that follows a
// load (step + 1) far from overflow.
constexpr int64_t kMaxCount = int64_t{1} << 40;

int64_t metadata_int(const model::SafeTensorsFile& file, const char* key, const std::string& shown) {
  const auto it = file.metadata().find(key);
  VERL_CHECK_AS(CheckpointError, it != file.metadata().end(), shown, ": no '", key, "' in its metadata");
  const std::optional<int64_t> value = parse_int(it->second);
  VERL_CHECK_AS(CheckpointError, value && *value >= 0 && *value <= kMaxCount, shown, ": metadata '", key,
                "' is not a count: ", untrusted::escape(it->second, 40));
  return *value;
}

// The dtypes master weights and moments are kept in.
bool is_state_dtype(torch::ScalarType t) {
  return t == torch::kFloat || t == torch::kDouble || t == torch::kBFloat16 || t == torch::kHalf;
}

// The flat tensor `name` of `file`: 1-D, `numel` elements, floating point (`dtype` when given).
void check_flat(const model::SafeTensorsFile& file, const char* name, int64_t numel,
                std::optional<torch::ScalarType> dtype, const std::string& shown) {
  VERL_CHECK_AS(CheckpointError, file.contains(name), shown, ": no tensor '", name, "'");
  const model::TensorInfo& info = file.info(name);
  VERL_CHECK_AS(CheckpointError, info.shape.size() == 1 && info.shape[0] == numel, shown, ": tensor '", name,
                "' has shape ", c10::IntArrayRef(info.shape), ", the layout needs [", numel, "]");
  VERL_CHECK_AS(CheckpointError, is_state_dtype(info.scalar_type), shown, ": tensor '", name, "' is ", info.dtype,
                ", not F32, F64, BF16 or F16");
  VERL_CHECK_AS(CheckpointError, !dtype || info.scalar_type == *dtype, shown, ": tensor '", name, "' is ", info.dtype,
                ", rank 0's ", c10::toString(*dtype));
}

// Opens rank r's file `name` of a checkpoint written by `world_size` ranks (mapped, header validated) and checks
// that its metadata names rank r.
void open_rank_file(std::vector<model::SafeTensorsFile>& files, const ShardFiles& f, const std::string& name,
                    int64_t r) {
  std::error_code ec;
  const fs::path path = f.dir / name;
  VERL_CHECK_AS(CheckpointError, fs::exists(path, ec), "sharded checkpoint '", display_path(f.dir), "' lacks '",
                name, "': it was written by ", f.world_size, " ranks");
  files.emplace_back(path);
  const std::string shown = f.shown(path);
  VERL_CHECK_AS(CheckpointError, metadata_int(files.back(), kRankKey, shown) == r, shown,
                ": its metadata names another rank");
}

ShardFiles open_shards(const fs::path& dir, bool with_optimizer) {
  std::error_code ec;
  VERL_CHECK_AS(CheckpointError, fs::is_directory(dir, ec), "checkpoint directory '", display_path(dir),
                "' does not exist");
  const std::vector<int64_t> sizes = world_sizes_in(dir);
  VERL_CHECK_AS(CheckpointError, !sizes.empty(), "'", display_path(dir), "' holds no ", kModelPrefix, "N", kRank0Suffix,
                ": not a sharded checkpoint");
  VERL_CHECK_AS(CheckpointError, sizes.size() == 1, "'", display_path(dir),
                "' holds the rank-0 files of several world sizes; a checkpoint directory is written by one");
  ShardFiles f;
  f.dir = dir;
  f.world_size = sizes.front();
  for (int64_t r = 0; r < f.world_size; ++r) {
    open_rank_file(f.model, f, model_shard_file_name(f.world_size, r), r);
    const model::SafeTensorsFile& file = f.model.back();
    const std::string shown = f.shown(file.path());
    const auto layout = file.metadata().find(kLayoutKey);
    VERL_CHECK_AS(CheckpointError, layout != file.metadata().end(), shown, ": no '", kLayoutKey, "' in its metadata");
    if (r == 0) {
      f.layout = std::make_unique<ShardLayout>(
          ShardLayout::from_json(untrusted::parse_json<CheckpointError>(layout->second, shown, "the layout"), shown));
      VERL_CHECK_AS(CheckpointError, f.layout->world_size() == f.world_size, shown, ": its layout is for ",
                    f.layout->world_size(), " ranks, its name says ", f.world_size);
    } else {
      VERL_CHECK_AS(CheckpointError, layout->second == f.model.front().metadata().at(kLayoutKey), shown,
                    ": its layout differs from rank 0's");
    }
    check_flat(file, kWeights, f.layout->shard_numel(), r == 0 ? std::nullopt : std::optional(f.dtype), shown);
    if (r == 0) f.dtype = file.info(kWeights).scalar_type;
  }
  if (!with_optimizer) return f;
  for (int64_t r = 0; r < f.world_size; ++r) {
    open_rank_file(f.optim, f, optim_shard_file_name(f.world_size, r), r);
    const model::SafeTensorsFile& file = f.optim.back();
    const std::string shown = f.shown(file.path());
    const int64_t step = metadata_int(file, kStepKey, shown);
    const int64_t scheduler_step = metadata_int(file, kSchedulerStepKey, shown);
    const int64_t skipped = metadata_int(file, kSkippedStepsKey, shown);
    const bool stepped = file.contains(kExpAvg), amsgrad = file.contains(kMaxExpAvgSq);
    if (r == 0) {
      f.step = step;
      f.scheduler_step = scheduler_step;
      f.skipped_steps = skipped;
      f.stepped = stepped;
      f.amsgrad = amsgrad;
    } else {
      VERL_CHECK_AS(CheckpointError,
                    step == f.step && scheduler_step == f.scheduler_step &&
                        skipped == f.skipped_steps && stepped == f.stepped && amsgrad == f.amsgrad,
                    shown, ": its step counts or moments differ from rank 0's");
    }
    if (!stepped) continue;
    for (const char* name : {kExpAvg, kExpAvgSq})
      check_flat(file, name, f.layout->shard_numel(), std::nullopt, shown);
    if (amsgrad) check_flat(file, kMaxExpAvgSq, f.layout->shard_numel(), std::nullopt, shown);
  }
  return f;
}

// Rank r's AdamW slice as its file holds it.
AdamWMoments rank_moments(const ShardFiles& f, int64_t r) {
  AdamWMoments m;
  m.step = f.step;
  if (!f.stepped) return m;
  m.exp_avg = {f.optim[r].get(kExpAvg)};
  m.exp_avg_sq = {f.optim[r].get(kExpAvgSq)};
  if (f.amsgrad) m.max_exp_avg_sq = {f.optim[r].get(kMaxExpAvgSq)};
  return m;
}

// The whole tensors of one state (`name` in the model or optimizer files) by parameter name.
std::map<std::string, torch::Tensor> joined(const ShardFiles& f, const std::vector<model::SafeTensorsFile>& files,
                                            const char* name) {
  const std::vector<torch::Tensor> whole = f.layout->join([&](int64_t r) { return files[r].get(name); });
  std::map<std::string, torch::Tensor> out;
  for (size_t i = 0; i < whole.size(); ++i) out.emplace(f.layout->parameters()[i].name, whole[i]);
  return out;
}

// The whole moments in the order of `names` (the optimizer's parameters).
AdamWMoments joined_moments(const ShardFiles& f, const std::vector<std::string>& names) {
  AdamWMoments m;
  m.step = f.step;
  if (!f.stepped) return m;
  auto in_order = [&](const char* state, std::vector<torch::Tensor>& out) {
    const std::map<std::string, torch::Tensor> by_name = joined(f, f.optim, state);
    for (const std::string& n : names) {
      const auto it = by_name.find(n);
      VERL_CHECK_AS(CheckpointError, it != by_name.end(), "sharded checkpoint '", display_path(f.dir),
                    "' has no optimizer state for parameter ", n);
      out.push_back(it->second);
    }
  };
  in_order(kExpAvg, m.exp_avg);
  in_order(kExpAvgSq, m.exp_avg_sq);
  if (f.amsgrad) in_order(kMaxExpAvgSq, m.max_exp_avg_sq);
  return m;
}

// Before anything changes: the moments fit the optimizer (AdamW with amsgrad needs max_exp_avg_sq), so a load that
// fails leaves the weights and the optimizer as they were.
void check_fits(const ShardFiles& f, const Optimizer& optimizer) {
  VERL_CHECK_AS(CheckpointError, !f.stepped || f.amsgrad || !optimizer.config().amsgrad, "sharded checkpoint '",
                display_path(f.dir), "' holds no max_exp_avg_sq, which optim.amsgrad needs");
}

void restore_schedule(const ShardFiles& f, Optimizer& optimizer) {
  optimizer.set_scheduler_step_count(f.scheduler_step);
  optimizer.set_skipped_steps(f.skipped_steps);
}

}  // namespace

std::string model_shard_file_name(int64_t world_size, int64_t rank) {
  return std::string(kModelPrefix) + std::to_string(world_size) + "_rank_" + std::to_string(rank) + ".safetensors";
}

std::string optim_shard_file_name(int64_t world_size, int64_t rank) {
  return "optim_world_size_" + std::to_string(world_size) + "_rank_" + std::to_string(rank) + ".safetensors";
}

bool is_sharded_checkpoint(const fs::path& dir) { return !world_sizes_in(dir).empty(); }

std::map<std::string, torch::Tensor> load_sharded_weights(const fs::path& dir) {
  const ShardFiles f = open_shards(dir, /*with_optimizer=*/false);
  return joined(f, f.model, kWeights);
}

std::shared_ptr<model::CausalLM> load_sharded_pretrained(const fs::path& dir, std::optional<torch::Dtype> dtype,
                                                         torch::Device device, model::HeadKind head) {
  const ShardFiles f = open_shards(dir, /*with_optimizer=*/false);
  model::ModelConfig config = model::ModelConfig::from_file((dir / "config.json").string());
  auto model = std::make_shared<model::CausalLM>(std::move(config), head);
  model->to(dtype.value_or(f.dtype));
  model->to(device);
  torch::NoGradGuard no_grad;
  model->load_state_dict(joined(f, f.model, kWeights), /*strict=*/true);
  return model;
}

namespace detail {

void save_shard(const fs::path& dir, FullyShardedModel& model, const Optimizer& optimizer) {
  if (model.replica_rank() != 0) return;  // HSDP: the first shard group's files hold every replica's state
  std::error_code ec;
  VERL_CHECK_AS(CheckpointError, fs::is_directory(dir, ec), "rank ", model.rank(), ": checkpoint directory '",
                display_path(dir), "' does not exist here; over several nodes trainer.default_local_dir must be on a "
                "file system every node shares");
  const int64_t n = model.world_size(), r = model.rank();
  const model::Metadata common{{"format", "pt"}, {kRankKey, std::to_string(r)}};
  model::Metadata meta = common;
  meta[kLayoutKey] = model.layout().to_json().dump();
  model::save_file(dir / model_shard_file_name(n, r), model::NamedTensors{{kWeights, model.master().detach()}}, meta);

  const AdamWMoments m = optimizer.shard_moments();
  model::NamedTensors moments;
  if (!m.empty()) {
    moments.emplace_back(kExpAvg, m.exp_avg.front());
    moments.emplace_back(kExpAvgSq, m.exp_avg_sq.front());
    if (!m.max_exp_avg_sq.empty()) moments.emplace_back(kMaxExpAvgSq, m.max_exp_avg_sq.front());
  }
  model::Metadata optim_meta = common;
  optim_meta[kStepKey] = std::to_string(m.step);
  optim_meta[kSchedulerStepKey] = std::to_string(optimizer.scheduler_step_count());
  optim_meta[kSkippedStepsKey] = std::to_string(optimizer.skipped_steps());
  model::save_file(dir / optim_shard_file_name(n, r), moments, optim_meta);
}

void load_shard(const fs::path& dir, FullyShardedModel& model, Optimizer& optimizer) {
  const ShardFiles f = open_shards(dir, /*with_optimizer=*/true);
  check_fits(f, optimizer);
  const std::string source = "sharded checkpoint '" + display_path(dir) + "'";
  if (*f.layout == model.layout() && f.dtype == model.master_dtype()) {
    const int64_t r = model.rank();
    model.load_master(f.model[r].get(kWeights));
    optimizer.load_shard_moments(rank_moments(f, r), source);
  } else {
    model.load_full_state(joined(f, f.model, kWeights));
    std::vector<std::string> names;
    for (const ShardedParameter& p : model.layout().parameters()) names.push_back(p.name);
    optimizer.load_moments(joined_moments(f, names), source);
  }
  restore_schedule(f, optimizer);
}

void load_shard(const fs::path& dir, model::CausalLM& model, Optimizer& optimizer) {
  const ShardFiles f = open_shards(dir, /*with_optimizer=*/true);
  check_fits(f, optimizer);
  {
    torch::NoGradGuard no_grad;
    model.load_state_dict(joined(f, f.model, kWeights), /*strict=*/true);
  }
  std::unordered_map<const void*, std::string> name_of;
  for (const auto& item : model.named_parameters(/*recurse=*/true))
    name_of.emplace(item.value().unsafeGetTensorImpl(), item.key());
  std::vector<std::string> names;
  for (const torch::Tensor& p : optimizer.parameters()) {
    const auto it = name_of.find(p.unsafeGetTensorImpl());
    VERL_CHECK(it != name_of.end(), "load_shard: the optimizer updates a tensor that is not the model's");
    names.push_back(it->second);
  }
  optimizer.load_moments(joined_moments(f, names), "sharded checkpoint '" + display_path(dir) + "'");
  restore_schedule(f, optimizer);
}

}  // namespace detail
}  // namespace verl::workers
