"""The exceptions of gemmtune, one per kind of failure of the C++ library (gemmtune/errors.h)."""


class Error(RuntimeError):
    """Anything gemmtune reports: the failing call and why (gemmtune::Error)."""


class InvalidInputError(Error, ValueError):
    """The caller's input: a problem gemmtune refuses, an unknown option, a malformed file or argument."""


class NoGpuError(Error):
    """The operation needs a GPU (driver and device) that is not there."""


class CudaError(Error):
    """A CUDA driver or cuBLASLt call failed. `sticky`: the CUDA context is unusable; the process must end to use
    the GPU again."""

    def __init__(self, message: str, code: int = 0, sticky: bool = False):
        super().__init__(message)
        self.code = code
        self.sticky = sticky
