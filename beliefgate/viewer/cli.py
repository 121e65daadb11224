"""``beliefgate report`` and ``beliefgate play`` (registered by ``beliefgate.cli``).

Heavy imports (the overcooked package, FastAPI, uvicorn) stay inside the commands.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer

from beliefgate.console import check_not_input, check_output_path, console, err_console, fail as _fail, option_items
from beliefgate.limits import MAX_HORIZON, MAX_TICK_HZ, MIN_TICK_HZ
from beliefgate.errors import BeliefgateError, InputError, LookupFailure


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add ``report`` and ``play`` to the main app."""

    @app.command()
    def report(
        log: Path = typer.Argument(..., help="trajectory log (JSONL) of one episode"),
        out: Optional[Path] = typer.Option(None, "-o", "--out", help="HTML file to write (default: LOG with .html)"),
        strict: bool = typer.Option(False, "--strict", help="refuse a log without its final row"),
        as_json: bool = typer.Option(False, "--json", help="print what was written as one JSON object"),
    ) -> None:
        """Write one self-contained HTML report of an episode: the kitchen frame by frame, the belief, gate events."""
        from beliefgate.viewer.report import write_report

        target = out if out is not None else log.with_suffix(".html")
        check_output_path("--out", target)
        check_not_input("--out" if out is not None else "--out (default: LOG with .html)", target, [log])
        try:
            written = write_report(log, target, allow_incomplete=not strict)
        except InputError as exc:
            _fail(str(exc))
        except BeliefgateError as exc:
            _fail(str(exc), code=1)
        if written["nonfinite"]:
            bad = written["nonfinite"]
            err_console.print(f"warning: {log}: {len(bad)} value(s) not finite (NaN or infinity), shown as missing; "
                              f"first at {bad[0]}", markup=False, highlight=False, soft_wrap=True)
        if as_json:
            print(json.dumps(written))
            return
        note = "" if written["complete"] else " (incomplete log: no final row)"
        console.print(f"wrote {written['path']}: {written['steps']} steps, {written['bytes'] / 1e6:.2f} MB{note}")

    @app.command()
    def play(
        layout: str = typer.Option("cramped_room", help="layout name (see `beliefgate layouts`)"),
        agent: str = typer.Option("bayes-belief", help="the agent you play with (any --ego name)"),
        port: int = typer.Option(8770, min=0, max=65535, help="TCP port on 127.0.0.1 (0: any free port)"),
        seed: int = typer.Option(0, min=0, help="agent seed (every session of this server uses it)"),
        tick_hz: float = typer.Option(6.0, "--tick-hz", metavar=f"[{MIN_TICK_HZ:g}<=x<={MAX_TICK_HZ:g}]",
                                      help=f"game steps per second once you press a key ({MIN_TICK_HZ:g} to "
                                           f"{MAX_TICK_HZ:g}; checked with the other play settings)"),
        horizon: int = typer.Option(400, min=1, max=MAX_HORIZON, help="episode length in steps"),
        human_seat: int = typer.Option(1, "--human-seat", min=0, help="your player slot (0 .. players - 1 of the "
                                       "layout); the agent takes the first other slot"),
        third: Optional[str] = typer.Option(None, "--third", help="who plays the remaining seat of a three-player "
                                            "layout: a partner or agent name, or a partner file (default: the "
                                            "domain's default partner, e.g. balanced, or v2-cook-adaptive on v2/)"),
        log: str = typer.Option("play-logs/", help="log file, or a directory (one file per session); "
                                 "an existing file is never overwritten (NAME-2.jsonl, ...)"),
        max_sessions: int = typer.Option(4, "--max-sessions", min=1, help="games at once"),
        memory: Optional[Path] = typer.Option(None, "--memory", help="partner-memory store (SQLite; created when "
                                              "missing): the agent starts from what it remembers of you, and every "
                                              "session is added to it (docs/memory.md)"),
        human_name: str = typer.Option("human", "--human-name", help="who you are in the memory store"),
        env_option: Optional[List[str]] = typer.Option(
            None, "--env-option", help="an environment option of the layout's domain as KEY=VALUE (repeatable; "
            "e.g. agent_view_size=1 on a v2/ layout: you see the recipe only near it)"),
    ) -> None:
        """Play one chef with the keyboard beside an agent in the browser (FastAPI + WebSocket on 127.0.0.1)."""
        try:
            from beliefgate.viewer.play import PlaySettings, serve_play
        except ModuleNotFoundError as exc:
            _fail(f"play needs the 'serve' extra (pip install 'beliefgate[serve]'): {exc}")
        from beliefgate.agents.registry import make_agent

        try:
            settings = PlaySettings(layout=layout, agent=agent, seed=seed, tick_hz=tick_hz, horizon=horizon,
                                    human_seat=human_seat, third=third, log=log, max_sessions=max_sessions,
                                    memory=memory,
                                    human_name=human_name, env_options=option_items(env_option or []))
            check_output_path("--log", Path(settings.log), folder=settings.log_is_dir)
            from beliefgate.envs.domain import domain_for_layout

            domain = domain_for_layout(settings.layout)
            try:
                probe = make_agent(agent, domain=domain)
            except (InputError, LookupFailure) as exc:
                _fail(f"--agent: {exc}")
            if memory is not None:  # the store's faults, and an agent without a gate, before the server starts
                from beliefgate.agents.memory import MemoryStore

                MemoryStore(memory).close()
                if not callable(getattr(probe, "use_memory", None)) or not getattr(probe, "keeps_belief", False):
                    _fail(f"--memory: agent {agent!r} keeps no partner belief (no gate), so a memory would have "
                          "no effect")
            probe.reset(settings.layout, settings.agent_seat, seed)  # fail now, not in the first game
            names = settings.seat_names()
            for i, name in enumerate(names):  # the third player of a three-player layout, likewise
                if i not in (settings.human_seat, settings.agent_seat):
                    try:
                        make_agent(name, domain=domain).reset(settings.layout, i, seed)
                    except (InputError, LookupFailure) as exc:
                        _fail(f"--third: {exc}")
                    break
        except (InputError, LookupFailure) as exc:
            _fail(str(exc))
        except BeliefgateError as exc:
            _fail(str(exc), code=1)

        def announce(url: str, real_port: int) -> None:
            print(f"beliefgate play: {url}  port={real_port}  layout={settings.layout}  agent={agent}  "
                  f"tick={tick_hz:g} Hz  logs={settings.log}{'/' if settings.log_is_dir else ''}", flush=True)
            err_console.print("open the address in a browser; Ctrl-C stops the server")

        try:
            serve_play(settings, port=port, announce=announce)
        except InputError as exc:
            _fail(str(exc))
        sys.stdout.flush()


__all__ = ["register"]
