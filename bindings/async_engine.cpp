// verl._C.rollout.AsyncEngine: verl::rollout::AsyncEngine for Python's asyncio (verl.rollout.LLM.generate_async /
// generate_stream). The engine's thread never takes the GIL: its callbacks queue events and write a byte to a pipe;
// the event loop watches the pipe (loop.add_reader(fileno)) and drains the queue on the Python side.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "bindings.h"
#include "verl/core/error.h"
#include "verl/rollout/async_engine.h"

namespace verl::bindings {
namespace {

using rollout::AsyncEngine;
using rollout::RequestOutput;
using rollout::TokenEvent;

class AsyncBridge {
 public:
  explicit AsyncBridge(std::shared_ptr<rollout::Engine> engine) {
    if (pipe2(fds_, O_NONBLOCK | O_CLOEXEC) != 0)
      VERL_FAIL(Error, "AsyncEngine: cannot create its notification pipe: ", std::strerror(errno));
    async_ = std::make_unique<AsyncEngine>(std::move(engine));
  }
  ~AsyncBridge() {
    close();
    ::close(fds_[0]);
    ::close(fds_[1]);
  }

  int64_t submit(const std::vector<int64_t>& prompt, const rollout::SamplingParams& params, bool stream) {
    AsyncEngine::TokenCallback on_token;
    if (stream) on_token = [this](const TokenEvent& e) { push({Kind::kToken, e}); };
    // The id is known once submit returns; the done callback may run before that on the engine's thread, but
    // push() waits for this lock, under which the id is filled in and the future registered.
    auto id = std::make_shared<int64_t>(-1);
    std::lock_guard<std::mutex> lock(mutex_);
    AsyncEngine::Submission sub = async_->submit(prompt, params, on_token, [this, id](const auto&) {
      TokenEvent done;
      push({Kind::kDone, done}, id.get());
    });
    *id = sub.request_id;
    results_[sub.request_id] = sub.result;
    return sub.request_id;
  }

  // ("token", request_id, sample_index, token, logprob) and ("done", request_id) in the order they happened.
  py::list drain() {
    char buf[256];
    while (::read(fds_[0], buf, sizeof buf) > 0) {
    }
    std::deque<Event> events;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      events.swap(events_);
    }
    py::list out;
    for (const Event& e : events) {
      if (e.kind == Kind::kToken)
        out.append(py::make_tuple("token", e.event.request_id, e.event.sample_index, e.event.token, e.event.logprob));
      else
        out.append(py::make_tuple("done", e.event.request_id));
    }
    return out;
  }

  // The finished request's output (or the engine's error, raised); each result is taken once.
  RequestOutput take(int64_t request_id) {
    std::shared_future<RequestOutput> result;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = results_.find(request_id);
      VERL_CHECK(it != results_.end(), "AsyncEngine.take: no result for request ", request_id);
      result = it->second;
      results_.erase(it);
    }
    return result.get();
  }

  bool abort(int64_t request_id) { return async_->abort(request_id); }
  void hold() { async_->hold(); }
  void release() { async_->release(); }
  void close() { async_->close(); }
  int fileno() const { return fds_[0]; }
  int64_t num_in_flight() const { return async_->num_in_flight(); }

 private:
  enum class Kind { kToken, kDone };
  struct Event {
    Kind kind;
    TokenEvent event;  // kDone: only request_id is set
  };

  // `done_id`: the request id of a kDone event, read under the lock.
  void push(Event e, const int64_t* done_id = nullptr) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (done_id != nullptr) e.event.request_id = *done_id;
      events_.push_back(e);
    }
    const char byte = 1;
    (void)!::write(fds_[1], &byte, 1);  // a full pipe already holds a wake-up
  }

  int fds_[2] = {-1, -1};
  std::mutex mutex_;
  std::deque<Event> events_;
  std::map<int64_t, std::shared_future<RequestOutput>> results_;
  std::unique_ptr<AsyncEngine> async_;  // last: destroyed (thread joined) before the queue it writes to
};

}  // namespace

void register_async_engine(py::module_& m) {
  using Release = py::call_guard<py::gil_scoped_release>;
  py::module_ r = m.attr("rollout").cast<py::module_>();
  py::class_<AsyncBridge>(r, "AsyncEngine",
                          "Requests submitted one by one while a background thread keeps the engine stepping "
                          "(verl/rollout/async_engine.h); python/verl/rollout/llm.py drives it from asyncio.")
      .def(py::init<std::shared_ptr<rollout::Engine>>(), py::arg("engine"))
      .def("submit", &AsyncBridge::submit, py::arg("prompt_token_ids"), py::arg("sampling_params"),
           py::arg("stream") = false, Release())
      .def("drain", &AsyncBridge::drain)
      .def("take", &AsyncBridge::take, py::arg("request_id"), Release())
      .def("abort", &AsyncBridge::abort, py::arg("request_id"), Release())
      .def("hold", &AsyncBridge::hold, Release())
      .def("release", &AsyncBridge::release, Release())
      .def("close", &AsyncBridge::close, Release())
      .def("fileno", &AsyncBridge::fileno)
      .def_property_readonly("num_in_flight", &AsyncBridge::num_in_flight);
}

}  // namespace verl::bindings
