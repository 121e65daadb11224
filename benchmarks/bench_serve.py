"""Load test of the gate service on 127.0.0.1: a flood for CPU per step, a paced run for latency.

Three parts, each against ``beliefgate serve`` started in a subprocess on a free
loopback port (no token):

1. **flood, no snapshot**: ``--sessions`` sessions (K = 6 skills) driven concurrently
   from this process, one keep-alive connection each, until ``--steps`` steps in total
   (default 200 sessions, 50,000 steps). Reported: throughput, p50/p99 latency, and the
   **server's CPU time per step** (from /proc, Linux only) -- the load-insensitive figure;
   plus the same work in this process with ``Gate.step`` (the baseline) and an exact
   comparison of every session's final posterior with it.
2. **flood, with ``--snapshot``** (every acknowledged step durable, group commit):
   ``--snapshot-steps`` steps (default 20,000) the same way; CPU per step again.
3. **paced**: ``benchmarks/load_serve.py`` in a *separate process* steps ``--paced-sessions``
   sessions (default 200) at ``--rate`` Hz (default 5) for ``--duration`` s (default 30);
   per-request p50/p99 latency, errors, the generator's own schedule lag and the server's
   CPU per step. Without a snapshot, and (``--paced-snapshot``) with one.

    python benchmarks/bench_serve.py               # all three, full size (~2 min)
    python benchmarks/bench_serve.py --quick       # smoke sizes
    python benchmarks/bench_serve.py --json out.json --skip-snapshot --skip-paced

Client and server share the machine's cores (the load of the machine is recorded in
``machine.load_avg``). It stops by itself: servers are terminated at the end and each
part is abandoned after ``--max-seconds``. Nothing binds other than 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import numpy as np

from beliefgate import Gate, GateParams

HOST = "127.0.0.1"
NUM_SKILLS = 6
NUM_ACTIONS = 6
POOL = 512
ROOT = Path(__file__).resolve().parents[1]


def make_pool(seed: int):
    """Random controller tables and actions, plus their pre-encoded request bodies."""
    rng = np.random.default_rng(seed)
    q = rng.normal(0.0, 1.5, size=(POOL, NUM_SKILLS, NUM_ACTIONS))
    lp = q - np.log(np.exp(q).sum(axis=-1, keepdims=True))
    actions = [int(a) for a in rng.integers(NUM_ACTIONS, size=POOL)]
    tables = [np.ascontiguousarray(t) for t in lp]
    bodies = [json.dumps({"action_logprobs": t.tolist(), "action": a}).encode() for t, a in zip(tables, actions)]
    return tables, actions, bodies


def schedule(session: int, step: int) -> int:
    """Which pool entry session ``session`` uses at its step ``step`` (same in both runs)."""
    return (session * 7919 + step * 31) % POOL


def split_steps(total: int, sessions: int) -> list:
    base, extra = divmod(total, sessions)
    return [base + (1 if s < extra else 0) for s in range(sessions)]


def in_process(params: GateParams, tables, actions, per_session) -> dict:
    """The same work with ``Gate.step``, one gate per session, round-robin like the server sees it."""
    gates = [Gate.from_logprobs(NUM_SKILLS, params) for _ in per_session]
    lat = np.empty(sum(per_session))
    clock = time.perf_counter
    i = 0
    started = clock()
    for step in range(max(per_session)):
        for s, gate in enumerate(gates):
            if step < per_session[s]:
                j = schedule(s, step)
                t0 = clock()
                gate.step(tables[j], actions[j])
                lat[i] = clock() - t0
                i += 1
    wall = clock() - started
    return {"steps": i, "wall_s": wall, "throughput": i / wall, "p50_us": float(np.percentile(lat, 50) * 1e6),
            "p99_us": float(np.percentile(lat, 99) * 1e6), "posteriors": [g.state.belief.belief for g in gates]}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> Optional[float]:
    """utime + stime of a process, from /proc (None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def start_server(port: int, sessions: int, snapshot: Optional[Path]) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "beliefgate.cli", "serve", "--host", HOST, "--port", str(port),
           "--max-sessions", str(sessions + 10), "--ttl", "0", "--log-level", "warning"]
    if snapshot is not None:
        cmd += ["--snapshot", str(snapshot)]
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stderr is not None:
        proc.stderr.close()


