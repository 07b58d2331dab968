"""What verl-cpp does with each config key: *honoured*, *refused* or *no effect* (the table lives in C++,
``cpp/src/core/config_keys.cpp``, so C++ applications get the same checks).

- **honoured**: the trainer reads the key and does what verl does with it.
- **refused**: not supported yet; a value other than the default raises ``verl.ConfigError`` naming the key (when
  the config is loaded or validated).
- **no effect**: a switch of verl's backends (Ray, vLLM, FSDP, torch.compile, Liger, ...) with no meaning in
  verl-cpp; any value is accepted, and the entry says why it changes nothing.

An entry names a leaf or a map (then every leaf below it shares the class).

>>> from verl import config_keys
>>> config_keys.find("actor_rollout_ref.model.use_liger").cls
'no effect'
>>> print(config_keys.explain("actor_rollout_ref.model.lora.rank"))  # doctest: +ELLIPSIS
actor_rollout_ref.model.lora.rank = 0 (default 0)
  refused: ...

``python -m verl.config_keys > docs/config.md`` writes the reference page (a test keeps it in step).
"""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

from . import _C
from .config import Config, load_config, load_sft_config
from .errors import ConfigError

__all__ = ["KeyEntry", "CLASSES", "entries", "find", "leaves", "explain", "markdown"]

HONOURED, REFUSED, NO_EFFECT = "honoured", "refused", "no effect"
CLASSES = (HONOURED, REFUSED, NO_EFFECT)

_CLASS_MEANING = {
    HONOURED: "the trainer reads it",
    REFUSED: "not supported yet: a value other than the default raises ConfigError",
    NO_EFFECT: "accepted, changes nothing in verl-cpp",
}


class KeyEntry(NamedTuple):
    key: str  # a leaf or a map of the config tree
    cls: str  # "honoured", "refused" or "no effect"
    reason: str  # refused: what is not supported; no effect: why; honoured: an optional note
    same_as: str  # refused only: a key whose value is also accepted ("" when none)


def entries(sft: bool = False) -> list[KeyEntry]:
    """Every entry of the PPO tree's table (or the SFT tree's)."""
    return [KeyEntry(*e) for e in _C.config_key_entries(sft)]


def _covers(entry: str, key: str) -> bool:
    return key == entry or key.startswith(entry + ".")


def find(key: str, sft: bool = False) -> KeyEntry | None:
    """The entry covering ``key`` (a leaf or a map inside an entry's map); None when no entry covers it."""
    return next((e for e in entries(sft) if _covers(e.key, key)), None)


def leaves(tree: Any, prefix: str = "") -> list[str]:
    """Dotted paths of the leaves of a config tree (a ``verl.Config`` or nested dicts), in tree order. A leaf is a
    value that is not a non-empty map: scalars, lists and empty maps (free-form maps such as ``engine_kwargs``)."""
    if isinstance(tree, Config):
        tree = tree.to_dict(resolve=False)
    if isinstance(tree, dict) and tree:
        return [leaf for k, v in tree.items() for leaf in leaves(v, f"{prefix}.{k}" if prefix else k)]
    return [prefix]


def _default_tree(sft: bool) -> Config:
    return load_sft_config() if sft else Config()


def _show(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, default=str)


def explain(key: str, config: Config | None = None) -> str:
    """What verl-cpp does with ``key`` (a leaf, or a map: each leaf below it): its value in ``config`` (default:
    the defaults) and the default, the class and the reason. Raises ``ConfigError`` for a key not in the tree."""
    sft = bool(config is not None and config.cpp.is_sft)
    config = config if config is not None else _default_tree(sft)
    defaults = _default_tree(sft)
    raw = config.cpp.raw(key)  # ConfigError with the closest key when unknown
    keys = leaves(raw, key) if isinstance(raw, dict) else [key]
    lines = []
    for leaf in keys:
        entry = find(leaf, sft)
        value = _show(config.cpp.get(leaf)) if leaf in config else "(deleted)"
        default = _show(defaults.cpp.get(leaf)) if leaf in defaults else "(not a default key)"
        lines.append(f"{leaf} = {value} (default {default})")
        if entry is None:
            lines.append("  not in verl-cpp's table (a key added with +key=...): nothing reads it")
            continue
        lines.append(f"  {entry.cls}: {_CLASS_MEANING[entry.cls]}")
        if entry.reason:
            lines.append(f"  {'note' if entry.cls == HONOURED else 'why'}: {entry.reason}")
        if entry.same_as:
            lines.append(f"  also accepted: the value of {entry.same_as}")
        if entry.key != leaf:
            lines.append(f"  (entry: {entry.key}, which covers every key below it)")
    return "\n".join(lines)


