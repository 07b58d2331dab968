// The honoured / refused / no-effect table of every config key (see verl/core/config_keys.h) and the refusal
// check Config::validate() runs. Where a key is honoured the note names nothing: the code that reads it is the
// trainer's (cpp/src/trainer, cpp/src/workers, python/verl/trainer); keep this table in step when it changes.
#include "verl/core/config_keys.h"

#include <algorithm>

#include "config_keys_check.h"
#include "core/untrusted.h"
#include "verl/core/error.h"

namespace verl::config_keys {
namespace {

using K = KeyClass;

// Reasons shared by several entries.
constexpr const char* kOffload = "CPU offload of parameters, optimizer state or activations is not implemented";
constexpr const char* kOffloadOnCpu = "on a CPU device a no-op with one note (parameters and optimizer state already "
                                      "live in host memory); on CUDA a ConfigError until offload is implemented";
constexpr const char* kRolloutPool = "a resource pool of its own for the rollout (verl's standalone rollout) is not "
                                     "implemented: generation runs on the trainer's ranks";
constexpr const char* kParallel = "pipeline, expert and separate rollout data parallelism are not implemented "
                                  "(training is data parallel over trainer.nnodes x trainer.n_gpus_per_node ranks; "
                                  "generation tensor parallel by rollout.tensor_model_parallel_size)";
constexpr const char* kUlysses = "Ulysses sequence parallelism is not implemented";
constexpr const char* kLoraMegatron = "the Megatron backend's LoRA section; verl-cpp reads the FSDP backend's keys "
                                      "(model.lora_rank, lora_alpha, target_modules, exclude_modules, "
                                      "lora_adapter_path)";
constexpr const char* kMtp = "multi-token prediction (MTP) heads are not implemented";
constexpr const char* kQat = "quantization-aware training is not implemented";
constexpr const char* kQuant = "quantized generation is not implemented";
constexpr const char* kProfiler = "verl's nsys / npu / torch profiler integration is not implemented (the timing_s/* "
                                  "metrics time every stage)";
constexpr const char* kMultimodal = "multimodal (image / video / audio) data is not supported; text only";
constexpr const char* kDeterminism = "torch's full-determinism mode (deterministic CUDA kernels) is not implemented";
constexpr const char* kRmDtype = "the reward model scores in actor_rollout_ref.actor.fsdp_config.model_dtype "
                                 "(forward passes only), so this may only name that dtype";
constexpr const char* kRolloutDtype = "the rollout engine generates from the actor's compute-dtype weights "
                                      "(actor_rollout_ref.actor.fsdp_config.dtype), so this may only name that dtype";
constexpr const char* kTorchCompile = "torch.compile of verl's Python model; verl-cpp's model is C++";
constexpr const char* kEntropyMemory = "memory switch of verl's entropy computation; verl-cpp computes log-probs "
                                       "and entropy in one fused, chunked C++ pass";
constexpr const char* kPadToLength = "padding to fixed lengths for torch.compile / CUDA graphs; verl-cpp packs "
                                     "sequences without padding";
constexpr const char* kFsdp = "FSDP wrapping knob; verl-cpp shards every decoder layer as one unit and the rest as "
                              "the root unit (ZeRO-3 over the data-parallel ranks), always";
constexpr const char* kStrategy = "selects verl's training backend (fsdp, fsdp2, megatron); verl-cpp has one, in C++";
constexpr const char* kTurbo = "settings of verl's alternative distributed training engine, which verl-cpp does "
                               "not use";
constexpr const char* kShm = "copies the checkpoint to /dev/shm for faster loading by many Ray workers; verl-cpp "
                             "loads it once";
constexpr const char* kRemoteCode = "Hugging Face remote code; verl-cpp builds its models and tokenizers in C++ "
                                    "and runs no code from a checkpoint";
constexpr const char* kLiger = "Liger kernels for verl's Python model; verl-cpp's model is C++";
constexpr const char* kFusedKernels = "verl's fused log-prob/entropy kernels; verl-cpp's own fused C++ kernels are "
                                      "always on";
constexpr const char* kTiledMlp = "tiled MLP (activation memory) for verl's Python model; verl-cpp's model is C++";
constexpr const char* kExternalLib = "imports a Python module that registers Hugging Face model classes; verl-cpp's "
                                     "models are C++";
constexpr const char* kOverrideConfig = "overriding the Hugging Face model config (dropout, rope, ...) is not "
                                        "implemented";
constexpr const char* kHfConfigPath = "a config.json from another directory than the model is not supported";
constexpr const char* kCheckpointContents = "checkpoints always hold the model, optimizer and trainer state, in "
                                            "Hugging Face format";
constexpr const char* kAsyncSave = "background checkpoint writing; verl-cpp writes synchronously (same files)";
constexpr const char* kServerRm = "placement / engine setting of verl's reward-model server; verl-cpp scores with "
                                  "an in-process reward-model worker on the trainer's device";
constexpr const char* kRmSampling = "sampling setting of a generative reward model; verl-cpp's reward model is a "
                                    "sequence classifier scored in one forward pass";
constexpr const char* kVllmEngine = "setting of vLLM / SGLang / TensorRT-LLM; verl-cpp generates with its own "
                                    "engine in the trainer's process";
constexpr const char* kDisaggregation = "prefill/decode disaggregation is not implemented";
constexpr const char* kDerived = "verl derives it from another key, and verl-cpp reads that key: set that one";
constexpr const char* kRay = "Ray setting; verl-cpp does not use Ray";
constexpr const char* kDistillation = "on-policy distillation from teacher models is not implemented";

KeyEntry H(std::string key, std::string note = "") { return {std::move(key), K::kHonoured, std::move(note), ""}; }
KeyEntry R(std::string key, std::string reason, std::string same_as = "") {
  return {std::move(key), K::kRefused, std::move(reason), std::move(same_as)};
}
KeyEntry N(std::string key, std::string reason) { return {std::move(key), K::kNoEffect, std::move(reason), ""}; }

void add(std::vector<KeyEntry>& out, std::vector<KeyEntry> more) {
  for (auto& e : more) out.push_back(std::move(e));
}

std::vector<KeyEntry> optim(const std::string& p) {
  std::vector<KeyEntry> out;
  for (const char* leaf : {"optimizer", "optimizer_impl", "lr", "lr_warmup_steps_ratio", "total_training_steps",
                           "weight_decay", "lr_warmup_steps", "betas", "clip_grad", "min_lr_ratio", "num_cycles",
                           "lr_scheduler_type", "zero_indexed_step", "warmup_style", "override_optimizer_config"}) {
    out.push_back(H(p + "." + leaf));
  }
  out.back().reason = "AdamW settings: eps, amsgrad, lr, weight_decay, betas";
  return out;
}

// fsdp_config (actor, ref) / fsdp (critic). `model_dtype` is the actor's own key, honoured there; the ref and the
// critic are built from the actor's weights in its dtype. `dtype` (the compute dtype) is each role's own.
std::vector<KeyEntry> fsdp(const std::string& p, bool actor, bool trained = true) {
  const std::string actor_dtype = "actor_rollout_ref.actor.fsdp_config.model_dtype";
  const char* replicated = "the reference policy is not sharded: every rank holds a replica (it has no gradients or "
                           "optimizer state)";
  return {
      N(p + ".wrap_policy", kFsdp),
      H(p + ".param_offload", kOffloadOnCpu),
      H(p + ".optimizer_offload", kOffloadOnCpu),
      R(p + ".offload_policy", kOffload),
      trained ? H(p + ".reshard_after_forward",
                  "over several data-parallel ranks (ZeRO-3): true frees each decoder layer's gathered weights after "
                  "its forward and gathers them again for its backward; false keeps them until then (more memory, "
                  "one all-gather fewer per layer)")
              : N(p + ".reshard_after_forward", replicated),
      trained ? H(p + ".fsdp_size", "-1 (or the world size): shard over every data-parallel rank; a divisor of it "
                                    "(HSDP, FSDP's HYBRID_SHARD): shard within groups of that many consecutive "
                                    "ranks, replicated across the groups, gradients averaged over all ranks")
              : N(p + ".fsdp_size", replicated),
      trained ? H(p + ".forward_prefetch",
                  "over several data-parallel ranks (ZeRO-3): true starts the next decoder layer's all-gather before "
                  "this layer's forward, so it arrives while the layer computes (one more layer gathered at a time; "
                  "the same results). The backward always prefetches the layer before, as FSDP's BACKWARD_PRE")
              : N(p + ".forward_prefetch", replicated),
      actor ? H(p + ".model_dtype", "fp32 / bf16 / fp16: the dtype of the master weights and the optimizer state "
                                    "(bf16 / fp16 log a warning: AdamW updates below their resolution are lost)")
            : R(p + ".model_dtype", "the reference policy and the critic are built from the actor's weights, in "
                                    "the actor's dtype", actor_dtype),
      N(p + ".use_orig_params", kFsdp),
      N(p + ".seed", "seeds verl's full_determinism mode only (refused here)"),
      R(p + ".full_determinism", kDeterminism),
      R(p + ".ulysses_sequence_parallel_size", kUlysses),
      N(p + ".entropy_from_logits_with_chunking", kEntropyMemory),
      N(p + ".entropy_from_logits_chunk_size", kEntropyMemory),
      N(p + ".use_torch_compile", kTorchCompile),
      N(p + ".entropy_checkpointing", kEntropyMemory),
      N(p + ".use_no_sync_for_gradient_accumulation",
        "FSDP's no_sync during gradient accumulation (speed / memory only: the same results); verl-cpp "
        "reduce-scatters each micro-batch's gradients into the shards"),
      N(p + ".pad_to_length", kPadToLength),
      N(p + ".pad_to_length_bucket", kPadToLength),
      N(p + ".forward_only", "set by verl per role (the reference only runs forward passes); nothing to choose"),
      N(p + ".strategy", kStrategy),
      H(p + ".dtype", "auto / bfloat16 / float16 / float32: the compute dtype of forward and backward (mixed "
                      "precision over master weights in model_dtype, gradients accumulated in model_dtype, fp16 with "
                      "verl's dynamic loss scale; float32 turns it off). auto (verl: bfloat16) is bfloat16 on GPUs "
                      "and on CPUs with bf16 matrix instructions, float32 on other CPUs (bf16 emulated, ~8x slower); "
                      "the environment variable VERL_CPU_BF16=1 or 0 answers for the CPU"),
      R(p + ".qat", kQat),
      N(p + ".turbo_config", kTurbo),
  };
}

std::vector<KeyEntry> profiler(const std::string& p) { return {R(p + ".profiler", kProfiler)}; }

// actor_rollout_ref.model / critic.model.
std::vector<KeyEntry> model(const std::string& p, bool actor) {
  const std::string a = "actor_rollout_ref.model.";
  std::vector<KeyEntry> out = {
      actor ? H(p + ".path", "a local Hugging Face checkpoint directory")
            : R(p + ".path", "the critic starts from the actor's checkpoint (its backbone and a new value head); a "
                             "separate critic checkpoint is not supported", a + "path"),
      R(p + ".hf_config_path", kHfConfigPath),
      actor ? H(p + ".tokenizer_path")
            : R(p + ".tokenizer_path", "the critic uses the actor's tokenizer", a + "tokenizer_path"),
      N(p + ".use_shm", kShm),
      N(p + ".trust_remote_code", kRemoteCode),
      actor ? H(p + ".custom_chat_template", "replaces the tokenizer's chat template for every prompt")
            : R(p + ".custom_chat_template", "the critic scores the actor's prompts, rendered with the actor's "
                                             "template", a + "custom_chat_template"),
      R(p + ".external_lib", kExternalLib),
      R(p + ".override_config", kOverrideConfig),
      H(p + ".enable_gradient_checkpointing"),
      R(p + ".enable_activation_offload", kOffload),
      H(p + ".use_remove_padding", "packed (padding-free) forward passes"),
      H(p + ".lora_rank", actor ? "LoRA adapters of this rank (0: full fine-tuning); the reference policy is the base "
                                  "model, adapters disabled"
                                : "LoRA adapters of this rank (0: full fine-tuning); the value head is trained in full"),
      H(p + ".lora_alpha", "adapter scaling alpha / r"),
      H(p + ".target_modules", "PEFT's rules: all-linear, module names (whole or last parts), or a regex"),
      H(p + ".exclude_modules", "PEFT's rules, checked before target_modules"),
      H(p + ".lora_adapter_path", "a PEFT adapter directory to start from (its adapter_config.json's settings)"),
      N(p + ".use_liger", kLiger),
      N(p + ".use_fused_kernels", kFusedKernels),
      N(p + ".fused_kernel_options", kFusedKernels),
      N(p + ".tiled_mlp", kTiledMlp),
      R(p + ".mtp", kMtp),
  };
  // The Megatron backend's LoRA section, leaf by leaf: verl's FSDP engine reads lora.merge too (the actor's rollout).
  out.push_back(actor ? H(p + ".lora.merge", "with LoRA, the adapters folded into the rollout engine's own copy of the "
                                             "weights at every hand-over (faster generation, one more copy); false: the "
                                             "engine runs them unmerged, as the trainer")
                      : R(p + ".lora.merge", kLoraMegatron));
  for (const char* leaf : {"type", "rank", "alpha", "dropout", "target_modules", "exclude_modules", "dropout_position",
                           "lora_A_init_method", "lora_B_init_method", "a2a_experimental", "dtype", "adapter_path",
                           "freeze_vision_model", "freeze_vision_projection", "freeze_language_model"}) {
    out.push_back(R(p + ".lora." + leaf, kLoraMegatron));
  }
  return out;
}

std::vector<KeyEntry> build_ppo() {
  std::vector<KeyEntry> t;
  const std::string ar = "actor_rollout_ref.";
  const std::string a = ar + "actor.";
  // --- actor_rollout_ref.actor -------------------------------------------------------------------------------
  add(t, optim(ar + "actor.optim"));
  add(t, fsdp(ar + "actor.fsdp_config", true));
  add(t, {
             R(a + "rollout_n", kDerived + std::string(" (actor_rollout_ref.rollout.n)")),
             N(a + "strategy", kStrategy),
             H(a + "ppo_mini_batch_size", "prompts per mini-batch (x rollout.n responses)"),
             H(a + "ppo_micro_batch_size"),
             H(a + "ppo_micro_batch_size_per_gpu"),
             H(a + "use_dynamic_bsz"),
             H(a + "ppo_max_token_len_per_gpu"),
             H(a + "clip_ratio"),
             H(a + "clip_ratio_low"),
             H(a + "clip_ratio_high"),
             H(a + "tau_pos"),
             H(a + "tau_neg"),
             N(a + "freeze_vision_tower", "vision-language models only; verl-cpp's models are text-only"),
             H(a + "policy_loss.loss_mode"),
             H(a + "policy_loss.clip_cov_ratio"),
             H(a + "policy_loss.clip_cov_lb"),
             H(a + "policy_loss.clip_cov_ub"),
             H(a + "policy_loss.kl_cov_ratio"),
             H(a + "policy_loss.ppo_kl_coef"),
             H(a + "policy_loss.dro_beta"),
             H(a + "clip_ratio_c"),
             H(a + "loss_agg_mode"),
             H(a + "loss_scale_factor"),
             H(a + "entropy_coeff"),
             H(a + "calculate_entropy"),
             H(a + "calculate_sum_pi_squared", "the old-log-prob pass also gives sum_pi_squared (optimal_token_baseline)"),
             H(a + "old_log_prob_from_update", "verl-cpp's addition: true (default) skips the old-log-prob pass when "
                                               "the update's first forward gives old_log_probs bit for bit (one epoch "
                                               "of one mini-batch, the log-prob pass's micro-batching, no shuffle, nothing "
                                               "reading them before the update: no KL in the reward, rollout IS weights "
                                               "or rejection, optimal token baseline, PF-PPO); false always runs it"),
             H(a + "use_kl_loss"),
             N(a + "use_prefix_grouper", "shares the prompt's forward pass among its responses in verl's Python "
                                         "model; a speed switch with the same results"),
             N(a + "use_torch_compile", kTorchCompile),
             H(a + "kl_loss_coef"),
             H(a + "kl_loss_type"),
             H(a + "ppo_epochs"),
             H(a + "shuffle"),
             H(a + "data_loader_seed"),
             R(a + "checkpoint.save_contents", kCheckpointContents),
             R(a + "checkpoint.load_contents", kCheckpointContents),
             N(a + "checkpoint.async_save", kAsyncSave),
             R(a + "checkpoint.strict", "checkpoints always load strictly (every tensor present, same shapes)"),
             N(a + "use_fused_kernels", kFusedKernels),
         });
  add(t, profiler(ar + "actor"));
  add(t, {
             R(a + "qat", kQat),
             H(a + "grad_clip", "verl's legacy key: used when it is set and optim.clip_grad is left at 1.0"),
             R(a + "ulysses_sequence_parallel_size", kUlysses),
             N(a + "entropy_from_logits_with_chunking", kEntropyMemory),
             N(a + "entropy_from_logits_chunk_size", kEntropyMemory),
             N(a + "entropy_checkpointing", kEntropyMemory),
             N(a + "pad_to_length", kPadToLength),
             R(a + "use_remove_padding", kDerived + std::string(" (actor_rollout_ref.model.use_remove_padding)")),
         });
  // --- actor_rollout_ref.ref ---------------------------------------------------------------------------------
  const std::string r = ar + "ref.";
  add(t, {
             R(r + "rollout_n", kDerived + std::string(" (actor_rollout_ref.rollout.n)")),
             N(r + "strategy", kStrategy),
             N(r + "use_torch_compile", kTorchCompile),
             H(r + "log_prob_micro_batch_size"),
             H(r + "log_prob_micro_batch_size_per_gpu"),
             H(r + "log_prob_use_dynamic_bsz"),
             H(r + "log_prob_max_token_len_per_gpu"),
         });
  add(t, profiler(ar + "ref"));
  add(t, fsdp(ar + "ref.fsdp_config", false, /*trained=*/false));
  add(t, {
             R(r + "ulysses_sequence_parallel_size", kUlysses),
             N(r + "entropy_from_logits_with_chunking", kEntropyMemory),
             N(r + "entropy_from_logits_chunk_size", kEntropyMemory),
             N(r + "entropy_checkpointing", kEntropyMemory),
             N(r + "pad_to_length", kPadToLength),
         });
  // --- actor_rollout_ref.rollout -----------------------------------------------------------------------------
  const std::string g = ar + "rollout.";
  add(t, {
             H(g + "name", "native, vllm and sglang all select verl-cpp's own engine, which takes the place of "
                           "vLLM / SGLang here (the trainer logs a note naming the key); hf is not a choice"),
             N(g + "mode", "verl's sync / async rollout servers; verl-cpp's engine runs in the trainer's process "
                           "and gives the same samples"),
             R(g + "nnodes", kRolloutPool),
             R(g + "n_gpus_per_node", kRolloutPool),
             H(g + "temperature"),
             H(g + "top_k"),
             H(g + "top_p"),
             R(g + "full_determinism", kDeterminism),
             H(g + "seed", "the engine's seed (per-request streams) and the critic head's initialisation"),
             H(g + "prompt_length"),
             H(g + "response_length"),
             R(g + "dtype", kRolloutDtype, "actor_rollout_ref.actor.fsdp_config.dtype"),
             N(g + "gpu_memory_utilization", "vLLM's share of GPU memory; the engine sizes its paged KV cache for "
                                             "max_num_seqs sequences of max_model_len tokens (at most 4 GiB)"),
             H(g + "ignore_eos"),
             H(g + "enforce_eager", "false (default): on CUDA the engine replays a CUDA graph of the decode step per "
                                    "batch-size bucket; true runs every op eagerly. No effect on the CPU"),
             H(g + "cudagraph_capture_sizes", "the decode graphs' batch sizes (null: 1, 2, 4, 8, multiples of 16, "
                                              "max_num_seqs); a larger batch runs eagerly"),
             H(g + "free_cache_engine", "the KV cache is released after generation and re-created before the next"),
             H(g + "tensor_model_parallel_size", "groups of that many consecutive ranks each generate as one "
                                                 "tensor-parallel replica (Megatron layout); it must divide the ranks"),
             R(g + "data_parallel_size", kParallel),
             R(g + "expert_parallel_size", kParallel),
             R(g + "pipeline_model_parallel_size", kParallel),
             H(g + "max_num_batched_tokens"),
             H(g + "max_model_len"),
             H(g + "max_num_seqs"),
             N(g + "enable_chunked_prefill", "the engine always chunks prefills by max_num_batched_tokens"),
             H(g + "enable_prefix_caching", "a speed switch with the same results: with multi_turn.enable an agent "
                                            "loop's next turn reuses its conversation's cached KV (the cache lives "
                                            "for one generation: the weights change every step); the one-shot "
                                            "generation computes a prompt's KV once for its n samples either way"),
             R(g + "logprobs_mode", "rollout log-probs are always the temperature-scaled log-softmax the trainer "
                                    "recomputes (processed_logprobs)"),
             N(g + "scheduling_policy", kVllmEngine),
             N(g + "load_format", "vLLM's weight loading; verl-cpp's engine runs on the trainer's own weights"),
             N(g + "layered_summon", "FSDP-to-vLLM weight transfer; verl-cpp's engine shares the trainer's weights"),
             H(g + "log_prob_micro_batch_size"),
             H(g + "log_prob_micro_batch_size_per_gpu"),
             H(g + "log_prob_use_dynamic_bsz"),
             H(g + "log_prob_max_token_len_per_gpu"),
             N(g + "disable_log_stats", kVllmEngine),
             H(g + "do_sample"),
             H(g + "n"),
             R(g + "over_sample_rate", "over-sampling with early-stopped requests is not implemented"),
             N(g + "multi_stage_wake_up", "staged GPU memory wake-up of vLLM; verl-cpp re-creates its KV cache in "
                                          "one step"),
             N(g + "engine_kwargs", kVllmEngine),
             H(g + "val_kwargs.top_k"),
             H(g + "val_kwargs.top_p"),
             H(g + "val_kwargs.temperature"),
             H(g + "val_kwargs.n"),
             H(g + "val_kwargs.do_sample"),
             R(g + "router_config_path", "routing among several rollout servers is not implemented"),
             // Agent loops (python/verl/trainer/agent_rollout.py over verl/experimental/agent_loop).
             H(g + "multi_turn.enable"),
             H(g + "multi_turn.max_assistant_turns"),
             H(g + "multi_turn.tool_config_path"),
             H(g + "multi_turn.function_tool_path"),
             H(g + "multi_turn.max_user_turns"),
             H(g + "multi_turn.max_parallel_calls"),
             H(g + "multi_turn.max_tool_response_length"),
             H(g + "multi_turn.tool_response_truncate_side"),
             R(g + "multi_turn.use_inference_chat_template",
               "re-rendering earlier turns with the inference chat template is not implemented: each turn's "
               "generated ids are kept as generated"),
             N(g + "multi_turn.tokenization_sanity_check_mode",
               "verl's check that re-tokenized turns match the generated ids; the ids here are never re-tokenized"),
             H(g + "multi_turn.format"),
             R(g + "multi_turn.num_repeat_rollouts", "repeated rollouts per agent-loop sample are not implemented "
                                                      "(rollout.n repeats the rows)"),
             N(g + "calculate_log_probs", "the engine always returns the sampled tokens' log-probs (no extra cost)"),
             N(g + "agent.num_workers", "agent-loop worker processes; verl-cpp generates in the trainer's process"),
             H(g + "agent.default_agent_loop"),
             H(g + "agent.agent_loop_config_path"),
             R(g + "agent.custom_async_server", "a custom rollout server is not supported"),
             N(g + "checkpoint_engine", "weight transfer from the trainer to the rollout servers; verl-cpp's engine "
                                        "shares the trainer's weights"),
             R(g + "trace", "rollout tracing (weave / mlflow) is not implemented"),
             N(g + "skip_tokenizer_init", kVllmEngine),
             R(g + "enable_rollout_routing_replay", "mixture-of-experts models are not supported"),
             R(g + "moe_load_balance_metrics_interval", "mixture-of-experts models are not supported"),
         });
  add(t, profiler(ar + "rollout"));
  add(t, {
             R(g + "prometheus", "Prometheus monitoring of rollout servers is not implemented"),
             R(g + "quantization", kQuant),
             R(g + "quantization_config_file", kQuant),
             R(g + "mtp", kMtp),
             R(g + "qat", kQat),
             R(g + "disaggregation", kDisaggregation),
         });
  // --- actor_rollout_ref.model and the rest of actor_rollout_ref ----------------------------------------------
  add(t, model(ar + "model", true));
  add(t, {
             H(ar + "hybrid_engine", "true: actor and rollout share the weights; false: verl's one-step off-policy "
                                     "trainer -- the rollout engine holds a copy of its own and generates the next "
                                     "batch while this one trains: on a rollout pool of rollout.nnodes x "
                                     "rollout.n_gpus_per_node ranks of its own, or with none (0 per node) on a thread "
                                     "of the one trainer process"),
             H(ar + "nccl_timeout", "seconds every collective among the ranks may wait, Gloo's too: a rank that "
                                    "died or hangs ends the others with a DistributedError"),
         });
  // --- data --------------------------------------------------------------------------------------------------
  const std::string d = "data.";
  add(t, {
             R(d + "tokenizer", "the tokenizer comes from actor_rollout_ref.model.tokenizer_path or the model"),
             N(d + "use_shm", kShm),
             H(d + "train_files", "JSONL or Parquet files in verl's schema"),
             H(d + "val_files"),
             H(d + "train_max_samples"),
             H(d + "val_max_samples"),
             H(d + "prompt_key"),
             H(d + "reward_fn_key"),
             H(d + "max_prompt_length"),
             H(d + "max_response_length"),
             H(d + "train_batch_size"),
             H(d + "gen_batch_size"),
             H(d + "val_batch_size"),
             H(d + "tool_config_path", "the tools' schemas count in the prompt length filter_overlong_prompts "
                                       "compares, as verl's"),
             H(d + "function_tool_path", "as data.tool_config_path"),
             R(d + "return_raw_input_ids", "the raw_input_ids column (for a reward model with another tokenizer) "
                                           "is not produced; set reward_model.model.input_tokenizer instead"),
             H(d + "return_raw_chat"),
             H(d + "return_full_prompt"),
             H(d + "shuffle"),
             H(d + "seed"),
             N(d + "dataloader_num_workers", "dataloader worker processes; verl-cpp tokenizes in the trainer's "
                                             "process"),
             R(d + "image_patch_size", kMultimodal),
             H(d + "validation_shuffle"),
             H(d + "filter_overlong_prompts"),
             N(d + "filter_overlong_prompts_workers", "worker processes for filtering; verl-cpp filters in the "
                                                      "trainer's process"),
             H(d + "truncation"),
             R(d + "image_key", kMultimodal),
             R(d + "video_key", kMultimodal),
             R(d + "audio_key", kMultimodal),
             N(d + "trust_remote_code", kRemoteCode),
             H(d + "custom_cls", "a dataset class taking (data_files, tokenizer, config, processor, max_samples)"),
             R(d + "return_multi_modal_inputs", kMultimodal),
             H(d + "apply_chat_template_kwargs"),
             R(d + "mm_processor_kwargs", kMultimodal),
         });
  // --- critic --------------------------------------------------------------------------------------------------
  const std::string c = "critic.";
  add(t, optim("critic.optim"));
  add(t, fsdp("critic.fsdp", false));
  add(t, {
             H(c + "rollout_n"),
             N(c + "strategy", kStrategy),
             H(c + "enable", "null: a critic exactly when algorithm.adv_estimator is gae"),
             H(c + "ppo_mini_batch_size"),
             H(c + "ppo_micro_batch_size"),
             H(c + "ppo_micro_batch_size_per_gpu"),
             H(c + "use_dynamic_bsz"),
             H(c + "ppo_max_token_len_per_gpu"),
             H(c + "forward_max_token_len_per_gpu"),
             H(c + "ppo_epochs"),
             H(c + "shuffle"),
             H(c + "data_loader_seed"),
             H(c + "cliprange_value"),
             H(c + "loss_agg_mode"),
             H(c + "loss_scale_factor"),
             R(c + "checkpoint.save_contents", kCheckpointContents),
             R(c + "checkpoint.load_contents", kCheckpointContents),
             N(c + "checkpoint.async_save", kAsyncSave),
         });
  add(t, profiler("critic"));
  add(t, {
             H(c + "forward_micro_batch_size"),
             H(c + "forward_micro_batch_size_per_gpu"),
             R(c + "ulysses_sequence_parallel_size", kUlysses),
             H(c + "grad_clip", "verl's legacy key: used when it is set and optim.clip_grad is left at 1.0"),
         });
  add(t, model("critic.model", false));
  // --- rewards -------------------------------------------------------------------------------------------------
  add(t, {
             H("custom_reward_function.path", "verl's legacy layout of reward.custom_reward_function"),
             H("custom_reward_function.name"),
             N("reward_model.num_workers", "reward worker processes; verl-cpp scores in the trainer's process"),
             H("reward_model.reward_manager", "verl's legacy layout of reward.reward_manager.name"),
             H("reward_model.enable"),
             N("reward_model.enable_resource_pool", kServerRm),
             N("reward_model.n_gpus_per_node", kServerRm),
             N("reward_model.nnodes", kServerRm),
             H("reward_model.reward_loop_source", "verl's legacy layout of reward.reward_manager.source"),
             H("reward_model.reward_loop_module_path", "verl's legacy layout of reward.reward_manager.module.path"),
             N("reward_model.reward_loop_class_name", "verl 0.9.1 moves it to reward.reward_manager.module.name, "
                                                      "which it does not read either"),
             H("reward_model.micro_batch_size_per_gpu"),
             H("reward_model.use_dynamic_bsz"),
             H("reward_model.forward_max_token_len_per_gpu"),
             H("reward_model.model.path"),
             H("reward_model.model.input_tokenizer"),
             R("reward_model.model.external_lib", kExternalLib),
             N("reward_model.model.trust_remote_code", kRemoteCode),
             R("reward_model.rollout.dtype", kRmDtype, "actor_rollout_ref.actor.fsdp_config.model_dtype"),
             H("reward_model.rollout.max_num_batched_tokens", "verl's legacy layout of "
                                                              "reward.reward_model.rollout.max_num_batched_tokens"),
             H("reward_model.rollout.max_num_seqs", "verl's legacy layout of reward.reward_model.rollout.max_num_seqs"),
         });
  for (const char* leaf : {"name", "gpu_memory_utilization", "enforce_eager", "cudagraph_capture_sizes",
                           "free_cache_engine", "data_parallel_size", "expert_parallel_size",
                           "tensor_model_parallel_size", "max_model_len", "load_format", "engine_kwargs",
                           "limit_images", "enable_chunked_prefill", "enable_prefix_caching", "disable_log_stats",
                           "skip_tokenizer_init", "prompt_length", "response_length"}) {
    t.push_back(N(std::string("reward_model.rollout.") + leaf, kServerRm));
  }
  add(t, {
             H("sandbox_fusion.url", "verl's legacy layout of reward.sandbox_fusion.url"),
             H("sandbox_fusion.max_concurrent", "verl's legacy layout of reward.sandbox_fusion.max_concurrent"),
             H("sandbox_fusion.memory_limit_mb", "verl's legacy layout of reward.sandbox_fusion.memory_limit_mb"),
             N("reward.num_workers", "reward worker processes; verl-cpp scores in the trainer's process"),
             H("reward.custom_reward_function.path"),
             H("reward.custom_reward_function.name"),
             H("reward.reward_manager.source", "register or importlib"),
             H("reward.reward_manager.name"),
             H("reward.reward_manager.module.path"),
             N("reward.reward_manager.module.name", "verl 0.9.1 takes the class name from reward.reward_manager.name "
                                                    "and does not read this key either"),
             H("reward.reward_model.enable"),
             N("reward.reward_model.enable_resource_pool", kServerRm),
             N("reward.reward_model.n_gpus_per_node", kServerRm),
             N("reward.reward_model.nnodes", kServerRm),
             H("reward.reward_model.model_path"),
         });
  const std::string rr = "reward.reward_model.rollout.";
  for (const char* leaf : {"name", "gpu_memory_utilization", "enforce_eager", "cudagraph_capture_sizes",
                           "free_cache_engine", "data_parallel_size", "expert_parallel_size",
                           "tensor_model_parallel_size", "pipeline_model_parallel_size", "max_model_len",
                           "load_format", "layered_summon", "scheduling_policy", "multi_stage_wake_up",
                           "engine_kwargs", "limit_images", "enable_chunked_prefill", "enable_prefix_caching",
                           "disable_log_stats", "skip_tokenizer_init", "prompt_length", "response_length"}) {
    t.push_back(N(rr + leaf, kServerRm));
  }
  for (const char* leaf : {"full_determinism", "seed", "ignore_eos", "temperature", "top_k", "top_p", "do_sample",
                           "n"}) {
    t.push_back(N(rr + leaf, kRmSampling));
  }
  add(t, {
             R(rr + "dtype", kRmDtype, "actor_rollout_ref.actor.fsdp_config.model_dtype"),
             H(rr + "max_num_batched_tokens", "the RM worker's token budget per forward pass when "
                                              "reward_model.forward_max_token_len_per_gpu is unset"),
             H(rr + "max_num_seqs", "the RM worker's sequences per forward pass when "
                                    "reward_model.micro_batch_size_per_gpu is unset"),
             R(rr + "quantization", kQuant),
             R(rr + "quantization_config_file", kQuant),
             R(rr + "mtp", kMtp),
             R(rr + "disaggregation", kDisaggregation),
             H("reward.sandbox_fusion.url", "the code data sources (codecontests, apps, codeforces, taco) run their "
                                            "test cases on this Sandbox Fusion /run_code endpoint; unset, in the "
                                            "built-in local sandbox"),
             H("reward.sandbox_fusion.max_concurrent", "requests in flight to the server at once, across the job"),
             H("reward.sandbox_fusion.memory_limit_mb", "memory_limit_MB of every request"),
         });
  // --- algorithm -----------------------------------------------------------------------------------------------
  const std::string al = "algorithm.";
  add(t, {
             H(al + "rollout_correction.rollout_is", "token / sequence: importance weights of the recomputed "
                                                     "old log-probs against the rollout's, for the policy loss"),
             H(al + "rollout_correction.rollout_is_threshold", "upper bound (truncation) or lower_upper (IcePop)"),
             H(al + "rollout_correction.rollout_is_batch_normalize"),
             H(al + "rollout_correction.rollout_rs", "rejection of tokens / sequences beyond a divergence bound "
                                                     "(token_k1 ... seq_max_k3, comma separated)"),
             H(al + "rollout_correction.rollout_rs_threshold"),
             H(al + "rollout_correction.bypass_mode", "rollout log-probs as old log-probs, actor loss bypass_mode"),
             H(al + "rollout_correction.loss_type"),
             H(al + "gamma"),
             H(al + "lam"),
             H(al + "adv_estimator"),
             H(al + "norm_adv_by_std_in_grpo"),
             H(al + "filter_groups.enable", "DAPO dynamic sampling"),
             H(al + "filter_groups.metric"),
             H(al + "filter_groups.max_num_gen_batches"),
             N(al + "filter_groups.max_inflight_gen_batches", "generation batches in flight in verl's asynchronous "
                                                              "rollout; verl-cpp generates one batch at a time"),
             H(al + "use_kl_in_reward"),
             H(al + "kl_penalty"),
             H(al + "kl_ctrl.type"),
             H(al + "kl_ctrl.kl_coef"),
             H(al + "kl_ctrl.horizon"),
             H(al + "kl_ctrl.target_kl"),
             H(al + "use_pf_ppo", "PF-PPO: the batch resampled by reward after GAE (gae only, as verl; a "
                                  "ConfigError with another estimator)"),
             H(al + "pf_ppo.reweight_method", "pow, max_min or max_random"),
             H(al + "pf_ppo.weight_pow"),
             H(al + "sppo_eta", "SPPO (the paper's form, Wu et al. 2024): adv_estimator=sppo's advantage eta * (win "
                                "rate - 1/2), the target of policy_loss.loss_mode=sppo. verl's recipe/sppo reads this "
                                "key as beta of r - softmean_beta(r) instead; a ConfigError with another estimator"),
             H(al + "safe_rlhf.enable", "Safe-RLHF (PPO-Lagrangian): a cost function / model, a cost critic with gae, "
                                        "advantage (A_r - lambda A_c) / (1 + lambda)"),
             H(al + "safe_rlhf.cost_limit", "the constraint: mean sequence cost <= cost_limit"),
             H(al + "safe_rlhf.lambda_init"),
             H(al + "safe_rlhf.lambda_lr", "lambda <- clamp(lambda + lambda_lr (mean cost - cost_limit), 0, lambda_max) "
                                          "each step"),
             H(al + "safe_rlhf.lambda_max", "null: no upper bound"),
             H(al + "safe_rlhf.cost_function.path", "the cost from the command line: a Python file whose function "
                                                    "(cost_function.name) has custom_reward_function's signature"),
             H(al + "safe_rlhf.cost_function.name"),
             H(al + "safe_rlhf.cost_model_path", "the cost from the command line: a sequence classifier's directory, "
                                                 "scored as the reward model"),
             R("distillation", kDistillation),
             N("transfer_queue", "verl's TransferQueue data plane between Ray workers; verl-cpp passes batches "
                                 "in-process"),
         });
  // --- trainer -------------------------------------------------------------------------------------------------
  const std::string tr = "trainer.";
  add(t, {
             H(tr + "balance_batch"),
             H(tr + "total_epochs"),
             H(tr + "total_training_steps"),
             H(tr + "project_name"),
             H(tr + "experiment_name"),
             H(tr + "logger", "console, file, tensorboard, wandb"),
             H(tr + "log_val_generations", "that many validation samples (input, output, score) to the console, "
                                           "TensorBoard and W&B at each validation"),
             H(tr + "rollout_data_dir", "<dir>/<step>.jsonl of each training batch, as verl writes it"),
             H(tr + "validation_data_dir", "<dir>/<step>.jsonl of each validation, as verl writes it"),
             H(tr + "nnodes", "nnodes x n_gpus_per_node must equal the ranks torchrun started (ConfigError before any "
                              "process group forms); data-parallel ranks, rank 0 the controller"),
             H(tr + "n_gpus_per_node", "ranks per node; without torchrun main_ppo starts that many local ranks "
                                       "through torch's elastic launcher"),
             H(tr + "save_freq"),
             N(tr + "esi_redundant_time", "Volcano Engine ESI instance expiry, which does not apply here"),
             H(tr + "resume_mode"),
             H(tr + "resume_from_path"),
             R(tr + "checkpoint_callback_class", "checkpoint callbacks are not implemented"),
             H(tr + "val_before_train"),
             H(tr + "val_only"),
             H(tr + "test_freq"),
             H(tr + "critic_warmup"),
             R(tr + "default_hdfs_dir", "copying checkpoints to HDFS is not implemented"),
             R(tr + "del_local_ckpt_after_load", "deleting the checkpoint after resuming is not implemented"),
             H(tr + "default_local_dir"),
             H(tr + "max_actor_ckpt_to_keep", "whole checkpoints (actor and critic) kept"),
             R(tr + "max_critic_ckpt_to_keep", "a checkpoint holds the actor and the critic, kept together by "
                                               "trainer.max_actor_ckpt_to_keep", tr + "max_actor_ckpt_to_keep"),
             N(tr + "ray_wait_register_center_timeout", kRay),
             H(tr + "device", "cuda falls back to the CPU when CUDA is not available"),
             N(tr + "use_v1", "selects verl's trainer implementation; verl-cpp has one (verl's synchronous loop)"),
             R(tr + "v1", "verl's asynchronous training modes are not implemented (the loop is synchronous)"),
             R("global_profiler", kProfiler),
             R("skip", "replaying dumped rollouts instead of generating is not implemented"),
             N("ray_kwargs", kRay),
         });
  return t;
}

std::vector<KeyEntry> build_sft() {
  std::vector<KeyEntry> t;
  for (const char* leaf : {"train_batch_size", "micro_batch_size_per_gpu", "max_token_len_per_gpu", "use_dynamic_bsz",
                           "train_files", "val_files", "train_max_samples", "val_max_samples", "messages_key",
                           "prompt_key", "response_key", "max_length", "truncation", "apply_chat_template_kwargs",
                           "shuffle", "seed"}) {
    t.push_back(H(std::string("data.") + leaf));
  }
  for (const char* leaf : {"path", "tokenizer_path", "enable_gradient_checkpointing", "use_remove_padding", "dtype"})
    t.push_back(H(std::string("model.") + leaf));
  add(t, {
             H("model.lora_rank", "LoRA adapters of this rank (0: full fine-tuning); DPO's reference is the base model, "
                                  "adapters disabled"),
             H("model.lora_alpha", "adapter scaling alpha / r"),
             H("model.target_modules", "PEFT's rules: all-linear, module names (whole or last parts), or a regex"),
             H("model.exclude_modules", "PEFT's rules, checked before target_modules"),
             H("model.lora_adapter_path", "a PEFT adapter directory to start from (its adapter_config.json's settings)"),
         });
  add(t, optim("optim"));
  for (const char* leaf : {"default_local_dir", "project_name", "experiment_name", "total_epochs",
                           "total_training_steps", "logger"}) {
    t.push_back(H(std::string("trainer.") + leaf));
  }
  t.push_back(N("trainer.seed", "seeds torch's global generator in verl; verl-cpp's SFT step draws no random "
                                "numbers (the model comes from a checkpoint, the data order from data.seed)"));
  for (const char* leaf : {"save_freq", "test_freq", "max_ckpt_to_keep", "resume_mode", "resume_from_path", "device"})
    t.push_back(H(std::string("trainer.") + leaf));
  t.push_back(H("trainer.nnodes", "nodes of data-parallel ranks (torchrun --nnodes)"));
  t.push_back(H("trainer.n_gpus_per_node", "data-parallel ranks per node; without torchrun sft_trainer / dpo_trainer "
                                           "start that many local ranks through torch's elastic launcher"));
  t.push_back(H("engine.dtype", "compute dtype of forwards and backwards; auto: bf16 where the device multiplies bf16 "
                                "natively, else fp32 (model.dtype holds the master weights)"));
  t.push_back(H("engine.fsdp_size", "ZeRO-3 shard group size over the data-parallel ranks; -1: all (fewer: HSDP)"));
  t.push_back(H("engine.reshard_after_forward"));
  t.push_back(H("engine.forward_prefetch"));
  return t;
}

// "fp32" and "float32" name the same dtype (bf16/bfloat16, fp16/float16 too).
Json canonical(const Json& v) {
  if (!v.is_string()) return v;
  const std::string& s = v.get_ref<const std::string&>();
  if (s == "fp32" || s == "float32") return "float32";
  if (s == "bf16" || s == "bfloat16") return "bfloat16";
  if (s == "fp16" || s == "float16") return "float16";
  return v;
}

const Json* lookup(const Json& root, const std::string& key) {
  const Json* node = &root;
  size_t start = 0;
  while (start <= key.size()) {
    const size_t dot = std::min(key.find('.', start), key.size());
    if (!node->is_object()) return nullptr;
    auto it = node->find(key.substr(start, dot - start));
    if (it == node->end()) return nullptr;
    node = &*it;
    start = dot + 1;
  }
  return node;
}

void collect_leaves(const Json& node, const std::string& path, std::vector<std::string>& out) {
  if (!node.is_object() || node.empty()) {
    out.push_back(path);
    return;
  }
  for (const auto& [k, v] : node.items()) collect_leaves(v, path + "." + k, out);
}

bool covers(const std::string& entry, const std::string& key) {
  return key == entry || (key.size() > entry.size() && key.compare(0, entry.size(), entry) == 0 &&
                          key[entry.size()] == '.');
}

}  // namespace

const std::vector<KeyEntry>& entries(bool sft) {
  static const std::vector<KeyEntry> ppo = build_ppo();
  static const std::vector<KeyEntry> sft_entries = build_sft();
  return sft ? sft_entries : ppo;
}

const KeyEntry* find_entry(const std::string& key, bool sft) {
  for (const KeyEntry& e : entries(sft))
    if (covers(e.key, key)) return &e;
  return nullptr;
}

void check_added_keys(const Config& config) {
  // Read by verl 0.9.1 (and verl-cpp) with config.get() although ppo_trainer.yaml does not declare them: GDPO's
  // reward keys (the C++ trainer), the reward managers' kwargs and concurrency bound (verl.trainer.ppo.reward).
  static const std::vector<std::string> read_extensions{
      "algorithm.gdpo_reward_keys",  "algorithm.gdpo_reward_weights",
      "reward.max_concurrent",       "reward.reward_kwargs",
      "reward_model.reward_kwargs",  "reward_model.overlong_buffer",
      "reward.custom_reward_function.reward_kwargs", "custom_reward_function.reward_kwargs",
      // verl's one_step_off_ppo_trainer.yaml: the rollout's resource pool, rollout.nnodes x rollout.n_gpus_per_node
      // ranks after the trainer's (PPOTrainerConfig reads and checks both; 0 per node: no pool, the rollout a thread
      // of the one trainer process)
      "rollout.nnodes", "rollout.n_gpus_per_node"};
  const Json tree = config.to_json(/*resolve_values=*/false);
  std::vector<std::string> leaves;
  for (const auto& [k, v] : tree.items()) collect_leaves(v, k, leaves);
  std::vector<std::string> unread;
  for (const std::string& leaf : leaves) {
    if (find_entry(leaf, config.is_sft()) != nullptr) continue;
    const bool read = std::any_of(read_extensions.begin(), read_extensions.end(),
                                  [&](const std::string& key) { return covers(key, leaf); });
    if (!read) unread.push_back(leaf);
  }
  if (unread.empty()) return;
  std::string also;
  for (size_t i = 1; i < unread.size() && i < 6; ++i) also += (also.empty() ? " (also " : ", ") + unread[i];
  if (!also.empty()) also += unread.size() > 6 ? ", ...)" : ")";
  VERL_FAIL(ConfigError, "config key '", unread.front(), "'", also, " was added with +key=... but verl-cpp reads no ",
            "such key, so it would be ignored; remove it (docs/config.md lists the keys verl-cpp knows)");
}

const char* class_name(KeyClass cls) {
  switch (cls) {
    case KeyClass::kHonoured:
      return "honoured";
    case KeyClass::kRefused:
      return "refused";
    case KeyClass::kNoEffect:
      return "no effect";
  }
  return "";
}

void check_refused(const Config& config, const Json& default_raw, const Json& default_resolved, const Json& resolved) {
  std::vector<std::string> refused;  // one message per changed refused key: all of them in one error
  for (const KeyEntry& e : entries(config.is_sft())) {
    if (e.cls != KeyClass::kRefused) continue;
    const Json* entry_default = lookup(default_raw, e.key);
    if (entry_default == nullptr) continue;  // not in this tree (the tests keep the table and the tree in step)
    std::vector<std::string> leaves;
    collect_leaves(*entry_default, e.key, leaves);
    for (const std::string& leaf : leaves) {
      if (!config.has(leaf)) continue;  // deleted with ~key
      const Json raw = config.raw(leaf);
      if (raw == *lookup(default_raw, leaf)) continue;  // as written in the defaults (interpolations included)
      const Json* value = lookup(resolved, leaf);
      const Json* dflt = lookup(default_resolved, leaf);
      if (value == nullptr || (dflt != nullptr && canonical(*value) == canonical(*dflt))) continue;
      if (!e.same_as.empty()) {
        const Json* other = lookup(resolved, e.same_as);
        if (other != nullptr && canonical(*value) == canonical(*other)) continue;
      }
      std::string msg = "config key '" + leaf + "' = " + untrusted::quote(*value) +
                        " is not supported by verl-cpp yet: " + e.reason + ". Leave it at its default " +
                        (dflt != nullptr ? dflt->dump() : std::string("value"));
      if (!e.same_as.empty()) msg += " or set it to " + e.same_as + "'s value";
      refused.push_back(msg);
    }
  }
  if (refused.empty()) return;
  std::string text = refused.size() == 1 ? refused[0] : std::to_string(refused.size()) + " settings are refused:";
  if (refused.size() > 1)
    for (const std::string& msg : refused) text += "\n  - " + msg;
  VERL_FAIL(ConfigError, text, "\n(docs/config.md lists what verl-cpp does with every key; --explain KEY prints one)");
}

}  // namespace verl::config_keys
