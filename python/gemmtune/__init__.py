"""gemmtune: a GEMM generator and autotuner for NVIDIA Hopper GPUs.

    import gemmtune
    p = gemmtune.Problem.make(4096, 4096, 4096, "bf16", epilogue="bias,gelu_tanh")
    gemm = gemmtune.Tuner(progress=True).select(p)     # tunes, or answers from the result cache
    gemm.run(a_ptr, b_ptr, d_ptr, bias=bias_ptr, stream=stream_handle)

PyTorch users: ``gemmtune.torch`` (custom ops, torch.compile integration, module swap). docs/PYTHON.md has it all.
"""
from . import cache
from ._api import (Candidate, CandidateResult, CompileReport, Gemm, Operand, Problem, ProgressEvent, Tuner, TuneReport,
                   candidates, compile, device, gpu_available, problem_from_dict, version)
from ._errors import CudaError, Error, InvalidInputError, NoGpuError

__version__ = version()

__all__ = ["Candidate", "CandidateResult", "CompileReport", "Gemm", "Operand", "Problem", "ProgressEvent", "Tuner",
           "TuneReport", "candidates", "compile", "device", "gpu_available", "problem_from_dict", "version", "cache",
           "Error", "InvalidInputError", "NoGpuError", "CudaError"]
