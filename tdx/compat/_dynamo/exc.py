"""``tdx._dynamo.exc``: TorchDynamo's exception types, so that ``except torch._dynamo.exc.Unsupported`` works.

tdx raises none of them itself (it has no Dynamo tracer); torch's own Dynamo errors, raised while
``tdx.compile`` runs ``torch.compile`` on a torch executor, are torch's classes. Never imports a framework.
"""


class TorchDynamoException(RuntimeError):
    """Base of TorchDynamo's errors."""


class Unsupported(TorchDynamoException):
    """A construct TorchDynamo cannot trace."""


class InternalTorchDynamoError(TorchDynamoException):
    """An error inside TorchDynamo itself."""


class BackendCompilerFailed(TorchDynamoException):
    """The compiler backend failed."""


class RestartAnalysis(TorchDynamoException):
    """TorchDynamo restarts its analysis of a frame."""
