// Epochs of prompt batches in verl's train-loader order (verl/data/dataloader.h).
#include "verl/data/dataloader.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <utility>

#include "core/untrusted.h"
#include "verl/core/error.h"

namespace verl::data {
namespace {

std::optional<int64_t> optional_int(const Config& config, const std::string& key) {
  const Json value = config.get(key);
  if (value.is_null()) return std::nullopt;
  VERL_CHECK_AS(ConfigTypeError, value.is_number_integer(), "config key '", key, "' must be an integer or null, got ",
                untrusted::quote(value));
  return value.get<int64_t>();
}

}  // namespace

RLDataLoader::RLDataLoader(RLHFDataset dataset, int64_t batch_size, bool shuffle, std::optional<uint64_t> seed,
                           bool drop_last)
    : dataset_(std::move(dataset)),
      batch_size_(batch_size),
      shuffle_(shuffle),
      drop_last_(drop_last),
      // torch.Generator(): CPUGeneratorImpl's default seed unless one is given, as the Python loader.
      generator_(seed ? at::make_generator<at::CPUGeneratorImpl>(*seed) : at::make_generator<at::CPUGeneratorImpl>()) {
  VERL_CHECK(batch_size > 0, "RLDataLoader: batch_size must be positive, got ", batch_size);
  VERL_CHECK_AS(DataError, dataset_.size() > 0, "RLDataLoader: the dataset is empty");
  VERL_CHECK_AS(DataError, !drop_last || dataset_.size() >= batch_size, "RLDataLoader: the dataset has ",
                dataset_.size(), " rows, fewer than one batch of ", batch_size, " with drop_last");
}

RLDataLoader RLDataLoader::from_config(RLHFDataset dataset, const Config& config) {
  const std::optional<int64_t> gen_batch_size = optional_int(config, "data.gen_batch_size");
  const int64_t batch_size = gen_batch_size ? *gen_batch_size : config.get_as<int64_t>("data.train_batch_size");
  VERL_CHECK_AS(ConfigError, batch_size > 0, gen_batch_size ? "data.gen_batch_size" : "data.train_batch_size",
                " must be positive, got ", batch_size);
  const std::optional<int64_t> seed = optional_int(config, "data.seed");
  return RLDataLoader(std::move(dataset), batch_size, config.get_as<bool>("data.shuffle"),
                      seed ? std::optional<uint64_t>(static_cast<uint64_t>(*seed)) : std::nullopt, /*drop_last=*/true);
}

int64_t RLDataLoader::size() const {
  const int64_t n = dataset_.size();
  return drop_last_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
}

int64_t RLDataLoader::epoch() const { return epoch_; }

std::vector<std::vector<int64_t>> RLDataLoader::next_epoch_rows() {
  const int64_t n = dataset_.size();
  std::vector<int64_t> order(static_cast<size_t>(n));
  if (shuffle_) {
    torch::Tensor perm = torch::randperm(n, generator_, torch::kLong);
    std::copy(perm.data_ptr<int64_t>(), perm.data_ptr<int64_t>() + n, order.begin());
    torch::randperm(n, generator_, torch::kLong);  // RandomSampler's draw for its empty remainder (see the header)
  } else {
    for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  }
  std::vector<std::vector<int64_t>> batches;
  for (int64_t b = 0; b < size(); ++b) {
    const auto begin = order.begin() + b * batch_size_;
    const auto end = order.begin() + std::min(n, (b + 1) * batch_size_);
    batches.emplace_back(begin, end);
  }
  ++epoch_;
  return batches;
}

std::vector<DataProto> RLDataLoader::next_epoch() {
  const int64_t epoch = epoch_;
  std::vector<DataProto> out;
  for (const std::vector<int64_t>& rows : next_epoch_rows()) {
    out.push_back(dataset_.batch(rows));
    out.back().meta_info()["epoch"] = epoch;
  }
  return out;
}

}  // namespace verl::data
