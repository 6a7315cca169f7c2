"""The loss curves of every seed, as a PNG for the README (matplotlib, Agg, no display needed)."""

from __future__ import annotations

import importlib.util
import io

from pgolf_cli.packaging.request import PackageError
from pgolf_cli.packaging.runs import Run

PLOT_NAME = "loss_curves.png"


def require_matplotlib() -> None:
    """PackageError, before anything is written, where matplotlib is not installed."""
    if importlib.util.find_spec("matplotlib") is None:
        raise PackageError("pgolf package draws loss_curves.png with matplotlib, which is not "
                           "installed: pip install 'pgolf[train]' (on the machine that trained)")


def loss_curves_png(runs: list[Run]) -> bytes:
    """Left: train_loss per logged step. Right: validation bpb at the steps it was measured."""
    # Imported here: matplotlib takes half a second to load, and only packaging needs it.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4), dpi=100)
    FigureCanvasAgg(fig)
    train_ax, val_ax = fig.subplots(1, 2)
    for run in runs:
        points = [(s.step, s.train_loss) for s in run.log.steps if s.train_loss is not None]
        if points:
            train_ax.plot(*zip(*points), label=f"seed {run.seed}", linewidth=1.2)
        vals = [m for m in run.log.metrics if m.kind == "step_val"]
        if vals:
            val_ax.plot([_step_of(m.name) for m in vals], [m.val_bpb for m in vals],
                        marker="o", label=f"seed {run.seed}")
    train_ax.set(title="Training loss", xlabel="step", ylabel="train_loss (nats/token)")
    val_ax.set(title="Validation during training", xlabel="step", ylabel="val_bpb")
    for ax in (train_ax, val_ax):
        ax.grid(alpha=0.3)
        if ax.has_data():
            ax.legend()
        else:
            ax.text(0.5, 0.5, "no such lines in the logs", ha="center", va="center",
                    transform=ax.transAxes)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def _step_of(name: str) -> int:
    """`step:4550/20000` or `4550/20000` -> 4550."""
    return int(name.removeprefix("step:").split("/", 1)[0])
