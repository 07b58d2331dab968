"""Validation metrics as verl computes them (``verl.trainer.ppo.metric_utils``).

The per-step training metrics (``compute_data_metrics``, ``compute_timing_metrics``,
``compute_throughout_metrics``) are computed in C++ by the trainer and exposed here for direct use; the
validation aggregation (``process_validation_metrics`` with bootstrapped best@N / worst@N / maj@N, and the
``val-core`` / ``val-aux`` naming of ``RayPPOTrainer._val_metrics_update``) lives in Python like verl's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from ... import _C
from ...protocol import DataProto

__all__ = ["compute_data_metrics", "compute_timing_metrics", "compute_throughout_metrics", "bootstrap_metric",
           "calc_maj_val", "process_validation_metrics", "validation_metric_dict"]


def _cpp_batch(batch: Any) -> _C.DataProto:
    """The C++ DataProto the metric functions read: a ``DataProto`` as it is, or any object shaped like one (verl's
    tests pass a mock with ``.batch`` a dict of tensors and ``.meta_info`` a dict); what it lacks is empty."""
    if isinstance(batch, DataProto):
        return batch.to_cpp()
    tensors = getattr(batch, "batch", None)
    tensors = dict(tensors.items()) if isinstance(tensors, Mapping) or _is_tensordict(tensors) else {}
    columns = getattr(batch, "non_tensor_batch", None)
    columns = dict(columns) if isinstance(columns, Mapping) else {}
    meta = getattr(batch, "meta_info", None)
    return _C.DataProto(tensors, columns, dict(meta) if isinstance(meta, Mapping) else {})


def _is_tensordict(value: Any) -> bool:
    return type(value).__name__ == "TensorDict" and hasattr(value, "batch_size")


def _compute_response_info(batch: Any) -> dict[str, torch.Tensor]:
    """verl's per-row lengths of a step batch: ``response_mask`` (the attention mask's response part),
    ``prompt_length`` and ``response_length`` (float counts of valid tokens). A batch that carries
    ``prompt_length`` and ``response_length`` tensors is read from them (no ``response_mask`` then), as in verl 0.9.1
    and the C++ metrics."""
    tensors = batch.batch
    if "prompt_length" in tensors and "response_length" in tensors:
        return {"prompt_length": tensors["prompt_length"], "response_length": tensors["response_length"]}
    response_length = tensors["responses"].shape[-1]
    attention_mask = tensors["attention_mask"]
    prompt_mask, response_mask = attention_mask[:, :-response_length], attention_mask[:, -response_length:]
    return {"response_mask": response_mask, "prompt_length": prompt_mask.sum(-1).float(),
            "response_length": response_mask.sum(-1).float()}


def compute_data_metrics(batch: DataProto, use_critic: bool = True) -> dict[str, float]:
    """verl's critic/*, response_length/*, prompt_length/* metrics of a step batch."""
    return dict(_C.trainer.compute_data_metrics(_cpp_batch(batch), use_critic))


def compute_timing_metrics(batch: DataProto, timing_raw: dict[str, float]) -> dict[str, float]:
    """timing_s/<stage> for every stage, and timing_per_token_ms/<stage>: ms per response token for gen, per prompt +
    response token for ref, values, adv, update_critic and update_actor; 0.0 where the batch has no such token.

    The token counts come from ``_compute_response_info`` as in verl (code that patches it, as verl's tests do, is
    heard); the C++ trainer's function computes the metrics from them."""
    info = _compute_response_info(batch)
    lengths = {"prompt_length": info["prompt_length"], "response_length": info["response_length"]}
    return dict(_C.trainer.compute_timing_metrics(_C.DataProto(lengths, {}, {}), dict(timing_raw)))


def compute_throughout_metrics(batch: DataProto, timing_raw: dict[str, float], n_gpus: int = 1) -> dict[str, float]:
    """perf/total_num_tokens (the sum of meta_info["global_token_num"] when the batch carries it, else the valid
    tokens of attention_mask), perf/time_per_step, perf/throughput (tokens / (time * n_gpus))."""
    return dict(_C.trainer.compute_throughout_metrics(_cpp_batch(batch), dict(timing_raw), n_gpus))


def bootstrap_metric(data: Sequence[Any], subset_size: int, reduce_fns: list[Callable[[np.ndarray], float]],
                     n_bootstrap: int = 1000, seed: int = 42) -> list[tuple[float, float]]:
    """(mean, std) of each reduce_fn over ``n_bootstrap`` resamples of ``subset_size`` (verl's, same draws)."""
    np.random.seed(seed)
    data_np = np.empty(len(data), dtype=object)
    for i, value in enumerate(data):
        data_np[i] = value
    idxs = np.random.choice(len(data_np), size=(n_bootstrap, subset_size), replace=True)
    results = np.empty((len(reduce_fns), n_bootstrap), dtype=np.float64)
    for f, reduce_fn in enumerate(reduce_fns):
        for b in range(n_bootstrap):
            results[f, b] = reduce_fn(data_np[idxs[b]])
    return [(float(np.mean(results[f])), float(np.std(results[f]))) for f in range(len(reduce_fns))]


def calc_maj_val(data: Sequence[dict[str, Any]], vote_key: str, val_key: str) -> float:
    """The ``val_key`` of the first sample carrying the most common ``vote_key``."""
    votes: dict[Any, list] = defaultdict(list)
    for d in data:
        votes[d[vote_key]].append(d[val_key])
    winner = max(votes, key=lambda k: len(votes[k]))
    return votes[winner][0]


