"""Multi-process training (HybridFlow's split, verl-cpp's ``verl::dist``): the ranks of a job started by an existing
launcher -- ``torchrun --nproc_per_node=N [--nnodes M --rdzv-endpoint ...] -m verl.trainer.main_ppo ...``, or
``python -m verl.trainer.main_ppo trainer.n_gpus_per_node=N``, which starts the N local workers through torch's
elastic launcher (the engine behind torchrun).

Every rank builds the same trainer; rank 0 is the single controller (dataloader, reward functions, validation,
logging, checkpoints) and drives the C++ step, which dispatches generation, the log-prob and value passes and the
updates to every rank by rows (data parallel). The other ranks serve the controller's calls inside the same public
methods (``fit``, ``step``, ...) and return ``None`` from them.

The process group is created once, from the launcher's rendezvous (``WORLD_SIZE``, ``RANK``, ``LOCAL_RANK``,
``MASTER_ADDR``/``MASTER_PORT``): Gloo on CPU, NCCL on CUDA, every collective bounded by
``actor_rollout_ref.nccl_timeout`` seconds (Gloo too), so a rank that dies or hangs ends the others with a
``DistributedError`` instead of a silent hang.
"""

from __future__ import annotations

import atexit
import datetime
import functools
import os
import sys
import uuid
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from ..errors import ConfigError, DistributedError

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class LaunchEnv:
    """What the launcher told this process (torchrun's environment variables); one process without them."""

    world_size: int = 1
    rank: int = 0
    local_rank: int = 0

    @classmethod
    def from_environ(cls, environ: Any = None) -> "LaunchEnv":
        env = os.environ if environ is None else environ
        try:
            world = int(env.get("WORLD_SIZE", "1"))
            rank = int(env.get("RANK", "0"))
            local = int(env.get("LOCAL_RANK", str(rank)))
        except ValueError as e:
            raise ConfigError(f"the launcher's WORLD_SIZE / RANK / LOCAL_RANK are not integers: {e}") from None
        if world < 1 or not 0 <= rank < world or local < 0:
            raise ConfigError(f"the launcher's environment is inconsistent: WORLD_SIZE={world}, RANK={rank}, "
                              f"LOCAL_RANK={local}")
        return cls(world, rank, local)


def plan(config: Any, launch: LaunchEnv | None = None) -> Any:
    """The job's layout (``verl._C.dist.MeshPlan``, planned in C++ by ``dist::plan_mesh``: every layout check and its
    ConfigError in one place): the PPO trainer's roles for verl's PPO config, the one training engine for the SFT and
    DPO trainers' (no ``actor_rollout_ref`` section). With ``launch``, ConfigError unless it started that many
    ranks."""
    from .. import _C

    roles = "ppo" if "actor_rollout_ref" in config else "engine"
    world = None if launch is None else launch.world_size
    return _C.dist.plan_mesh(getattr(config, "cpp", config), roles, world, "WORLD_SIZE" in os.environ)


def trainer_world_size(config: Any) -> int:
    """``trainer.nnodes x trainer.n_gpus_per_node``: the ranks that train."""
    return plan(config).trainer_ranks


def rollout_pool_size(config: Any) -> int:
    """The one-step off-policy trainer's rollout pool (``actor_rollout_ref.hybrid_engine=False``, verl's
    ``one_step_off_ppo_trainer.yaml``): ``rollout.nnodes x rollout.n_gpus_per_node`` ranks of its own after the
    trainer's, which generate while the trainer's ranks train; 0 without one (``rollout.n_gpus_per_node=0``, this
    build's default: the rollout is a thread of the one trainer process)."""
    return plan(config).pool_ranks


def expected_world_size(config: Any) -> int:
    """The number of ranks the config lays out: the trainer's, plus a rollout pool's (``rollout_pool_size``)."""
    return plan(config).world_size


def check_layout(config: Any, world_size: int) -> None:
    """ConfigError, before any process group forms, when the config's layout does not fit ``world_size`` ranks."""
    plan(config, LaunchEnv(world_size, 0, 0))


def fsdp_size(config: Any, role: str) -> int:
    """verl's ``fsdp_size`` of ``role`` ("actor", "critic"; "engine": the SFT / DPO trainers' model): the ranks one
    copy of its weights is sharded over (-1: all of them; fewer: HSDP, sharded within groups of that many consecutive
    ranks and replicated across the groups)."""
    layout = plan(config)
    return layout.critic_fsdp if role == "critic" else layout.actor_fsdp


