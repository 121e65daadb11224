"""``beliefgate memory show|erase PATH``: look into and erase a partner-memory store (docs/memory.md).

Registered by :mod:`beliefgate.cli` through :func:`register`. A file that is not a store, of a newer
schema, damaged or locked is one line naming it (exit 2; a lock held past the timeout: exit 1), and
nothing is written to it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from beliefgate.console import console, fail as _fail

memory_app = typer.Typer(help="Partner memory across episodes: show or erase a store (--memory PATH).",
                         no_args_is_help=True)


def _fmt(value, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _counts_text(counts, top: int = 3) -> str:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:top]
    return ", ".join(f"{k} {v:g}" for k, v in ranked if v > 0) or "-"


@memory_app.command("show")
def show(
    path: Path = typer.Argument(..., help="memory store (a file written by --memory)"),
    partner: Optional[str] = typer.Option(None, "--partner", help="only this partner's entries"),
    layout: Optional[str] = typer.Option(None, "--layout", help="only this layout's entries"),
    seat: Optional[int] = typer.Option(None, "--seat", min=0, help="only the entries of the partner in this seat"),
    history: bool = typer.Option(False, "--history", help="also list every episode of each entry"),
    as_json: bool = typer.Option(False, "--json", help="print the store and every entry (with its episodes) as JSON"),
) -> None:
    """What the store remembers about each partner: episodes, the prior's skill counts (n_psi), agreed roles,
    request-following and the ego's partner-intent accuracy."""
    from beliefgate.agents.memory import MemoryStore

    with MemoryStore(path, readonly=True) as store:
        entries = store.entries(partner, layout, seat)
        about = store.describe()
    if as_json:
        print(json.dumps({"store": about, "entries": entries}, indent=1))
        return
    if not entries:
        filters = ", ".join(f"{k} {v}" for k, v in (("partner", partner), ("layout", layout), ("seat", seat))
                            if v is not None)
        console.print(f"{path}: no partner entries{' for ' + filters if filters else ''} "
                      f"(schema {about['schema_version']})")
        return
    table = Table(title=f"partner memory {path} (schema {about['schema_version']})")
    for col, justify in (("partner", "left"), ("layout", "left"), ("seat", "right"), ("scope", "left"),
                         ("episodes", "right"), ("n_psi (top 3)", "left"), ("total", "right"),
                         ("roles", "left"), ("requests followed", "right"), ("IA", "right")):
        table.add_column(col, justify=justify, overflow="fold")
    for e in entries:
        asked = sum(r["asked"] for r in e["requests"].values())
        followed = sum(r["followed"] for r in e["requests"].values())
        table.add_row(e["partner"], e["layout"], str(e["seat"]), e["scope"] or "-", str(e["episodes"]),
                      _counts_text(e["counts"]), f"{sum(e['counts'].values()):g}",
                      ", ".join(f"{s}: {r}" for s, r in e["roles"].items()) or "-",
                      f"{followed}/{asked}" if asked else "-", _fmt(e["intent_accuracy"]))
    table.caption = ("n_psi: completion counts behind the gate's smoothed prior after the latest episode; "
                     "IA: the ego's partner-intent accuracy over the remembered episodes")
    console.print(table)
    if history:
        for e in entries:
            sub = Table(title=f"{e['partner']} on {e['layout']}, seat {e['seat']}" + (f" [{e['scope']}]" if e["scope"]
                                                                                       else ""))
            for col in ("seq", "seed", "ego", "steps", "deliveries", "IA", "committed"):
                sub.add_column(col)
            for h in e["history"]:
                sub.add_row(str(h["seq"]), str(h["seed"]), h["ego"], str(h["steps"]), str(h["deliveries"]),
                            _fmt(h["intent_accuracy"]), h["committed"])
            console.print(sub)


@memory_app.command("erase")
def erase(
    path: Path = typer.Argument(..., help="memory store"),
    partner: Optional[str] = typer.Option(None, "--partner", help="erase only this partner's entries "
                                          "(default: every entry)"),
    layout: Optional[str] = typer.Option(None, "--layout", help="only on this layout"),
    seat: Optional[int] = typer.Option(None, "--seat", min=0, help="only the entries of the partner in this seat"),
    scope: Optional[str] = typer.Option(None, "--scope", help="only this sequence (see `memory show`)"),
    as_json: bool = typer.Option(False, "--json", help="print what was erased as JSON"),
) -> None:
    """Forget partners: delete the matching entries and all their episodes in one transaction (the file stays)."""
    from beliefgate.agents.memory import MemoryStore

    if not path.exists():
        _fail(f"{path}: no memory store here")
    with MemoryStore(path) as store:
        erased = store.erase(partner, layout, seat, scope)
        left = len(store.entries())
    if as_json:
        print(json.dumps({"path": str(path), "erased": erased, "left": left}))
        return
    console.print(f"{path}: erased {erased} partner entr{'y' if erased == 1 else 'ies'}; {left} left")


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add the ``memory`` group to the main app."""
    app.add_typer(memory_app, name="memory")


__all__ = ["register", "memory_app"]