def _bootstrap_sizes(n_resps: int) -> list[int]:
    if n_resps <= 1:
        return []
    ns, n = [], 2
    while n < n_resps:
        ns.append(n)
        n *= 2
    ns.append(n_resps)
    return ns


def process_validation_metrics(data_sources: Sequence[str], sample_uids: Sequence[str],
                               infos_dict: dict[str, Sequence[Any]], seed: int = 42,
                               expected_acc_counts: Mapping[tuple[str, str], int] | None = None,
                               ) -> dict[str, dict[str, dict[str, float]]]:
    """{data_source: {variable: {metric: value}}} with mean@N, std@N, best@n/{mean,std}, worst@n/{mean,std} and,
    when a ``pred`` variable exists, maj@n/{mean,std}: per prompt (uid), then averaged over prompts (verl's).

    ``expected_acc_counts`` maps (data_source, uid) to the number of sessions the prompt was rolled out for (verl
    0.9.1). For a data source that reports ``acc`` (some value not None), a prompt's sessions that produced no
    ``acc`` -- failed or missing, a prompt with none at all included -- count as ``acc`` 0.0, and
    ``acc_success_only`` keeps the metric over the sessions that did report. Sources without ``acc`` are left as they
    are."""
    grouped: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for i, data_source in enumerate(data_sources):
        var2vals = grouped[data_source][sample_uids[i]]
        for var_name, values in infos_dict.items():
            var2vals[var_name].append(values[i])

    if expected_acc_counts:
        acc_sources = {ds for ds, uid2vars in grouped.items()
                       if any(v is not None for var2vals in uid2vars.values() for v in var2vals.get("acc", []))}
        for (data_source, uid), expected in expected_acc_counts.items():
            if data_source not in acc_sources:
                continue
            var2vals = grouped[data_source][uid]
            observed = [v for v in var2vals.get("acc", []) if v is not None]
            var2vals["acc_success_only"] = observed
            var2vals["acc"] = observed + [0.0] * max(int(expected) - len(observed), 0)

    per_uid: dict = {}
    for data_source, uid2vars in grouped.items():
        uid_dict = per_uid.setdefault(data_source, {})
        for uid, var2vals in uid2vars.items():
            preds = var2vals.get("pred")
            var_dict = uid_dict.setdefault(uid, {})
            for var_name, raw_values in var2vals.items():
                values = [v for v in raw_values if v is not None]
                if not values or isinstance(values[0], str):
                    continue
                has_pred = preds is not None and len(preds) == len(values) and all(p is not None for p in preds)
                n_resps = len(values)
                metric = {f"mean@{n_resps}": float(np.mean(values))}
                if n_resps > 1:
                    metric[f"std@{n_resps}"] = float(np.std(values))
                    for n in _bootstrap_sizes(n_resps):
                        (bon_mean, bon_std), (won_mean, won_std) = bootstrap_metric(values, n, [np.max, np.min],
                                                                                    seed=seed)
                        metric[f"best@{n}/mean"], metric[f"best@{n}/std"] = bon_mean, bon_std
                        metric[f"worst@{n}/mean"], metric[f"worst@{n}/std"] = won_mean, won_std
                        if has_pred:
                            votes = [{"val": v, "pred": p} for v, p in zip(values, preds)]
                            [(maj_mean, maj_std)] = bootstrap_metric(
                                votes, n, [lambda d: calc_maj_val(d, vote_key="pred", val_key="val")], seed=seed)
                            metric[f"maj@{n}/mean"], metric[f"maj@{n}/std"] = maj_mean, maj_std
                var_dict[var_name] = metric

    collected: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for data_source, uid2var in per_uid.items():
        for var2metric in uid2var.values():
            for var_name, metric in var2metric.items():
                for metric_name, value in metric.items():
                    collected[data_source][var_name][metric_name].append(value)
    return {ds: {var: {name: float(np.mean(vals)) for name, vals in metrics.items()} for var, metrics in vars_.items()}
            for ds, vars_ in collected.items()}


def validation_metric_dict(data_sources: Sequence[str], sample_uids: Sequence[str],
                           infos_dict: dict[str, Sequence[Any]],
                           expected_acc_counts: Mapping[tuple[str, str], int] | None = None) -> dict[str, float]:
    """verl's ``_val_metrics_update``: ``val-core/<data_source>/<acc|reward>/{mean,maj,best}@<N>...`` for the core
    variable (``acc`` when the reward reports it, else ``reward``) at the largest N, ``val-aux/...`` for the rest;
    ``expected_acc_counts`` as in ``process_validation_metrics``."""
    out: dict[str, float] = {}
    per_source = process_validation_metrics(data_sources, sample_uids, infos_dict,
                                            expected_acc_counts=expected_acc_counts)
    for data_source, var2metric in per_source.items():
        core_var = "acc" if "acc" in var2metric else "reward"
        for var_name, metric2val in var2metric.items():
            n_max = max(int(name.split("@")[-1].split("/")[0]) for name in metric2val)
            for metric_name, value in metric2val.items():
                core = (var_name == core_var and metric_name.startswith(("mean", "maj", "best"))
                        and f"@{n_max}" in metric_name)
                out[f"{'val-core' if core else 'val-aux'}/{data_source}/{var_name}/{metric_name}"] = value
    return out
