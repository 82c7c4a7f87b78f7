"""The torch names that cannot mean anything in tdx, refused in one table with the reason.

TorchScript's IR and type classes, quantized tensors, sparse layouts and vendor kernels
(cuDNN, MIOpen, oneDNN, FBGEMM) have no counterpart in tdx: every tdx tensor is a dense,
strided, eagerly computed array. Each name of :data:`TORCH` (``torch.*``) and :data:`TENSOR`
(``torch.Tensor`` methods) is still present, so code that merely mentions it imports, but
calling it (or instantiating it, for a class) raises :class:`tdx.UnsupportedOpError` naming
the feature, why tdx lacks it and what to use instead. ``python -m tdx catalog`` counts these
names apart from the built ones. This module must never import a framework, and a name must
never appear here that tdx can implement with torch's meaning.
"""

from __future__ import annotations

from .._errors import UnsupportedOpError

_JIT = ("TorchScript", "tdx runs Python eagerly and has no TorchScript compiler, IR or type system",
        "run the model as plain Python (tdx.compile is the compilation hook)")
_QUANT = ("quantized tensors", "tdx tensors hold plain dtypes; there is no quantized dtype or quantizer",
          "keep float tensors, or quantize with integer tensors and explicit scales")
_SPARSE = ("sparse layouts", "every tdx tensor is dense and strided; there is no sparse COO/CSR/CSC/BSR/BSC layout",
           "use dense tensors (index_add/scatter for sparse updates, matmul for products)")
_KERNEL = ("vendor kernels", "tdx chooses each executor's kernel itself; cuDNN/MIOpen/oneDNN/FBGEMM entry points "
           "are not exposed", "call the generic op (tdx.nn.functional.conv2d, batch_norm, tdx.nn.LSTM, linear)")
_DISPATCH = ("the ATen dispatcher", "tdx dispatches per executor in Python; torch's dispatch keys, op tags and "
             "benchmark hooks do not exist", "nothing: tdx has no dispatcher to configure")
_SYNC_BN = ("SyncBatchNorm's kernels", "tdx has no distributed batch-norm kernels",
            "tdx.nn.functional.batch_norm on each process")
_FIRST_CLASS_DIMS = ("first-class dimensions", "functorch.dim's Dim objects do not exist in tdx",
                     "index with ordinary indices; einsum or permute for named-dimension arithmetic")
_NESTED = ("nested tensors", "tdx has no nested (jagged) layout", "pad explicitly (tdx.nn.utils.rnn.pad_sequence)")

_TORCH_GROUPS = {
    _JIT: "AliasDb AnyType Argument ArgumentSpec AwaitType Block BoolType BufferDict CallStack Capsule ClassType "
          "Code CompilationUnit CompleteArgumentSpec ComplexType ConcreteModuleType ConcreteModuleTypeBuilder "
          "DeepCopyMemoTable DeserializationStorageContext DeviceObjType DictType EnumType ErrorReport "
          "ExecutionPlan FileCheck FloatType FunctionSchema FutureType Gradient Graph GraphExecutorState "
          "IODescriptor InferredType IntType InterfaceType ListType LiteScriptModule LockingLogger LoggerBase "
          "ModuleDict Node NoneType NoopLogger NumberType OperatorInfo OptionalType ParameterDict PyObjectType "
          "PyTorchFileReader PyTorchFileWriter RRefType ScriptClass ScriptClassFunction ScriptDict "
          "ScriptDictIterator ScriptDictKeyIterator ScriptFunction ScriptList ScriptListIterator ScriptMethod "
          "ScriptModule ScriptModuleSerializer ScriptObject ScriptObjectProperty SerializationStorageContext "
          "StaticModule StreamObjType StringType SymBoolType SymIntType TensorType TracingState TupleType Type "
          "UnionType Use Value import_ir_module import_ir_module_from_buffer merge_type_from_type_comment "
          "parse_ir parse_schema parse_type_comment unify_type_list",
    _QUANT: "QInt32Storage QInt8Storage QUInt2x4Storage QUInt4x2Storage QUInt8Storage choose_qparams_optimized "
            "dequantize empty_quantized fused_moving_avg_obs_fake_quant int_repr q_per_channel_axis "
            "q_per_channel_scales q_per_channel_zero_points q_scale q_zero_point qscheme quantize_per_channel "
            "quantize_per_tensor quantize_per_tensor_dynamic quantized_batch_norm quantized_gru quantized_gru_cell "
            "quantized_lstm quantized_lstm_cell quantized_max_pool1d quantized_max_pool2d quantized_max_pool3d "
            "quantized_rnn_relu_cell quantized_rnn_tanh_cell fbgemm_linear_fp16_weight "
            "fbgemm_linear_fp16_weight_fp32_activation fbgemm_linear_int8_weight "
            "fbgemm_linear_int8_weight_fp32_activation fbgemm_linear_quantize_weight fbgemm_pack_gemm_matrix_fp16 "
            "fbgemm_pack_quantized_matrix",
    _SPARSE: "sparse_bsc_tensor sparse_bsr_tensor sparse_compressed_tensor sparse_coo_tensor sparse_csc_tensor "
             "sparse_csr_tensor dsmm hsmm hspmm saddmm smm spmm sspaddmm resize_as_sparse_ ccol_indices_copy "
             "col_indices_copy crow_indices_copy row_indices_copy indices_copy values_copy segment_reduce",
    _KERNEL: "cudnn_affine_grid_generator cudnn_batch_norm cudnn_convolution cudnn_convolution_add_relu "
             "cudnn_convolution_relu cudnn_convolution_transpose cudnn_grid_sampler miopen_batch_norm "
             "miopen_convolution miopen_convolution_add_relu miopen_convolution_relu miopen_convolution_transpose "
             "miopen_ctc_loss miopen_depthwise_convolution miopen_rnn mkldnn_adaptive_avg_pool2d mkldnn_convolution "
             "mkldnn_linear_backward_weights mkldnn_max_pool2d mkldnn_max_pool3d mkldnn_rnn_layer",
    _DISPATCH: "DispatchKey DispatchKeySet ExcludeDispatchKeyGuard Tag AggregationType BenchmarkConfig "
               "BenchmarkExecutionStats ThroughputBenchmark profiler_allow_cudagraph_cupti_lazy_reinit_cuda12",
    _SYNC_BN: "batch_norm_backward_elemt batch_norm_backward_reduce batch_norm_gather_stats "
              "batch_norm_gather_stats_with_counts",
}

