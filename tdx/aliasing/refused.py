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

from .._errors import UnsupportedAttributeError, UnsupportedOpError

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
_ONNX = ("ONNX export", "tdx has no exporter: ONNX export records torch's own dispatcher graph, which tdx's "
         "executors do not build", "export with real torch (tdx's state_dict loads into torch.nn modules)")
_EXPORT = ("torch.export", "tdx runs eagerly and builds no ExportedProgram graph", "export with real torch "
           "(tdx's state_dict loads into torch.nn modules); run the model as plain Python under tdx")
_COMPILER = ("torch's compiler stack", "Dynamo, Inductor, AOTAutograd, the ATen references and decompositions "
             "work on torch's dispatcher and FX graphs, which tdx does not build", "run eagerly "
             "(tdx.compile is the compilation hook)")
_PACKAGE = ("torch.package archives", "tdx has no torch.package importer or exporter",
            "save state_dicts with tdx.save and import the model's code normally")
_CPP = ("C++/CUDA extensions", "tdx builds no C++ or HIP extension against torch's ABI",
        "write the op with tdx ops (or call it through real torch on a torch executor)")
_ELSEWHERE = ("a torch name tdx has not built", "tdx provides its module path so programs importing it run, but "
              "this name is not built yet", "use the tdx names that are built (python -m tdx catalog lists them)")
NOT_BUILT = _ELSEWHERE  # the reason of placeholders: names tdx provides so imports run, not built yet
_ABSENT_DEVICE = ("an absent accelerator", "tdx has no executor for this accelerator, so its streams, events, "
                  "graphs and allocators do not exist", "check is_available() (False) and use another device")

# whole torch modules whose names all refuse (the longest listed prefix of a module path decides); a torch
# module tdx has no real module for and that is listed under no prefix refuses as _ELSEWHERE
_MODULE_GROUPS = {
    _JIT: "torch.jit torch.jit.frontend torch.jit.mobile torch.jit.quantized torch.jit.supported_ops "
          "torch.jit.annotations "
          "torch.jit.unsupported_tensor_ops torch.jit.generate_bytecode",
    _QUANT: "torch.ao torch.quantization torch.nn.quantized torch.nn.quantizable torch.nn.qat torch.nn.intrinsic "
            "torch.backends.quantized",
    _SPARSE: "torch.sparse",
    _NESTED: "torch.nested",
    _ONNX: "torch.onnx",
    _EXPORT: "torch.export torch._export",
    _COMPILER: "torch._dynamo torch._inductor torch._decomp torch._refs torch._prims torch._prims_common "
               "torch._higher_order_ops torch._lazy torch._library torch._logging torch._numpy torch._functorch "
               "torch._subclasses torch._guards torch._ops torch.fx.experimental torch.fx.passes torch.compiler",
    _PACKAGE: "torch.package",
    _CPP: "torch.utils.cpp_extension torch.utils.hipify",
    _ABSENT_DEVICE: "torch.xpu torch.mtia",
}

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
            "fbgemm_pack_quantized_matrix quint8 qint8 qint32 quint4x2 quint2x4",
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


_DTENSOR = ("distributed tensors", "tdx has no sharded tensor type, device mesh or FSDP wrapper; each tdx tensor "
            "lives whole on one executor", "replicate the model on each process and use tdx.distributed's "
            "collectives (all_reduce of the gradients), or keep the model on one process")

_ALL_TO_ALL = ("all-to-all collectives", "tdx.distributed's engines offer all_reduce, broadcast, all_gather, "
               "reduce_scatter, gather, scatter and point-to-point; no all-to-all exchange",
               "all_gather then index the rows each rank needs")

