"""``python -m verl.model_merger merge --backend fsdp --local_dir .../global_step_1/actor --target_dir hf/`` --
verl's command, for verl-cpp's checkpoints (verl.model_merger.merger)."""

import sys

from .merger import main

if __name__ == "__main__":
    sys.exit(main())
