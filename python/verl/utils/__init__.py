"""verl's utilities (``verl.utils``), backed by libverl where the work is numeric."""
