// CUDA graphs of the engine's decode forward (rollout/decode_graphs.h). Compiled in builds with
// VERL_WITH_CUDA only, where it registers itself as cuda_decode_graphs_factory().
//
// Every bucket's graph reads the same static inputs (DecodeInputs, laid out for the largest bucket) and writes
// the same static logits buffer, so one host-to-device copy of a pinned staging buffer and one replay make a step. Streams and events go through c10's generic device interface (as the
// kernels' stream_of does), so libverl links nothing of libc10_cuda; at::cuda::CUDAGraph is LibTorch's.
#include "rollout/decode_graphs.h"

#include <ATen/cuda/CUDAGraph.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <algorithm>
#include <map>
#include <utility>

#include "verl/core/error.h"

namespace verl::rollout {
namespace {

class CudaDecodeGraphs final : public DecodeGraphs {
 public:
  CudaDecodeGraphs(std::shared_ptr<model::CausalLM> model, PagedKVCache& cache, std::vector<int64_t> sizes,
                   int64_t max_blocks)
      : model_(std::move(model)),
        cache_(cache),
        sizes_(std::move(sizes)),
        device_(model_->device()),
        inputs_(sizes_.back(), max_blocks, device_) {
    VERL_CHECK(device_.is_cuda(), "DecodeGraphs: the model must be on a CUDA device, got ", device_.str());
    VERL_CHECK(cache_.uses_kernel(1), "DecodeGraphs: the KV cache must decode with the paged-attention kernel");
  }

  torch::Tensor run(const int64_t* ids, const int64_t* positions, const int64_t* slots, const int64_t* tables,
                    int64_t bs, int64_t max_blocks, const torch::Tensor& device_ids) override {
    const auto bucket = std::lower_bound(sizes_.begin(), sizes_.end(), bs);
    if (bucket == sizes_.end() || max_blocks > inputs_.max_blocks() || bs < 1) return {};
    const int64_t rows = *bucket;
    int64_t blocks = 4;
    while (blocks < max_blocks) blocks *= 2;
    blocks = std::min(blocks, inputs_.max_blocks());
    if (moved()) clear_graphs();
    inputs_.stage(ids, positions, slots, tables, bs, max_blocks, rows, blocks, device_ids);
    auto it = graphs_.find({rows, blocks});
    if (it == graphs_.end()) it = graphs_.emplace(std::make_pair(rows, blocks), capture(rows, blocks)).first;
    it->second->replay();
    return logits_.narrow(0, 0, bs);
  }

  int64_t num_captured() const override { return captures_; }

  void clear() override {
    clear_graphs();
    addresses_.clear();
  }

 private:
  // A pool that no graph uses any more cannot be captured into again (the allocator keeps its id with a zero use
  // count and refuses it): a fresh one for the next capture.
  void clear_graphs() {
    graphs_.clear();
    pool_ = c10::MempoolId_t{0, 0};
  }

  // Whether a parameter, buffer or KV pool is no longer where the graphs read it.
  bool moved() {
    std::vector<const void*> now;
    for (const torch::Tensor& p : model_->parameters()) now.push_back(p.data_ptr());
    for (const torch::Tensor& b : model_->buffers()) now.push_back(b.data_ptr());
    for (int64_t l = 0; l < model_->shard_config().num_hidden_layers; ++l) {
      now.push_back(cache_.keys(l).data_ptr());
      now.push_back(cache_.values(l).data_ptr());
    }
    const bool changed = now != addresses_;
    addresses_ = std::move(now);
    return changed;
  }

  // The current stream waits for everything the side stream was given, on every way out of capture().
  struct JoinBack {
    c10::Stream side, current;
    ~JoinBack() {
      try {
        c10::Event done(c10::DeviceType::CUDA);
        done.record(side);
        done.block(current);
      } catch (...) {  // an error here is the capture's, already on its way out
      }
    }
  };

  // Captures the forward of the staged rows x blocks bucket; every graph writes its logits into one static buffer.
  std::unique_ptr<at::cuda::CUDAGraph> capture(int64_t rows, int64_t blocks) {
    const c10::impl::VirtualGuardImpl cuda(c10::DeviceType::CUDA);
    const c10::Stream current = cuda.getStream(device_);
    const c10::Stream side = cuda.getStreamFromGlobalPool(device_, /*isHighPriority=*/false);
    if (!logits_.defined())
      logits_ = torch::empty({inputs_.max_rows(), model_->config().vocab_size},
                             torch::TensorOptions().dtype(model_->dtype()).device(device_));
    if (pool_ == c10::MempoolId_t{0, 0}) pool_ = at::cuda::graph_pool_handle();
    auto graph = std::make_unique<at::cuda::CUDAGraph>();
    c10::Event staged(c10::DeviceType::CUDA);
    staged.record(current);
    staged.block(side);  // the staged inputs and the keys/values written so far
    const JoinBack join{side, current};
    const c10::StreamGuard on_side(side);
    // One eager run first, on the capture stream: modules load and cuBLAS sets up its workspace outside the
    // capture. It writes the same keys/values the replay writes.
    logits_.narrow(0, 0, rows).copy_(inputs_.forward(*model_, cache_, rows, blocks));
    graph->capture_begin(pool_, cudaStreamCaptureModeThreadLocal);
    try {
      logits_.narrow(0, 0, rows).copy_(inputs_.forward(*model_, cache_, rows, blocks));
    } catch (...) {
      try {
        graph->capture_end();
      } catch (...) {  // the capture's own error is the one to report
      }
      throw;
    }
    graph->capture_end();
    ++captures_;
    return graph;
  }

  std::shared_ptr<model::CausalLM> model_;
  PagedKVCache& cache_;
  std::vector<int64_t> sizes_;
  torch::Device device_;
  DecodeInputs inputs_;
  torch::Tensor logits_;
  c10::MempoolId_t pool_{0, 0};
  std::map<std::pair<int64_t, int64_t>, std::unique_ptr<at::cuda::CUDAGraph>> graphs_;  // by (rows, blocks)
  std::vector<const void*> addresses_;
  int64_t captures_ = 0;
};

std::unique_ptr<DecodeGraphs> make_cuda_decode_graphs(std::shared_ptr<model::CausalLM> model, PagedKVCache& cache,
                                                      std::vector<int64_t> sizes, int64_t max_blocks) {
  VERL_CHECK(!sizes.empty(), "DecodeGraphs: no batch sizes to capture");
  return std::make_unique<CudaDecodeGraphs>(std::move(model), cache, std::move(sizes), max_blocks);
}

[[maybe_unused]] const bool registered = (cuda_decode_graphs_factory() = &make_cuda_decode_graphs, true);

}  // namespace

}  // namespace verl::rollout
