"""Paced load generator for the gate service (run in its own process; not a flood).

Opens ``--sessions`` sessions (K = 6 skills) on a running ``beliefgate serve`` and steps
each of them at ``--rate`` Hz for ``--duration`` seconds, on a fixed schedule: session
``s`` sends its step ``k`` at ``start + phase_s + k / rate`` (phases spread evenly over
one period), one keep-alive connection per session. A step that comes back late does not
shift the schedule; the next one goes when it is due (or at once if already overdue), so
a slow server shows up as latency and as schedule lag, not as a lower offered rate.

Measured per request: latency (send -> whole response read); lag (send time - scheduled
time: the generator's own delay, reported so that a generator that could not keep pace
is visible); errors (any status but 200, a transport error, or no answer within
``--timeout`` s). With ``--server-pid`` the server's CPU time over the stepping window is
read from /proc (Linux) and divided by the steps, and for every one-second window the p99
and the CPU seconds the rest of the machine used (``window_other_cpu_s``: busy time from
/proc/stat less the server's and the generator's), so that a slow second can be told
apart from another process taking the cores.

    python benchmarks/load_serve.py --url http://127.0.0.1:8765 --sessions 200 --rate 5 --duration 30

``benchmarks/bench_serve.py`` starts a server and runs this script as a subprocess
(``make bench``). Prints one JSON object on stdout (also written to ``--json``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
import time
from pathlib import Path
from typing import Optional

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from bench_serve import NUM_SKILLS, RawConnection, cpu_seconds, make_pool, schedule  # noqa: E402


def machine_busy() -> Optional[float]:
    """CPU seconds the whole machine has been busy (all cores; /proc/stat, Linux; else None)."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


async def _request(conn: RawConnection, path: str, body: bytes, timeout: float) -> tuple:
    return await asyncio.wait_for(conn.post(path, body), timeout)


