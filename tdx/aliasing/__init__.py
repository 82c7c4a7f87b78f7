"""How tdx's modules answer to torch's paths: the machinery behind ``import torch`` resolving to tdx.

``tdx/compat/`` is torch's tree as tdx has it; this package is what makes a path of that tree, or of torch's
tree where tdx has no module, import under tdx's names and torch's:

- :mod:`.alias`: the ``sys.meta_path`` finder that gives one module object under two names (``tdx.nn`` is
  ``tdx.compat.nn``; ``torch`` is ``tdx`` under the alias);
- :mod:`.torch_alias`: ``python -m tdx run`` and ``torch_alias()``, the ``torch`` alias decided per importing
  frame; :mod:`.inherit`: spawn/forkserver children adopt the alias and the device pin;
- :mod:`.torch_paths` with ``torch_paths.json`` (written by ``tools/torch_paths.py``): torch's module paths and
  names, the generated modules for paths tdx has no module for, ``NotProvidedAttributeError`` for names a tdx
  module lacks;
- :mod:`.refused`: the one table of torch names tdx cannot mean, each refused at use with the reason;
- :mod:`.lazy_names`: the ``__getattr__``/``__dir__`` that import a package's names on first use;
- :mod:`.torch_source`: the installed torch's pure-Python modules executed with tdx as ``torch``;
- :mod:`.absent_device`: the device modules of accelerators tdx has no executor for (``xpu``, ``mtia``).

What this package must never do: define torch's surface itself (a torch function, class or namespace lives in
``tdx/compat/`` or the facade; here only tables and finders); import a framework, the facade or ``tdx.compat``
at module level (its modules import the vocabulary only: ``tdx._errors`` and ``tdx.backends._flags``); grow what
plain ``import tdx`` loads: that is :mod:`.alias`, :mod:`.torch_paths`, :mod:`.refused` and :mod:`.lazy_names`
(the finders and the tables they read, lines of a file rather than parsed names), while :mod:`.torch_alias`,
:mod:`.inherit`, :mod:`.torch_source` and :mod:`.absent_device` load only when a program uses them. This
``__init__`` imports nothing.
"""
