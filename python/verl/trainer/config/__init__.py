"""verl's typed config dataclasses (``verl.trainer.config``), built from sections of the config tree with
``verl.utils.config.omega_conf_to_dataclass``. The YAML files beside this module are the tree itself."""

from .algorithm import AlgoConfig, FilterGroupsConfig, KLControlConfig, RolloutCorrectionConfig
from .config import CheckpointConfig

__all__ = ["AlgoConfig", "CheckpointConfig", "FilterGroupsConfig", "KLControlConfig", "RolloutCorrectionConfig"]
