"""Figures written to files: one headless pyplot and one save-and-close for every command."""

from __future__ import annotations

from pathlib import Path
from typing import Optional


def pyplot():
    """``matplotlib.pyplot`` on the non-interactive Agg backend (commands only write files)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path: str | Path, dpi: int = 110, bbox_inches: Optional[str] = None) -> Path:
    """Write a matplotlib figure to ``path`` and close it (figures are not kept open in loops)."""
    import matplotlib.pyplot as plt

    path = Path(path)
    fig.savefig(path, dpi=dpi, bbox_inches=bbox_inches)
    plt.close(fig)
    return path