async def wait_healthy(client, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            if (await client.get("/v1/healthz")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.05)
    raise RuntimeError("server did not become healthy")


class RawConnection:
    """A minimal keep-alive HTTP/1.1 client on asyncio streams (POST with a JSON body).

    The default stepping client: httpx's AsyncClient costs several times the server's
    own CPU per request, which on a 2-core machine would measure the client.
    """

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.reader = self.writer = None

    async def open(self) -> "RawConnection":
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        return self

    async def post(self, path: str, body: bytes) -> tuple:
        head = (f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
        self.writer.write(head + body)
        status = int((await self.reader.readline()).split(b" ", 2)[1])
        length = 0
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return status, await self.reader.readexactly(length)

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            await self.writer.wait_closed()


async def drive(url: str, proc, params: GateParams, bodies, per_session, use_httpx: bool = False,
                serial_steps: int = 1000) -> dict:
    """Create the sessions, then step them all concurrently; every request timed."""
    import httpx

    n = len(per_session)
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
    headers = {"Content-Type": "application/json"}
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60.0) as client:
        await wait_healthy(client, proc)
        create = {"num_skills": NUM_SKILLS, "params": params.model_dump(mode="json")}
        ids = []
        for _ in range(n):
            r = await client.post("/v1/sessions", json=create)
            r.raise_for_status()
            ids.append(r.json()["session_id"])
        latencies = [[] for _ in range(n)]
        finals: list = [None] * n
        errors = 0
        host, port = url.rsplit("//", 1)[1].split(":")


        async def worker(s: int) -> None:
            nonlocal errors
            path = f"/v1/sessions/{ids[s]}/step"
            clock = time.perf_counter
            lat = latencies[s]
            last = None
            conn = None if use_httpx else await RawConnection(host, int(port)).open()
            try:
                for step in range(per_session[s]):
                    body = bodies[schedule(s, step)]
                    t0 = clock()
                    if conn is None:
                        r = await client.post(path, content=body, headers=headers)
                        status, content = r.status_code, r.content
                    else:
                        status, content = await conn.post(path, body)
                    lat.append(clock() - t0)
                    if status != 200:
                        errors += 1
                    else:
                        last = content
            finally:
                if conn is not None:
                    await conn.close()
            finals[s] = None if last is None else json.loads(last)["posterior"]

        # unloaded latency: one extra session, one request at a time
        serial = []
        r = await client.post("/v1/sessions", json=create)
        r.raise_for_status()
        path = f"/v1/sessions/{r.json()['session_id']}/step"
        conn = None if use_httpx else await RawConnection(host, int(port)).open()
        try:
            for step in range(serial_steps):
                body = bodies[schedule(n, step)]
                t0 = time.perf_counter()
                if conn is None:
                    status = (await client.post(path, content=body, headers=headers)).status_code
                else:
                    status = (await conn.post(path, body))[0]
                serial.append(time.perf_counter() - t0)
                errors += status != 200
        finally:
            if conn is not None:
                await conn.close()

        cpu0 = cpu_seconds(proc.pid)
        started = time.perf_counter()
        await asyncio.gather(*(worker(s) for s in range(n)))
        wall = time.perf_counter() - started
        cpu1 = cpu_seconds(proc.pid)
    lat = np.concatenate([np.asarray(x) for x in latencies])
    serial = np.asarray(serial)
    return {"serial_steps": int(serial.size), "serial_throughput": serial.size / serial.sum(),
            "serial_p50_us": float(np.percentile(serial, 50) * 1e6),
            "serial_p99_us": float(np.percentile(serial, 99) * 1e6),
            "sessions": n, "steps": int(lat.size), "errors": errors, "wall_s": wall,
            "throughput": lat.size / wall, "p50_us": float(np.percentile(lat, 50) * 1e6),
            "p99_us": float(np.percentile(lat, 99) * 1e6), "mean_us": float(lat.mean() * 1e6),
            "server_cpu_us_per_step": None if cpu0 is None or cpu1 is None else (cpu1 - cpu0) / lat.size * 1e6,
            "finals": finals}


def flood(params: GateParams, bodies, per_session, snapshot: bool, client: str, serial_steps: int,
          max_seconds: float) -> dict:
    """Part 1 or 2: one server, every session stepping as fast as it is answered."""
    snap_dir = tempfile.TemporaryDirectory(prefix="bench-serve-") if snapshot else None
    port = free_port()
    proc = start_server(port, len(per_session), Path(snap_dir.name) / "s.pkl" if snap_dir else None)
    try:
        return asyncio.run(asyncio.wait_for(
            drive(f"http://{HOST}:{port}", proc, params, bodies, per_session, client == "httpx",
                  serial_steps=serial_steps),
            timeout=max_seconds))
    finally:
        stop_server(proc)
        if snap_dir is not None:
            snap_dir.cleanup()


def wait_healthy_sync(url: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            if httpx.get(url + "/v1/healthz", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.05)
    raise RuntimeError("server did not become healthy")


def paced(sessions: int, rate: float, duration: float, snapshot: bool, seed: int, max_seconds: float) -> dict:
    """Part 3: the paced load generator (``load_serve.py``) in its own process."""
    snap_dir = tempfile.TemporaryDirectory(prefix="bench-serve-") if snapshot else None
    port = free_port()
    url = f"http://{HOST}:{port}"
    proc = start_server(port, sessions, Path(snap_dir.name) / "s.pkl" if snap_dir else None)
    try:
        wait_healthy_sync(url, proc)
        cmd = [sys.executable, str(Path(__file__).resolve().parent / "load_serve.py"), "--url", url,
               "--sessions", str(sessions), "--rate", str(rate), "--duration", str(duration),
               "--seed", str(seed), "--server-pid", str(proc.pid)]
        out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=max_seconds)
        if out.returncode != 0:
            raise RuntimeError(f"load generator failed ({out.returncode}): {out.stderr[-2000:]}")
        result = json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        stop_server(proc)
        if snap_dir is not None:
            snap_dir.cleanup()
    result["snapshot"] = snapshot
    return result


def server_loop() -> str:
    """The event loop ``beliefgate serve`` runs on here (uvicorn takes uvloop when it is installed)."""
    import importlib.util

    return "uvloop" if importlib.util.find_spec("uvloop") is not None else "asyncio"


def _cpu(x) -> str:
    return "n/a" if x is None else f"{x:.0f} us"


def main(argv: Optional[list] = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke sizes (20 sessions, 1,000 steps, 3 s paced)")
    parser.add_argument("--sessions", type=int, default=None, help="flood: concurrent sessions (default 200)")
    parser.add_argument("--steps", type=int, default=None, help="flood: steps in total (default 50,000)")
    parser.add_argument("--snapshot", action="store_true",
                        help="run part 1 with a snapshot file too (the old single-run mode)")
    parser.add_argument("--snapshot-steps", type=int, default=None, help="part 2: steps in total (default 20,000)")
    parser.add_argument("--skip-snapshot", action="store_true", help="skip part 2")
    parser.add_argument("--skip-paced", action="store_true", help="skip part 3")
    parser.add_argument("--paced-sessions", type=int, default=None, help="part 3: sessions (default 200)")
    parser.add_argument("--rate", type=float, default=5.0, help="part 3: steps per second per session")
    parser.add_argument("--duration", type=float, default=None, help="part 3: seconds of stepping (default 30)")
    parser.add_argument("--paced-snapshot", action="store_true", help="part 3 again with a snapshot file")
    parser.add_argument("--client", choices=("raw", "httpx"), default="raw",
                        help="flood client: a minimal asyncio HTTP/1.1 client (default) or httpx.AsyncClient")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random tables")
    parser.add_argument("--max-seconds", type=float, default=900.0, help="abandon a part after this long")
    parser.add_argument("--json", type=str, default=None, help="write the results here")
    args = parser.parse_args(argv)
    sessions = args.sessions or (20 if args.quick else 200)
    total = args.steps or (1_000 if args.quick else 50_000)
    snap_total = args.snapshot_steps or (min(total, 1_000) if args.quick else 20_000)
    if sessions < 1 or total < sessions or snap_total < sessions:
        parser.error("need --sessions >= 1 and --steps, --snapshot-steps >= --sessions")
    params = GateParams()
    tables, actions, bodies = make_pool(args.seed)
    per_session = split_steps(total, sessions)
    serial = 100 if args.quick else 1000
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None

    base = in_process(params, tables, actions, per_session)
    http = flood(params, bodies, per_session, args.snapshot, args.client, serial, args.max_seconds)
    equal = all(f is not None and np.array_equal(np.asarray(f), b) for f, b in zip(http.pop("finals"),
                                                                                     base.pop("posteriors")))
    http["final_posteriors_equal"] = bool(equal)
    snap = None
    if not args.skip_snapshot:
        snap = flood(params, bodies, split_steps(snap_total, sessions), True, args.client, serial // 10,
                     args.max_seconds)
        snap.pop("finals")
    paced_runs = []
    if not args.skip_paced:
        n = args.paced_sessions or (8 if args.quick else 200)
        duration = args.duration or (3.0 if args.quick else 30.0)
        for with_snapshot in (False, True) if args.paced_snapshot else (False,):
            paced_runs.append(paced(n, args.rate, duration, with_snapshot, args.seed, args.max_seconds))
    result = {
        "config": {"sessions": sessions, "steps": total, "snapshot_steps": snap_total, "num_skills": NUM_SKILLS,
                   "num_actions": NUM_ACTIONS, "snapshot": args.snapshot, "client": args.client, "seed": args.seed,
                   "params": params.model_dump(mode="json"), "quick": args.quick},
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load_avg": load_before,
                    "server_loop": server_loop(),
                    "load_avg_end": os.getloadavg() if hasattr(os, "getloadavg") else None},
        "in_process": base,
        "http": http,
        "http_snapshot": snap,
        "paced": paced_runs,
        "ratios": {
            "throughput_in_process_over_http": base["throughput"] / http["throughput"],
            "p50_http_over_in_process": http["p50_us"] / base["p50_us"],
            "p99_http_over_in_process": http["p99_us"] / base["p99_us"],
            "serial_p50_http_over_in_process": http["serial_p50_us"] / base["p50_us"],
        },
    }
    print(f"gate service load test on {HOST}; {os.cpu_count()} CPUs shared by client and server; "
          f"load average at start {load_before}; server event loop {server_loop()}")
    print(f"1. flood: {sessions} sessions, {http['steps']} steps ({'snapshot on' if args.snapshot else 'no snapshot'}, "
          f"{args.client} client)")
    print(f"{'':28s}{'steps/s':>12s}{'p50 (us)':>12s}{'p99 (us)':>12s}")
    print(f"{'in-process Gate.step':28s}{base['throughput']:12.0f}{base['p50_us']:12.1f}{base['p99_us']:12.1f}")
    print(f"{'HTTP /step, one at a time':28s}{http['serial_throughput']:12.0f}"
          f"{http['serial_p50_us']:12.1f}{http['serial_p99_us']:12.1f}")
    print(f"{'HTTP /step, ' + str(sessions) + ' concurrent':28s}{http['throughput']:12.0f}"
          f"{http['p50_us']:12.1f}{http['p99_us']:12.1f}")
    r = result["ratios"]
    print(f"   server CPU {_cpu(http['server_cpu_us_per_step'])}/step (target <= 300 us); in-process Gate.step "
          f"p50 {base['p50_us']:.0f} us; one request alone takes {r['serial_p50_http_over_in_process']:.0f}x "
          f"the in-process call (p50)")
    print(f"   errors: {http['errors']}; final posteriors equal to in-process: {equal}")
    if snap is not None:
        print(f"2. flood with --snapshot: {sessions} sessions, {snap['steps']} steps: {snap['throughput']:.0f} steps/s, "
              f"p50 {snap['p50_us'] / 1e3:.1f} ms, p99 {snap['p99_us'] / 1e3:.1f} ms; server CPU "
              f"{_cpu(snap['server_cpu_us_per_step'])}/step (target <= 1000 us); errors {snap['errors']}")
    for run in paced_runs:
        print(f"3. paced{' with --snapshot' if run['snapshot'] else ''} (load_serve.py, own process): "
              f"{run['sessions']} sessions x {run['rate_hz']:g} Hz x {run['duration_s']:g} s = {run['steps']} steps "
              f"({run['achieved_steps_per_s']:.0f}/s): p50 {run['p50_ms']:.2f} ms, p99 {run['p99_ms']:.2f} ms "
              f"(target <= 20 ms), max {run['max_ms']:.1f} ms; errors {run['errors']}; generator lag p99 "
              f"{run['lag_p99_ms']:.2f} ms; server CPU {_cpu(run['server_cpu_us_per_step'])}/step; "
              f"p99 over 20 ms in {run['seconds_p99_over_20ms']} of {run['seconds']} one-second windows "
              f"(median window p99 {run['median_second_p99_ms']:.2f} ms)")
        others = [x for x in run.get("window_other_cpu_s") or () if x is not None]
        if others:
            print(f"   other processes used {np.median(others):.2f} cores in the median second "
                  f"({max(others):.2f} at most) beside server and generator")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
