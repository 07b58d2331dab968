"""One side of bench_core_algos.py: times one core_algos function and measures its peak memory.

Runs under either venv -- verl-cpp's (``--side ours``) or the reference venv with verl 0.9.1
(``--side verl``). Both packages are imported as ``verl`` with the same module paths and function
names, so the code that calls them is the same for both sides; only the actor config object differs
(verl-cpp's ``verl.load_config`` tree vs. verl's ``ActorConfig`` dataclass, same clip values).

Inputs come from the .pt files bench_core_algos.py wrote once with a fixed seed, so both sides see
identical tensors. The driver starts one fresh process per side and function, which:

1. times it: ``--warmup`` calls, then ``--repeats`` timed calls (wall clock, time.perf_counter),
   and saves the last call's outputs (and gradients) for the parity check;
2. measures its peak memory: fixes glibc's mmap threshold and trims the heap (so the RSS follows
   the live tensors), makes one more warm-up call, then reports how far the anonymous resident
   memory (RssAnon, sampled by a second process) rises during one call; also VmHWM's rise (after
   resetting it through ``/proc/self/clear_refs``), which includes file-backed pages.

For ``--plain-baseline`` (verl-cpp's logprobs cases) the same process also times and measures a
plain ``log_softmax(logits).gather(labels)`` on the same tensors.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

CASES = ("gae", "grpo", "rloo", "policy_loss_fwd_bwd", "logprobs_fwd", "logprobs_fwd_bwd")
GAMMA, LAM = 0.99, 0.95
CLIP_RATIO, CLIP_RATIO_LOW, CLIP_RATIO_HIGH, CLIP_RATIO_C = 0.2, 0.2, 0.28, 3.0


# ---- peak memory -----------------------------------------------------------------------------------
# A second process samples this one's RssAnon (tensors live in anonymous memory) for as long as the
# measured call runs. VmHWM alone is not used: it counts file-backed pages too (the mapped .so
# files), which the kernel may drop or fault in during the call (this machine runs DAMON pageout),
# moving it by tens of MiB either way.
_SAMPLER = r"""
import sys, threading
status = f"/proc/{sys.argv[1]}/status"
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
peak = 0
print("ready", flush=True)
while not stop.is_set():
    with open(status) as f:
        for line in f:
            if line.startswith("RssAnon:"):
                peak = max(peak, int(line.split()[1]))
                break
print(peak, flush=True)
"""


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def peak_extra_bytes(call: Callable[[], Any]) -> dict:
    """Peak increase (bytes) of anonymous resident memory while `call` runs (sampled), and of
    VmHWM (exact peak of the whole RSS, file-backed pages included); the call's result stays alive
    until both are read."""
    gc.collect()
    sampler = subprocess.Popen([sys.executable, "-c", _SAMPLER, str(os.getpid())], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    assert sampler.stdout.readline().strip() == "ready"
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")  # resets VmHWM to the current RSS
    rss_before, anon_before = _status_kib("VmRSS"), _status_kib("RssAnon")
    result = call()
    hwm, anon_after = _status_kib("VmHWM"), _status_kib("RssAnon")
    anon_peak = int(sampler.communicate("stop\n")[0])
    del result
    return {"anon": (max(anon_peak, anon_after) - anon_before) * 1024, "hwm": (hwm - rss_before) * 1024}


# ---- the calls -------------------------------------------------------------------------------------
def actor_config(side: str) -> Any:
    """The actor config the policy loss reads, as each package's trainer passes it."""
    if side == "ours":
        import verl

        overrides = [
            f"actor_rollout_ref.actor.clip_ratio={CLIP_RATIO}",
            f"actor_rollout_ref.actor.clip_ratio_low={CLIP_RATIO_LOW}",
            f"actor_rollout_ref.actor.clip_ratio_high={CLIP_RATIO_HIGH}",
            f"actor_rollout_ref.actor.clip_ratio_c={CLIP_RATIO_C}",
        ]
        return verl.load_config(overrides=overrides).actor_rollout_ref.actor
    from verl.workers.config import ActorConfig

    return ActorConfig(
        strategy="fsdp", ppo_mini_batch_size=256, ppo_micro_batch_size_per_gpu=8, rollout_n=8,
        clip_ratio=CLIP_RATIO, clip_ratio_low=CLIP_RATIO_LOW, clip_ratio_high=CLIP_RATIO_HIGH,
        clip_ratio_c=CLIP_RATIO_C,
    )


@functools.cache
def load(inputs_dir: str, name: str) -> dict:
    """One input file, loaded once per process (the plain baseline shares the logits tensor)."""
    return torch.load(os.path.join(inputs_dir, name), weights_only=True)


