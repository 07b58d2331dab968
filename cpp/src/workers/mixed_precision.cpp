#include "verl/workers/mixed_precision.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <iostream>
#include <mutex>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "verl/core/error.h"
#include "verl/dist/communicator.h"
#include "workers/fully_sharded.h"

namespace verl::workers {

namespace {

// torch.amp.GradScaler's defaults, with verl's growth_interval for fp16 (ShardedGradScaler(growth_interval=400)).
constexpr double kInitialLossScale = 65536.0;
constexpr double kGrowthFactor = 2.0;
constexpr double kBackoffFactor = 0.5;
constexpr int64_t kGrowthInterval = 400;

bool is_16bit_float(torch::Dtype d) { return d == torch::kBFloat16 || d == torch::kHalf; }

}  // namespace

namespace {

bool cpuid_reports_native_bf16_matmul() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return false;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  const bool avx512f = (ebx >> 16) & 1u, amx_bf16 = (edx >> 22) & 1u, amx_tile = (edx >> 24) & 1u;
  __cpuid_count(7, 1, eax, ebx, ecx, edx);
  const bool avx512_bf16 = (eax >> 5) & 1u;
  __cpuid(1, eax, ebx, ecx, edx);
  if (!((ecx >> 27) & 1u)) return false;  // no OSXSAVE: the OS saves no extended register state
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  const bool zmm_state = (xcr0_lo & 0xE6u) == 0xE6u;                  // SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM
  const bool tile_state = ((xcr0_lo >> 17) & 3u) == 3u;               // XTILECFG, XTILEDATA
  return (avx512f && avx512_bf16 && zmm_state) || (amx_tile && amx_bf16 && tile_state);
#else
  return false;  // other CPUs: not known to run bf16 GEMMs natively through LibTorch; float32 is the safe choice
#endif
}

}  // namespace

bool cpu_has_native_bf16_matmul() {
  // VERL_CPU_BF16=1 / 0 answers for the CPU: tests run `auto` both ways on either kind of machine, since the two
  // resolutions take different paths (bf16 compute copies, their collectives) and CI lands on either (issue 40).
  if (const char* forced = std::getenv("VERL_CPU_BF16"); forced != nullptr && *forced != '\0') {
    const std::string v = forced;
    VERL_CHECK_AS(ConfigError, v == "0" || v == "1", "environment variable VERL_CPU_BF16 = '", v,
                  "': use 1 (resolve fsdp_config.dtype=auto as on a CPU with bf16 matrix units) or 0 (as without)");
    return v == "1";
  }
  static const bool reported = cpuid_reports_native_bf16_matmul();
  return reported;
}

std::optional<torch::Dtype> parse_compute_dtype(const std::string& name, const std::string& key) {
  std::string n = name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  if (n == "bfloat16" || n == "bf16") return torch::kBFloat16;
  if (n == "float16" || n == "fp16" || n == "half") return torch::kHalf;
  if (n == "float32" || n == "fp32" || n == "float") return torch::kFloat;
  if (n == "auto") return std::nullopt;
  VERL_FAIL(ConfigError, "config key '", key, "' = '", name,
            "' is not a compute dtype: use auto, bfloat16 (bf16), float16 (fp16) or float32 (fp32, no mixed precision)");
}

torch::Dtype resolve_compute_dtype(const std::string& name, const std::string& key, const torch::Device& device) {
  if (const std::optional<torch::Dtype> named = parse_compute_dtype(name, key)) return *named;
  if (!device.is_cpu() || cpu_has_native_bf16_matmul()) return torch::kBFloat16;
  static std::once_flag noted;
  std::call_once(noted, [&] {
    std::cerr << "verl: " << key << "=auto computes in float32 on this CPU, which has no bf16 matrix instructions "
              << "(AVX512-BF16/AMX): bf16 there is emulated and several times slower. Set it to bfloat16 for "
              << "verl's default anyway." << std::endl;
  });
  return torch::kFloat;
}

torch::Dtype effective_compute_dtype(torch::Dtype model_dtype, torch::Dtype compute) {
  if (is_16bit_float(compute) && !is_16bit_float(model_dtype)) return compute;
  return model_dtype;
}

std::string low_precision_master_warning(torch::Dtype model_dtype, const std::string& model_dtype_key) {
  if (!is_16bit_float(model_dtype)) return "";
  return std::string("verl WARNING: ") + model_dtype_key + " is " + c10::toString(model_dtype) +
         ": the optimizer updates " + c10::toString(model_dtype) +
         " weights in place, and an update below half the spacing of a weight's dtype (about " +
         (model_dtype == torch::kBFloat16 ? "0.4 %" : "0.05 %") +
         " of its magnitude) is lost, so at RL learning rates (1e-6) most weights never move. Use fp32 master weights "
         "(model_dtype=fp32, verl's default) with a bf16 compute dtype (fsdp_config.dtype=bfloat16) instead.";
}

MixedPrecision::MixedPrecision(std::shared_ptr<model::CausalLM> master, torch::Dtype compute_dtype)
    : master_(std::move(master)) {
  VERL_CHECK(master_ != nullptr, "MixedPrecision: model is null");
  const torch::Dtype dtype = effective_compute_dtype(master_->dtype(), compute_dtype);
  if (dtype == master_->dtype()) {
    compute_ = master_;
    return;
  }
  compute_ = std::make_shared<model::CausalLM>(master_->config(), master_->head_kind());
  compute_->to(master_->device(), dtype);
  if (master_->lora()) compute_->add_adapters(*master_->lora(), /*seed=*/0);  // refresh() copies the master's values
  compute_->set_gradient_checkpointing(master_->gradient_checkpointing());
  master_params_ = master_->parameters();
  compute_params_ = compute_->parameters();
  VERL_CHECK(master_params_.size() == compute_params_.size(), "MixedPrecision: the compute copy has ",
             compute_params_.size(), " parameters, the model ", master_params_.size());
  for (size_t i = 0; i < master_params_.size(); ++i) {
    VERL_CHECK(master_params_[i].sizes() == compute_params_[i].sizes(), "MixedPrecision: parameter ", i,
               " differs in shape between the model and its compute copy");
    compute_params_[i].set_requires_grad(master_params_[i].requires_grad());
  }
  // fp16's narrow exponent range underflows small gradients without a loss scale; bf16 has fp32's range.
  if (dtype == torch::kHalf) loss_scale_ = kInitialLossScale;
  refresh();
}

