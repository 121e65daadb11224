"""Partner memory across episodes (beliefgate/agents/memory.py, docs/memory.md): the SQLite store, agents
that start from it, `--memory` on the commands, and its faults (not a store, newer schema, damaged,
locked, a process killed mid-episode)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from beliefgate.agents.memory import (SCHEMA_VERSION, MemoryLockedError, MemoryNotUsedError, MemorySession,
                                      MemoryStore, MemoryStoreError, MemoryUse, PartnerKey, TeammateRecord)
from beliefgate.agents.memory import EpisodeEntry

ROOT = Path(__file__).resolve().parents[1]
SKILLS = ("fetch", "cook", "serve")


def _entry(key, counts, roles=None, requests=None, seed=None):
    return EpisodeEntry(key, TeammateRecord(SKILLS, np.array(counts, float), roles or {}, requests or {}),
                        ego="bayes-belief:full", ego_seat=0, steps=10, intent_hits=3, intent_steps=5, seed=seed)


def test_round_trip_append_and_ordered(tmp_path):
    path = tmp_path / "mem.db"
    key = PartnerKey("plater", "cramped_room", 1)
    with MemoryStore(path) as store:
        assert store.recall(key) is None
        assert store.commit([_entry(key, [1, 0, 2], {0: "sourcing", 1: "plating"}, {"cook": (2, 1)})]) == [0]
        assert store.commit([_entry(key, [3, 0, 4], requests={"cook": (1, 1), "serve": (2, 0)})]) == [1]
    with MemoryStore(path, readonly=True) as store:  # a new process reading the file
        mem = store.recall(key)
        assert mem.counts == {"fetch": 3.0, "cook": 0.0, "serve": 4.0} and mem.episodes == 2 and mem.last_seq == 1
        assert mem.roles == {0: "sourcing", 1: "plating"}            # the latest split agreed
        assert mem.requests == {"cook": (3, 2), "serve": (2, 0)} and mem.request_rate == pytest.approx(2 / 5)
        assert mem.intent_accuracy == pytest.approx(6 / 10)
        counts, unknown = mem.counts_for(("serve", "fetch", "wash"))
        assert counts.tolist() == [4.0, 3.0, 0.0] and unknown == ["cook"]
        assert store.recall(PartnerKey("plater", "cramped_room", 0)) is None  # another seat: another entry
        with pytest.raises(MemoryStoreError, match="read-only"):
            store.commit([_entry(key, [0, 0, 0])])
    # ordered (a grid sequence): an episode starts from the one of the next smaller order and replaces its own
    seq = PartnerKey("plater", "cramped_room", 1, scope="eval x")
    with MemoryStore(path) as store:
        store.commit([_entry(seq, [5, 0, 0], seed=4)], order=4)
        store.commit([_entry(seq, [1, 0, 0], seed=2)], order=2)
        assert store.recall(seq, before=4).counts["fetch"] == 1.0
        assert store.recall(seq, before=5).counts["fetch"] == 5.0
        assert store.recall(seq, before=2) is None
        store.commit([_entry(seq, [2, 0, 0], seed=2)], order=2)  # a replay replaces, never duplicates
        assert store.recall(seq, before=3).counts["fetch"] == 2.0 and store.recall(seq).episodes == 2
        assert store.erase(partner="plater", scope="eval x") == 1
        assert store.recall(seq) is None and store.recall(key) is not None


def test_second_episode_starts_from_the_first(tmp_path):
    """The second episode's gate starts from the counts the first ended with: a different prior, and a
    different belief from its first observed step on than the same episode without memory."""
    from beliefgate.agents.registry import make_agent
    from beliefgate.eval.episode import run_episode

    path = tmp_path / "mem.db"
    first = run_episode("cramped_room", "bayes-belief:full", "onion-sourcer", seed=3, horizon=40, memory=path)
    with MemoryStore(path, readonly=True) as store:
        stored = store.recall(PartnerKey("onion-sourcer", "cramped_room", 1))
    assert stored.episodes == 1 and sum(stored.counts.values()) > 0  # the partner completed skills
    assert first.summary["memory"]["entries"][0]["recalled_episodes"] == 0

    agent = make_agent("bayes-belief:full")
    session = MemorySession(MemoryUse(str(path)), "cramped_room", ["bayes-belief:full", "onion-sourcer"], 0)
    agent.use_memory(session)
    agent.reset("cramped_room", 0, 7)
    names = agent.gate.skill_names
    assert agent.gate.memory.tolist() == [stored.counts[n] for n in names]
    pi0 = agent.gate.state.belief.pi0
    assert np.max(np.abs(pi0 - 1.0 / len(names))) > 0.05  # measurably away from the uniform prior
    session.close()

    second = run_episode("cramped_room", "bayes-belief:full", "onion-sourcer", seed=4, horizon=40, memory=path)
    plain = run_episode("cramped_room", "bayes-belief:full", "onion-sourcer", seed=4, horizon=40)
    assert second.trajectory.header.config["memory"]["recalled"] == {"1": 1}
    b_mem, b_plain = second.trajectory.steps[1].info[0]["belief"], plain.trajectory.steps[1].info[0]["belief"]
    assert max(abs(a - b) for a, b in zip(b_mem, b_plain)) > 0.01
    with MemoryStore(path, readonly=True) as store:
        mem = store.recall(PartnerKey("onion-sourcer", "cramped_room", 1))
    assert mem.episodes == 2 and sum(mem.counts.values()) >= sum(stored.counts.values())


def test_agent_without_gate_is_refused(tmp_path):
    from beliefgate.eval.episode import run_episode

    with pytest.raises(MemoryNotUsedError, match="no_belief"):
        run_episode("cramped_room", "bayes-belief:no_belief", "plater", horizon=3, memory=tmp_path / "m.db")
    with pytest.raises(MemoryNotUsedError, match="plater"):
        run_episode("cramped_room", "plater", "plater", horizon=3, memory=tmp_path / "m.db")


def test_gate_reset_memory_is_checked():
    from beliefgate import Gate
    from beliefgate.beliefs.errors import InvalidParameterError, ShapeMismatchError

    gate = Gate.from_logprobs(3)
    gate.reset(memory=[4.0, 0.0, 0.0])
    assert gate.memory.tolist() == [4.0, 0.0, 0.0] and gate.state.belief.pi0[0] == pytest.approx(5 / 7)
    with pytest.raises(ShapeMismatchError, match="memory"):
        gate.reset(memory=[1.0])
    with pytest.raises(InvalidParameterError, match="memory"):
        gate.reset(memory=[1.0, -1.0, 0.0])
    with pytest.raises(InvalidParameterError, match="not both"):
        gate.reset(True, memory=[1.0, 0.0, 0.0])


# ----------------------------------------------------------------------------- faults
def _store_with_one_episode(path):
    with MemoryStore(path) as store:
        store.commit([_entry(PartnerKey("plater", "cramped_room", 1), [1, 2, 3])])


def test_not_a_store_newer_schema_damaged(tmp_path):
    text = tmp_path / "notes.db"
    text.write_text("not a database\n" * 100)
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
        conn.execute("INSERT INTO t VALUES (1)")
    conn.close()
    for path, message in ((text, "not an SQLite file"), (other, "without its meta table")):
        before = path.read_bytes()
        with pytest.raises(MemoryStoreError, match=message) as info:
            MemoryStore(path)
        assert str(path) in str(info.value) and "\n" not in str(info.value)
        assert path.read_bytes() == before  # nothing overwritten (not even switched to WAL)
        assert not Path(str(path) + "-wal").exists()

    newer = tmp_path / "newer.db"
    _store_with_one_episode(newer)
    with sqlite3.connect(newer) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    conn.close()
    with pytest.raises(MemoryStoreError, match=f"schema {SCHEMA_VERSION + 1}, newer"):
        MemoryStore(newer)

    damaged = tmp_path / "damaged.db"
    _store_with_one_episode(damaged)
    with sqlite3.connect(damaged) as conn:  # fold the WAL in, so the file holds everything
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = bytearray(damaged.read_bytes())
    page = 4096
    assert len(data) >= 3 * page
    data[page: 3 * page] = b"\xa5" * (2 * page)  # garbage over the schema's and the tables' pages
    damaged.write_bytes(bytes(data))
    before = damaged.read_bytes()
    with pytest.raises(MemoryStoreError, match="damaged") as info:
        MemoryStore(damaged)
    assert str(damaged) in str(info.value)
    assert damaged.read_bytes() == before


def test_locked_by_another_writer(tmp_path):
    path = tmp_path / "mem.db"
    _store_with_one_episode(path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer, mid-transaction
    try:
        store = MemoryStore(path, timeout_s=0.2)
        key = PartnerKey("plater", "cramped_room", 1)
        assert store.recall(key).episodes == 1  # WAL: readers are not blocked
        with pytest.raises(MemoryLockedError, match="locked by another writer") as info:
            store.commit([_entry(key, [9, 9, 9])])
        assert str(path) in str(info.value)
        holder.execute("ROLLBACK")
        assert store.commit([_entry(key, [9, 9, 9])]) == [1]  # free again: the write goes through
        store.close()
    finally:
        holder.close()


KILL_SCRIPT = """
import sys
from beliefgate.eval.episode import run_episode
for seed in range(100):
    run_episode("cramped_room", "bayes-belief:full", "onion-sourcer", seed=seed, horizon=25, memory=sys.argv[1])
    print("committed", seed, flush=True)
