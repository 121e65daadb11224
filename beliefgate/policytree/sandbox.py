"""Run generated policy-tree code in a separate, resource-limited worker process.

::

    from beliefgate.policytree import Sandbox, SandboxViolation, SandboxTimeout
    with Sandbox(code, entry="PredictTeammateThenPlan", cpu_ms=50, memory_mb=256) as box:
        partner_skill, own_skill = box.call(state_dict)

The worker (``_worker.py``, started as ``python -s -P`` with an environment of only
``PYTHONHASHSEED=0``, which isolates it as ``-I`` would with reproducible set order) compiles
the code with RestrictedPython after its own AST allow-list pass, under an address-space
limit, a lifetime CPU limit and no right to create files or processes. See that module
for the rules. This side adds:

* a wall-clock deadline on every answer (a C-level loop the CPU alarm cannot interrupt
  is killed from here), a per-episode CPU budget summed from the worker's own
  accounting, and a cap on the size of every answer;
* validation of the result (two skill names from the allowed sets) on this side too:
  nothing the worker sends is trusted, and only JSON is read from it (never pickle);
* kill and restart: after a timeout, a violation during a call, or a broken pipe, the
  worker is killed at once and a fresh one is started on the next :meth:`Sandbox.call`.
  :meth:`Sandbox.close`, the context manager and a finaliser make sure no worker
  outlives its sandbox (nor the interpreter).

``Sandbox(...)`` raises :class:`SandboxViolation` for code it refuses; ``call`` raises
:class:`SandboxTimeout` past a limit and :class:`SandboxViolation` for a bad result or an
error inside the tree. Both carry ``rule`` (the rule broken) and name it in the message.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from beliefgate.errors import BeliefgateError, InputError, RuntimeFailure
from beliefgate.policytree._worker import MAX_CODE_CHARS

WORKER = Path(__file__).with_name("_worker.py")

#: the six Overcooked skills (the tree's action vocabulary, SPEC §2)
SKILLS: Tuple[str, ...] = ("pickup_onion", "put_onion_in_pot", "pickup_dish", "fill_dish_with_soup",
                           "deliver_soup", "place_obj_on_counter")


class SandboxError(BeliefgateError):
    """Base of the sandbox's errors; ``rule`` names the limit or rule involved."""

    def __init__(self, rule: str, message: str):
        super().__init__(f"[{rule}] {message}")
        self.rule = rule
        self.detail = message


class SandboxViolation(SandboxError, InputError):
    """The code breaks a sandbox rule: refused at load, or a bad result / error / forbidden access in a call."""


class SandboxTimeout(SandboxError, RuntimeFailure):
    """A time limit was exceeded: CPU per call, CPU per episode, or the wall-clock deadline."""


class SandboxUnavailable(SandboxError, RuntimeFailure):
    """The worker process could not be started or answered nothing usable at start-up."""


def _reap(proc: subprocess.Popen) -> None:
    """Kill a worker and collect it (idempotent; also the finaliser)."""
    if proc.poll() is None:
        proc.kill()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL does not fail
        proc.kill()
    for stream in (proc.stdin, proc.stdout):
        if stream is not None and not stream.closed:
            try:
                stream.close()
            except OSError:  # a broken pipe on close: the process is gone, which is the point
                continue