torch::Dtype MixedPrecision::compute_dtype() const { return compute_->dtype(); }

bool MixedPrecision::mixed() const { return compute_dtype() != (sharding_ ? sharding_->master_dtype() : master_->dtype()); }

std::vector<std::pair<const void*, int64_t>> MixedPrecision::master_versions() const {
  std::vector<std::pair<const void*, int64_t>> out;
  out.reserve(master_params_.size());
  for (const auto& p : master_->parameters()) {
    out.emplace_back(p.unsafeGetTensorImpl(), static_cast<int64_t>(p._version()));
  }
  return out;
}

void MixedPrecision::refresh() {
  if (!has_copy()) return;
  auto versions = master_versions();
  if (versions == synced_versions_) return;
  // A parameter replaced (module.to(), a new tensor) changes the list; re-read it before copying.
  master_params_ = master_->parameters();
  VERL_CHECK(master_params_.size() == compute_params_.size(), "MixedPrecision: the model now has ",
             master_params_.size(), " parameters, its compute copy ", compute_params_.size());
  torch::NoGradGuard no_grad;
  // Only what changed: under LoRA the frozen base is copied once, the adapters after every step.
  const bool same_parameters = synced_versions_.size() == versions.size();
  for (size_t i = 0; i < master_params_.size(); ++i) {
    if (same_parameters && versions[i] == synced_versions_[i]) continue;
    VERL_CHECK(master_params_[i].device() == compute_params_[i].device(),
               "MixedPrecision: the model moved to ", master_params_[i].device(),
               " after its compute copy was made on ", compute_params_[i].device());
    compute_params_[i].copy_(master_params_[i]);
  }
  synced_versions_ = std::move(versions);
}

const std::shared_ptr<model::CausalLM>& MixedPrecision::compute() {
  refresh();
  return compute_;
}

void MixedPrecision::set_gradient_checkpointing(bool enabled) {
  master_->set_gradient_checkpointing(enabled);
  compute_->set_gradient_checkpointing(enabled);
}

void MixedPrecision::shard_over(std::shared_ptr<dist::Communicator> communicator, const GatherPolicy& policy,
                                int64_t generation_tp, const ShardGroups& groups) {
  if (groups.shard) communicator = groups.shard;
  const bool replicated = groups.replicas && groups.replicas->world_size() > 1;
  if (communicator == nullptr || (communicator->world_size() == 1 && !replicated)) return;
  VERL_CHECK(sharding_ == nullptr, "MixedPrecision::shard_over: already sharded");
  const torch::Dtype dtype = compute_dtype();
  // The compute copy goes: the sharded master gathers its units in the compute dtype itself.
  compute_ = master_;
  master_params_.clear();
  compute_params_.clear();
  synced_versions_.clear();
  sharding_ = detail::FullyShardedModel::shard(master_, std::move(communicator), dtype, policy, generation_tp,
                                               replicated ? groups.replicas : nullptr);
  sharding_->set_gradient_scale(1.0 / loss_scale_);
}

int64_t MixedPrecision::for_each_compute_state(
    const std::function<void(const std::map<std::string, torch::Tensor>&)>& fn, const UnpackTarget& into) {
  if (sharding_) return sharding_->for_each_unit_state(sharding_->compute_dtype(), fn, into);
  fn(compute()->named_state());
  return 0;
}

int64_t MixedPrecision::weights_version() const {
  if (sharding_) return static_cast<int64_t>(sharding_->master()._version());
  int64_t version = 0;
  for (const auto& p : compute_->parameters()) version += static_cast<int64_t>(p._version());
  return version;
}

void MixedPrecision::release() {
  if (sharding_) sharding_->release();
}

void MixedPrecision::accumulate_grads() {
  if (sharding_) {
    sharding_->finish_backward();
    return;
  }
  if (!has_copy()) return;
  const double inv_scale = 1.0 / loss_scale_;
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < compute_params_.size(); ++i) {
    torch::Tensor& g = compute_params_[i].mutable_grad();
    if (!g.defined()) continue;
    torch::Tensor& master_grad = master_params_[i].mutable_grad();
    // The compute-dtype gradient is widened before it is scaled or summed: accumulation is in the master dtype.
    torch::Tensor wide = g.to(master_params_[i].scalar_type());
    if (inv_scale != 1.0) wide.mul_(inv_scale);
    if (master_grad.defined()) {
      master_grad.add_(wide);
    } else {
      master_grad = wide;
    }
    g.reset();
  }
}

void MixedPrecision::update_loss_scale(bool finite) {
  if (!mixed() || compute_->dtype() != torch::kHalf) return;
  if (!finite) {
    loss_scale_ *= kBackoffFactor;
    finite_steps_ = 0;
  } else if (++finite_steps_ == kGrowthInterval) {
    loss_scale_ *= kGrowthFactor;
    finite_steps_ = 0;
  }
  if (sharding_) sharding_->set_gradient_scale(1.0 / loss_scale_);
}

}  // namespace verl::workers