"""


def test_kill_9_mid_episode_leaves_the_store_consistent(tmp_path):
    """A real process playing episodes with memory is SIGKILLed; the store opens, passes SQLite's integrity
    check, and holds exactly the committed episodes (at most the one in flight is lost), each complete."""
    path = tmp_path / "mem.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, str(path)], stdout=subprocess.PIPE, text=True,
                            env=env, cwd=tmp_path)
    reported = 0
    try:
        deadline = time.monotonic() + 120
        while reported < 2 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            reported += line.startswith("committed")
        time.sleep(0.15)  # well inside the next episode (each takes longer than this)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    # the child may have run ahead of this reader (a loaded machine): count every episode it announced
    printed = reported + sum(line.startswith("committed") for line in proc.stdout.read().splitlines())
    assert reported == 2 and proc.returncode == -signal.SIGKILL
    with MemoryStore(path) as store:  # opens read-write: the WAL is recovered, nothing refused
        entries = store.entries()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        per_episode = conn.execute("SELECT COUNT(*) FROM skill_counts GROUP BY episode_id").fetchall()
    conn.close()
    # the announced ones (+ one committed in the instant before its announcement)
    assert len(entries) == 1 and entries[0]["episodes"] in (printed, printed + 1)
    assert [h["seq"] for h in entries[0]["history"]] == list(range(entries[0]["episodes"]))
    assert len(per_episode) == entries[0]["episodes"] and {n for (n,) in per_episode} == {6}  # every row complete


# ----------------------------------------------------------------------------- the command line
def test_cli_episode_show_erase(tmp_path):
    from typer.testing import CliRunner

    from beliefgate.cli import app

    path = tmp_path / "mem.db"
    runner = CliRunner()
    for seed in (0, 1):
        res = runner.invoke(app, ["episode", "--layout", "cramped_room", "--ego", "bayes-belief:full", "--partner",
                                  "plater", "--horizon", "12", "--seed", str(seed), "--memory", str(path), "--json"])
        assert res.exit_code == 0, res.output
        assert json.loads(res.output)["memory"]["entries"][0]["seq"] == seed
    res = runner.invoke(app, ["memory", "show", str(path), "--json"])
    assert res.exit_code == 0, res.output
    shown = json.loads(res.output)
    assert shown["store"]["schema_version"] == SCHEMA_VERSION
    assert [(e["partner"], e["seat"], e["episodes"]) for e in shown["entries"]] == [("plater", 1, 2)]
    res = runner.invoke(app, ["memory", "show", str(path)])
    assert res.exit_code == 0 and "plater" in res.output and "cramped_room" in res.output
    res = runner.invoke(app, ["episode", "--layout", "cramped_room", "--ego", "proagent", "--horizon", "3",
                              "--memory", str(path)])
    assert res.exit_code == 2 and "keeps no partner belief" in res.output
    res = runner.invoke(app, ["memory", "erase", str(path), "--partner", "onion-sourcer", "--json"])
    assert res.exit_code == 0 and json.loads(res.output) == {"path": str(path), "erased": 0, "left": 1}
    res = runner.invoke(app, ["memory", "erase", str(path), "--partner", "plater"])
    assert res.exit_code == 0 and "erased 1" in res.output
    assert json.loads(runner.invoke(app, ["memory", "show", str(path), "--json"]).output)["entries"] == []
    bad = tmp_path / "notes.txt"
    bad.write_text("hello")
    for args in (["memory", "show", str(bad)], ["memory", "erase", str(bad)],
                 ["episode", "--layout", "cramped_room", "--ego", "bayes-belief:full", "--horizon", "3",
                  "--memory", str(bad)], ["memory", "show", str(tmp_path / "missing.db")]):
        res = runner.invoke(app, args)
        assert res.exit_code == 2 and "memory store" in res.output, (args, res.output)
    assert bad.read_text() == "hello"


def test_grid_sequences_in_seed_order_and_resume(tmp_path):
    """`eval run --memory`: each (condition, partner, seat) sequence has its own key, its episodes commit in seed
    order; a sequence whose commit the store lacks is replayed from there, and the replay is identical."""
    from beliefgate.eval.grid import parse_grid, resolve_grid
    from beliefgate.eval.runner import memory_keys, run_grid, with_memory

    grid = parse_grid({"name": "mem", "agents": ["bayes-belief:full", "proagent"], "layouts": ["cramped_room"],
                       "partners": ["plater"], "seeds": [0, 1, 2], "seats": [0], "horizon": 12})
    path, out = tmp_path / "mem.db", tmp_path / "run"
    summary = run_grid(grid, out, memory=path)
    assert summary.complete and not summary.failed and summary.ran == 6
    resolved = with_memory(resolve_grid(grid))
    memory_eps = [ep for ep in resolved.episodes if ep.memory]
    assert {ep.agent for ep in memory_eps} == {"bayes-belief:full"}  # proagent keeps no gate: played without
    [key] = {k for ep in memory_eps for k in memory_keys(ep)}
    with MemoryStore(path) as store:
        [entry] = store.entries()
        assert entry["scope"] == key.scope and [h["seed"] for h in entry["history"]] == [0, 1, 2]
        assert [h["seq"] for h in entry["history"]] == [0, 1, 2]
        counts_before = store.recall(key).counts
        with sqlite3.connect(path) as conn:  # the store loses seed 1's commit
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("DELETE FROM episodes WHERE seq = 1")
        conn.close()
    logs = {ep.seed: (out / ep.log_name).read_bytes() for ep in memory_eps}
    notes = []
    again = run_grid(grid, out, memory=path, report=notes.append)
    assert again.ran == 2 and again.skipped_done == 4  # seeds 1 and 2 of the memory sequence, nothing else
    assert any("replaying its sequence from seed 1" in n for n in notes)
    with MemoryStore(path, readonly=True) as store:
        assert store.recall(key).counts == counts_before and store.recall(key).episodes == 3
    for ep in memory_eps:  # the replay played the same episodes
        assert (out / ep.log_name).read_bytes().splitlines()[1:-1] == logs[ep.seed].splitlines()[1:-1]


def test_overforge_three_players_one_entry_per_teammate(tmp_path):
    from beliefgate.eval.episode import run_episode

    path = tmp_path / "mem.db"
    for seed in (0, 1):
        result = run_episode("cramped_room_3p", "overforge", ["plater", "plater"], seed=seed, horizon=3, memory=path)
    assert [(e["seat"], e["seq"], e["recalled_episodes"]) for e in result.summary["memory"]["entries"]] == [
        (1, 1, 1), (2, 1, 1)]
    with MemoryStore(path, readonly=True) as store:
        assert [(e["partner"], e["seat"], e["episodes"]) for e in store.entries()] == [("plater", 1, 2),
                                                                                       ("plater", 2, 2)]


def test_play_sessions_share_the_memory(tmp_path):
    from beliefgate.viewer.play import PlayGame, PlaySettings

    path = tmp_path / "mem.db"
    settings = PlaySettings(layout="cramped_room", agent="bayes-belief", horizon=6, log=tmp_path / "logs/",
                            memory=path, human_name="ada")
    recalled = []
    for n in (1, 2):
        game = PlayGame(settings, tmp_path / f"s{n}.jsonl", session=str(n))
        recalled.append(game.agent.recalled[settings.human_seat])
        while not game.finished:
            game.press("interact")
            game.tick()
        assert game.summary["memory"]["entries"][0]["partner"] == "ada"
    assert recalled[0] is None and recalled[1].episodes == 1
    unplayed = PlayGame(settings, tmp_path / "s3.jsonl", session="3")
    assert "memory" not in unplayed.finish("disconnected")  # no step played: nothing committed
    with MemoryStore(path, readonly=True) as store:
        assert [(e["partner"], e["scope"], e["episodes"]) for e in store.entries()] == [("ada", "play", 2)]
