"""The sandbox worker: the only process where generated policy-tree code ever runs.

Started by :class:`beliefgate.policytree.sandbox.Sandbox` as ``python -s -P <this file>``
with an environment holding only ``PYTHONHASHSEED=0`` (so that iterating a set of strings
gives the same order in every worker and every run). It imports only the standard library and RestrictedPython
(never beliefgate), so nothing of the parent's state is reachable from here.

Protocol: one JSON object per line on stdin/stdout. The first line (from the trusted
parent) carries the code and the limits; the worker then applies its resource limits,
checks and compiles the code, runs the module body and answers ``{"ok": true}`` or a
refusal (after a first ``{"ok": true, "stage": "started"}`` once the limits are in place, so that
the parent can tell a slow start from slow code). ``{"reset": true}`` (a new episode) runs the
module body again in fresh globals and answers ``{"ok": true, "stage": "reset"}``. Every other
line is ``{"state": {...}}``; the answer is
``{"ok": true, "result": [a, b], "cpu_ms": ..., "total_cpu_s": ..., "printed": "..."}``
or ``{"ok": false, "kind": "violation" | "timeout", "rule": ..., "message": ...}``.
End of input ends the worker.

Checks (in addition to RestrictedPython's own transformer):

* top level: only function definitions, assignments (evaluated in the sandbox when the module
  body runs), docstrings, ``pass``;
* no ``import``, ``class``, ``global``/``nonlocal``, ``try``, ``with``, ``yield``,
  ``async``/``await``, ``del``, decorators;
* no name or argument starting with ``_``; no use of ``getattr``-like or escape
  builtins (``eval``, ``exec``, ``open``, ``type``, ``format``, ``exit``, ...);
* attribute access only to a short allow-list of plain-data methods (``get``,
  ``items``, ``count``, ``lower``, ...), checked statically and again at run time
  (the object must be a dict, list, tuple, str or set);
* size limits on the code and the number of AST nodes.

Limits: ``RLIMIT_AS`` (memory), ``RLIMIT_CPU`` (lifetime CPU backstop), no new files
(``RLIMIT_FSIZE`` 0) or processes (``RLIMIT_NPROC`` 0), CPU time per call through
``ITIMER_PROF``; the parent adds a wall-clock deadline and kills the process past it.
"""

from __future__ import annotations

import ast
import json
import operator
import os
import resource
import signal
import sys
import time

from RestrictedPython import compile_restricted_exec
from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence

MAX_CODE_CHARS = 64_000
MAX_AST_NODES = 20_000
MAX_PRINTED_CHARS = 2_000
MAX_SKILL_CHARS = 64
RECURSION_LIMIT = 200

#: methods of plain data the tree may call (nothing that reaches an object's type or frame)
ALLOWED_ATTRIBUTES = frozenset({
    "get", "keys", "values", "items", "count", "index", "append", "copy",
    "lower", "upper", "strip", "lstrip", "rstrip", "startswith", "endswith", "split", "join",
    "replace", "isdigit", "union", "intersection", "difference", "issubset", "issuperset",
})
SAFE_TYPES = (dict, list, tuple, str, set, frozenset)

#: names refused outright, even as local variables (escape hatches and process control)
FORBIDDEN_NAMES = frozenset({
    "getattr", "setattr", "delattr", "hasattr", "eval", "exec", "compile", "open", "globals", "locals",
    "vars", "dir", "type", "object", "super", "format", "input", "breakpoint", "help", "memoryview",
    "classmethod", "staticmethod", "property", "exit", "quit", "id", "callable", "issubclass",
    "bytearray", "bytes", "frozenset", "iter", "next", "print_function", "builtins", "copyright",
    "credits", "license", "printed",
})

FORBIDDEN_NODES = {
    ast.Import: "import", ast.ImportFrom: "import", ast.ClassDef: "class", ast.AsyncFunctionDef: "async",
    ast.Await: "async", ast.AsyncFor: "async", ast.AsyncWith: "async", ast.Global: "global",
    ast.Nonlocal: "global", ast.Try: "try", ast.With: "with", ast.Yield: "yield", ast.YieldFrom: "yield",
    ast.Delete: "delete",
}
if hasattr(ast, "TryStar"):
    FORBIDDEN_NODES[ast.TryStar] = "try"

TOP_LEVEL = (ast.FunctionDef, ast.Assign, ast.AnnAssign, ast.Pass)


