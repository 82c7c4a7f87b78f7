"""``tdx.onnx`` (torch's ``torch.onnx``): importable so programs that export only behind a flag run;
``is_in_onnx_export()`` is False (tdx never exports), and ``export`` and torch's other ONNX names refuse at
call, by name (``tdx.aliasing.refused``: tdx builds no graph to export; export the state_dict with real torch).
Must never import a framework."""

from __future__ import annotations

__all__ = ["is_in_onnx_export", "is_onnxrt_backend_supported"]
__tdx_partial__ = True  # export, dynamo_export, ONNXProgram... refuse at use (tdx.aliasing.torch_paths)


def is_in_onnx_export() -> bool:
    """False: tdx never runs an ONNX export."""
    return False


def is_onnxrt_backend_supported() -> bool:
    """False: tdx has no ONNX Runtime backend."""
    return False
