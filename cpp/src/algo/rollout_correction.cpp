// Rollout correction (see rollout_correction.h): verl's rollout_corr_helper formulas, op for op in verl's
// order, so weights, masks and metrics equal verl's bitwise on the same inputs.
#include "verl/algo/rollout_correction.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <vector>

#include <torch/torch.h>

#include "verl/algo/functional.h"
#include "verl/core/error.h"

namespace verl::algo {
namespace {

// exp(+-20): the log-space bound verl clamps log ratios to before exponentiating.
constexpr double kSafetyBound = 20.0;
constexpr double kInf = std::numeric_limits<double>::infinity();

const std::set<std::string>& supported_rs_options() {
  static const std::set<std::string> options = {"token_k1",    "token_k2",    "token_k3",   "seq_sum_k1",
                                                "seq_sum_k2",  "seq_sum_k3",  "seq_mean_k1", "seq_mean_k2",
                                                "seq_mean_k3", "seq_max_k2",  "seq_max_k3"};
  return options;
}

std::string strip(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\n\r\f\v");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t\n\r\f\v") - begin + 1);
}

// Python's float(text) for the decimal forms thresholds use; nullopt when text is not one number.
std::optional<double> parse_number(const std::string& text) {
  const std::string t = strip(text);
  if (t.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || std::isnan(v)) return std::nullopt;
  return v;
}

double item(const torch::Tensor& t) { return t.detach().item<double>(); }

// verl's `tensor.float()`.
torch::Tensor as_float(const torch::Tensor& t) { return t.to(torch::kFloat); }

// torch.tensor(x) of a Python float: the default dtype (float32 unless changed), as verl builds its
// log thresholds before comparing them with float64 ratios.
torch::Tensor default_dtype_scalar(double x, const torch::Device& device) {
  return torch::tensor(x, torch::TensorOptions().dtype(c10::typeMetaToScalarType(at::get_default_dtype())).device(device));
}

struct IsThreshold {
  double upper;
  std::optional<double> lower;  // set: IcePop
};

IsThreshold parse_is_threshold(const std::string& spec_text) {
  const std::string spec = strip(spec_text);
  VERL_CHECK(!spec.empty(), "rollout_is_threshold must not be an empty string.");
  IsThreshold out{};
  const auto underscore = spec.find('_');
  if (underscore != std::string::npos) {
    const auto lower = parse_number(spec.substr(0, underscore));
    const auto upper = parse_number(spec.substr(underscore + 1));
    VERL_CHECK(lower && upper, "Invalid rollout_is_threshold '", spec_text, "'.");
    out = {*upper, *lower};
  } else {
    const auto upper = parse_number(spec);
    VERL_CHECK(upper.has_value(), "Invalid rollout_is_threshold '", spec_text, "'.");
    out.upper = *upper;
  }
  VERL_CHECK(out.upper > 0, "rollout_is_threshold upper bound must be positive, got ", out.upper, ".");
  if (out.lower) {
    VERL_CHECK(*out.lower > 0, "rollout_is_threshold lower bound must be positive, got ", *out.lower, ".");
    VERL_CHECK(*out.lower <= out.upper, "rollout_is_threshold lower bound must be <= upper bound.");
  }
  return out;
}

struct RsThreshold {
  std::optional<double> lower;  // k1 options only
  double upper;
};

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    const std::string part = strip(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (!part.empty()) parts.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return parts;
}