class Refusal(BaseException):
    """A rule broken (statically or at run time). BaseException: tree code cannot catch it anyway."""

    def __init__(self, kind: str, rule: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.rule = rule
        self.message = message


class CpuLimit(BaseException):
    """Raised by the ITIMER_PROF handler inside the tree call."""


# ------------------------------------------------------------------------------- static checks
def check_source(code: str, entry: str) -> None:
    """My own AST allow-list pass; raises :class:`Refusal` naming the rule."""
    if not isinstance(code, str) or not code.strip():
        raise Refusal("violation", "empty-code", "no code given")
    if len(code) > MAX_CODE_CHARS:
        raise Refusal("violation", "code-size", f"code has {len(code)} characters (limit {MAX_CODE_CHARS})")
    try:
        tree = ast.parse(code, mode="exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise Refusal("violation", "syntax", f"{type(exc).__name__}: {exc}") from None
    nodes = 0
    for node in ast.walk(tree):
        nodes += 1
        if nodes > MAX_AST_NODES:
            raise Refusal("violation", "code-size", f"more than {MAX_AST_NODES} syntax nodes")
        rule = FORBIDDEN_NODES.get(type(node))
        if rule is not None:
            raise Refusal("violation", rule, f"line {getattr(node, 'lineno', '?')}: '{type(node).__name__}' "
                                             f"statements are not allowed")
        if isinstance(node, (ast.FunctionDef, ast.Lambda)):
            if isinstance(node, ast.FunctionDef) and node.decorator_list:
                raise Refusal("violation", "decorator", f"line {node.lineno}: decorators are not allowed")
            names = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
            names += [a.arg for a in (node.args.vararg, node.args.kwarg) if a is not None]
            if isinstance(node, ast.FunctionDef):
                names.append(node.name)
            for name in names:
                _check_name(name, node)
        elif isinstance(node, ast.Name):
            _check_name(node.id, node)
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                raise Refusal("violation", "private-attribute",
                              f"line {node.lineno}: attribute {node.attr!r} (names starting with '_' are private)")
            if node.attr not in ALLOWED_ATTRIBUTES:
                raise Refusal("violation", "attribute", f"line {node.lineno}: attribute {node.attr!r} is not "
                                                        f"allowed (allowed: {', '.join(sorted(ALLOWED_ATTRIBUTES))})")
        elif isinstance(node, ast.arg):
            _check_name(node.arg, node)
        elif isinstance(node, ast.keyword) and node.arg is not None:
            _check_name(node.arg, node)
        elif isinstance(node, ast.ExceptHandler):  # unreachable (try is refused) but kept explicit
            raise Refusal("violation", "try", "exception handlers are not allowed")
    for stmt in tree.body:
        is_doc = isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)
        if not (is_doc or isinstance(stmt, TOP_LEVEL)):
            raise Refusal("violation", "top-level-statement",
                          f"line {stmt.lineno}: only function definitions and assignments may appear at the top level, "
                          f"not '{type(stmt).__name__}'")
    if not any(isinstance(s, ast.FunctionDef) and s.name == entry for s in tree.body):
        raise Refusal("violation", "entry-missing", f"no top-level function named {entry!r}")


def _check_name(name: str, node: ast.AST) -> None:
    line = getattr(node, "lineno", "?")
    if name.startswith("_"):
        raise Refusal("violation", "private-name", f"line {line}: name {name!r} (names starting with '_' are private)")
    if name in FORBIDDEN_NAMES:
        raise Refusal("violation", "forbidden-name", f"line {line}: name {name!r} is not available in the sandbox")


# ------------------------------------------------------------------------------- run-time guards
def guarded_getattr(obj, name, default=None):
    if name not in ALLOWED_ATTRIBUTES or name.startswith("_"):
        raise Refusal("violation", "attribute", f"attribute {name!r} is not allowed")
    if type(obj) not in SAFE_TYPES:
        raise Refusal("violation", "attribute", f"attribute {name!r} of a {type(obj).__name__} is not allowed")
    return getattr(obj, name)


def guarded_getitem(obj, key):
    if type(obj) not in SAFE_TYPES:
        raise Refusal("violation", "subscript", f"indexing a {type(obj).__name__} is not allowed")
    return obj[key]


def guarded_write(obj):
    if type(obj) not in (dict, list):
        raise Refusal("violation", "write", f"writing into a {type(obj).__name__} is not allowed")
    return obj


_INPLACE = {
    "+=": operator.add, "-=": operator.sub, "*=": operator.mul, "/=": operator.truediv, "//=": operator.floordiv,
    "%=": operator.mod, "**=": operator.pow, "|=": operator.or_, "&=": operator.and_, "^=": operator.xor,
}


def guarded_inplace(op, x, y):
    fn = _INPLACE.get(op)
    if fn is None:
        raise Refusal("violation", "operator", f"in-place operator {op!r} is not allowed")
    return fn(x, y)


def guarded_apply(fn, *args, **kwargs):
    return fn(*args, **kwargs)


class BoundedPrint:
    """``print`` inside the tree: kept, but only the first MAX_PRINTED_CHARS characters."""

    def __init__(self, _getattr_=None):
        self.parts = []
        self.size = 0

    def write(self, text):
        if self.size < MAX_PRINTED_CHARS:
            text = str(text)[: MAX_PRINTED_CHARS - self.size]
            self.parts.append(text)
            self.size += len(text)

    def __call__(self):
        return "".join(self.parts)

    def _call_print(self, *objects, **kwargs):
        self.write(" ".join(str(o) for o in objects) + str(kwargs.get("end", "\n")))


PRINTS: list = []


def _print_factory(_getattr_=None):
    collector = BoundedPrint()
    PRINTS.append(collector)
    return collector


SAFE_BUILTINS = {
    "True": True, "False": False, "None": None,
    "abs": abs, "all": all, "any": any, "bool": bool, "dict": dict, "enumerate": enumerate, "float": float,
    "int": int, "isinstance": isinstance, "len": len, "list": list, "max": max, "min": min, "range": range,
    "reversed": reversed, "round": round, "set": set, "sorted": sorted, "str": str, "sum": sum, "tuple": tuple,
    "zip": zip, "map": map, "filter": filter,
}


def make_globals() -> dict:
    return {
        "__builtins__": dict(SAFE_BUILTINS),
        "__name__": "policy_tree",
        "__metaclass__": None,
        "_getattr_": guarded_getattr,
        "_getitem_": guarded_getitem,
        "_write_": guarded_write,
        "_getiter_": iter,
        "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
        "_unpack_sequence_": guarded_unpack_sequence,
        "_inplacevar_": guarded_inplace,
        "_apply_": guarded_apply,
        "_print_": _print_factory,
    }


# ------------------------------------------------------------------------------- running
def _on_cpu_limit(signum, frame):
    raise CpuLimit()


def run_limited(fn, cpu_s: float):
    """Call ``fn()`` under a CPU-time alarm; map every failure to a :class:`Refusal`."""
    try:
        signal.setitimer(signal.ITIMER_PROF, cpu_s)
        try:
            return fn()
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
    except CpuLimit:
        raise Refusal("timeout", "cpu-per-call", f"the tree used more than {cpu_s * 1000:g} ms of CPU time") from None
    except Refusal:
        raise
    except MemoryError:
        raise Refusal("violation", "memory-limit", "the tree ran out of its memory limit") from None
    except RecursionError:
        raise Refusal("violation", "recursion-limit", f"recursion deeper than {RECURSION_LIMIT} calls") from None
    except BaseException as exc:  # anything the tree raises (NameError, KeyError, SystemExit, ...)
        raise Refusal("violation", "runtime-error", f"{type(exc).__name__}: {describe(exc)}") from None


def describe(exc: BaseException) -> str:
    """The first 300 characters of ``str(exc)``, or what kept it from being written: the tree's
    exception may carry a value that has no string (``{}[10**5000]``: an int too long to print)."""
    try:
        return str(exc)[:300]
    except (ValueError, MemoryError, RecursionError) as inner:
        return f"(its message could not be written: {type(inner).__name__})"


def check_result(result, self_skills, partner_skills):
    if type(result) not in (tuple, list) or len(result) != 2:
        raise Refusal("violation", "result", f"the tree must return two skill names, got a {type(result).__name__}"
                                              + (f" of length {len(result)}" if type(result) in (tuple, list) else ""))
    out = []
    for value, allowed, what in ((result[0], partner_skills, "predicted partner skill"),
                                 (result[1], self_skills, "own skill")):
        if type(value) is not str:
            raise Refusal("violation", "result", f"{what} must be a str, got a {type(value).__name__}")
        if value not in allowed:
            raise Refusal("violation", "result", f"{what} {value[:MAX_SKILL_CHARS]!r} is not one of: "
                                                 f"{', '.join(allowed)}")
        out.append(value)
    return out


def die_with_parent(parent) -> bool:
    """Linux: ask the kernel to SIGKILL this worker when its parent dies (a parent killed with
    SIGKILL runs no finaliser; without this a tree in a C loop would burn CPU until RLIMIT_CPU).
    ``parent``: the pid the parent passed (``BELIEFGATE_PARENT_PID``; absent when it started us
    from a thread other than its main one, whose end would kill us). Returns whether it was set;
    exits at once if the parent already died before the request took effect."""
    import ctypes

    if not parent or not parent.isdigit():
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        ok = libc.prctl(1, int(signal.SIGKILL), 0, 0, 0) == 0  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the parent's finaliser and RLIMIT_CPU remain
        return False
    if ok and os.getppid() != int(parent):  # the parent died before the request took effect
        os._exit(0)
    return ok


def apply_limits(memory_mb: int, lifetime_cpu_s: int) -> dict:
    """Apply the resource limits; returns which optional ones could be set."""
    mem = int(memory_mb) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    resource.setrlimit(resource.RLIMIT_CPU, (lifetime_cpu_s, lifetime_cpu_s + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    applied = {"nproc": True}
    try:
        resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    except (ValueError, OSError):  # reported to the parent; the tree has no way to spawn a process anyway
        applied["nproc"] = False
    sys.setrecursionlimit(RECURSION_LIMIT + 50)
    return applied


def send(out, payload: dict) -> None:
    out.write(json.dumps(payload) + "\n")
    out.flush()


def refusal_payload(exc: Refusal) -> dict:
    return {"ok": False, "kind": exc.kind, "rule": exc.rule, "message": exc.message[:1000]}


def run_module(code, entry: str, cpu_s: float):
    """Run the compiled module body in fresh globals (``max(4 cpu_s, 0.2)`` s of CPU) and
    return its entry function; at load and again at every new episode."""
    env = make_globals()
    run_limited(lambda: exec(code, env), max(cpu_s * 4, 0.2))
    fn = env.get(entry)
    if not callable(fn):
        raise Refusal("violation", "entry-missing", f"{entry!r} is not a function after running the module")
    return fn


def main() -> int:
    out = sys.stdout
    inp = sys.stdin
    sys.stdout = sys.stderr = open("/dev/null", "w")  # nothing else may write on the protocol pipe
    signal.signal(signal.SIGPROF, _on_cpu_limit)
    pdeathsig = die_with_parent(os.environ.get("BELIEFGATE_PARENT_PID", ""))
    line = inp.readline()
    if not line:
        return 0
    init = json.loads(line)
    entry = init["entry"]
    self_skills = tuple(init["self_skills"])
    partner_skills = tuple(init["partner_skills"])
    cpu_s = float(init["cpu_ms"]) / 1000.0
    applied = {**apply_limits(int(init["memory_mb"]), int(init["lifetime_cpu_s"])), "pdeathsig": pdeathsig}
    send(out, {"ok": True, "stage": "started", "limits": applied})
    fn = None
    try:
        check_source(init["code"], entry)
        try:  # RestrictedPython's transformer recurses per nesting level, under the low recursion limit
            compiled = compile_restricted_exec(init["code"], filename="<policy-tree>")
        except (RecursionError, MemoryError, SyntaxError, ValueError) as exc:
            raise Refusal("violation", "syntax", f"{type(exc).__name__}: the code nests too deeply or does not "
                                                 f"compile ({describe(exc)[:200]})") from None
        if compiled.errors or compiled.code is None:
            raise Refusal("violation", "restricted-python", "; ".join(compiled.errors)[:1000] or "did not compile")
        fn = run_module(compiled.code, entry, cpu_s)
    except Refusal as exc:
        send(out, refusal_payload(exc))
        return 0
    send(out, {"ok": True, "stage": "loaded"})
    for line in inp:
        PRINTS.clear()
        started = time.process_time()
        try:
            message = json.loads(line)
            if message.get("reset"):  # a new episode: no state carried over
                fn = run_module(compiled.code, entry, cpu_s)
                send(out, {"ok": True, "stage": "reset"})
                continue
            state = message["state"]
            result = run_limited(lambda: fn(state), cpu_s)
            used = time.process_time() - started
            if used > cpu_s:  # a long C-level operation the alarm could not interrupt
                raise Refusal("timeout", "cpu-per-call", f"the tree used {used * 1000:.1f} ms of CPU time "
                                                         f"(limit {cpu_s * 1000:g} ms)")
            payload = {"ok": True, "result": check_result(result, self_skills, partner_skills),
                       "cpu_ms": used * 1000.0, "total_cpu_s": time.process_time(),
                       "printed": "".join(p() for p in PRINTS)[:MAX_PRINTED_CHARS]}
        except Refusal as exc:
            payload = refusal_payload(exc)
        except MemoryError:
            payload = {"ok": False, "kind": "violation", "rule": "memory-limit", "message": "out of memory"}
        send(out, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