_TENSOR_GROUPS = {
    _QUANT: "dequantize int_repr q_per_channel_axis q_per_channel_scales q_per_channel_zero_points q_scale "
            "q_zero_point qscheme",
    _SPARSE: "ccol_indices coalesce col_indices crow_indices indices is_coalesced resize_as_sparse_ row_indices "
             "smm sparse_mask sparse_resize_ sparse_resize_and_clear_ sspaddmm to_sparse to_sparse_bsc "
             "to_sparse_bsr to_sparse_coo to_sparse_csc to_sparse_csr values",
    _KERNEL: "to_mkldnn",
    _NESTED: "to_padded_tensor",
    _FIRST_CLASS_DIMS: "index",
}


def _table(groups: dict) -> dict:
    return {name: why for why, names in groups.items() for name in names.split()}


TORCH = _table(_TORCH_GROUPS)  # torch.* name -> (feature, reason, instead)
TENSOR = _table(_TENSOR_GROUPS)  # torch.Tensor method -> (feature, reason, instead)


def message(owner: str, name: str, why: tuple) -> str:
    """The refusal's text: what was called, the feature, why tdx lacks it and what to use instead."""
    feature, reason, instead = why
    return f"{owner}.{name} is not supported by tdx ({feature}): {reason}. Instead: {instead}."


def _refused_function(owner: str, name: str, why: tuple):
    text = message(owner, name, why)

    def refused(*args, **kwargs):
        raise UnsupportedOpError(text)

    refused.__name__ = refused.__qualname__ = name
    refused.__doc__ = f"Refused: {text}"
    refused.__tdx_refused__ = why
    return refused


class _RefusedClass:
    """Base of the refused classes: a type (``isinstance`` checks answer False) that cannot be made."""

    __slots__ = ()
    __tdx_refused__: tuple = ()
    _text = ""

    def __new__(cls, *args, **kwargs):
        raise UnsupportedOpError(cls._text)


def _refused_class(name: str, why: tuple):
    text = message("torch", name, why)
    return type(name, (_RefusedClass,), {"__slots__": (), "__tdx_refused__": why, "_text": text,
                                         "__doc__": f"Refused: {text}", "__module__": "tdx"})


def torch_names() -> dict:
    """``{name: refusing callable}`` for :data:`TORCH`: a class for a capitalised name, else a function."""
    return {name: _refused_class(name, why) if name[0].isupper() else _refused_function("torch", name, why)
            for name, why in TORCH.items()}


def tensor_methods() -> dict:
    """``{name: refusing method}`` for :data:`TENSOR`."""
    return {name: _refused_function("Tensor", name, why) for name, why in TENSOR.items()}


def is_refused(obj) -> bool:
    """Whether ``obj`` is one of this table's refusals (the catalog counts them apart)."""
    return bool(getattr(obj, "__tdx_refused__", None))


# torch methods outside torch.* and torch.Tensor that tdx refuses: "owner.method" -> (feature, reason, instead)
METHODS = {
    "SummaryWriter.add_graph": (
        "TorchScript graphs in TensorBoard", "torch builds the graph by tracing the model with torch.jit.trace "
        "into a TorchScript graph, and tdx has no TorchScript tracer", "log scalars, histograms and images; "
        "print(model) for its structure"),
}


def refuse_method(owner: str, name: str):
    """Raise the refusal of method ``owner.name`` from :data:`METHODS`.

    Raises:
        UnsupportedOpError: always, naming the method and why.
    """
    raise UnsupportedOpError(message(owner, name, METHODS[f"{owner}.{name}"]))
