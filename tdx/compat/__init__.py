"""The rest of the torch surface that is not a tensor op: device modules (``tdx.compat.cuda``,
``tdx.compat.mps``, ``tdx.compat.mlx``, exposed as ``tdx.cuda``, ``tdx.mps``, ``tdx.mlx``) and
friends. Importing this package or its modules must never import a framework.
"""