class Sandbox:
    """One worker process for one piece of policy-tree code.

    Parameters
    ----------
    code, entry
        Python source and the name of the function to call with the state dict.
    cpu_ms
        CPU time one call may use (the worker's ``ITIMER_PROF`` alarm, checked again after
        the call). The module body gets ``max(4 * cpu_ms, 200)`` ms once.
    memory_mb
        Address-space limit of the worker (``RLIMIT_AS``).
    episode_cpu_ms
        CPU time all calls between two :meth:`new_episode` calls may use together.
    self_skills, partner_skills
        Allowed answers for the own skill (second result) and the predicted partner
        skill (first result).
    wall_s
        Wall-clock deadline per call (default ``max(2, 40 * cpu_ms / 1000)`` s).
    max_output_bytes
        Longest answer line accepted from the worker.
    """

    def __init__(self, code: str, entry: str = "PredictTeammateThenPlan", cpu_ms: float = 50, memory_mb: int = 256,
                 *, episode_cpu_ms: float = 5000, self_skills: Sequence[str] = SKILLS,
                 partner_skills: Sequence[str] = SKILLS, wall_s: Optional[float] = None,
                 max_output_bytes: int = 65536, startup_timeout_s: float = 30.0):
        if not isinstance(code, str):
            raise InputError(f"code must be a str, got {type(code).__name__}")
        if not isinstance(entry, str) or not entry.isidentifier() or entry.startswith("_"):
            raise InputError(f"entry must be a public identifier, got {entry!r}")
        if not 0 < cpu_ms <= 10_000:
            raise InputError(f"cpu_ms must be in (0, 10000], got {cpu_ms}")
        if not 32 <= memory_mb <= 16_384:
            raise InputError(f"memory_mb must be in [32, 16384], got {memory_mb}")
        if episode_cpu_ms < cpu_ms:
            raise InputError(f"episode_cpu_ms ({episode_cpu_ms}) must be at least cpu_ms ({cpu_ms})")
        for what, skills in (("self_skills", self_skills), ("partner_skills", partner_skills)):
            if not skills or any(not isinstance(s, str) or not s for s in skills):
                raise InputError(f"{what} must be a non-empty list of skill names, got {list(skills)!r}")
        if len(code) > MAX_CODE_CHARS:  # checked here too: the worker would first read it all
            raise SandboxViolation("code-size", f"code has {len(code)} characters (limit {MAX_CODE_CHARS})")
        self.code = code
        self.entry = entry
        self.cpu_ms = float(cpu_ms)
        self.memory_mb = int(memory_mb)
        self.episode_cpu_ms = float(episode_cpu_ms)
        self.self_skills = tuple(self_skills)
        self.partner_skills = tuple(partner_skills)
        self.wall_s = float(wall_s) if wall_s is not None else max(2.0, 40.0 * self.cpu_ms / 1000.0)
        self.max_output_bytes = int(max_output_bytes)
        self.startup_timeout_s = float(startup_timeout_s)
        #: limits the worker reported it could apply (e.g. ``{"nproc": True}``)
        self.limits: Dict[str, bool] = {}
        self.calls = 0
        self.restarts = 0
        self.episode_used_ms = 0.0
        #: CPU the current worker's calls reported over its life (against its lifetime limit)
        self.worker_used_ms = 0.0
        self.last_printed = ""
        self._proc: Optional[subprocess.Popen] = None
        self._finalizer: Optional[weakref.finalize] = None
        self._buffer = b""
        self._closed = False
        self._start()

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def pid(self) -> Optional[int]:
        """Process id of the current worker (None when none is running)."""
        return self._proc.pid if self._proc is not None else None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def close(self) -> None:
        """Kill the worker (if any). The sandbox cannot be used afterwards."""
        self._closed = True
        self._kill()

    def new_episode(self) -> None:
        """Start a new episode: a fresh per-episode CPU budget, and the module body run again in
        fresh globals, so that nothing the tree stored in one episode reaches the next (episodes
        are independent of the order they run in). A worker that fails the reset is dropped;
        the next call starts a new one."""
        self.episode_used_ms = 0.0
        if self._proc is None or self._closed:
            return
        if self.worker_used_ms + self.episode_cpu_ms > 500.0 * self.lifetime_cpu_s:
            # the lifetime limit is a backstop against a runaway worker, not a budget across
            # episodes: a tree within its per-episode budget every episode must not meet it.
            # Before the next episode could cross half of it, the next call starts a fresh worker
            self._kill()
            return
        try:
            reply = self._exchange({"reset": True}, self._load_wall_s)
        except SandboxError:
            self._kill()
            return
        if not (reply.get("ok") and reply.get("stage") == "reset"):
            self._kill()

    @property
    def _load_wall_s(self) -> float:
        """Wall-clock deadline of a module-body run (load, episode reset): 10x its CPU limit."""
        return max(2.0, 10.0 * max(4.0 * self.cpu_ms, 200.0) / 1000.0)

    def _kill(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # runs _reap once and detaches
        self._finalizer = None
        self._proc = None
        self._buffer = b""

    @property
    def lifetime_cpu_s(self) -> int:
        """The worker's RLIMIT_CPU (s): a backstop; :meth:`new_episode` replaces a worker long before it."""
        return int(max(10.0, 4.0 * self.episode_cpu_ms / 1000.0 + 5.0))

    def _start(self) -> None:
        lifetime_cpu_s = self.lifetime_cpu_s
        self.worker_used_ms = 0.0
        try:
            # -s -P and a clean environment isolate the worker as -I would; -I would also ignore
            # PYTHONHASHSEED, and a fixed hash seed makes set iteration order reproducible
            env = {"PYTHONHASHSEED": "0"}
            if threading.current_thread() is threading.main_thread():
                # Linux ties PR_SET_PDEATHSIG to the *thread* that started the child: asked for only
                # from the main thread, which lives as long as the process (a worker started from a
                # short-lived thread would be killed when that thread ends)
                env["BELIEFGATE_PARENT_PID"] = str(os.getpid())
            proc = subprocess.Popen([sys.executable, "-s", "-P", str(WORKER)], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    env=env, close_fds=True, cwd="/")
        except OSError as exc:
            raise SandboxUnavailable("worker-start", f"cannot start the sandbox worker: {exc}") from exc
        self._proc = proc
        self._finalizer = weakref.finalize(self, _reap, proc)
        init = {"code": self.code, "entry": self.entry, "cpu_ms": self.cpu_ms, "memory_mb": self.memory_mb,
                "lifetime_cpu_s": lifetime_cpu_s, "self_skills": list(self.self_skills),
                "partner_skills": list(self.partner_skills)}
        try:
            started = self._exchange(init, self.startup_timeout_s, starting=True)
            if started.get("stage") != "started":
                raise SandboxUnavailable("worker-start", "the worker did not report its start")
            limits = started.get("limits")
            self.limits = {str(k): bool(v) for k, v in limits.items()} if isinstance(limits, dict) else {}
            reply = self._reply(self._load_wall_s)
        except SandboxError:
            self._kill()
            raise
        if not reply.get("ok"):
            self._kill()
            raise self._error(reply)

    # ------------------------------------------------------------------ calls
    def call(self, state: Mapping[str, Any]) -> Tuple[str, str]:
        """Run the tree on one state dict; returns ``(predicted_partner_skill, own_skill)``."""
        if self._closed:
            raise InputError("this sandbox is closed")
        if not isinstance(state, Mapping):
            raise InputError(f"state must be a mapping, got {type(state).__name__}")
        if self.episode_used_ms > self.episode_cpu_ms:
            raise SandboxTimeout("cpu-per-episode", f"the tree used {self.episode_used_ms:.1f} ms of CPU this "
                                                    f"episode (limit {self.episode_cpu_ms:g} ms)")
        if self._proc is None:
            self.restarts += 1
            self._start()
        started = time.perf_counter()
        try:
            reply = self._exchange({"state": dict(state)}, self.wall_s)
        except SandboxError:
            self._kill()
            self._charge_failure(started)
            raise
        self.calls += 1
        if not reply.get("ok"):
            self._kill()
            self._charge_failure(started)
            raise self._error(reply)
        result = reply.get("result")
        try:
            used = float(reply.get("cpu_ms", 0.0))
        except (TypeError, ValueError):
            self._kill()
            raise SandboxViolation("protocol", f"the worker reported a CPU time of {reply.get('cpu_ms')!r}") from None
        self.episode_used_ms += max(used, 0.0)
        total = reply.get("total_cpu_s")  # the worker's whole CPU time (its reading, loads included)
        total_ms = 1000.0 * total if isinstance(total, (int, float)) and 0.0 <= total < 1e9 else 0.0
        self.worker_used_ms = max(self.worker_used_ms + max(used, 0.0), total_ms)
        printed = reply.get("printed", "")
        self.last_printed = printed if isinstance(printed, str) else ""
        partner, own = self._validate(result)
        if self.episode_used_ms > self.episode_cpu_ms:
            self._kill()
            raise SandboxTimeout("cpu-per-episode", f"the tree used {self.episode_used_ms:.1f} ms of CPU this "
                                                    f"episode (limit {self.episode_cpu_ms:g} ms)")
        return partner, own

    def _charge_failure(self, started: float) -> None:
        """A failed call (timeout, kill, violation) is charged its wall time, at least ``cpu_ms``,
        to the episode's budget: the worker's own CPU count died with it, and without a charge a
        tree whose calls keep failing (a C-level loop killed at the wall-clock deadline every
        step) would never exhaust the budget."""
        self.episode_used_ms += max(self.cpu_ms, 1000.0 * (time.perf_counter() - started))

    def _validate(self, result: Any) -> Tuple[str, str]:
        if not isinstance(result, list) or len(result) != 2 or not all(isinstance(r, str) for r in result):
            self._kill()
            raise SandboxViolation("result", f"expected two skill names, got {str(result)[:120]}")
        partner, own = result
        if partner not in self.partner_skills or own not in self.self_skills:
            self._kill()
            raise SandboxViolation("result", f"skills {partner[:64]!r}, {own[:64]!r} are not in the allowed sets")
        return partner, own

    # ------------------------------------------------------------------ protocol
    def _exchange(self, message: Dict[str, Any], timeout_s: float, starting: bool = False) -> Dict[str, Any]:
        proc = self._proc
        try:
            data = json.dumps(message, allow_nan=False).encode() + b"\n"
        except (TypeError, ValueError) as exc:
            raise InputError(f"the state must be plain JSON data: {exc}") from None
        try:
            proc.stdin.write(data)
            proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise self._died(starting) from None
        return self._reply(timeout_s, starting)

    def _reply(self, timeout_s: float, starting: bool = False) -> Dict[str, Any]:
        line = self._read_line(timeout_s, starting)
        try:
            reply = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            raise SandboxViolation("protocol", f"the worker sent something that is not JSON: {line[:80]!r}") from None
        if not isinstance(reply, dict):
            raise SandboxViolation("protocol", "the worker's answer is not a JSON object")
        return reply

    def _read_line(self, timeout_s: float, starting: bool) -> bytes:
        fd = self._proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                if starting:
                    raise SandboxUnavailable("worker-start", f"the worker did not answer within {timeout_s:g} s")
                raise SandboxTimeout("wall-clock", f"no answer within {timeout_s:g} s of wall-clock time")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise self._died(starting)
            self._buffer += chunk
            if len(self._buffer) > self.max_output_bytes:
                raise SandboxViolation("output-size", f"the worker's answer exceeds {self.max_output_bytes} bytes")
        line, _, rest = self._buffer.partition(b"\n")
        self._buffer = rest
        if len(line) > self.max_output_bytes:
            raise SandboxViolation("output-size", f"the worker's answer exceeds {self.max_output_bytes} bytes")
        return line

    def _died(self, starting: bool) -> SandboxError:
        proc = self._proc
        try:
            code = proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        if code is not None and code < 0:
            import signal

            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            if name == "SIGXCPU":
                return SandboxTimeout("cpu-lifetime", "the worker was stopped by SIGXCPU (its lifetime CPU limit)")
            return SandboxViolation("worker-died", f"the worker died from {name}")
        if starting:
            return SandboxUnavailable("worker-start", f"the worker exited during start-up (status {code})")
        return SandboxViolation("worker-died", f"the worker exited (status {code})")

    @staticmethod
    def _error(reply: Dict[str, Any]) -> SandboxError:
        rule = str(reply.get("rule", "unknown"))[:64]
        message = str(reply.get("message", ""))[:1000]
        if reply.get("kind") == "timeout":
            return SandboxTimeout(rule, message)
        return SandboxViolation(rule, message)

    def __repr__(self) -> str:
        return (f"Sandbox(entry={self.entry!r}, cpu_ms={self.cpu_ms:g}, memory_mb={self.memory_mb}, "
                f"pid={self.pid}, calls={self.calls}, restarts={self.restarts})")
