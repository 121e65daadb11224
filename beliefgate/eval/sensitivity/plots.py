"""Figures of the sensitivity analyses (headless, :mod:`beliefgate.figures`): OAT lines,
Sobol/Morris bars and heat maps, closed-loop lines with bootstrap CIs."""

from __future__ import annotations

import math
from pathlib import Path
from typing import List

import numpy as np

from beliefgate.eval.sensitivity.closed_loop import CLOSED_LOOP_OUTPUTS, ClosedLoopResult
from beliefgate.eval.sensitivity.global_ import GlobalResult
from beliefgate.eval.sensitivity.oat import OATResult
from beliefgate.eval.sensitivity.replay import OUTPUTS
from beliefgate.figures import pyplot, save_figure

# --------------------------------------------------------------------------- plots


def plot_oat(result: OATResult, out_dir) -> List[Path]:
    """One line plot per parameter (``oat_<param>.png``): every available output
    against the parameter's values, the default marked."""
    plt = pyplot()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    outs = result.outputs_available
    for r in result.ranges:
        x = np.array([row.value for row in result.block(r.name)])
        dflt = [row.value for row in result.block(r.name) if row.is_default]
        ncol = min(3, len(outs))
        nrow = math.ceil(len(outs) / ncol)
        fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.2 * nrow), squeeze=False)
        for ax, key in zip(axes.flat, outs):
            _, y = result.series(r.name, key)
            ax.plot(x, y, marker="o", color="tab:blue")
            for d in dflt:
                ax.axvline(d, color="0.5", linestyle="--", linewidth=1)
                ax.plot([d], [y[list(x).index(d)]], marker="o", color="tab:red", markersize=8, zorder=3)
            ax.set_xlabel(f"{r.name}" + (" (log scale)" if r.scale == "log" else ""))
            ax.set_ylabel(OUTPUTS[key])
            if r.scale == "log":
                ax.set_xscale("log")
            ax.grid(alpha=0.3)
        for ax in list(axes.flat)[len(outs):]:
            ax.axis("off")
        fig.suptitle(f"One-at-a-time: {r.name} (default in red; {len(result.episodes)} episodes)")
        fig.tight_layout()
        path = out_dir / f"oat_{r.name}.png"
        save_figure(fig, path)
        paths.append(path)
    return paths


def plot_global(result: GlobalResult, out_dir) -> List[Path]:
    """Bar plots per output (``<method>_<output>.png``: S1 and ST with their CIs, or
    Morris μ* with its CI and σ) and one heat map of parameters × outputs
    (``<method>_heatmap.png``: ST and S1, or μ* scaled by its largest value per output)."""
    plt = pyplot()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    names = result.names
    x = np.arange(len(names))
    paths = []
    outs = [o for o in result.indices if o not in result.constant]
    for o in outs:
        idx = result.indices[o]
        fig, ax = plt.subplots(figsize=(max(4.5, 1.1 * len(names) + 2), 3.6))
        if result.method == "sobol":
            w = 0.38
            ax.bar(x - w / 2, idx["S1"], w, yerr=idx["S1_conf"], capsize=3, label="first order S1")
            ax.bar(x + w / 2, idx["ST"], w, yerr=idx["ST_conf"], capsize=3, label="total ST")
            ax.set_ylabel("Sobol index")
            ax.axhline(0, color="0.3", linewidth=0.8)
        else:
            w = 0.38
            ax.bar(x - w / 2, idx["mu_star"], w, yerr=idx["mu_star_conf"], capsize=3, label="μ*")
            ax.bar(x + w / 2, idx["sigma"], w, label="σ")
            ax.set_ylabel(f"elementary effect ({OUTPUTS.get(o, o)})")
        ax.set_xticks(x)
        ax.set_xticklabels(names, rotation=20, ha="right")
        ax.set_title(f"{result.method.capitalize()}: {OUTPUTS.get(o, o)}")
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        path = out_dir / f"{result.method}_{o}.png"
        save_figure(fig, path)
        paths.append(path)
    if outs:
        if result.method == "sobol":
            panels = [("ST", "total index ST"), ("S1", "first-order index S1")]
        else:
            panels = [("mu_star", "μ* / max μ* per output")]
        fig, axes = plt.subplots(1, len(panels), figsize=(len(panels) * (1.3 * len(outs) + 3), 0.6 * len(names) + 2.2),
                                 squeeze=False)
        for ax, (key, title) in zip(axes.flat, panels):
            mat = np.array([result.indices[o][key] for o in outs]).T  # [D, outputs]
            raw = mat.copy()
            if result.method == "morris":
                top = np.nanmax(np.abs(mat), axis=0)
                mat = np.divide(mat, top, out=np.zeros_like(mat), where=top > 0)
            im = ax.imshow(mat, cmap="viridis", vmin=0.0, vmax=max(1.0, float(np.nanmax(mat))) if
                           result.method == "sobol" else 1.0, aspect="auto")
            for (i, j), v in np.ndenumerate(raw):
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8,
                        color="white" if mat[i, j] < 0.6 else "black")
            ax.set_xticks(range(len(outs)))
            ax.set_xticklabels([OUTPUTS.get(o, o) for o in outs], rotation=30, ha="right", fontsize=8)
            ax.set_yticks(range(len(names)))
            ax.set_yticklabels(names)
            ax.set_title(title)
            fig.colorbar(im, ax=ax, shrink=0.8)
        fig.tight_layout()
        path = out_dir / f"{result.method}_heatmap.png"
        save_figure(fig, path)
        paths.append(path)
    return paths



