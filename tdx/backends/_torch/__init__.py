"""The torch executor: tdx ops on ``torch.Tensor`` (devices cpu, cuda, mps).

:mod:`.executor` holds the executor (most ops are torch's own function, bound as they are),
:mod:`.adapters` the ops whose tdx signature differs from torch's. Importing this package imports
nothing; the executor module imports torch, and must never import MLX or the facade.
"""