std::vector<RsThreshold> parse_rs_thresholds(const std::vector<std::string>& options, const std::string& spec_text) {
  std::vector<std::string> specs = split_commas(spec_text);
  VERL_CHECK(!specs.empty(), "rollout_rs_threshold must contain at least one threshold value.");
  VERL_CHECK(specs.size() == 1 || specs.size() == options.size(),
             "rollout_rs_threshold expects either one threshold shared by all options or exactly ", options.size(),
             " thresholds to match the provided rollout_rs options.");
  if (specs.size() == 1) specs.resize(options.size(), specs.front());
  std::vector<RsThreshold> out;
  for (std::size_t i = 0; i < options.size(); ++i) {
    const std::string& option = options[i];
    const std::string& spec = specs[i];
    const auto underscore = spec.find('_');
    if (option.ends_with("k1")) {
      std::optional<double> lower, upper;
      if (underscore != std::string::npos) {
        lower = parse_number(spec.substr(0, underscore));
        upper = parse_number(spec.substr(underscore + 1));
      } else {
        upper = parse_number(spec);
        if (upper) lower = 1.0 / *upper;  // verl: float(str(1 / upper)), the same double
      }
      VERL_CHECK(lower && upper, "Invalid numeric threshold '", spec, "' for option '", option, "'.");
      VERL_CHECK(*lower > 0 && *upper > 0, "Thresholds for option '", option, "' must be positive, got ", spec, ".");
      VERL_CHECK(*lower <= *upper, "Thresholds for option '", option, "' must be lower <= upper, got ", spec, ".");
      out.push_back({lower, *upper});
    } else {
      VERL_CHECK(underscore == std::string::npos, "rollout_rs_threshold for option '", option,
                 "' must provide a single upper bound without '_'. Received '", spec, "'.");
      const auto upper = parse_number(spec);
      VERL_CHECK(upper.has_value(), "Invalid numeric threshold '", spec, "' for option '", option, "'.");
      VERL_CHECK(*upper > 0, "Threshold for option '", option, "' must be positive, got ", spec, ".");
      out.push_back({std::nullopt, *upper});
    }
  }
  return out;
}

void require_valid_token(const torch::Tensor& response_mask) {
  VERL_CHECK(response_mask.any().item<bool>(), "response_mask must contain at least one valid token (1).");
}

// verl's compute_is_metrics.
RolloutCorrectionMetrics is_metrics(const torch::Tensor& weights, const torch::Tensor& raw_weights,
                                    const torch::Tensor& log_ratio_for_metrics, const torch::Tensor& mask,
                                    bool sequence_level, double upper, std::optional<double> lower_spec) {
  require_valid_token(mask);
  RolloutCorrectionMetrics m;
  const double lower = lower_spec.value_or(1.0 / upper);
  if (sequence_level) {
    const torch::Tensor log_threshold_upper = torch::log(default_dtype_scalar(upper, weights.device()));
    const torch::Tensor log_threshold_lower = torch::log(default_dtype_scalar(lower, weights.device()));
    m["rollout_is_max"] = item(torch::exp(torch::clamp_max(log_ratio_for_metrics.max(), kSafetyBound)));
    m["rollout_is_min"] = item(torch::exp(log_ratio_for_metrics.min()));
    m["rollout_is_mean"] = item(masked_mean(weights, mask));
    m["rollout_is_ratio_fraction_high"] = item(as_float(log_ratio_for_metrics > log_threshold_upper).mean());
    m["rollout_is_ratio_fraction_low"] = item(as_float(log_ratio_for_metrics < log_threshold_lower).mean());
  } else {
    m["rollout_is_mean"] = item(masked_mean(weights, mask));
    m["rollout_is_ratio_fraction_high"] = item(masked_mean(as_float(raw_weights > upper), mask));
    m["rollout_is_ratio_fraction_low"] = item(masked_mean(as_float(raw_weights < lower), mask));
    const torch::Tensor outside = mask.to(torch::kBool).logical_not();
    m["rollout_is_max"] = item(weights.masked_fill(outside, -kInf).max());
    m["rollout_is_min"] = item(weights.masked_fill(outside, kInf).min());
  }
  // Spread and effective sample size of the applied weights (IcePop's zeros included).
  const torch::Tensor clamped = weights.clamp(0.0, upper);
  if (item(mask.sum()) > 1) {
    const torch::Tensor mean_clamped = masked_mean(clamped, mask);
    const torch::Tensor var = masked_mean(clamped.square(), mask) - mean_clamped.square();
    m["rollout_is_std"] = item(torch::sqrt(torch::clamp_min(var, 0.0)));
  } else {
    m["rollout_is_std"] = 0.0;
  }
  const torch::Tensor normalized = clamped / (masked_mean(clamped, mask) + 1e-8);
  m["rollout_is_eff_sample_size"] = 1.0 / item(masked_mean(normalized.square(), mask));
  if (weights.dim() > 1) {
    const torch::Tensor seq_mean = masked_mean(weights, mask, std::vector<int64_t>{-1});
    m["rollout_is_seq_mean"] = item(seq_mean.mean());
    m["rollout_is_seq_std"] = seq_mean.numel() > 1 ? item(seq_mean.std()) : 0.0;
    m["rollout_is_seq_max"] = item(seq_mean.max());
    m["rollout_is_seq_min"] = item(seq_mean.min());
    m["rollout_is_seq_max_deviation"] = item((seq_mean - 1.0).abs().max());
    // From the raw per-sequence means: truncated weights never exceed the bound, so their mean cannot.
    const torch::Tensor raw_seq_mean = masked_mean(raw_weights, mask, std::vector<int64_t>{-1});
    m["rollout_is_seq_fraction_high"] = item(as_float(raw_seq_mean > upper).mean());
    m["rollout_is_seq_fraction_low"] = item(as_float(raw_seq_mean < lower).mean());
  }
  return m;
}