def _new_groups(config: Any, communicator: Any, groups: list[list[int]]) -> Any:
    """Creates every group of ``groups`` (all ranks take part, as torch.distributed.new_group requires) and returns
    this rank's, as a ``verl._C.dist.Communicator`` (None for a rank in none of them: a rollout pool's)."""
    import torch.distributed as dist

    from .. import _C

    timeout = datetime.timedelta(seconds=timeout_seconds(config))
    mine = None
    for ranks in groups:
        group = dist.new_group(ranks, timeout=timeout)
        if communicator.rank in ranks:
            mine = group
    if mine is None:
        return None
    return _C.dist.Communicator(mine, device=communicator.device, timeout_s=timeout_seconds(config))


# The SFT / DPO trainers' collective timeout: verl's default actor_rollout_ref.nccl_timeout (their config has no key).
SFT_TIMEOUT_S = 600.0


def timeout_seconds(config: Any) -> float:
    if "actor_rollout_ref" not in config:  # the SFT tree
        return SFT_TIMEOUT_S
    value = config.get("actor_rollout_ref.nccl_timeout")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ConfigError(f"actor_rollout_ref.nccl_timeout must be a positive number of seconds, got {value!r}")
    return float(value)


def device_mesh(config: Any, device: str, launch: LaunchEnv | None = None) -> tuple[Any, Any]:
    """The job's communicator (``verl._C.dist.Communicator``; None for one process) and this rank's groups of the
    config's layout (``verl._C.dist.DeviceMesh``; empty for one process). Plans and checks the layout against the
    launch before any process group forms, creates torch.distributed's default process group from the launcher's
    rendezvous unless the caller already did (then it is used as it is), then every group the plan names -- on every
    rank, in the plan's order, as torch.distributed.new_group requires."""
    from .. import _C

    launch = launch or LaunchEnv.from_environ()
    layout = plan(config, launch)
    world = _world_communicator(device, launch, timeout_seconds(config))
    if world is None:
        return None, _C.dist.DeviceMesh()
    mine = {name: _new_groups(config, world, groups) for name, groups in layout.groups}
    model = "engine" if "engine_shard" in mine or "engine_replicas" in mine else "actor"
    return world, _C.dist.DeviceMesh(
        # with a rollout pool the trainer's ranks have a group of their own (none when they are one rank)
        trainer=mine.get("trainer") if layout.pool_ranks else world, rollout_pool=mine.get("rollout_pool"),
        tensor_parallel=mine.get("tensor_parallel"), tensor_parallel_slice=mine.get("tensor_parallel_slice"),
        actor_shard=mine.get(f"{model}_shard"), actor_replicas=mine.get(f"{model}_replicas"),
        critic_shard=mine.get("critic_shard"), critic_replicas=mine.get("critic_replicas"))


def _world_communicator(device: str, launch: LaunchEnv, timeout: float) -> Any:
    """The world's ``verl._C.dist.Communicator`` (None for one process); creates torch.distributed's default process
    group from the launcher's rendezvous unless the caller already did (then it is used as it is)."""
    if launch.world_size == 1:
        return None
    import torch
    import torch.distributed as dist

    from .. import _C

    on_cuda = str(device).startswith("cuda")
    if on_cuda:
        torch.cuda.set_device(launch.local_rank)
        device = f"cuda:{launch.local_rank}"
    if not dist.is_initialized():
        backend = "nccl" if on_cuda else "gloo"
        store = _restart_safe_store(launch, timeout)
        explicit = {} if store is None else {"store": store, "rank": launch.rank, "world_size": launch.world_size}
        dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout), **explicit)
        # The group this module created is destroyed before the interpreter tears down (torch asks for it: a
        # backend's threads left to static destruction can abort the process at exit).
        atexit.register(_destroy_process_group)
    return _C.dist.Communicator(dist.group.WORLD, device=str(device), timeout_s=timeout)


