// The controller/worker split of a training job (see verl/dist/worker_group.h).
#include "verl/dist/worker_group.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <utility>

#include "core/untrusted.h"
#include "data/data_proto_pickle.h"
#include "verl/core/error.h"
#include "verl/core/json.h"

namespace verl::dist {
namespace {

constexpr const char* kRelease = "__release__";

std::vector<char> to_bytes(const std::string& text) { return std::vector<char>(text.begin(), text.end()); }
std::string to_text(const std::vector<char>& bytes) { return std::string(bytes.begin(), bytes.end()); }

// What the controller sends a rank for a call, in one message (one collective when it is small, see
// Communicator::scatter_bytes): the header's length as 8 bytes, the JSON header (the method, the dispatch), then
// the pickled batch.
std::vector<char> call_message(const Json& header, const std::vector<char>& batch) {
  const std::string text = header.dump();
  const uint64_t length = text.size();
  std::vector<char> out(sizeof(length) + text.size() + batch.size());
  std::memcpy(out.data(), &length, sizeof(length));
  std::copy(text.begin(), text.end(), out.begin() + sizeof(length));
  std::copy(batch.begin(), batch.end(), out.begin() + static_cast<std::ptrdiff_t>(sizeof(length) + text.size()));
  return out;
}

std::pair<Json, std::vector<char>> read_call_message(const std::vector<char>& message, int64_t rank) {
  uint64_t length = 0;
  VERL_CHECK_AS(DistributedError, message.size() >= sizeof(length), "worker group: rank ", rank, " got a call of ",
                message.size(), " bytes, too short for its header");
  std::memcpy(&length, message.data(), sizeof(length));
  VERL_CHECK_AS(DistributedError, length <= message.size() - sizeof(length), "worker group: rank ", rank,
                " got a call whose header claims ", length, " of its ", message.size(), " bytes");
  const auto body = message.begin() + static_cast<std::ptrdiff_t>(sizeof(length));
  return {Json::parse(std::string(body, body + static_cast<std::ptrdiff_t>(length))),
          std::vector<char>(body + static_cast<std::ptrdiff_t>(length), message.end())};
}

// A rank's answer to a call: 'O' + the pickled result, or 'E' + the error class + '\n' + the message, so the
// controller rethrows another rank's failure with its class and names the rank.
std::vector<char> ok_reply(const DataProto& result) {
  std::vector<char> out{'O'};
  const std::vector<char> body = detail::pickle_data_proto(result, "a worker's result");
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

std::vector<char> error_reply(const std::exception_ptr& error) {
  std::string kind = "Error", message;
  try {
    std::rethrow_exception(error);
  } catch (const ConfigTypeError& e) {
    kind = "ConfigTypeError", message = e.what();
  } catch (const ConfigError& e) {
    kind = "ConfigError", message = e.what();
  } catch (const DataError& e) {
    kind = "DataError", message = e.what();
  } catch (const InvalidArgument& e) {
    kind = "InvalidArgument", message = e.what();
  } catch (const TypeMismatch& e) {
    kind = "TypeMismatch", message = e.what();
  } catch (const CheckpointError& e) {
    kind = "CheckpointError", message = e.what();
  } catch (const DistributedError& e) {
    kind = "DistributedError", message = e.what();
  } catch (const std::exception& e) {
    message = e.what();
  } catch (...) {
    message = "unknown exception";
  }
  return to_bytes("E" + kind + "\n" + message);
}

[[noreturn]] void rethrow_reply(const std::vector<char>& reply, int64_t rank, const std::string& method) {
  const std::string text = to_text(reply);
  const size_t newline = text.find('\n');
  const std::string kind = text.substr(1, newline - 1);
  const std::string message =
      "rank " + std::to_string(rank) + " failed in '" + method + "': " + untrusted::escape(text.substr(newline + 1), 4000);
  if (kind == "ConfigTypeError") throw ConfigTypeError(message);
  if (kind == "ConfigError") throw ConfigError(message);
  if (kind == "DataError") throw DataError(message);
  if (kind == "InvalidArgument") throw InvalidArgument(message);
  if (kind == "TypeMismatch") throw TypeMismatch(message);
  if (kind == "CheckpointError") throw CheckpointError(message);
  if (kind == "DistributedError") throw DistributedError(message);
  throw Error(message);
}

DataProto with_offset(DataProto chunk, int64_t offset) {
  chunk.meta_info()[kRowOffsetKey] = offset;
  return chunk;
}

DataProto without_offset(DataProto result) {
  result.meta_info().erase(kRowOffsetKey);
  return result;
}

}  // namespace

DataProto with_metrics(DataProto result, const std::map<std::string, double>& metrics) {
  Json m = Json::object();
  for (const auto& [k, v] : metrics) m[k] = v;
  result.meta_info()["metrics"] = std::move(m);
  return result;
}

void WorkerGroup::register_method(const std::string& name, WorkerMethod method, Dispatch dispatch,
                                  int64_t ranks_per_chunk) {
  VERL_CHECK(static_cast<bool>(method), "register_method: '", name, "' is empty");
  VERL_CHECK(name != kRelease, "register_method: '", name, "' is reserved");
  VERL_CHECK(ranks_per_chunk >= 1, "register_method: '", name, "' with ranks_per_chunk ", ranks_per_chunk);
  methods_[name] = {std::move(method), dispatch, ranks_per_chunk};
}

DataProto WorkerGroup::call(const std::string& name, const DataProto& data) {
  auto it = methods_.find(name);
  VERL_CHECK(it != methods_.end(), "worker group: no method '", untrusted::escape(name, 200), "'");
  return dispatch_call(name, data, it->second.dispatch, it->second.ranks_per_chunk);
}

DataProto WorkerGroup::run_method(const std::string& name, const DataProto& chunk) const {
  auto it = methods_.find(name);
  VERL_CHECK(it != methods_.end(), "worker group: no method '", untrusted::escape(name, 200), "' on rank ", rank());
  return without_offset(it->second.method(chunk));
}

DataProto LocalWorkerGroup::dispatch_call(const std::string& name, const DataProto& data, Dispatch,
                                          int64_t ranks_per_chunk) {
  VERL_CHECK(ranks_per_chunk == 1, "worker group: '", name, "' asks for chunks of ", ranks_per_chunk,
             " ranks in a one-process job");
  return DataProto::concat({run_method(name, with_offset(data, 0))});
}

CollectiveWorkerGroup::CollectiveWorkerGroup(std::shared_ptr<Communicator> communicator, bool controller_computes)
    : comm_(std::move(communicator)), controller_computes_(controller_computes) {
  VERL_CHECK(comm_ != nullptr, "CollectiveWorkerGroup: the communicator is null");
  VERL_CHECK(controller_computes_ || comm_->world_size() >= 2,
             "CollectiveWorkerGroup: a pool needs a worker besides the controller, got a group of ", comm_->world_size());
}

DataProto CollectiveWorkerGroup::dispatch_call(const std::string& name, const DataProto& data, Dispatch dispatch,
                                               int64_t ranks_per_chunk) {
  VERL_CHECK(is_controller(), "worker group: call('", name, "') on rank ", rank(), "; only rank 0 (the controller) calls");
  VERL_CHECK(has_method(name), "worker group: no method '", untrusted::escape(name, 200), "'");
  const int64_t computing = world_size() - first_computing_rank();
  VERL_CHECK(ranks_per_chunk >= 1 && computing % ranks_per_chunk == 0, "worker group: '", name,
             "' asks for chunks of ", ranks_per_chunk, " ranks, which does not divide the ", computing, " ranks");
  const int64_t k = dispatch == Dispatch::kBroadcast ? 1 : ranks_per_chunk;
  const int64_t chunks = dispatch == Dispatch::kBroadcast ? world_size() : computing / k;
  DataProto input = data;
  int64_t pad_rows = 0;
  if (dispatch == Dispatch::kPadSplit) std::tie(input, pad_rows) = pad_dataproto_to_divisor(data, chunks);
  const Json header{{"method", name}, {"dispatch", static_cast<int>(dispatch)}};

  // Every rank's message in one scatter (a broadcast call sends each rank the same one: its batches are small).
  DataProto mine;
  std::vector<std::vector<char>> parts;
  if (dispatch == Dispatch::kBroadcast) {
    mine = with_offset(input, 0);
    parts.assign(static_cast<size_t>(world_size()),
                 call_message(header, detail::pickle_data_proto(mine, "the batch of '" + name + "'")));
  } else {
    VERL_CHECK_AS(DataError, input.size() % chunks == 0, "worker group: '", name, "' splits its batch of ",
                  input.size(), " rows over ", chunks, (k > 1 ? " groups of ranks" : " ranks"),
                  ", which does not divide it");
    const int64_t rows = input.size() / chunks;
    if (!controller_computes_) parts.push_back(call_message(header, {}));  // the controller's: nothing to run
    for (int64_t g = 0; g < chunks; ++g) {
      DataProto chunk = with_offset(input.slice(g * rows, (g + 1) * rows), g * rows);
      const std::vector<char> message =
          call_message(header, detail::pickle_data_proto(chunk, "the batch of '" + name + "'"));
      for (int64_t i = 0; i < k; ++i) parts.push_back(message);
      if (g == 0) mine = std::move(chunk);
    }
  }
  comm_->scatter_bytes(parts, 0);
  return run_and_gather(name, mine, pad_rows, dispatch, k);
}

DataProto CollectiveWorkerGroup::run_and_gather(const std::string& name, const DataProto& chunk, int64_t pad_rows,
                                                Dispatch dispatch, int64_t ranks_per_chunk) {
  // A pool's controller runs no split call: it answers 'O' alone, and its answer is not read.
  const bool runs = controller_computes_ || !is_controller() || dispatch == Dispatch::kBroadcast;
  const int64_t first = dispatch == Dispatch::kBroadcast ? 0 : first_computing_rank();
  std::vector<char> reply{'O'};
  try {
    if (runs) reply = ok_reply(run_method(name, chunk));
  } catch (...) {
    reply = error_reply(std::current_exception());
  }
  std::vector<std::vector<char>> replies = comm_->gather_bytes(reply, 0);
  if (!is_controller()) return DataProto();
  std::vector<DataProto> results;
  for (int64_t r = 0; r < world_size(); ++r) {  // the first failing rank, in rank order
    const std::vector<char>& answer = replies[static_cast<size_t>(r)];
    if (answer.empty() || answer[0] != 'O') rethrow_reply(answer, r, name);
  }
  for (int64_t r = first; r < world_size(); r += ranks_per_chunk) {  // one answer per chunk: its group's first rank
    const std::vector<char>& answer = replies[static_cast<size_t>(r)];
    results.push_back(detail::unpickle_data_proto(std::vector<char>(answer.begin() + 1, answer.end()),
                                                  "the result of '" + name + "' from rank " + std::to_string(r)));
  }
  if (dispatch == Dispatch::kBroadcast) {
    // Every rank ran the whole batch: rank 0's rows, everyone's metrics.
    std::vector<DataProto> meta_only;
    for (const auto& r : results) meta_only.push_back(DataProto({}, {}, r.meta_info()));
    DataProto out = results[0];
    out.meta_info() = DataProto::concat(meta_only).meta_info();
    return out;
  }
  DataProto out = DataProto::concat(results);
  return pad_rows > 0 ? unpad_dataproto(out, pad_rows) : out;
}

bool CollectiveWorkerGroup::serve_one() {
  const auto [header, batch] = read_call_message(comm_->scatter_bytes({}, 0), rank());
  const std::string name = header.at("method").get<std::string>();
  if (name == kRelease) return false;
  const auto dispatch = static_cast<Dispatch>(header.at("dispatch").get<int>());
  const std::string what = "the batch of '" + name + "' on rank " + std::to_string(rank());
  run_and_gather(name, detail::unpickle_data_proto(batch, what), 0, dispatch, 1);  // the controller picks answers
  return true;
}

void CollectiveWorkerGroup::serve() {
  VERL_CHECK(!is_controller(), "worker group: serve() on rank 0, the controller");
  while (serve_one()) {
  }
}

void CollectiveWorkerGroup::release() {
  VERL_CHECK(is_controller(), "worker group: release() on rank ", rank(), "; only the controller releases");
  comm_->scatter_bytes(std::vector<std::vector<char>>(static_cast<size_t>(world_size()),
                                                      call_message(Json{{"method", kRelease}}, {})),
                       0);
}

std::unique_ptr<WorkerGroup> make_worker_group(std::shared_ptr<Communicator> communicator) {
  if (communicator == nullptr || communicator->world_size() == 1) return std::make_unique<LocalWorkerGroup>();
  return std::make_unique<CollectiveWorkerGroup>(std::move(communicator));
}

}  // namespace verl::dist