// verl's compute_rs_metrics for one option. per_sequence undefined at token level.
void rs_metrics(RolloutCorrectionMetrics& m, const std::string& option, const torch::Tensor& statistic,
                const torch::Tensor& mask, const torch::Tensor& seq_valid, bool sequence_level,
                const torch::Tensor& per_sequence, double upper, double lower, bool apply_lower) {
  require_valid_token(mask);
  const std::string prefix = "rollout_rs_" + option;
  const torch::Tensor mask_bool = mask.to(torch::kBool);
  torch::Tensor seq_values =
      per_sequence.defined() ? per_sequence : masked_mean(statistic, mask, std::vector<int64_t>{-1});
  if (seq_values.dim() > 1) seq_values = seq_values.squeeze(-1);
  const torch::Tensor valid = seq_values.index({seq_valid});
  const bool by_sequence = sequence_level && valid.numel() > 0;

  m[prefix + "_mean"] = item(masked_mean(statistic, mask));
  if (by_sequence) {
    m[prefix + "_max"] = item(valid.max());
    m[prefix + "_min"] = item(valid.min());
    m[prefix + "_fraction_high"] = item(as_float(valid > upper).mean());
    m[prefix + "_fraction_low"] = apply_lower ? item(as_float(valid < lower).mean()) : 0.0;
  } else {
    m[prefix + "_max"] = item(statistic.masked_fill(mask_bool.logical_not(), -kInf).max());
    m[prefix + "_min"] = item(statistic.masked_fill(mask_bool.logical_not(), kInf).min());
    m[prefix + "_fraction_high"] = item(masked_mean(as_float(statistic > upper), mask));
    m[prefix + "_fraction_low"] = apply_lower ? item(masked_mean(as_float(statistic < lower), mask)) : 0.0;
  }
  if (item(mask.sum()) > 1) {
    const torch::Tensor clamped = statistic.clamp(apply_lower ? lower : 0.0, upper);
    const torch::Tensor mean_clamped = masked_mean(clamped, mask);
    const torch::Tensor var = masked_mean(clamped.square(), mask) - mean_clamped.square();
    m[prefix + "_std"] = item(torch::sqrt(torch::clamp_min(var, 0.0)));
  } else {
    m[prefix + "_std"] = 0.0;
  }
  if (valid.numel() > 0) {
    m[prefix + "_seq_mean"] = item(valid.mean());
    m[prefix + "_seq_std"] = valid.numel() > 1 ? item(valid.std()) : 0.0;
    m[prefix + "_seq_max"] = item(valid.max());
    m[prefix + "_seq_min"] = item(valid.min());
    m[prefix + "_seq_max_deviation"] = item((valid - 0.0).abs().max());
    m[prefix + "_seq_fraction_high"] = item(as_float(valid > upper).mean());
    if (apply_lower) m[prefix + "_seq_fraction_low"] = item(as_float(valid < lower).mean());
  } else {
    for (const char* leaf : {"_seq_mean", "_seq_std", "_seq_max", "_seq_min", "_seq_max_deviation",
                             "_seq_fraction_high", "_seq_fraction_low"}) {
      m[prefix + leaf] = 0.0;
    }
  }
}

