"""``beliefgate report LOG.jsonl -o report.html``: one self-contained HTML file per episode.

The file needs no network: the data, the drawing code and the styles are inlined
(``assets/report.html`` is the template; ``assets/kitchen.js`` draws the kitchen on a
canvas from the symbolic state, ``assets/report.js`` the time-aligned tracks as SVG).
What it shows, each track degrading to "not logged" when its fields are absent:

* the kitchen frame by frame, with play/pause, a speed selector and a scrubber;
* the ego's posterior over the partner's skills (``info[seat].belief``) as a stacked
  area, one point per step, and the partner's true skill (``skills[partner]``) as a strip;
* gate events: contradictions (``contradiction``), interrupts (``interrupt`` of the ego,
  ``gate_fired`` of its gate) and the reasons an interrupt was suppressed
  (``suppressed_reason``);
* replans (``replanned`` with its ``reason``); a replan is *effective* when the ego's skill
  after it differs from the skill before (the log's ``effective``/``replan_effective``
  field when present, else derived from the logged active skills; the report says which);
* deliveries (the domain's delivery events, ``deliver:soup`` in Overcooked, per player);
* κ and commits (``kappa``, ``commit``/``committed``, flat or in a ``kappa`` object) when logged;
* fallbacks of the model-calling roles (``fallback_events``: role, reason, detail; or, when only
  the running ``fallbacks`` count is logged, one mark per increment).

:func:`write_episode_reports` writes one report per episode of an ``eval run`` directory
and an ``index.html`` linking them (for ``beliefgate eval report --html``).
"""

from __future__ import annotations

import html
import json
import math
import re
import time
from importlib import resources
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from beliefgate.errors import InputError, RuntimeFailure

#: the data schema the template's script reads (bumped when it changes)
REPORT_FORMAT = "beliefgate.report/1"
#: a posterior whose logged entries sum further than this from one is counted (then normalised)
SUM_TOLERANCE = 1e-2
_MARKER = re.compile(r"\{\{([A-Z_]+)\}\}")


class ReportInputError(InputError):
    """A log or run directory that cannot be reported (e.g. no steps, a missing directory)."""


class ReportWriteError(RuntimeFailure):
    """The report file could not be written."""


# --------------------------------------------------------------------------- assets
def asset_text(name: str) -> str:
    """The text of one packaged asset (``beliefgate/viewer/assets/NAME``)."""
    return resources.files("beliefgate.viewer").joinpath("assets", name).read_text(encoding="utf-8")


