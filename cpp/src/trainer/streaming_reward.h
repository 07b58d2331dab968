// Scores a rollout batch while it is generated (verl's reward loop, which scores each sample as its agent loop ends):
// generation hands over each finished request's rows, a thread of this scorer calls the reward callback on all rows
// handed over since its last call, and the engine decodes the rest meanwhile. Private to libverl.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "verl/data/data_proto.h"
#include "verl/trainer/ppo_trainer.h"

namespace verl::trainer::detail {

// What add() throws after a failed scoring call: the generation stops, finish() has the callback's own exception.
struct ScoringFailed : std::runtime_error {
  ScoringFailed() : std::runtime_error("a reward callback failed while the batch was generated") {}
};

class StreamingScorer {
 public:
  // `score` checks what it returns (shape, finite scores) for the rows it is given; `columns`: the batch's rows
  // (rows x their non-tensor columns: uid, data_source, reward_model, ...), which join the generated rows.
  StreamingScorer(std::function<RewardOutput(const DataProto&)> score, DataProto columns, int64_t response_length);
  ~StreamingScorer();  // stops the thread (scores not waited for are dropped)
  StreamingScorer(const StreamingScorer&) = delete;
  StreamingScorer& operator=(const StreamingScorer&) = delete;

  // Rows first .. first + rows.size() - 1 of the batch, generated (the generation thread calls it). Throws
  // ScoringFailed once a callback failed, so generation stops; finish() then rethrows the callback's exception.
  void add(int64_t first, const DataProto& rows);
  // Every row's score once all rows were added: token_level_scores (rows, response_length) and the extra columns, in
  // row order. Rethrows the callback's first exception; DataError when a row was never added or when calls returned
  // different extra columns.
  RewardOutput finish();

 private:
  void loop();

  std::function<RewardOutput(const DataProto&)> score_;
  DataProto columns_;
  torch::Tensor scores_;                                 // (rows, response_length) float32
  std::map<std::string, std::vector<Json>> extra_;       // per row
  std::vector<bool> scored_;
  std::vector<std::pair<int64_t, DataProto>> queue_;     // handed over, not yet scored
  bool closing_ = false;
  std::exception_ptr error_;          // the thread's; read by others only after the join
  std::atomic<bool> failed_{false};   // error_ is set
  std::mutex mutex_;
  std::condition_variable cv_;
  std::thread thread_;
};

}  // namespace verl::trainer::detail
