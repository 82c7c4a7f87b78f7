"""``tdx.distributed._composable``: torch's composable distributed APIs; only ``fsdp`` is mirrored (refused)."""
