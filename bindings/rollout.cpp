// verl._C.rollout: the rollout engine (verl/rollout/engine.h), its sampling parameters and the
// batched sampler. python/verl/rollout/ wraps it with vLLM's names (LLM, SamplingParams).
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "verl/core/error.h"
#include "verl/rollout/engine.h"
#include "verl/rollout/sampler.h"

namespace verl::bindings {

void register_rollout(py::module_& m) {
  using namespace verl::rollout;
  using Release = py::call_guard<py::gil_scoped_release>;
  py::module_ r = m.def_submodule("rollout", "verl::rollout: paged-KV continuous-batching generation");

  py::class_<SamplingParams>(r, "SamplingParams", "Per-request sampling settings (vLLM names); validated on creation.")
      .def(py::init([](int64_t n, double temperature, double top_p, int64_t top_k, double min_p, int64_t max_tokens,
                       std::vector<int64_t> stop_token_ids, bool ignore_eos, std::optional<int64_t> seed,
                       bool logprobs) {
             SamplingParams p;
             p.n = n;
             p.temperature = temperature;
             p.top_p = top_p;
             p.top_k = top_k;
             p.min_p = min_p;
             p.max_tokens = max_tokens;
             p.stop_token_ids = std::move(stop_token_ids);
             p.ignore_eos = ignore_eos;
             p.seed = seed;
             p.logprobs = logprobs;
             p.validate();
             return p;
           }),
           py::kw_only(), py::arg("n") = 1, py::arg("temperature") = 1.0, py::arg("top_p") = 1.0,
           py::arg("top_k") = -1, py::arg("min_p") = 0.0, py::arg("max_tokens") = 16,
           py::arg("stop_token_ids") = std::vector<int64_t>{}, py::arg("ignore_eos") = false,
           py::arg("seed") = py::none(), py::arg("logprobs") = true)
      .def_readonly("n", &SamplingParams::n)
      .def_readonly("temperature", &SamplingParams::temperature)
      .def_readonly("top_p", &SamplingParams::top_p)
      .def_readonly("top_k", &SamplingParams::top_k)
      .def_readonly("min_p", &SamplingParams::min_p)
      .def_readonly("max_tokens", &SamplingParams::max_tokens)
      .def_readonly("stop_token_ids", &SamplingParams::stop_token_ids)
      .def_readonly("ignore_eos", &SamplingParams::ignore_eos)
      .def_readonly("seed", &SamplingParams::seed)
      .def_readonly("logprobs", &SamplingParams::logprobs)
      .def("__repr__", [](const SamplingParams& p) {
        return "SamplingParams(n=" + std::to_string(p.n) + ", temperature=" + std::to_string(p.temperature) +
               ", top_p=" + std::to_string(p.top_p) + ", top_k=" + std::to_string(p.top_k) +
               ", min_p=" + std::to_string(p.min_p) + ", max_tokens=" + std::to_string(p.max_tokens) +
               (p.seed ? ", seed=" + std::to_string(*p.seed) : std::string()) + ")";
      });

  py::class_<CompletionOutput>(r, "CompletionOutput")
      .def_readonly("index", &CompletionOutput::index)
      .def_readonly("token_ids", &CompletionOutput::token_ids)
      .def_readonly("logprobs", &CompletionOutput::logprobs)
      .def_readonly("finish_reason", &CompletionOutput::finish_reason);
  py::class_<RequestOutput>(r, "RequestOutput")
      .def_readonly("request_id", &RequestOutput::request_id)
      .def_readonly("prompt_token_ids", &RequestOutput::prompt_token_ids)
      .def_readonly("outputs", &RequestOutput::outputs);

  py::class_<Engine, std::shared_ptr<Engine>>(r, "Engine", "Paged-KV continuous-batching engine over a CausalLM.")
      .def(py::init([](std::shared_ptr<model::CausalLM> model, int64_t block_size, int64_t max_num_seqs,
                       int64_t max_num_batched_tokens, int64_t max_model_len, int64_t kv_cache_bytes,
                       std::vector<int64_t> eos_token_ids, uint64_t seed, bool paged_attention_kernel,
                       bool enable_prefix_caching, bool enforce_eager, std::vector<int64_t> cudagraph_capture_sizes,
                       std::optional<bool> async_scheduling) {
             EngineConfig c;
             c.block_size = block_size;
             c.max_num_seqs = max_num_seqs;
             c.max_num_batched_tokens = max_num_batched_tokens;
             c.max_model_len = max_model_len;
             c.kv_cache_bytes = kv_cache_bytes;
             c.eos_token_ids = std::move(eos_token_ids);
             c.seed = seed;
             c.paged_attention_kernel = paged_attention_kernel;
             c.enable_prefix_caching = enable_prefix_caching;
             c.enforce_eager = enforce_eager;
             c.cudagraph_capture_sizes = std::move(cudagraph_capture_sizes);
             c.async_scheduling = async_scheduling;
             return std::make_shared<Engine>(std::move(model), c);
           }),
           py::arg("model"), py::kw_only(), py::arg("block_size") = 16, py::arg("max_num_seqs") = 256,
           py::arg("max_num_batched_tokens") = 2048, py::arg("max_model_len") = 0, py::arg("kv_cache_bytes") = 0,
           py::arg("eos_token_ids") = std::vector<int64_t>{}, py::arg("seed") = 0,
           py::arg("paged_attention_kernel") = true, py::arg("enable_prefix_caching") = false,
           py::arg("enforce_eager") = false, py::arg("cudagraph_capture_sizes") = std::vector<int64_t>{},
           py::arg("async_scheduling") = py::none())
      .def("add_request", &Engine::add_request, py::arg("prompt_token_ids"), py::arg("sampling_params"))
      .def("step", &Engine::step, Release())
      .def("has_unfinished_requests", &Engine::has_unfinished_requests)
      .def(
          "generate",
          [](Engine& engine, const std::vector<std::vector<int64_t>>& prompts,
             const std::vector<rollout::SamplingParams>& params) { return engine.generate(prompts, params); },
          py::arg("prompt_token_ids"), py::arg("sampling_params"), Release())
      .def("update_weights", &Engine::update_weights, py::arg("named_tensors"), Release())
      .def("sleep", &Engine::sleep, py::arg("release_weights") = false, Release(),
           "Releases the KV cache; with release_weights=True the model's weights too (generation then needs "
           "update_weights with every weight first).")
      .def_property_readonly("weights_released", &Engine::weights_released)
      .def("wake_up", &Engine::wake_up, Release())
      .def_property_readonly("sleeping", &Engine::sleeping)
      .def_property_readonly("max_model_len", &Engine::max_model_len)
      .def_property_readonly("model", &Engine::model)
      .def("load", &Engine::load)
      .def("stats", [](const Engine& e) {
        EngineStats s = e.stats();
        py::dict d;
        d["num_blocks"] = s.num_blocks;
        d["num_free_blocks"] = s.num_free_blocks;
        d["block_size"] = s.block_size;
        d["num_preemptions"] = s.num_preemptions;
        d["num_prefill_tokens"] = s.num_prefill_tokens;
        d["num_cached_tokens"] = s.num_cached_tokens;
        d["num_decode_tokens"] = s.num_decode_tokens;
        d["num_steps"] = s.num_steps;
        d["peak_used_blocks"] = s.peak_used_blocks;
        d["num_graph_captures"] = s.num_graph_captures;
        d["num_async_steps"] = s.num_async_steps;
        return d;
      });

  py::class_<EnginePool>(r, "EnginePool", "Data-parallel replicas: least-loaded first, results in input order.")
      .def(py::init<std::vector<std::shared_ptr<Engine>>>(), py::arg("engines"))
      .def("generate", &EnginePool::generate, py::arg("prompt_token_ids"), py::arg("sampling_params"), Release())
      .def_property_readonly("last_assignment", &EnginePool::last_assignment)
      .def("__len__", &EnginePool::size);

  r.def("stream_uniform", &stream_uniform, py::arg("seed"), py::arg("step"),
        "The sampler's uniform draw in [0, 1) for (seed, step).");
  r.def(
      "sample",
      [](const torch::Tensor& logits, const std::vector<double>& temperature, const std::vector<int64_t>& top_k,
         const std::vector<double>& top_p, const std::vector<double>& min_p, const std::vector<double>& uniform) {
        SamplerRows rows{temperature, top_k, top_p, min_p, uniform};
        VERL_CHECK(top_k.size() == rows.size() && top_p.size() == rows.size() && min_p.size() == rows.size() &&
                       uniform.size() == rows.size(),
                   "sample: per-row lists must all have one entry per logits row");
        py::gil_scoped_release release;
        SampleResult s = sample(logits, rows);
        return std::make_pair(s.tokens, s.logprobs);
      },
      py::arg("logits"), py::arg("temperature"), py::arg("top_k"), py::arg("top_p"), py::arg("min_p"),
      py::arg("uniform"), "Batched sampler: (tokens (rows,), logprobs (rows,)).");
}

}  // namespace verl::bindings
