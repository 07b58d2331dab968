// The background stepping loop of verl::rollout::AsyncEngine (see verl/rollout/async_engine.h).
#include "verl/rollout/async_engine.h"

#include <exception>
#include <iostream>
#include <string>
#include <utility>

#include "verl/core/error.h"

namespace verl::rollout {
namespace {

// A user's callback runs on the engine's thread, where an escaping exception would end the process
// (std::terminate): it is reported on stderr and the engine goes on with the other requests.
template <typename F>
void run_callback(const char* what, int64_t request_id, F&& callback) noexcept {
  try {
    callback();
  } catch (const std::exception& e) {
    std::cerr << "verl AsyncEngine: the " << what << " callback of request " << request_id << " threw: " << e.what()
              << " (ignored)\n";
  } catch (...) {
    std::cerr << "verl AsyncEngine: the " << what << " callback of request " << request_id
              << " threw a non-standard exception (ignored)\n";
  }
}

}  // namespace

AsyncEngine::AsyncEngine(std::shared_ptr<Engine> engine) : engine_(std::move(engine)) {
  VERL_CHECK(engine_ != nullptr, "AsyncEngine: the engine is null");
  engine_->set_token_listener([this](const std::vector<TokenEvent>& events) { on_tokens(events); });
  thread_ = std::thread([this] { loop(); });
}

AsyncEngine::~AsyncEngine() {
  try {
    close();
  } catch (...) {  // a destructor must not throw; close() only fails if the engine itself does
  }
}

AsyncEngine::Submission AsyncEngine::submit(const std::vector<int64_t>& prompt_token_ids,
                                            const SamplingParams& params, TokenCallback on_token,
                                            DoneCallback on_done) {
  Submission out;
  {
    // Held across add_request: the loop cannot report the request (tokens or output) before it is registered.
    std::lock_guard<std::mutex> lock(mutex_);
    VERL_CHECK(!closed_, "AsyncEngine.submit: the engine is closed");
    out.request_id = engine_->add_request(prompt_token_ids, params);
    InFlight& f = in_flight_[out.request_id];
    f.on_token = std::move(on_token);
    f.on_done = std::move(on_done);
    f.result = f.promise.get_future().share();
    out.result = f.result;
  }
  wake_.notify_one();
  return out;
}

bool AsyncEngine::abort(int64_t request_id) {
  auto done = std::make_shared<std::promise<bool>>();
  std::future<bool> answer = done->get_future();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (in_flight_.count(request_id) == 0) return false;
    if (closed_) {  // close() aborts everything itself
      done->set_value(true);
      return true;
    }
    aborts_[request_id].push_back(done);
  }
  wake_.notify_one();
  if (std::this_thread::get_id() == thread_.get_id()) return true;  // from a callback: done before the next step
  return answer.get();
}

void AsyncEngine::run_aborts() {
  std::map<int64_t, std::vector<std::shared_ptr<std::promise<bool>>>> aborts;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    aborts.swap(aborts_);
  }
  for (auto& [id, waiters] : aborts) {
    bool aborted = false;
    try {
      std::optional<RequestOutput> out = engine_->abort(id);
      aborted = out && resolve(id, &*out, nullptr);
    } catch (...) {
      for (auto& w : waiters) w->set_exception(std::current_exception());
      continue;
    }
    for (auto& w : waiters) w->set_value(aborted);
  }
}

void AsyncEngine::close() {
  VERL_CHECK_AS(InvalidArgument, std::this_thread::get_id() != thread_.get_id(),
                "AsyncEngine.close: called from the engine's own thread (a callback); close it from another thread");
  std::lock_guard<std::mutex> closing(close_mutex_);  // one closer joins; a concurrent one waits, then returns
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_ && !thread_.joinable()) return;
    closed_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  run_aborts();  // asked for before close: their callers wait
  std::vector<int64_t> ids;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [id, f] : in_flight_) ids.push_back(id);
  }
  for (int64_t id : ids) {
    std::optional<RequestOutput> out = engine_->abort(id);
    if (out) resolve(id, &*out, nullptr);
  }
  engine_->set_token_listener({});
}

void AsyncEngine::hold() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++holds_;
}

void AsyncEngine::release() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    VERL_CHECK(holds_ > 0, "AsyncEngine.release: not held");
    --holds_;
  }
  wake_.notify_one();
}

int64_t AsyncEngine::num_in_flight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(in_flight_.size());
}

void AsyncEngine::loop() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return closed_ || !aborts_.empty() || (!in_flight_.empty() && holds_ == 0); });
      if (closed_) return;
    }
    run_aborts();  // even while held: an abort's caller may be the one that holds
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (in_flight_.empty() || holds_ > 0) continue;
    }
    std::vector<RequestOutput> done;
    try {
      done = engine_->step();
    } catch (...) {
      // The step failed (an engine asleep, a cache too small for a request, ...): every request in flight fails
      // with that error and leaves the engine, which stays usable for new requests.
      const std::exception_ptr error = std::current_exception();
      std::vector<int64_t> ids;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        for (const auto& [id, f] : in_flight_) ids.push_back(id);
      }
      for (int64_t id : ids) {
        try {
          engine_->abort(id);
        } catch (...) {
        }
        resolve(id, nullptr, error);
      }
      continue;
    }
    for (const RequestOutput& out : done) resolve(out.request_id, &out, nullptr);
    // Requests the engine no longer has (aborted on the engine directly, bypassing abort()) would keep this loop
    // stepping an idle engine: they fail instead.
    std::vector<int64_t> orphans;
    {
      std::lock_guard<std::mutex> lock(mutex_);  // submit() registers under it, so none is half-added
      if (!in_flight_.empty() && !engine_->has_unfinished_requests())
        for (const auto& [id, f] : in_flight_) orphans.push_back(id);
    }
    for (int64_t id : orphans) {
      resolve(id, nullptr, std::make_exception_ptr(InvalidArgument(
                               "AsyncEngine: request " + std::to_string(id) + " left the engine without an output "
                               "(aborted on the Engine itself; use AsyncEngine.abort)")));
    }
  }
}

void AsyncEngine::on_tokens(const std::vector<TokenEvent>& events) {
  std::vector<std::pair<TokenCallback, TokenEvent>> calls;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const TokenEvent& e : events) {
      auto it = in_flight_.find(e.request_id);
      if (it != in_flight_.end() && it->second.on_token) calls.emplace_back(it->second.on_token, e);
    }
  }
  for (auto& [callback, event] : calls) run_callback("token", event.request_id, [&] { callback(event); });
}

bool AsyncEngine::resolve(int64_t request_id, const RequestOutput* output, std::exception_ptr error) {
  InFlight f;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = in_flight_.find(request_id);
    if (it == in_flight_.end()) return false;
    f = std::move(it->second);
    in_flight_.erase(it);
  }
  if (error)
    f.promise.set_exception(error);
  else
    f.promise.set_value(*output);
  if (f.on_done) run_callback("done", request_id, [&] { f.on_done(f.result); });
  return true;
}

}  // namespace verl::rollout