def plot_closed_loop(result: ClosedLoopResult, out_dir) -> List[Path]:
    """One figure per parameter (``closed_loop_<param>.png``): a panel per output, the
    mean over episodes with its bootstrap CI as error bars, one line per agent, the
    default marked; the grid, its digest and seeds in the title."""
    plt = pyplot()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    g = result.plan.grid_record()
    outs = list(CLOSED_LOOP_OUTPUTS)
    paths = []
    for r in result.plan.ranges:
        ncol = 4
        nrow = math.ceil(len(outs) / ncol)
        fig, axes = plt.subplots(nrow, ncol, figsize=(4.0 * ncol, 3.1 * nrow), squeeze=False)
        for ax, key in zip(axes.flat, outs, strict=False):
            for agent in result.agents:
                x, m, lo, hi = result.series(r.name, key, agent)
                err = np.vstack([np.maximum(m - lo, 0.0), np.maximum(hi - m, 0.0)])
                ax.errorbar(x, m, yerr=err, marker="o", capsize=3, label=agent)
            for agent in result.agents:
                for row in result.block(r.name, agent):
                    if row.is_default:
                        ax.axvline(row.value, color="0.5", linestyle="--", linewidth=1)
                        ax.plot([row.value], [row.mean(key)], marker="o", color="tab:red", markersize=8, zorder=3)
            ax.set_xlabel(r.name + (" (log scale)" if r.scale == "log" else ""))
            ax.set_ylabel(CLOSED_LOOP_OUTPUTS[key], fontsize=8)
            if r.scale == "log":
                ax.set_xscale("log")
            ax.grid(alpha=0.3)
        axes.flat[0].legend(fontsize=7)
        for ax in list(axes.flat)[len(outs):]:
            ax.axis("off")
        pct = int(round(result.conf_level * 100))
        fig.suptitle(f"Closed-loop one-at-a-time: {r.name} (default in red; {pct}% bootstrap CI over "
                     f"{g['episodes_per_config']} episodes)\ngrid {g['name']} ({g['digest']}), seeds "
                     f"{g['seeds']}, horizon {g['horizon']}", fontsize=9)
        fig.tight_layout()
        path = out_dir / f"closed_loop_{r.name}.png"
        save_figure(fig, path)
        paths.append(path)
    return paths


__all__ = ["plot_oat", "plot_global", "plot_closed_loop"]