// Largest masked value per row, 0 for rows without a valid token.
torch::Tensor sequence_max(const torch::Tensor& values, const torch::Tensor& mask) {
  const torch::Tensor neg_inf = torch::tensor(-kInf, values.options());
  const torch::Tensor max_values = std::get<0>(values.masked_fill(mask.to(torch::kBool).logical_not(), neg_inf).max(-1));
  return torch::where(max_values == neg_inf, torch::zeros_like(max_values), max_values);
}

}  // namespace

std::string rollout_threshold_text(double threshold) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), threshold);
  return std::string(buffer, result.ptr);
}

RolloutCorrectionWeights compute_rollout_correction_weights(const torch::Tensor& log_ratio,
                                                            const torch::Tensor& response_mask,
                                                            const std::string& rollout_is,
                                                            const std::string& rollout_is_threshold,
                                                            bool rollout_is_batch_normalize) {
  VERL_CHECK(rollout_is == "token" || rollout_is == "sequence", "Invalid rollout_is: ", rollout_is,
             ". Must be one of {'token', 'sequence'}.");
  check_same_shape(log_ratio, "log_ratio", response_mask, "response_mask");
  const IsThreshold threshold = parse_is_threshold(rollout_is_threshold);
  const bool sequence_level = rollout_is == "sequence";

  torch::Tensor log_ratio_for_metrics, raw;
  if (sequence_level) {
    // One weight per sequence: the product of its token ratios, exp(sum of log ratios).
    log_ratio_for_metrics = masked_sum(log_ratio, response_mask, std::vector<int64_t>{-1}).unsqueeze(-1);
    raw = torch::exp(torch::clamp(log_ratio_for_metrics, -kSafetyBound, kSafetyBound)).expand_as(log_ratio);
  } else {
    log_ratio_for_metrics = log_ratio;
    raw = torch::exp(torch::clamp(log_ratio, -kSafetyBound, kSafetyBound));
  }
  raw = raw * response_mask;

  RolloutCorrectionWeights out;
  if (!threshold.lower) {
    out.weights = raw.clamp_max(threshold.upper);  // TIS
  } else {
    const torch::Tensor kept = (raw >= *threshold.lower) & (raw <= threshold.upper);  // IcePop
    out.weights = torch::where(kept, raw, torch::zeros_like(raw));
  }
  out.metrics = is_metrics(out.weights, raw, log_ratio_for_metrics, response_mask, sequence_level, threshold.upper,
                           threshold.lower);
  if (threshold.lower) {
    const torch::Tensor out_of_bounds = (raw < *threshold.lower) | (raw > threshold.upper);
    out.metrics["rollout_is_oob_ratio"] = item(masked_mean(as_float(out_of_bounds), response_mask));
  }
  // IS weights change the measure, not the objective: no gradient flows through them.
  out.weights = out.weights.detach();

  if (rollout_is_batch_normalize) {
    torch::Tensor weights_mean;
    if (!sequence_level) {
      weights_mean = masked_mean(out.weights, response_mask);
    } else {
      const torch::Tensor seq_weights = masked_mean(out.weights, response_mask, std::vector<int64_t>{-1});
      const torch::Tensor seq_mask = (response_mask.sum(-1) > 0).to(out.weights.scalar_type());
      weights_mean = (seq_weights * seq_mask).sum() / seq_mask.sum().clamp_min(1e-8);
    }
    if (item(weights_mean) > 1e-8) {
      out.weights = out.weights / weights_mean;
      out.metrics["rollout_is_batch_norm_factor"] = item(weights_mean);
    } else {
      out.metrics["rollout_is_batch_norm_factor"] = 1.0;
    }
  }
  return out;
}