async def run(url: str, sessions: int, rate: float, duration: float, seed: int = 0, timeout: float = 5.0,
              server_pid: Optional[int] = None, raw: Optional[str] = None) -> dict:
    host, port = url.rsplit("//", 1)[1].rstrip("/").split(":")
    port = int(port)
    _, _, bodies = make_pool(seed)
    create = json.dumps({"num_skills": NUM_SKILLS}).encode()
    conns = [await RawConnection(host, port).open() for _ in range(sessions)]
    ids = []
    for conn in conns:
        status, content = await _request(conn, "/v1/sessions", create, timeout)
        if status != 201:
            raise RuntimeError(f"creating a session failed: {status} {content[:200]!r}")
        ids.append(json.loads(content)["session_id"])
    period = 1.0 / rate
    steps_each = max(1, int(round(duration * rate)))
    latency = [[] for _ in range(sessions)]
    lag = [[] for _ in range(sessions)]
    sent = [[] for _ in range(sessions)]
    errors = {"status": 0, "transport": 0, "timeout": 0}
    statuses: dict = {}
    clock = time.perf_counter

    async def session_loop(s: int, start: float) -> None:
        conn = conns[s]
        path = f"/v1/sessions/{ids[s]}/step"
        phase = period * s / sessions
        for k in range(steps_each):
            due = start + phase + k * period
            wait = due - clock()
            if wait > 0:
                await asyncio.sleep(wait)
            t0 = clock()
            lag[s].append(t0 - due)
            sent[s].append(t0)
            try:
                status, _ = await _request(conn, path, bodies[schedule(s, k)], timeout)
            except asyncio.TimeoutError:
                errors["timeout"] += 1
                latency[s].append(clock() - t0)
                await conn.close()  # the answer may still come: never reuse this connection
                conns[s] = conn = await RawConnection(host, port).open()
                continue
            except (OSError, asyncio.IncompleteReadError, ValueError, IndexError) as exc:
                errors["transport"] += 1
                statuses[type(exc).__name__] = statuses.get(type(exc).__name__, 0) + 1
                latency[s].append(clock() - t0)
                conns[s] = conn = await RawConnection(host, port).open()
                continue
            latency[s].append(clock() - t0)
            if status != 200:
                errors["status"] += 1
                statuses[str(status)] = statuses.get(str(status), 0) + 1

    samples = []  # (time, machine busy, server CPU, generator CPU) once a second

    async def sampler(start: float) -> None:
        await asyncio.sleep(max(0.0, start - clock()))
        while True:
            samples.append((clock() - start, machine_busy(), server_pid and cpu_seconds(server_pid),
                            sum(os.times()[:2])))
            await asyncio.sleep(1.0)

    gc.freeze()  # the generator's own full collections would show up as latency
    cpu0 = None if server_pid is None else cpu_seconds(server_pid)
    start = clock() + 0.2
    watch = asyncio.create_task(sampler(start))
    await asyncio.gather(*(session_loop(s, start) for s in range(sessions)))
    wall = clock() - start
    cpu1 = None if server_pid is None else cpu_seconds(server_pid)
    watch.cancel()
    for conn in conns:
        await conn.close()
    if raw is not None:  # every request: session, send time (perf_counter), latency, lag (s)
        np.savez(raw, session=np.concatenate([np.full(len(x), s) for s, x in enumerate(sent)]),
                 sent=np.concatenate([np.asarray(x) for x in sent]), start=start,
                 latency=np.concatenate([np.asarray(x) for x in latency]),
                 lag=np.concatenate([np.asarray(x) for x in lag]))
    lat = np.concatenate([np.asarray(x) for x in latency]) * 1e3
    lg = np.concatenate([np.asarray(x) for x in lag]) * 1e3
    steps = int(lat.size)
    # per-second windows: is the tail spread over the run (machine load) or in a few bursts?
    second = ((np.concatenate([np.asarray(x) for x in sent]) - start) // 1.0).astype(int)
    windows = [lat[second == w] for w in np.unique(second)]
    window_p99 = np.array([np.percentile(w, 99) for w in windows if w.size])
    # CPU the rest of the machine (neither the server nor this generator) used in each second
    others = [None if None in (a[1], b[1], a[2], b[2]) else round((b[1] - a[1]) - (b[2] - a[2]) - (b[3] - a[3]), 3)
              for a, b in zip(samples, samples[1:])]
    return {
        "sessions": sessions, "rate_hz": rate, "duration_s": duration, "steps": steps,
        "offered_steps_per_s": sessions * rate, "achieved_steps_per_s": steps / wall, "wall_s": wall,
        "errors": sum(errors.values()), "error_kinds": errors, "error_statuses": statuses,
        "p50_ms": float(np.percentile(lat, 50)), "p90_ms": float(np.percentile(lat, 90)),
        "p99_ms": float(np.percentile(lat, 99)), "max_ms": float(lat.max()),
        "lag_p50_ms": float(np.percentile(lg, 50)), "lag_p99_ms": float(np.percentile(lg, 99)),
        "seconds": int(window_p99.size), "seconds_p99_over_20ms": int((window_p99 > 20.0).sum()),
        "median_second_p99_ms": float(np.median(window_p99)),
        "window_p99_ms": [round(float(x), 2) for x in window_p99],
        "window_other_cpu_s": others,
        "server_cpu_us_per_step": (None if cpu0 is None or cpu1 is None
                                   else (cpu1 - cpu0) / steps * 1e6),
        "load_avg": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }


def main(argv: Optional[list] = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="base URL of a running server, e.g. http://127.0.0.1:8765")
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--rate", type=float, default=5.0, help="steps per second per session")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of stepping")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds before a request counts as an error")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--server-pid", type=int, default=None, help="read this process's CPU time (Linux)")
    parser.add_argument("--json", type=str, default=None)
    parser.add_argument("--raw", type=str, default=None,
                        help="write every request's session, send time, latency and lag here (.npz)")
    args = parser.parse_args(argv)
    if args.sessions < 1 or not args.rate > 0 or not args.duration > 0:
        parser.error("need --sessions >= 1, --rate > 0 and --duration > 0")
    try:
        import uvloop  # lowers the generator's own cost per request

        runner, loop = uvloop.run, "uvloop"
    except ImportError:
        runner, loop = asyncio.run, "asyncio"
    result = runner(run(args.url, args.sessions, args.rate, args.duration, args.seed, args.timeout,
                        args.server_pid, args.raw))
    result["client_loop"] = loop
    text = json.dumps(result)
    if args.json:
        Path(args.json).write_text(text)
    print(text)
    return result


if __name__ == "__main__":
    main()