def make_call(case: str, side: str, inputs_dir: str) -> tuple[Callable[[], dict], Callable[[], None]]:
    """(call, reset): call() runs the function once and returns its outputs by name; reset() drops
    gradients a previous call left behind."""
    from verl.trainer.ppo import core_algos
    from verl.utils import torch_functional as verl_F

    no_reset = lambda: None  # noqa: E731
    if case in ("gae", "grpo", "rloo"):
        d = load(inputs_dir, "advantage_inputs.pt")
        index = np.array(d["uids"], dtype=object)  # verl's trainer passes the uid column like this
        if case == "gae":
            def call():
                adv, ret = core_algos.compute_gae_advantage_return(
                    d["gae_token_level_rewards"], d["values"], d["response_mask"], gamma=GAMMA, lam=LAM)
                return {"advantages": adv, "returns": ret}
        elif case == "grpo":
            def call():
                adv, ret = core_algos.compute_grpo_outcome_advantage(
                    d["outcome_token_level_rewards"], d["response_mask"], index, norm_adv_by_std_in_grpo=True)
                return {"advantages": adv, "returns": ret}
        else:
            def call():
                adv, ret = core_algos.compute_rloo_outcome_advantage(
                    d["outcome_token_level_rewards"], d["response_mask"], index)
                return {"advantages": adv, "returns": ret}
        return call, no_reset

    if case == "policy_loss_fwd_bwd":
        d = load(inputs_dir, "policy_loss_inputs.pt")
        config = actor_config(side)
        log_prob = d["log_prob"].clone().requires_grad_(True)

        def call():
            loss, metrics = core_algos.compute_policy_loss_vanilla(
                d["old_log_prob"], log_prob, d["advantages"], d["response_mask"], loss_agg_mode="token-mean",
                config=config)
            loss.backward()
            out = {"pg_loss": loss.detach(), "log_prob.grad": log_prob.grad}
            out.update({f"metric {k}": torch.tensor(float(v), dtype=torch.float64) for k, v in metrics.items()})
            return out

        def reset():
            log_prob.grad = None

        return call, reset

    d = load(inputs_dir, "logits_inputs.pt")
    if case == "logprobs_fwd":
        def call():
            with torch.no_grad():
                return {"log_probs": verl_F.logprobs_from_logits(d["logits"], d["labels"])}
        return call, no_reset

    if case == "logprobs_fwd_bwd":
        logits = d["logits"].requires_grad_(True)

        def call():
            out = verl_F.logprobs_from_logits(logits, d["labels"])
            out.backward(d["grad_output"])
            return {"log_probs": out.detach(), "logits.grad": logits.grad}

        def reset():
            logits.grad = None

        return call, reset
    raise ValueError(f"unknown case {case!r}; known: {CASES}")


def make_plain_logprobs_call(case: str, inputs_dir: str) -> tuple[Callable[[], dict], Callable[[], None]]:
    """The baseline the logprobs memory target is stated against: log_softmax over the whole
    vocabulary, then gather (what a straightforward implementation does)."""
    d = load(inputs_dir, "logits_inputs.pt")
    logits, labels = d["logits"], d["labels"]

    def plain(x):
        return torch.log_softmax(x, dim=-1).gather(-1, labels.unsqueeze(-1)).squeeze(-1)

    if case == "logprobs_fwd":
        def call():
            with torch.no_grad():
                return {"log_probs": plain(logits)}
        return call, lambda: None

    logits.requires_grad_(True)

    def call():
        out = plain(logits)
        out.backward(d["grad_output"])
        return {"log_probs": out.detach(), "logits.grad": logits.grad}

    def reset():
        logits.grad = None

    return call, reset


# ---- time, memory ----------------------------------------------------------------------------------
def run_time(call, reset, warmup: int, repeats: int) -> tuple[list[float], dict]:
    for _ in range(warmup):
        reset()
        call()
    times, out = [], None
    for _ in range(repeats):
        reset()
        out = None
        gc.collect()
        start = time.perf_counter()
        out = call()
        times.append(time.perf_counter() - start)
    return times, out


def track_live_memory() -> None:
    """From here on, RSS follows the live tensors: allocations >= 64 KiB get their own mapping that
    goes back to the OS when freed (glibc's adaptive threshold would keep freed blocks resident),
    and what earlier calls freed is released now."""
    libc = ctypes.CDLL("libc.so.6")
    m_trim_threshold, m_mmap_threshold = -1, -3  # <malloc.h>
    if not (libc.mallopt(m_mmap_threshold, 64 * 1024) and libc.mallopt(m_trim_threshold, 0)):
        raise RuntimeError("mallopt failed")
    gc.collect()
    libc.malloc_trim(0)


def run_memory(call, reset) -> dict:
    reset()
    call()  # warm-up under the fixed threshold
    reset()
    return peak_extra_bytes(call)


def versions(side: str) -> dict:
    import verl

    if side == "ours":
        from importlib.metadata import version

        package = f"verl-cpp {version('verl-cpp')}"
    else:
        package = f"verl {verl.__version__}"
    return {"package": package, "package_file": verl.__file__, "torch": torch.__version__}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", choices=("ours", "verl"), required=True)
    parser.add_argument("--case", choices=CASES, required=True)
    parser.add_argument("--inputs", required=True, help="directory with the driver's input .pt files")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--plain-baseline", action="store_true",
                        help="also measure plain log_softmax+gather in this process (logprobs cases)")
    parser.add_argument("--report", required=True, help="JSON file to write the measurements to")
    parser.add_argument("--save-outputs", help=".pt file for the last timed call's outputs")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    report = {"side": args.side, "case": args.case, "threads": torch.get_num_threads(),
              **versions(args.side)}
    call, reset = make_call(args.case, args.side, args.inputs)
    plain = make_plain_logprobs_call(args.case, args.inputs) if args.plain_baseline else None

    times, outputs = run_time(call, reset, args.warmup, args.repeats)
    report.update(times_s=times, median_s=statistics.median(times))
    if args.save_outputs:
        torch.save(outputs, args.save_outputs)
    del outputs
    if plain is not None:
        reset()
        plain_times, _ = run_time(*plain, args.warmup, args.repeats)
        report.update(plain_times_s=plain_times, plain_median_s=statistics.median(plain_times))

    track_live_memory()
    peak = run_memory(call, reset)
    report.update(peak_extra_bytes=peak["anon"], peak_extra_hwm_bytes=peak["hwm"])
    if plain is not None:
        reset()
        peak = run_memory(*plain)
        report.update(plain_peak_extra_bytes=peak["anon"], plain_peak_extra_hwm_bytes=peak["hwm"])

    with open(args.report, "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