def _restart_safe_store(launch: LaunchEnv, timeout: float) -> Any:
    """Under torchrun, a store of this restart attempt's own for the process group (None elsewhere: env:// as usual).

    torchrun --max-restarts keeps one agent store across attempts (its rendezvous creates the store server once),
    and torch 2.14.1's workers use it without a prefix: restarted ranks read the dead attempt's Gloo addresses from
    it and fail or hang in connectFullMesh (a plain all_reduce job shows it, on one node and over two). A prefix per
    TORCHELASTIC_RESTART_COUNT is no cure over several nodes: each node's agent counts its own restarts (a node
    whose workers were healthy restarts them without counting), so the ranks could meet under different prefixes.
    Instead rank 0 serves a fresh TCPStore on a free port -- one per attempt, since every attempt restarts every
    worker -- and advertises its port with a random nonce in the agent store; the other ranks take the advert, and
    until they reach a store that holds that nonce (a stale advert names a dead attempt's port), read it again.
    Rank 0 runs on the node of MASTER_ADDR (the agent store's host: torchrun's rendezvous rank 0, whose node holds
    the first global ranks). An elastic membership change that moves rendezvous rank 0 to another node leaves the
    nodes with different MASTER_ADDRs; then the ranks time out here, as torch's own env:// would."""
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True" or "TORCHELASTIC_RESTART_COUNT" not in os.environ:
        return None
    import secrets
    import socket
    import time

    import torch.distributed as dist

    host, limit = os.environ["MASTER_ADDR"], datetime.timedelta(seconds=timeout)
    agent = dist.TCPStore(host, int(os.environ["MASTER_PORT"]), launch.world_size, is_master=False, timeout=limit)
    advert_key, nonce_key = "verl/process_group_store", "verl/nonce"
    if launch.rank == 0:
        store = dist.TCPStore(host, 0, launch.world_size, is_master=True, timeout=limit, wait_for_workers=False)
        nonce = secrets.token_hex(16)
        store.set(nonce_key, nonce)
        agent.set(advert_key, f"{store.port} {nonce}")
        return store
    deadline = time.monotonic() + timeout
    while True:
        try:
            port, nonce = agent.get(advert_key).decode().split()  # waits for rank 0's first advert
            # A dead attempt's port refuses at once here; TCPStore itself would retry for seconds and log each try.
            socket.create_connection((host, int(port)), timeout=1).close()
            # wait_for_workers=False: a probe must not count itself in as one of a store's workers.
            store = dist.TCPStore(host, int(port), launch.world_size, is_master=False,
                                  timeout=datetime.timedelta(seconds=2), wait_for_workers=False)
            if store.check([nonce_key]) and store.get(nonce_key).decode() == nonce:
                store.set_timeout(limit)
                return store
        except (OSError, RuntimeError):  # refused, or another store on a reused port (torch's DistError too)
            pass
        if time.monotonic() > deadline:
            raise DistributedError(f"rank {launch.rank}: rank 0 advertised no process-group store of this torchrun "
                                   f"attempt at {host} within actor_rollout_ref.nccl_timeout = {timeout:g} s")
        time.sleep(0.1)


def _destroy_process_group() -> None:
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()


def _share_outcome(communicator: Any, outcome: tuple[str, Any] | None) -> tuple[str, Any]:
    """The controller's (status, value) on every rank (pickled, through the job's communicator; workers pass None).
    Not torch.distributed.broadcast_object_list: its tensors are made in Python, and a Gloo thread releasing one
    after the interpreter began to exit aborts the process."""
    import pickle

    data = b""
    if outcome is not None:
        try:
            data = pickle.dumps(outcome)
        except Exception as e:  # noqa: BLE001 -- any value that cannot travel becomes an error on the workers
            data = pickle.dumps(("error", RuntimeError(f"the controller's result could not be sent to the workers: {e}")))
    return pickle.loads(communicator.broadcast_bytes(data, 0))


def controller_call(method: F) -> F:
    """A public trainer method in a multi-rank job. The controller runs it; when its outermost such call ends it
    releases the workers and sends them its outcome. A worker serves the controller's dispatched work meanwhile,
    then returns the controller's result (or raises its exception), so the same script behaves the same on every
    rank."""

    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        trainer = self._trainer
        if self.communicator is None:  # one process
            return method(self, *args, **kwargs)
        if not trainer.is_controller:
            trainer.serve()
            status, value = _share_outcome(self.communicator, None)
            if status == "error":
                raise value
            return value
        depth = getattr(self, "_controller_depth", 0)
        self._controller_depth = depth + 1
        outcome: tuple[str, Any] = ("error", RuntimeError(f"{method.__name__} was interrupted on the controller"))
        try:
            result = method(self, *args, **kwargs)
            outcome = ("ok", result)
            return result
        except Exception as e:
            outcome = ("error", e)
            raise
        finally:
            self._controller_depth = depth
            if depth == 0:
                trainer.release_workers()
                _share_outcome(self.communicator, outcome)

    return call  # type: ignore[return-value]


def launch_local_workers(nproc: int, argv: list[str], module: str = "verl.trainer.main_ppo") -> int:
    """``python -m <module> trainer.n_gpus_per_node=N`` without torchrun: starts N local ranks of the same command
    through torch's elastic launcher (the engine behind torchrun: c10d rendezvous on this host, no restarts) and
    returns 0 when every rank succeeded, else 1 after torch's report of the failed ranks."""
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    # torchrun's default: one thread per rank, so N ranks do not oversubscribe the cores.
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    config = LaunchConfig(min_nodes=1, max_nodes=1, nproc_per_node=nproc, run_id=f"verl-{uuid.uuid4().hex[:12]}",
                          rdzv_backend="c10d", rdzv_endpoint="localhost:0", max_restarts=0, monitor_interval=0.5)
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError

    try:
        elastic_launch(config, entrypoint=sys.executable)("-m", module, *argv)
    except ChildFailedError as e:
        print(f"error: {e.format_msg()}", file=sys.stderr)
        return 1
    return 0
