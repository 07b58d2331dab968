"""Datasets in verl's schema (``verl.utils.dataset``): RL prompts, SFT rows, preference pairs and a resumable
loader."""

from .dataloader import ResumableDataLoader, create_rl_dataloader
from .preference_dataset import PreferenceDataset, collate_preference
from .rl_dataset import RLHFDataset, collate_fn, collate_to_dataproto, create_rl_dataset
from .sft_dataset import SFTDataset, collate_sft

__all__ = ["RLHFDataset", "create_rl_dataset", "collate_fn", "collate_to_dataproto", "ResumableDataLoader",
           "create_rl_dataloader", "SFTDataset", "collate_sft", "PreferenceDataset", "collate_preference"]
