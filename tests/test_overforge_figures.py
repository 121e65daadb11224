"""The OverForge report's Figure-16 PNGs (issue #47): the κ figure's title clears the panels' titles,
no axis label is cut, and coinciding cumulative-gap curves stay visible."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest


@pytest.mark.slow
def test_figures_keep_titles_apart_labels_inside_and_lines_distinct(tmp_path, monkeypatch):
    import beliefgate.figures as figures
    from beliefgate.experiments.overforge_report import _figures

    Record = namedtuple("Record", "kappa depth gap")
    rng = np.random.default_rng(0)
    same = [Record(float(k), int(d), float(g)) for k, d, g in
            zip(rng.uniform(0, 1, 200), rng.integers(0, 4, 200), rng.uniform(0, 0.1, 200))]
    records = {"overforge": same, "overforge:-belief": list(same),  # identical curves, as on the real page
               "overforge:-hierarchy": [r._replace(gap=r.gap * 3) for r in same]}
    seen = {}
    real_save = figures.save_figure

    def capture(fig, path, **kw):
        fig.canvas.draw()
        seen[path.name] = (fig, fig.canvas.get_renderer())
        box = fig.bbox
        for ax in fig.axes:  # every label and title inside the canvas
            for text in (ax.xaxis.label, ax.yaxis.label, ax.title):
                if text.get_text():
                    ext = text.get_window_extent(seen[path.name][1])
                    assert box.x0 - 1 <= ext.x0 and ext.x1 <= box.x1 + 1 and box.y0 - 1 <= ext.y0 and ext.y1 <= box.y1 + 1, (
                        path.name, text.get_text())
        return real_save(fig, path, **kw)

    monkeypatch.setattr(figures, "save_figure", capture)
    paths = _figures(records, 0.6, tmp_path, "test")
    assert [p.name for p in paths] == ["overforge_kappa.png", "overforge_depth.png", "overforge_gap.png"]
    fig, renderer = seen["overforge_kappa.png"]
    title = fig._suptitle.get_window_extent(renderer)
    assert all(not title.overlaps(ax.title.get_window_extent(renderer)) for ax in fig.axes)
    fig, _ = seen["overforge_gap.png"]
    lines = fig.axes[0].get_lines()
    assert len({(str(line.get_linestyle()), line.get_linewidth()) for line in lines}) == len(lines) == 3