# torch namespaces other than torch.* itself: module path -> {reason: names}
_NAMESPACE_GROUPS = {
    "torch._C": {_JIT: "Graph Value Node Block ScriptModule ScriptFunction ScriptObject ScriptMethod "
                       "CompilationUnit FunctionSchema"},  # TorchScript's IR types: libraries name them in annotations
    "torch.distributed": {_ALL_TO_ALL: "all_to_all all_to_all_single", _DTENSOR: "get_process_group_ranks "
                                                                                 "get_global_rank get_group_rank "
                                                                                 "init_device_mesh DeviceMesh"},
    "torch.distributed.tensor": {_DTENSOR: "DTensor DeviceMesh distribute_tensor distribute_module "
                                           "init_device_mesh zeros ones empty full rand randn"},
    "torch.distributed.tensor._dtensor_spec": {_DTENSOR: "DTensorSpec TensorMeta"},
    "torch.distributed.tensor._utils": {_DTENSOR: "compute_local_shape_and_global_offset compute_global_tensor_info"},
    "torch.distributed.device_mesh": {_DTENSOR: "DeviceMesh init_device_mesh"},
    "torch.distributed.fsdp": {_DTENSOR: "FullyShardedDataParallel FSDPModule fully_shard CPUOffloadPolicy "
                                         "MixedPrecisionPolicy OffloadPolicy ShardingStrategy BackwardPrefetch "
                                         "CPUOffload MixedPrecision StateDictType FullStateDictConfig "
                                         "ShardedStateDictConfig register_fsdp_forward_method"},
    "torch.distributed._composable.fsdp": {_DTENSOR: "fully_shard FSDPModule CPUOffloadPolicy MixedPrecisionPolicy "
                                                     "OffloadPolicy"},
    "torch.distributed.checkpoint": {_DTENSOR: "save load async_save FileSystemReader FileSystemWriter "
                                               "DefaultSavePlanner DefaultLoadPlanner"},
    "torch.distributed.checkpoint.hf_storage": {_DTENSOR: "HuggingFaceStorageReader HuggingFaceStorageWriter"},
    "torch.distributed.checkpoint.state_dict": {_DTENSOR: "StateDictOptions get_model_state_dict "
                                                          "set_model_state_dict get_optimizer_state_dict "
                                                          "set_optimizer_state_dict get_state_dict set_state_dict"},
    "torch.distributed.checkpoint.default_planner": {_DTENSOR: "DefaultSavePlanner DefaultLoadPlanner"},
    "torch.distributed._functional_collectives": {_DTENSOR: "all_to_all_single_autograd all_to_all_single "
                                                            "all_reduce all_gather_tensor reduce_scatter_tensor "
                                                            "wait_tensor AsyncCollectiveTensor"},
}


def _table(groups: dict) -> dict:
    return {name: why for why, names in groups.items() for name in names.split()}


TORCH = _table(_TORCH_GROUPS)  # torch.* name -> (feature, reason, instead)
MODULES = _table(_MODULE_GROUPS)  # torch module path prefix -> (feature, reason, instead)
# attributes of scripted/traced modules and functions that only TorchScript's compiler can produce
SCRIPTED = _table({_JIT: "graph inlined_graph code code_with_constants save save_to_buffer graph_for "
                         "_save_for_lite_interpreter"})
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


def _refused_class(name: str, why: tuple, owner: str = "torch", module: str = "tdx"):
    text = message(owner, name, why)
    return type(name, (_RefusedClass,), {"__slots__": (), "__tdx_refused__": why, "_text": text,
                                         "__doc__": f"Refused: {text}", "__module__": module})


class _RefusedValue:
    """A refused torch value that is neither a class nor a function: it prints, and any use raises."""

    __slots__ = ("_text", "__tdx_refused__")

    def __init__(self, text: str, why: tuple):
        object.__setattr__(self, "_text", text)
        object.__setattr__(self, "__tdx_refused__", why)

    def __repr__(self) -> str:
        return f"<refused: {self._text}>"

    def _refuse(self, *args, **kwargs):
        raise UnsupportedOpError(self._text)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        self._refuse()

    __call__ = __bool__ = __iter__ = __len__ = __getitem__ = __int__ = __float__ = __index__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __lt__ = __gt__ = _refuse


def refuse(owner: str, name: str, why: tuple, attribute: bool = False):
    """Raise the refusal of ``owner.name`` (an :class:`UnsupportedAttributeError`, which ``hasattr`` takes as
    absent, when ``attribute``)."""
    raise (UnsupportedAttributeError if attribute else UnsupportedOpError)(message(owner, name, why))


def module_reason(path: str) -> tuple:
    """Why the names of torch module ``path`` refuse: its group in :data:`MODULES` (longest prefix), else
    ``_ELSEWHERE``."""
    parts = path.split(".")
    for end in range(len(parts), 0, -1):
        why = MODULES.get(".".join(parts[:end]))
        if why is not None:
            return why
    return _ELSEWHERE


def module_name(path: str, name: str, kind: str, module: str):
    """The refusal standing for ``path.name`` (``kind``: ``c`` class, ``f`` function, ``v`` value) in the
    generated tdx module named ``module``."""
    why = module_reason(path)
    if kind == "c":
        return _refused_class(name, why, owner=path, module=module)
    if kind == "f":
        return _refused_function(path, name, why)
    return _RefusedValue(message(path, name, why), why)


def torch_names() -> dict:
    """``{name: refusing callable}`` for :data:`TORCH`: a class for a capitalised name, else a function."""
    return {name: torch_name(name) for name in TORCH}


def torch_name(name: str):
    """The refusing callable of the :data:`TORCH` name ``name`` (``tdx.<name>`` makes it on first use)."""
    why = TORCH[name]
    return _refused_class(name, why) if name[0].isupper() else _refused_function("torch", name, why)


def namespace_names(path: str) -> dict:
    """``{name: refusing callable}`` for the torch module ``path`` (``"torch.distributed.tensor"``).

    A capitalised name is a class (``isinstance`` answers False, making one raises), any other a function.
    """
    module = "tdx" + path[len("torch"):]
    return {name: _refused_class(name, why, path, module) if name[0].isupper() else _refused_function(path, name, why)
            for name, why in _table(_NAMESPACE_GROUPS.get(path, {})).items()}


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
