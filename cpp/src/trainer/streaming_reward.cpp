// Scoring while generating (see trainer/streaming_reward.h).
#include "trainer/streaming_reward.h"

#include <algorithm>
#include <utility>

#include "verl/core/error.h"

namespace verl::trainer::detail {

StreamingScorer::StreamingScorer(std::function<RewardOutput(const DataProto&)> score, DataProto columns,
                                 int64_t response_length)
    : score_(std::move(score)),
      columns_(std::move(columns)),
      scores_(torch::zeros({columns_.size(), response_length}, torch::kFloat32)),
      scored_(static_cast<size_t>(columns_.size()), false) {
  thread_ = std::thread([this] { loop(); });
}

StreamingScorer::~StreamingScorer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StreamingScorer::add(int64_t first, const DataProto& rows) {
  if (failed_) throw ScoringFailed();
  DataProto joined = columns_.slice(first, first + rows.size());
  joined.union_with(rows);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.emplace_back(first, std::move(joined));
  }
  cv_.notify_all();
}

void StreamingScorer::loop() {
  for (;;) {
    std::vector<std::pair<int64_t, DataProto>> work;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return closing_ || !queue_.empty(); });
      if (queue_.empty()) return;  // closing, nothing left
      work.swap(queue_);
    }
    if (error_) continue;  // after a failed call the rest is only drained
    try {
      std::vector<DataProto> parts;
      std::vector<int64_t> rows;  // the batch row of each scored row
      for (auto& [first, part] : work) {
        for (int64_t i = 0; i < part.size(); ++i) rows.push_back(first + i);
        parts.push_back(std::move(part));
      }
      const RewardOutput out = score_(parts.size() == 1 ? parts.front() : DataProto::concat(parts));
      const torch::Tensor index = torch::tensor(rows, torch::kLong);
      scores_.index_copy_(0, index, out.token_level_scores.to(torch::kCPU, torch::kFloat32));
      const bool first_call = std::none_of(scored_.begin(), scored_.end(), [](bool b) { return b; });
      VERL_CHECK_AS(DataError, first_call || out.extra_info.size() == extra_.size(),
                    "the reward function returned ", out.extra_info.size(), " extra-info columns for some samples and ",
                    extra_.size(), " for others");
      for (const auto& [key, values] : out.extra_info) {
        auto it = extra_.find(key);
        VERL_CHECK_AS(DataError, first_call || it != extra_.end(), "the reward function's extra-info column '", key,
                      "' is missing for some samples");
        if (it == extra_.end()) it = extra_.emplace(key, std::vector<Json>(scored_.size())).first;
        for (size_t i = 0; i < rows.size(); ++i) it->second[static_cast<size_t>(rows[i])] = values[i];
      }
      for (int64_t r : rows) scored_[static_cast<size_t>(r)] = true;
    } catch (...) {
      error_ = std::current_exception();
      failed_ = true;
    }
  }
}

RewardOutput StreamingScorer::finish() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  cv_.notify_all();
  thread_.join();
  if (error_) std::rethrow_exception(error_);
  for (size_t r = 0; r < scored_.size(); ++r)
    VERL_CHECK_AS(DataError, scored_[r], "streamed scoring: row ", r, " of the rollout batch was never scored");
  RewardOutput out;
  out.token_level_scores = scores_;
  out.extra_info = std::move(extra_);
  return out;
}

}  // namespace verl::trainer::detail
