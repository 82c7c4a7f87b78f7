"""``tdx._dynamo.config``: the TorchDynamo switches libraries read and set, kept as plain values.

tdx's compilation does not read them (``tdx.compile`` takes its own arguments); a library that sets
``capture_scalar_outputs`` or reads ``cache_size_limit`` finds torch's defaults. Never imports a framework.
"""

capture_scalar_outputs = False
capture_dynamic_output_shape_ops = False
cache_size_limit = 8
accumulated_cache_size_limit = 256
suppress_errors = False
verbose = False
optimize_ddp = True
automatic_dynamic_shapes = True
assume_static_by_default = True
recompile_limit = 8