RolloutRejection compute_rollout_rejection_mask(const torch::Tensor& log_ratio, const torch::Tensor& response_mask,
                                                const std::string& rollout_rs,
                                                const std::string& rollout_rs_threshold) {
  check_same_shape(log_ratio, "log_ratio", response_mask, "response_mask");
  if (log_ratio.size(0) == 0) return {response_mask, {}};
  std::vector<std::string> options;
  for (const std::string& option : split_commas(rollout_rs)) {
    VERL_CHECK(supported_rs_options().count(option) == 1, "Invalid rollout_rs option: ", option,
               ". Must be one of ['seq_max_k2', 'seq_max_k3', 'seq_mean_k1', 'seq_mean_k2', 'seq_mean_k3', "
               "'seq_sum_k1', 'seq_sum_k2', 'seq_sum_k3', 'token_k1', 'token_k2', 'token_k3'].");
    if (std::find(options.begin(), options.end(), option) == options.end()) options.push_back(option);
  }
  VERL_CHECK(!options.empty(), "rollout_rs must contain at least one valid option.");
  const std::vector<RsThreshold> thresholds = parse_rs_thresholds(options, rollout_rs_threshold);

  const torch::Tensor safe = torch::clamp(log_ratio, -kSafetyBound, kSafetyBound);
  const torch::Tensor token_k1 = -safe;
  const torch::Tensor token_k2 = 0.5 * safe.pow(2);
  const torch::Tensor token_k3 = torch::exp(safe) - 1.0 - safe;
  const torch::Tensor mask_bool = response_mask.to(torch::kBool);
  const torch::Tensor seq_valid = response_mask.sum(-1) > 0;
  // Every option must pass: the per-option keep masks multiply.
  torch::Tensor combined = torch::ones_like(response_mask, log_ratio.options());
  RolloutRejection out;
  const std::vector<int64_t> last{-1};

  for (std::size_t i = 0; i < options.size(); ++i) {
    const std::string& option = options[i];
    const bool k1 = option.ends_with("k1");
    const double upper = thresholds[i].upper;
    const double lower_log = k1 ? std::log(*thresholds[i].lower) : 0.0;
    const double upper_log = k1 ? std::log(upper) : 0.0;
    const bool token_level = option.starts_with("token_");
    const torch::Tensor& per_token = option.ends_with("k1") ? token_k1 : option.ends_with("k2") ? token_k2 : token_k3;

    torch::Tensor statistic, per_sequence, keep;
    if (token_level) {
      statistic = per_token;
    } else if (option.starts_with("seq_sum")) {
      per_sequence = masked_sum(per_token, response_mask, last);
    } else if (option.starts_with("seq_mean")) {
      per_sequence = masked_mean(per_token, response_mask, last);
    } else {
      per_sequence = sequence_max(per_token, response_mask);
    }
    const torch::Tensor& judged = token_level ? statistic : per_sequence;
    keep = k1 ? (judged >= lower_log) & (judged <= upper_log) : judged <= upper;
    if (!token_level) {
      keep = keep.unsqueeze(-1).expand_as(mask_bool);
      statistic = per_sequence.unsqueeze(-1).expand_as(response_mask);
    }

    rs_metrics(out.metrics, option, statistic, response_mask, seq_valid, !token_level, per_sequence,
               k1 ? upper_log : upper, k1 ? lower_log : 0.0, k1);

    const torch::Tensor keep_mask = keep.to(log_ratio.scalar_type());
    combined = combined * keep_mask;
    const torch::Tensor seq_keep = (keep.logical_not() & mask_bool).logical_not().all(-1);
    out.metrics["rollout_rs_" + option + "_masked_fraction"] = item(masked_mean(1 - keep_mask, response_mask));
    const torch::Tensor seq_valid_float = as_float(seq_valid);
    double seq_masked_fraction = 0.0;
    if (item(seq_valid_float.sum()) > 0) {
      const torch::Tensor seq_keep_float = seq_keep.to(log_ratio.scalar_type());
      seq_masked_fraction = item(((1.0 - seq_keep_float) * seq_valid_float).sum() / seq_valid_float.sum());
    }
    out.metrics["rollout_rs_" + option + "_seq_masked_fraction"] = seq_masked_fraction;
  }

  out.metrics["rollout_rs_masked_fraction"] = item(masked_mean(1 - combined, response_mask));
  const torch::Tensor final_keep = (combined > 0.5) & mask_bool;
  const torch::Tensor seq_has_masked = (final_keep.logical_not() & mask_bool).any(-1);
  out.metrics["rollout_rs_seq_masked_fraction"] = item(as_float(seq_has_masked).mean());
  out.response_mask = (response_mask * combined).to(response_mask.scalar_type());
  return out;
}

