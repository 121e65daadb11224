"""Statistics that say what they can and cannot show (issue #47): `compare` reads elpd differences by
the usual LOO guidance and warns on Pareto k and on few LOO units."""

from __future__ import annotations

from beliefgate.models.compare import MIN_LOO_UNITS, SMALL_ELPD_DIFF, CompareRow, Comparison


def _comparison(diff, dse, warning=(False, False), n=40):
    rows = [CompareRow("a", 0, -100.0, 5.0, 0.0, 0.0, 3.0, 0.8, warning[0]),
            CompareRow("b", 1, -100.0 - diff, 5.0, diff, dse, 3.0, 0.2, warning[1])]
    return Comparison(rows, {"a": {}, "b": {}}, n)


def test_compare_follows_the_elpd_guidance():
    """`compare` printed "clearly better (elpd_diff 1.5, dse 0.6)" on two LOO units with Pareto-k warnings."""
    small = _comparison(1.5, 0.6, (True, True), n=2)
    assert small.verdict().startswith("no clear difference between 'a' and 'b' (elpd_diff 1.5, dse 0.6")
    warnings = small.warnings()
    assert len(warnings) == 2 and "Pareto k > 0.7" in warnings[0] and "'a', 'b'" in warnings[0]
    assert "only 2 LOO units" in warnings[1]
    assert _comparison(SMALL_ELPD_DIFF + 6, 2.0).verdict().startswith("'a' is clearly better than 'b'")
    assert "uncertain" in _comparison(SMALL_ELPD_DIFF + 1, 3.0).verdict()  # above 4 but within 2 dse
    assert _comparison(90.9, 44.0, n=MIN_LOO_UNITS).warnings() == []
    record = small.to_dict()
    assert record["verdict"] == small.verdict() and record["warnings"] == warnings


def test_arviz_is_bounded_below_1_and_the_installed_one_fits():
    """arviz 1.x changes from_numpyro and summary; the requirement had no upper bound."""
    import tomllib
    from pathlib import Path

    import arviz
    from packaging.requirements import Requirement

    data = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    req = next(Requirement(r) for r in data["project"]["dependencies"] if Requirement(r).name == "arviz")
    assert not req.specifier.contains("1.0.0") and req.specifier.contains("0.20.0")
    assert req.specifier.contains(arviz.__version__)


def test_a_failed_predictive_check_says_what_it_points_at():
    """`diagnose` reported ppp 0.000 on scripted partners and said nothing about what to do."""
    from beliefgate.models.diagnose import PPC_HINTS, ppc_hint

    assert set(PPC_HINTS) == {"skill", "primitive"}
    assert "skill dynamics" in ppc_hint("skill") and "scripted partners" in ppc_hint("skill")
    assert "within a skill" in ppc_hint("primitive") and "epsilon" in ppc_hint("primitive")


def test_fit_md_example_is_what_compare_prints_for_its_numbers():
    """docs/fit.md read a comparison by a 2·dse rule alone, looser than the usual guidance: its example's verdict
    and warnings are now what `compare` prints for the example's own numbers (and warnings)."""
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "fit.md").read_text(encoding="utf-8")
    example = doc[doc.index("$ beliefgate compare free.nc h0.nc"):]
    example = example[:example.index("$ beliefgate diagnose")]
    rows = []
    for line in example.splitlines():
        m = re.match(r"\s+(\d+)\s+(\w+)\s+\w+ \w+\s+(-?[\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)"
                     r"\s*(yes)?$", line)
        if m:
            rank, name, elpd, se, diff, dse, p_loo, weight, warn = m.groups()
            rows.append(CompareRow(name, int(rank), float(elpd), float(se), float(diff), float(dse), float(p_loo),
                                   float(weight), warn == "yes"))
    units = int(re.search(r"only (\d+) LOO units", example).group(1))
    comparison = Comparison(rows, {r.name: {} for r in rows}, units)
    assert len(rows) == 2 and comparison.verdict() + ".\n" in example  # as `compare` prints it
    shown = [line[len("warning: "):].removesuffix("...").rstrip(" ;") for line in example.splitlines()
             if line.startswith("warning: ")]  # the doc cuts each warning short with "..."
    warnings = comparison.warnings()
    assert len(shown) == len(warnings) == 2 and all(w.startswith(s) for s, w in zip(shown, warnings)), shown
    assert "below 4 in absolute value" in " ".join(doc.split())
