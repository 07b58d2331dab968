// verl::rollout::AsyncEngine: requests submitted and awaited one by one while one background thread keeps an
// Engine stepping over everything in flight -- continuous batching across independent callers. This is the rollout
// API an agent loop needs (verl's AsyncLLMServerManager / vLLM's AsyncLLM): a conversation submits its next turn
// when its tool call returns, without waiting for the rest of a batch, and can stream tokens or abort.
//
//   verl::rollout::AsyncEngine async(engine);
//   auto sub = async.submit(prompt_ids, params, [](const verl::rollout::TokenEvent& e) { /* streaming */ });
//   verl::rollout::RequestOutput out = sub.result.get();   // or async.abort(sub.request_id)
//
// The engine is the AsyncEngine's while it lives: do not call its generate()/step() yourself (its add_request,
// stats, update_weights and sleep/wake_up stay usable; update_weights and sleep wait for the step in progress).
// Outputs equal what Engine::generate gives for the same requests and seeds (seeded sampling does not depend on
// what else is batched).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "verl/core/export.h"
#include "verl/rollout/engine.h"

namespace verl::rollout {

class VERL_API AsyncEngine {
 public:
  using TokenCallback = std::function<void(const TokenEvent&)>;
  // Gets the request's result, ready (get() returns the output or rethrows the engine's error).
  using DoneCallback = std::function<void(const std::shared_future<RequestOutput>&)>;
  struct Submission {
    int64_t request_id = 0;
    std::shared_future<RequestOutput> result;  // the output; an exception if the engine failed
  };

  explicit AsyncEngine(std::shared_ptr<Engine> engine);
  ~AsyncEngine();  // close()
  AsyncEngine(const AsyncEngine&) = delete;
  AsyncEngine& operator=(const AsyncEngine&) = delete;

  // Queues a request (InvalidArgument for a bad one, as Engine::add_request; InvalidArgument after close()).
  // on_token is called for each of its tokens as it is sampled, on_done once when its result is ready (finished,
  // aborted or failed) -- on the engine's thread (on_done: or abort()'s / close()'s caller), without locks held;
  // they must not block for long.
  Submission submit(const std::vector<int64_t>& prompt_token_ids, const SamplingParams& params,
                    TokenCallback on_token = {}, DoneCallback on_done = {});
  // Ends a request before the engine's next step; its result resolves with the tokens so far (finish_reason
  // "abort"). Returns once that happened: true, or false when the request was not in flight (unknown, or it
  // finished first). Called from an on_token callback (the engine's thread), it only queues the abort and returns
  // true.
  bool abort(int64_t request_id);
  // Stops the thread and aborts what is still in flight (every result resolves). Idempotent, and safe from several
  // threads at once; InvalidArgument from the engine's own thread (a callback). A callback that throws is reported
  // on stderr and ignored: it must not end the engine's thread.
  void close();
  // While held (hold() more often than release()), the thread does not start a step (aborts still run): requests
  // submitted meanwhile enter the engine's next step together. asyncio's front holds it from a loop iteration's first
  // submission to the iteration's end, so a batch of concurrent requests is scheduled as one, whatever the timing.
  void hold();
  void release();
  int64_t num_in_flight() const;
  const std::shared_ptr<Engine>& engine() const { return engine_; }

 private:
  struct InFlight {
    std::promise<RequestOutput> promise;
    std::shared_future<RequestOutput> result;
    TokenCallback on_token;
    DoneCallback on_done;
  };
  void loop();
  void run_aborts();  // on the engine's thread, between steps
  void on_tokens(const std::vector<TokenEvent>& events);
  // Resolves and forgets the request (under no lock); false if it was not in flight.
  bool resolve(int64_t request_id, const RequestOutput* output, std::exception_ptr error);

  std::shared_ptr<Engine> engine_;
  mutable std::mutex mutex_;  // guards in_flight_, aborts_, closed_, holds_
  std::condition_variable wake_;
  std::map<int64_t, InFlight> in_flight_;
  // Aborts asked for and not yet done, each with the promise its caller waits on (the stepping thread does them
  // between steps: a caller contending for the engine's step lock could starve behind a busy loop).
  std::map<int64_t, std::vector<std::shared_ptr<std::promise<bool>>>> aborts_;
  bool closed_ = false;
  int64_t holds_ = 0;       // guarded by mutex_
  std::mutex close_mutex_;  // serialises close(): one caller joins the thread
  std::thread thread_;
};

}  // namespace verl::rollout
