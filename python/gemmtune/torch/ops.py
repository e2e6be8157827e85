"""torch.ops.gemmtune.*: the custom ops."""