RolloutCorrectionMetrics compute_offpolicy_metrics(const torch::Tensor& old_log_prob,
                                                   const torch::Tensor& rollout_log_prob,
                                                   const torch::Tensor& response_mask) {
  require_valid_token(response_mask);
  const std::vector<int64_t> last{-1};
  RolloutCorrectionMetrics m;
  const torch::Tensor mean_training = masked_mean(old_log_prob, response_mask, last);
  m["training_ppl"] = item(torch::exp(-mean_training).mean());
  m["training_log_ppl"] = item((-mean_training).mean());
  if (!rollout_log_prob.defined()) return m;

  m["kl"] = item(masked_mean(rollout_log_prob - old_log_prob, response_mask));
  const torch::Tensor log_ratio = old_log_prob - rollout_log_prob;
  m["k3_kl"] = item(masked_mean(torch::exp(log_ratio) - log_ratio - 1, response_mask));
  const torch::Tensor mean_rollout = masked_mean(rollout_log_prob, response_mask, last);
  m["rollout_ppl"] = item(torch::exp(-mean_rollout).mean());
  m["rollout_log_ppl"] = item((-mean_rollout).mean());
  const torch::Tensor log_ppl_diff = mean_rollout - mean_training;
  m["log_ppl_diff"] = item(log_ppl_diff.mean());
  m["log_ppl_abs_diff"] = item(log_ppl_diff.abs().mean());
  m["log_ppl_diff_max"] = item(log_ppl_diff.max());
  m["log_ppl_diff_min"] = item(log_ppl_diff.min());
  m["ppl_ratio"] = item(torch::exp(log_ppl_diff).mean());
  // chi^2(pi_train || pi_rollout) = E_rollout[rho^2] - 1, per token and per sequence.
  const torch::Tensor rho = torch::exp(torch::clamp(log_ratio, -kSafetyBound, kSafetyBound));
  m["chi2_token"] = item(masked_mean(rho.square(), response_mask) - 1.0);
  const torch::Tensor log_ratio_sum = masked_sum(log_ratio, response_mask, last);
  m["chi2_seq"] = item(torch::exp(2.0 * torch::clamp(log_ratio_sum, -kSafetyBound, kSafetyBound)).mean() - 1.0);
  return m;
}

RolloutCorrection compute_rollout_correction_and_rejection_mask(const torch::Tensor& old_log_prob,
                                                                const torch::Tensor& rollout_log_prob,
                                                                const torch::Tensor& response_mask,
                                                                const RolloutCorrectionConfig& config) {
  VERL_CHECK(old_log_prob.defined() && rollout_log_prob.defined() && response_mask.defined(),
             "rollout correction needs old_log_prob, rollout_log_prob and response_mask");
  VERL_CHECK(old_log_prob.sizes() == rollout_log_prob.sizes(), "old_log_prob shape ", old_log_prob.sizes(),
             " does not match rollout_log_prob shape ", rollout_log_prob.sizes(), ".");
  VERL_CHECK(old_log_prob.sizes() == response_mask.sizes(), "log_prob shape ", old_log_prob.sizes(),
             " does not match response_mask shape ", response_mask.sizes(), ".");
  require_valid_token(response_mask);

  const torch::Tensor log_ratio = old_log_prob - rollout_log_prob;
  RolloutCorrectionMetrics metrics;
  RolloutCorrection out;
  if (config.weighs()) {
    auto weights = compute_rollout_correction_weights(log_ratio, response_mask, *config.rollout_is,
                                                      *config.rollout_is_threshold, config.rollout_is_batch_normalize);
    out.rollout_is_weights = weights.weights;
    for (auto& [k, v] : weights.metrics) metrics[k] = v;
  }
  out.response_mask = response_mask.clone();
  if (config.rollout_rs) {
    VERL_CHECK(config.rollout_rs_threshold.has_value(),
               "rollout_rs_threshold must be explicitly provided when rollout_rs is enabled. Set "
               "rollout_rs_threshold to the desired threshold value.");
    auto rejection = compute_rollout_rejection_mask(log_ratio, response_mask, *config.rollout_rs,
                                                    *config.rollout_rs_threshold);
    out.response_mask = rejection.response_mask;
    for (auto& [k, v] : rejection.metrics) metrics[k] = v;
  }
  for (auto& [k, v] : compute_offpolicy_metrics(old_log_prob, rollout_log_prob, response_mask)) metrics[k] = v;
  for (auto& [k, v] : metrics) out.metrics["rollout_corr/" + k] = v;
  return out;
}

}  // namespace verl::algo
