"""The tutorials' data entry point: ``verl.data.get_dataloader`` over files in verl's schema (JSONL / JSON /
Parquet). The datasets themselves are verl's (``verl.utils.dataset``: ``RLHFDataset``, ``ResumableDataLoader``)."""

from .dataloader import RowDataset, get_dataloader

__all__ = ["get_dataloader", "RowDataset"]
