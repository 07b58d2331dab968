"""RL datasets in verl's schema (``verl.utils.dataset``) and a resumable loader."""

from .dataloader import ResumableDataLoader, create_rl_dataloader
from .rl_dataset import RLHFDataset, collate_fn, collate_to_dataproto, create_rl_dataset

__all__ = ["RLHFDataset", "create_rl_dataset", "collate_fn", "collate_to_dataproto", "ResumableDataLoader", "create_rl_dataloader"]
