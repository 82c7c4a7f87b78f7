"""torch's tree as tdx has it: every entry is at the path torch names it (``compat/nn`` is ``torch.nn``, exposed as
``tdx.nn``), plus tdx's own device module ``mlx`` and ``integrations/`` for third-party libraries. Nothing else
lives here: how torch's paths resolve to these modules is :mod:`tdx.aliasing`'s, and torch's top-level functions
are the facade's (``tdx._tensor``). Importing this package or its modules must never import a framework.
"""
