"""``torch.fx.passes`` for tdx: ``shape_prop``. Must never import a framework at module level
beyond torch's fx graph machinery."""