def script_json(payload: Any) -> str:
    """JSON that is safe inside a ``<script type="application/json">`` element."""
    text = json.dumps(payload, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def fill_template(template: str, values: Dict[str, str]) -> str:
    """Replace every ``{{KEY}}`` marker of ``template`` in one pass (inserted text is not rescanned).

    A marker without a value, or a value without a marker, is a :class:`ReportInputError`.
    """
    markers = set(_MARKER.findall(template))
    if markers != set(values):
        raise ReportInputError(f"template markers {sorted(markers)} do not match the values {sorted(values)}")
    return _MARKER.sub(lambda m: values[m.group(1)], template)


# --------------------------------------------------------------------------- data
def _library_names(layout: str) -> List[str]:
    from beliefgate.envs.domain import domain_for_layout

    return list(domain_for_layout(layout).controller(layout).library.names)


def _first(info: Dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if key in info and info[key] is not None:
            return info[key]
    return None


def _finite(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _kappa_fields(info: Dict[str, Any]):
    """(κ, commit) from the flat fields, a nested ``kappa`` object or an OverForge decision record
    (``pcm``: present on the steps where the PCM decided); None where absent."""
    pcm = info.get("pcm")
    if "kappa" not in info and isinstance(pcm, dict):
        info = pcm
    k = info.get("kappa")
    commit = _first(info, "commit", "committed")
    if isinstance(k, dict):
        commit = commit if commit is not None else _first(k, "commit", "committed")
        k = k.get("kappa")
    return _finite(k), (bool(commit) if commit is not None else None)


def _kappa_theta(info: Dict[str, Any]) -> Optional[float]:
    """The commit threshold θ of a κ decision: ``theta`` flat, in a ``kappa`` object, or in an OverForge
    decision record's ``kappa_params``; None where absent."""
    for record in (info, info.get("pcm"), info.get("kappa")):
        if not isinstance(record, dict):
            continue
        params = record.get("kappa_params")
        theta = _finite(params.get("theta")) if isinstance(params, dict) else _finite(record.get("theta"))
        if theta is not None:
            return theta
    return None


def _check_belief(belief: Any, where: str) -> None:
    """A logged posterior is absent (None) or a list of numbers; anything else (a string, a dict, a
    list holding a string, a bool or null) is a :class:`ReportInputError` naming ``where``.
    A NaN or infinite entry is a number (drawn as missing, see :func:`nonfinite_fields`)."""
    if belief is None:
        return
    if not isinstance(belief, list):
        raise ReportInputError(f"{where} must be a list of probabilities, got {type(belief).__name__} {belief!r:.60}")
    for k, value in enumerate(belief):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ReportInputError(f"{where}[{k}] must be a number, got {value!r:.60}")


def nonfinite_fields(traj) -> List[str]:
    """Where the log holds a number that is not finite (NaN, ±infinity: JSON has neither, Python's
    reader takes ``NaN``, ``Infinity`` and ``1e999``), as ``"step 4: reward"``,
    ``"step 9: info[0].kappa"``, ``"final: summary.reward"`` or ``"header: config.x"``, in log order."""
    found: List[str] = []

    def walk(value: Any, path: str, where: str) -> None:
        if isinstance(value, float) and not math.isfinite(value):
            found.append(f"{where}: {path}")
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{path}.{key}" if path else str(key), where)
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                walk(item, f"{path}[{i}]", where)

    walk(traj.header.config, "config", "header")
    for row in traj.steps:
        walk(row.reward, "reward", f"step {row.t}")
        walk(row.info, "info", f"step {row.t}")
    if traj.final is not None:
        walk(traj.final.summary, "summary", "final")
    return found


def report_data(traj, source: str = "") -> Dict[str, Any]:
    """Everything the report draws, as one JSON-ready dict (see the module docstring).

    A number that is not finite (NaN, ±infinity) is drawn as missing (``None``, like an
    absent field) and counted in ``nonfinite`` (its first place named), never a crash."""
    from beliefgate.envs.domain import domain_for_layout
    from beliefgate.viewer.frames import encode_frame, layout_record

    h = traj.header
    steps = traj.steps
    if not steps:
        raise ReportInputError(f"{source or 'log'}: no steps to report")
    seat = int(h.seat)
    players = len(steps[0].state.players)
    # the teammate the ego's belief is about: the first other seat (with two players, the other one)
    partner = next((i for i in range(players) if i != seat), None)
    T = len(steps)

    # the posterior: one entry per step (None where the ego logged none)
    beliefs: List[Optional[List[float]]] = []
    num_skills = 0
    renormalised = 0
    for row in steps:
        info = row.info[seat] if seat < len(row.info) else {}
        b = info.get("belief")
        _check_belief(b, f"{source or 'log'}: step {row.t}: info[{seat}].belief")
        if isinstance(b, list) and b and all(_finite(v) is not None and v >= 0 for v in b):
            total = float(sum(b))
            if total <= 0:
                beliefs.append(None)
                continue
            if abs(total - 1.0) > SUM_TOLERANCE:
                renormalised += 1
            beliefs.append([round(float(v) / total, 4) for v in b])  # explicit normalisation
            num_skills = max(num_skills, len(b))
        else:
            beliefs.append(None)
    beliefs = [b if b is None or len(b) == num_skills else None for b in beliefs]
    library = _library_names(h.layout)
    # the belief is over the layout's skill library; a belief of another length gets neutral names
    names = library if num_skills in (0, len(library)) else [f"skill {k}" for k in range(num_skills)]

    def skill_index(name: Optional[str]) -> int:
        if name is None:
            return -1
        if name not in names:
            names.append(name)  # a skill outside the belief's library still gets a colour
        return names.index(name)

    true_skill = [skill_index(r.skills[partner]) if partner is not None and partner < len(r.skills) else -1
                  for r in steps]
    ego_skill = [skill_index(r.skills[seat]) if seat < len(r.skills) else -1 for r in steps]

    contradictions: List[int] = []
    interrupts: List[int] = []
    gate_fired: List[int] = []
    suppressed: Dict[str, List[int]] = {}
    replans: List[List[Any]] = []       # [t, reason, effective (bool), interrupt (bool)]
    kappa: List[Optional[float]] = []
    commits: List[List[Any]] = []       # [t, committed (bool)]
    fallbacks: List[List[Any]] = []     # [t, role, reason, detail]
    present = {"contradiction": False, "interrupt": False, "gate_fired": False, "suppressed_reason": False,
               "replanned": False, "effective": False, "kappa": False, "commit": False, "fallbacks": False}
    previous_count = 0
    theta: Optional[float] = None  # the commit threshold κ is read against (the first one logged)
    for t, row in enumerate(steps):
        info = row.info[seat] if seat < len(row.info) else {}
        if "contradiction" in info:
            present["contradiction"] = True
            if info["contradiction"]:
                contradictions.append(t)
        if "interrupt" in info:
            present["interrupt"] = True
            if info["interrupt"]:
                interrupts.append(t)
        if "gate_fired" in info:
            present["gate_fired"] = True
            if info["gate_fired"]:
                gate_fired.append(t)
        if "suppressed_reason" in info:
            present["suppressed_reason"] = True
            reason = info["suppressed_reason"]
            if reason:
                suppressed.setdefault(str(reason), []).append(t)
        if "replanned" in info:
            present["replanned"] = True
            if info["replanned"]:
                logged = _first(info, "effective", "replan_effective")
                if logged is not None:
                    present["effective"] = True
                    effective = bool(logged)
                else:  # derived: the active skill changed across the replan
                    before = ego_skill[t - 1] if t > 0 else -1
                    effective = ego_skill[t] != before
                replans.append([t, str(info.get("reason") or ""), effective, bool(info.get("interrupt"))])
        events = info.get("fallback_events")
        if isinstance(events, list):
            present["fallbacks"] = True
            for ev in events:
                if isinstance(ev, dict):
                    fallbacks.append([t, str(ev.get("role", "?")), str(ev.get("reason", "?")), str(ev.get("detail", ""))])
        elif isinstance(info.get("fallbacks"), int) and not isinstance(info.get("fallbacks"), bool):
            present["fallbacks"] = True  # only the running count is logged: one entry per increment
            fallbacks.extend([t, "?", "?", ""] for _ in range(max(0, info["fallbacks"] - previous_count)))
            previous_count = info["fallbacks"]
        k, commit = _kappa_fields(info)
        theta = _kappa_theta(info) if theta is None else theta
        kappa.append(None if k is None else round(k, 4))
        if k is not None:
            present["kappa"] = True
        if commit is not None:
            present["commit"] = True
            commits.append([t, commit])

    delivered = set(domain_for_layout(h.layout).delivery_events)
    deliveries = [[t, i] for t, row in enumerate(steps) for i, ev in enumerate(row.events)
                  for e in ev if e in delivered]
    messages, refusals = message_marks(steps)
    frames = [encode_frame(s) for s in traj.states()]
    summary = traj.final.summary if traj.final is not None else {}
    data = {
        "format": REPORT_FORMAT,
        "source": source,
        "title": f"{h.layout}: {h.ego or h.agents[seat]} (seat {seat}) + {h.partner or '?'}, seed {h.seed}",
        "header": h.model_dump(mode="json"),
        "summary": summary,
        "complete": traj.final is not None,
        "layout": layout_record(h.layout),
        "seat": seat,
        "partner": partner,
        "steps": T,
        "names": names,
        "frames": frames,
        "belief": beliefs,
        "true_skill": true_skill,
        "ego_skill": ego_skill,
        "actions": [r.actions for r in steps],
        "action_names": list(domain_for_layout(h.layout).action_names),
        "rewards": [r.reward for r in steps],
        "events": [r.events for r in steps],
        "reasons": [(r.info[seat].get("reason") if seat < len(r.info) else None) for r in steps],
        "partner_map": [(r.info[seat].get("partner_map") if seat < len(r.info) else None) for r in steps],
        "gate": {"contradictions": contradictions, "interrupts": interrupts, "gate_fired": gate_fired,
                 "suppressed": suppressed},
        "replans": replans,
        "deliveries": deliveries,
        "kappa": kappa if present["kappa"] else None,
        "kappa_theta": theta,
        "commits": commits,
        "fallbacks": fallbacks,
        "messages": messages,
        "refusals": refusals,
        "plan_source": [(r.info[seat].get("plan_source") if seat < len(r.info) else None) for r in steps],
        "present": present,
        "renormalised_steps": renormalised,
    }
    bad = nonfinite_fields(traj)
    if bad:
        from beliefgate.fileio import json_safe

        data = json_safe(data)
    data["nonfinite"] = {"count": len(bad), "first": bad[0] if bad else None}
    return data


def message_marks(steps) -> tuple:
    """The timeline's messages ``[t, sender, kind, line]`` (drawn at the step they were sent; heard at
    the next) and refusals ``[t, sender, reason, detail]``, from the steps' ``messages`` entries."""
    from beliefgate.envs.messages import message_line

    sent, refused = [], []
    for row in steps:
        if row.messages is None:
            continue
        sent += [[row.t, m.sender, m.kind, message_line(m)] for m in row.messages.sent]
        refused += [[row.t, r.sender, r.reason, r.detail] for r in row.messages.refused]
    return sent, refused


def render_report(traj, source: str = "") -> str:
    """The whole report of one trajectory as an HTML string (no external resources)."""
    data = report_data(traj, source)
    return fill_template(asset_text("report.html"), {
        "TITLE": html.escape(data["title"]),
        "CSS": asset_text("report.css"),
        "DATA": script_json(data),
        "KITCHEN_JS": asset_text("kitchen.js"),
        "REPORT_JS": asset_text("report.js"),
    })


def write_report(log_path: str | Path, out: str | Path, allow_incomplete: bool = True) -> Dict[str, Any]:
    """Read ``log_path`` (:func:`~beliefgate.envs.trajlog.read_log`) and write its report to ``out``.

    An interrupted log (no final row) is reported as far as it goes when
    ``allow_incomplete``. Returns ``{"path", "bytes", "steps", "complete", "seconds"}`` and the
    episode's ``layout``, ``ego``, ``partner``, ``seed``, ``seat`` and ``summary``.
    """
    from beliefgate.envs.trajlog import read_log
    from beliefgate.fileio import atomic_write

    started = time.perf_counter()
    traj = read_log(log_path, allow_incomplete=allow_incomplete)
    text = render_report(traj, source=str(log_path))
    out = Path(out)
    data = text.encode("utf-8")
    try:
        atomic_write(out, data)
    except OSError as exc:
        raise ReportWriteError(f"cannot write report {out}: {exc}") from exc
    from beliefgate.fileio import json_safe

    h = traj.header
    return {"path": str(out), "bytes": len(data), "steps": len(traj.steps), "complete": traj.complete,
            "seconds": round(time.perf_counter() - started, 3), "layout": h.layout, "ego": h.ego, "partner": h.partner,
            "seed": h.seed, "seat": h.seat, "nonfinite": nonfinite_fields(traj),
            "summary": json_safe(traj.final.summary) if traj.final is not None else {}}


def write_episode_reports(run_dir: str | Path, out_dir: Optional[str | Path] = None,
                          logs: Optional[Sequence[str | Path]] = None) -> Dict[str, Any]:
    """One HTML report per episode log of an ``eval run`` directory, plus an ``index.html``.

    Logs are ``RUN_DIR/episodes/<layout>/*.jsonl`` (or ``logs``, paths relative to
    ``run_dir``). Reports go to ``out_dir`` (default ``RUN_DIR/reports``), mirroring
    the episodes' folders; the index links each one with its layout, agents, seed and
    summary. A log that does not read back is listed in the index with its error and
    counted in ``failed`` (the other reports are still written).
    Returns ``{"index", "reports": [...], "failed": [...]}``.
    """
    from beliefgate.envs.trajlog import LogFormatError
    from beliefgate.fileio import atomic_write

    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ReportInputError(f"run directory {run_dir} does not exist")
    episodes = run_dir / "episodes"
    if logs is None:
        found = sorted(episodes.rglob("*.jsonl")) if episodes.is_dir() else []
    else:
        found = [run_dir / p for p in logs]
    if not found:
        raise ReportInputError(f"no episode logs under {episodes}")
    out_dir = Path(out_dir) if out_dir is not None else run_dir / "reports"
    rows: List[Dict[str, Any]] = []
    failed: List[Dict[str, str]] = []
    for log in found:
        rel = log.relative_to(episodes) if log.is_relative_to(episodes) else Path(log.name)
        target = out_dir / rel.with_suffix(".html")
        try:
            written = write_report(log, target)
        except (LogFormatError, ReportInputError) as exc:
            failed.append({"log": str(log), "error": str(exc)})
            continue
        rows.append({**written, "log": str(log), "href": _relative_href(target.relative_to(out_dir))})
    index = out_dir / "index.html"
    try:
        atomic_write(index, _index_html(run_dir, rows, failed, comparison_figure(run_dir)).encode("utf-8"))
    except OSError as exc:
        raise ReportWriteError(f"cannot write report index {index}: {exc}") from exc
    return {"index": str(index), "reports": rows, "failed": failed}


def _relative_href(rel: Path) -> str:
    """A link to the file ``rel`` (relative to the index) that can only be that file: every path
    segment percent-encoded (a folder named ``javascript:...`` gives ``javascript%3A...``, no
    scheme, query or fragment), never absolute and never climbing out with ``..``."""
    from urllib.parse import quote

    if rel.is_absolute() or any(part in ("", ".", "..") for part in rel.parts):
        raise ReportInputError(f"report path {rel} is not a plain relative path")
    return "/".join(quote(part, safe="") for part in rel.parts)


#: the agent-comparison figure of the index: (metric, label, digits)
COMPARISON_METRICS = (("reward", "reward per episode", 1), ("gap_rate", "belief-action gap rate per step (lower is better)", 2))


def comparison_stats(results: Sequence[Dict[str, Any]], n_boot: int = 2000) -> List[Dict[str, Any]]:
    """Per condition (agent) of a results table: for each metric of :data:`COMPARISON_METRICS` the mean
    over episodes and a 95% bootstrap interval over seeds (each seed's value: its episodes' mean; NaN
    values skipped; fewer than two seeds: no interval)."""
    from beliefgate.eval.report import bootstrap_mean_ci

    out = []
    for agent in dict.fromkeys(str(r["agent"]) for r in results):
        mine = [r for r in results if str(r["agent"]) == agent]
        row: Dict[str, Any] = {"agent": agent, "episodes": len(mine)}
        for metric, _, _ in COMPARISON_METRICS:
            by_seed: Dict[Any, List[float]] = {}
            for r in mine:
                v = _finite(r.get(metric))
                if v is not None:
                    by_seed.setdefault(r["seed"], []).append(v)
            means = [sum(v) / len(v) for v in by_seed.values()]
            row[metric] = bootstrap_mean_ci(means, n_boot=n_boot, name=f"index|{agent}|{metric}") if means else (
                float("nan"),) * 3
        out.append(row)
    return out


def comparison_figure(run_dir: Path) -> str:
    """The index's agent-comparison figure (inline SVG: reward and gap per condition, mean and 95% CI over
    seeds) from the run's results table; "" when the run has no readable results."""
    from beliefgate.eval.runner import RunError, load_results

    try:
        results = load_results(run_dir)
    except (RunError, OSError) as exc:  # a folder of logs without a results table: the links still work
        return f'<p class="no-figure">No agent-comparison figure: {html.escape(str(exc))}</p>'

    stats = comparison_stats(results) if results else []
    if not stats:
        return ""
    label_w, panel_w, row_h, top = 190, 300, 20, 34
    height = top + row_h * len(stats) + 22
    width = label_w + len(COMPARISON_METRICS) * (panel_w + 30)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" class="comparison" '
             'font-family="system-ui, sans-serif" font-size="11">']
    for i, r in enumerate(stats):
        y = top + row_h * i + row_h / 2
        parts.append(f'<text x="{label_w - 8}" y="{y + 4:.1f}" text-anchor="end">{html.escape(r["agent"])} '
                     f'(n={r["episodes"]})</text>')
    for j, (metric, label, digits) in enumerate(COMPARISON_METRICS):
        x0 = label_w + j * (panel_w + 30)
        vals = [v for r in stats for v in r[metric] if v == v]
        parts.append(f'<text x="{x0 + panel_w / 2}" y="14" text-anchor="middle" font-weight="bold">'
                     f'{html.escape(label)}</text>')
        if not vals:
            parts.append(f'<text x="{x0 + 10}" y="{top + 12}" fill="#888">not measured</text>')
            continue
        lo, hi = min(vals), max(vals)
        pad = (hi - lo) * 0.08 or max(abs(hi) * 0.05, 0.01)
        lo, hi = lo - pad, hi + pad

        def px(v, x0=x0, lo=lo, hi=hi):
            return x0 + (v - lo) / (hi - lo) * panel_w

        base = top + row_h * len(stats)
        parts.append(f'<line x1="{x0}" x2="{x0 + panel_w}" y1="{base}" y2="{base}" stroke="#888"/>')
        for v in sorted({round(lo + pad, 9), round((lo + hi) / 2, 9), round(hi - pad, 9)}):
            parts.append(f'<line x1="{px(v):.1f}" x2="{px(v):.1f}" y1="{base}" y2="{base + 4}" stroke="#888"/>'
                         f'<text x="{px(v):.1f}" y="{base + 15}" text-anchor="middle" fill="#555">{v:.{digits}f}</text>')
        for i, r in enumerate(stats):
            mean, clo, chi = r[metric]
            if mean != mean:
                continue
            y = top + row_h * i + row_h / 2
            ci = f"[{clo:.{digits}f}, {chi:.{digits}f}]" if clo == clo else "(one seed: no interval)"
            if clo == clo:
                parts.append(f'<line x1="{px(clo):.1f}" x2="{px(chi):.1f}" y1="{y:.1f}" y2="{y:.1f}" '
                             'stroke="#1f77b4" stroke-width="2" class="ci"/>')
            parts.append(f'<circle cx="{px(mean):.1f}" cy="{y:.1f}" r="3.5" fill="#1f77b4" class="mean">'
                         f'<title>{html.escape(r["agent"])}: {mean:.{digits}f} {ci}</title></circle>')
    parts.append("</svg>")
    caption = ("Mean per condition with a 95% bootstrap interval over seeds (each seed: the mean of its episodes), "
               f"from {run_dir / 'results.csv'}; the same numbers as `beliefgate eval report`'s tables.")
    return f'<figure class="comparison">{"".join(parts)}<figcaption>{html.escape(caption)}</figcaption></figure>'


def _index_html(run_dir: Path, rows: List[Dict[str, Any]], failed: List[Dict[str, str]], figure: str = "") -> str:
    lines = []
    for r in rows:
        s = r["summary"]
        lines.append("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in (
            r["layout"], r["ego"], r["partner"], r["seed"], r["seat"], s.get("deliveries", "-"), s.get("reward", "-"),
            s.get("replans", "-"), r["steps"])) + f"<td><a href=\"{html.escape(r['href'])}\">report</a></td></tr>")
    for f in failed:
        lines.append(f"<tr class=\"failed\"><td colspan=\"9\">{html.escape(f['log'])}: {html.escape(f['error'])}"
                     "</td><td>not written</td></tr>")
    return fill_template(asset_text("index.html"), {
        "TITLE": html.escape(f"episode reports: {run_dir}"),
        "COUNT": f"{len(rows)} report(s), {len(failed)} log(s) failed",
        "FIGURE": figure,
        "ROWS": "\n".join(lines),
    })


__all__ = ["REPORT_FORMAT", "ReportInputError", "ReportWriteError", "report_data", "render_report",
           "write_report", "write_episode_reports", "asset_text", "script_json", "fill_template"]
