"""gemmtune for PyTorch: custom ops, torch.compile integration and a module swap (docs/PYTHON.md).

    import gemmtune.torch as gt
    y = torch.ops.gemmtune.linear(x, w, b, "gelu_tanh")   # tuned on first use of a shape, then a dict lookup
    gt.enable()                                           # torch.compile(mode="max-autotune") also times gemmtune
    model = gt.optimize(model)                            # nn.Linear (+ activation, gate/up, MoE experts) -> gemmtune
    y = gt.grouped_mm(x, w.transpose(-2, -1), offs)       # mixture-of-experts, as torch._grouped_mm
    gt.tune(problems, distributed=True)                   # the ranks of a job tune a list once and share it

The core library never depends on PyTorch: this package passes it device pointers, shapes, strides, dtypes and the
current stream.
"""
from . import ops  # noqa: F401  (registers torch.ops.gemmtune.*)
from ._dispatch import gemm, options, set_options, selections, clear_selections  # noqa: F401
from .inductor import disable, enable  # noqa: F401
from .modules import optimize  # noqa: F401
from .ops import grouped_mm, grouped_mm_masked, scaled_grouped_mm  # noqa: F401
from .tuning import TuneSummary, tune  # noqa: F401

__all__ = ["ops", "gemm", "options", "set_options", "selections", "clear_selections", "enable", "disable",
           "optimize", "grouped_mm", "grouped_mm_masked", "scaled_grouped_mm", "tune", "TuneSummary"]