def _ordered(sft: bool) -> list[tuple[KeyEntry, int]]:
    """The entries in tree order with the number of leaves each covers."""
    tree_leaves = leaves(_default_tree(sft))
    out = []
    for entry in entries(sft):
        covered = [i for i, leaf in enumerate(tree_leaves) if _covers(entry.key, leaf)]
        out.append((entry, covered[0] if covered else len(tree_leaves), len(covered)))
    out.sort(key=lambda item: item[1])
    return [(entry, count) for entry, _, count in out]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _section(sft: bool, title: str, command: str) -> list[str]:
    ordered = _ordered(sft)
    tree_leaves = set(leaves(_default_tree(sft)))
    counts = {cls: sum(n for e, n in ordered if e.cls == cls) for cls in CLASSES}
    total = sum(counts.values())
    out = [f"## {title}", "",
           f"{total} leaf keys: {counts[HONOURED]} honoured, {counts[REFUSED]} refused, {counts[NO_EFFECT]} with "
           f"no effect. `{command} --explain KEY` prints the entry of one key (or of every key below a map).", ""]
    for cls, heading in ((HONOURED, "Honoured"), (REFUSED, "Refused (a value other than the default is an error)"),
                         (NO_EFFECT, "No effect here")):
        out += [f"### {heading}", ""]
        rows = [(e, n) for e, n in ordered if e.cls == cls]
        if not rows:
            out += ["(none)", ""]
            continue
        if cls != HONOURED:
            out += ["| key | why |", "| --- | --- |"]
        for e, n in rows:
            key = f"`{e.key}`" if e.key in tree_leaves else f"`{e.key}.*` ({n} keys)"
            reason = e.reason + (f" (or the value of `{e.same_as}`)" if e.same_as else "")
            out.append(f"| {key} | {_cell(reason)} |" if cls != HONOURED else
                       f"- {key}" + (f": {reason}" if reason else ""))
        out.append("")
    return out


def markdown() -> str:
    """docs/config.md: every entry of both trees by class, in tree order (generated: ``python -m
    verl.config_keys``)."""
    lines = [
        "# Config keys: honoured, refused, no effect",
        "",
        "<!-- Generated by `python -m verl.config_keys > docs/config.md` from the table in",
        "     cpp/src/core/config_keys.cpp; tests/python/core/test_config_keys.py checks it is current. -->",
        "",
        "verl-cpp reads verl's config tree (`python/verl/trainer/config/ppo_trainer.yaml`, verl 0.9.1's keys and",
        "defaults) and the SFT trainer's (`sft_trainer.yaml`). No key is silently ignored: each is in one class.",
        "",
        "- **honoured**: the trainer reads it and does what verl does with it.",
        "- **refused**: not supported yet. A value other than the default raises `ConfigError` naming the key when",
        "  the config is loaded (CLI, `RLConfig`, `verl::Config::load`), so a run never silently does less than",
        "  asked. An interpolation left as written counts as the default.",
        "- **no effect**: a switch of verl's backends (Ray, vLLM, FSDP, torch.compile, Liger, ...) that has no",
        "  meaning in verl-cpp; any value is accepted.",
        "",
        "An entry that names a map covers every key below it. Deviations from verl's defaults:",
        "`actor_rollout_ref.rollout.name: native`, `trainer.n_gpus_per_node: 1` (torchrun or",
        "`trainer.n_gpus_per_node=N` starts more ranks), `actor_rollout_ref.rollout.tensor_model_parallel_size: 1`.",
        "",
        "Keys added with `+key=value` are kept in the config, but the PPO trainer refuses (`ConfigError` naming",
        "them) those that nothing in verl-cpp reads; the few verl reads without declaring them in its YAML",
        "(`+algorithm.gdpo_reward_keys`, `+reward.reward_kwargs`, `+reward.max_concurrent`, ...) are accepted.",
        "",
    ]
    lines += _section(False, "PPO trainer (`python -m verl.trainer.main_ppo`)", "python -m verl.trainer.main_ppo")
    lines += _section(True, "SFT trainer (`python -m verl.trainer.sft_trainer`)", "python -m verl.trainer.sft_trainer")
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv:
        try:
            for key in argv:
                print(explain(key, load_config()))
        except ConfigError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        return 0
    sys.stdout.write(markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
