"""The policy-tree sandbox: an adversarial corpus finds no escape, every refusal names its rule,
limits hold, and no worker process outlives its test."""

import os
from pathlib import Path

import pytest

from beliefgate.errors import InputError, RuntimeFailure
from beliefgate.policytree import SKILLS, Sandbox, SandboxTimeout, SandboxViolation
from beliefgate.policytree.sandbox import WORKER

STATE = {"holdings": {"self": "empty", "teammate": "onion"}, "pot": [{"count": 1, "state": "idle", "timers": None}],
         "any_soup_ready": False, "any_pot_not_full": True}

GOOD = '''
def helper(state):
    pots = [p for p in state["pot"] if p.get("count", 0) < 3]
    return len(pots)

def PredictTeammateThenPlan(state):
    n = 0
    n += helper(state)
    if state["holdings"]["teammate"] == "onion" and n > 0:
        return "put_onion_in_pot", "pickup_dish"
    return "pickup_onion", "pickup_onion"
'''


def _entry(body: str) -> str:
    """A tree whose entry runs ``body`` (indented) and then returns a legal answer."""
    lines = "\n".join("    " + line for line in body.strip().splitlines())
    return f"def PredictTeammateThenPlan(state):\n{lines}\n    return 'pickup_onion', 'pickup_onion'\n"


def _workers():
    """Live sandbox worker processes whose parent is this test process."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:  # the process ended while we looked
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        state = stat.rsplit(")", 1)[1].split()[0]
        if ppid == os.getpid() and str(WORKER).encode() in cmdline and state != "Z":
            found.append(int(pid))
    return found


@pytest.fixture(autouse=True)
def no_worker_survives():
    before = set(_workers())
    yield
    left = set(_workers()) - before
    assert not left, f"sandbox workers still running after the test: {sorted(left)}"


def test_good_tree_answers_and_the_worker_is_gone_after_the_block():
    with Sandbox(GOOD, entry="PredictTeammateThenPlan", cpu_ms=50, memory_mb=256) as box:
        assert box.call(STATE) == ("put_onion_in_pot", "pickup_dish")
        other = dict(STATE, holdings={"self": "empty", "teammate": "empty"})
        assert box.call(other) == ("pickup_onion", "pickup_onion")
        pid = box.pid
        assert pid in _workers()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert box.pid is None


# --------------------------------------------------------------------------- refused at load
LOAD_CORPUS = [
    ("import os\n" + GOOD, "import"),
    ("from os import system\n" + GOOD, "import"),
    (_entry("m = __import__('os')"), "private-name"),
    (_entry("__import__('os').system('true')"), "attribute"),
    (_entry("x = ().__class__.__bases__[0].__subclasses__()"), "private-attribute"),
    (_entry("x = [c for c in ''.__class__.__mro__[1].__subclasses__()]"), "private-attribute"),
    (_entry("x = getattr((), '__class__')"), "forbidden-name"),
    (_entry("x = ｇｅｔａｔｔｒ((), 'x')"), "forbidden-name"),  # full-width letters normalise to getattr
    (_entry("g = (x for x in [1])\nf = g.gi_frame.f_back.f_globals"), "attribute"),
    (_entry("f = (lambda: 0).__code__"), "private-attribute"),
    (_entry("f = state.get.__self__"), "private-attribute"),
    (_entry("s = '{0.__class__}'.format(1)"), "attribute"),
    (_entry("s = '{x.__class__}'.format_map({'x': 1})"), "attribute"),
    (_entry("s = format(1, 'x')"), "forbidden-name"),
    (_entry("s = f'{state.__class__}'"), "private-attribute"),
    (_entry("m = dict.mro()"), "attribute"),
    (_entry("state.x = 1"), "attribute"),
    (_entry("b = __builtins__"), "private-name"),
    (_entry("g = globals()"), "forbidden-name"),
    (_entry("v = vars()"), "forbidden-name"),
    (_entry("t = type(state)"), "forbidden-name"),
    (_entry("eval('1')"), "forbidden-name"),
    (_entry("exec('x = 1')"), "forbidden-name"),
    (_entry("open('/etc/passwd')"), "forbidden-name"),
    (_entry("exit()"), "forbidden-name"),
    (_entry("quit()"), "forbidden-name"),
    (_entry("breakpoint()"), "forbidden-name"),
    ("class A:\n    pass\n" + GOOD, "class"),
    (_entry("try:\n    x = 1\nexcept Exception:\n    x = 2"), "try"),
    (_entry("with open('x') as fh:\n    x = 1"), "with"),
    (_entry("global X"), "global"),
    (_entry("del state"), "delete"),
    ("def gen(state):\n    yield 1\n" + GOOD, "yield"),
    ("async def PredictTeammateThenPlan(state):\n    return 'a', 'b'\n", "async"),
    ("@max\ndef PredictTeammateThenPlan(state):\n    return 'a', 'b'\n", "decorator"),
    ("def _helper(s):\n    return 1\n" + GOOD, "private-name"),
    ("def PredictTeammateThenPlan(_state):\n    return 'a', 'b'\n", "private-name"),
    (GOOD + "\nwhile True:\n    pass\n", "top-level-statement"),
    (GOOD + "\nPredictTeammateThenPlan({})\n", "top-level-statement"),
    ("def Other(state):\n    return 'a', 'b'\n", "entry-missing"),
    ("def PredictTeammateThenPlan(state) return 1\n", "syntax"),
    ("x = " + "(" * 300 + "1" + ")" * 300 + "\n" + GOOD, "syntax"),
    ("def PredictTeammateThenPlan(state):\n    return '\0', 'b'\n", "syntax"),
    # nesting that Python parses but RestrictedPython's transformer recurses through too deeply
    ("def PredictTeammateThenPlan(state):\n" + "".join("    " * (i + 1) + "if True:\n" for i in range(90))
     + "    " * 91 + "return 'pickup_onion', 'pickup_onion'\n", "syntax"),
    (_entry("x = " + "- " * 300 + "1"), "syntax"),
    ("x = 1\n" * 12000 + GOOD, "code-size"),
    ("", "empty-code"),
]


@pytest.mark.parametrize("code,rule", LOAD_CORPUS, ids=[f"{i:02d}-{r}" for i, (_, r) in enumerate(LOAD_CORPUS)])
def test_refused_at_load_with_the_rule_named(code, rule):
    with pytest.raises(SandboxViolation) as info:
        Sandbox(code)
    assert info.value.rule == rule
    assert f"[{rule}]" in str(info.value)
    assert isinstance(info.value, InputError)


@pytest.mark.parametrize("body,rule", [("X = len([0 for i in range(10 ** 12) if i < 0])", "cpu-per-call"),
                                       ("X = sum(range(10 ** 12))", "wall-clock")])  # a C loop: no alarm inside
def test_a_module_body_that_never_ends_is_stopped_at_load(body, rule):
    with pytest.raises(SandboxTimeout) as info:
        Sandbox(body + "\n" + GOOD)
    assert info.value.rule == rule
    assert isinstance(info.value, RuntimeFailure)


# --------------------------------------------------------------------------- refused at call time
CALL_CORPUS = [
    (_entry("while True:\n    pass"), SandboxTimeout, "cpu-per-call"),
    (_entry("x = 0\nwhile True:\n    x += 1"), SandboxTimeout, "cpu-per-call"),
    (_entry("x = 10 ** 10 ** 9"), SandboxTimeout, "cpu-per-call"),
    ("def r(n):\n    return r(n + 1)\n\ndef PredictTeammateThenPlan(state):\n    return r(0)\n",
     SandboxViolation, "recursion-limit"),
    (_entry("x = 'a' * (10 ** 10)"), SandboxViolation, "memory-limit"),
    (_entry("x = [0] * (10 ** 9)"), SandboxViolation, "memory-limit"),
    (_entry("x = 1 / 0"), SandboxViolation, "runtime-error"),
    (_entry("raise SystemExit(3)"), SandboxViolation, "runtime-error"),
    (_entry("x = state['no such key']"), SandboxViolation, "runtime-error"),
    (_entry("x = {}[10 ** 5000]"), SandboxViolation, "runtime-error"),  # its message has no string
    (_entry("x = str.join('', ['a'])"), SandboxViolation, "attribute"),  # a method fetched from a type
    (_entry("x = range(3).count(1)"), SandboxViolation, "attribute"),  # not a plain-data type
    ("def PredictTeammateThenPlan(state):\n    return 1\n", SandboxViolation, "result"),
    ("def PredictTeammateThenPlan(state):\n    return 'pickup_onion', 'fly'\n", SandboxViolation, "result"),
    ("def PredictTeammateThenPlan(state):\n    return 'a' * 10 ** 6, 'pickup_onion'\n", SandboxViolation, "result"),
    ("def PredictTeammateThenPlan(state):\n    return ['pickup_onion'] * 3\n", SandboxViolation, "result"),
    ("def PredictTeammateThenPlan(state):\n    return None\n", SandboxViolation, "result"),
]


@pytest.mark.parametrize("code,kind,rule", CALL_CORPUS, ids=[f"{i:02d}-{r}" for i, (_, _, r) in enumerate(CALL_CORPUS)])
def test_refused_at_call_kills_the_worker_and_names_the_rule(code, kind, rule):
    with Sandbox(code, cpu_ms=50, memory_mb=256) as box:
        pid = box.pid
        with pytest.raises(kind) as info:
            box.call(STATE)
        assert info.value.rule == rule
        assert f"[{rule}]" in str(info.value)
        assert not box.alive and box.pid is None
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_growing_memory_bomb_hits_the_memory_limit():
    with Sandbox(_entry("x = []\nwhile True:\n    x.append('a' * 10 ** 7)"), cpu_ms=5000, memory_mb=256) as box:
        with pytest.raises(SandboxViolation) as info:
            box.call(STATE)
        assert info.value.rule == "memory-limit"


def test_worker_restarts_after_a_timeout():
    code = _entry("if state.get('spin'):\n    while True:\n        pass")
    with Sandbox(code, cpu_ms=30) as box:
        first = box.pid
        with pytest.raises(SandboxTimeout):
            box.call({**STATE, "spin": True})
        assert box.call(STATE) == ("pickup_onion", "pickup_onion")
        assert box.restarts == 1 and box.pid != first


def test_wall_clock_deadline_stops_what_the_cpu_alarm_does_not():
    with Sandbox(_entry("while True:\n    pass"), cpu_ms=5000, wall_s=0.5) as box:
        with pytest.raises(SandboxTimeout) as info:
            box.call(STATE)
        assert info.value.rule == "wall-clock"


def test_per_episode_cpu_budget_and_its_reset():
    code = _entry("x = 0\nfor i in range(100000):\n    x += i")
    with Sandbox(code, cpu_ms=500, episode_cpu_ms=500) as box:
        with pytest.raises(SandboxTimeout) as info:
            for _ in range(500):
                box.call(STATE)
        assert info.value.rule == "cpu-per-episode"
        box.new_episode()
        assert box.call(STATE) == ("pickup_onion", "pickup_onion")


def test_printing_is_bounded_and_a_long_answer_is_refused():
    flood = _entry("for i in range(500):\n    print('x' * 50)")
    with Sandbox(flood, cpu_ms=200) as box:
        assert box.call(STATE) == ("pickup_onion", "pickup_onion")
        assert 0 < len(box.last_printed) <= 2000
    with Sandbox(flood, cpu_ms=200, max_output_bytes=300) as box:
        with pytest.raises(SandboxViolation) as info:
            box.call(STATE)
        assert info.value.rule == "output-size"


def test_seat_restricted_skill_sets_are_enforced():
    with Sandbox(GOOD, self_skills=("pickup_onion", "place_obj_on_counter"), partner_skills=SKILLS) as box:
        assert box.call(dict(STATE, holdings={"self": "empty", "teammate": "empty"})) == ("pickup_onion",
                                                                                         "pickup_onion")
        with pytest.raises(SandboxViolation) as info:
            box.call(STATE)  # answers pickup_dish, which this seat cannot do
        assert info.value.rule == "result"


def test_the_worker_runs_with_its_limits_and_without_our_environment():
    probe = _entry("x = 1")
    with Sandbox(probe, memory_mb=128) as box:
        assert box.limits.get("nproc") in (True, False)
        pid = box.pid
        env = Path(f"/proc/{pid}/environ").read_bytes()
        # nothing of ours: the fixed hash seed, and our pid for PR_SET_PDEATHSIG (started from the main thread)
        assert env == b"PYTHONHASHSEED=0\0" + f"BELIEFGATE_PARENT_PID={os.getpid()}\0".encode()
        limits = Path(f"/proc/{pid}/limits").read_text()
        row = next(line for line in limits.splitlines() if line.startswith("Max address space"))
        assert str(128 * 1024 * 1024) in row
        row = next(line for line in limits.splitlines() if line.startswith("Max file size"))
        assert row.split()[3] == "0"


def test_bad_arguments_and_closed_sandbox():
    with pytest.raises(InputError):
        Sandbox(GOOD, cpu_ms=0)
    with pytest.raises(InputError):
        Sandbox(GOOD, entry="_hidden")
    with pytest.raises(InputError):
        Sandbox(GOOD, memory_mb=8)
    box = Sandbox(GOOD)
    with pytest.raises(InputError):
        box.call({"x": object()})  # not JSON data
    box.close()
    with pytest.raises(InputError):
        box.call(STATE)


def test_failed_calls_count_against_the_episode_budget():
    """A tree whose every call fails (here: over its CPU per call) is charged each failure's
    wall time, so the episode budget ends it; before, failures were free and a tree killed
    at the wall-clock deadline every step stretched an episode to hours."""
    with Sandbox(_entry("while True:\n    pass"), cpu_ms=50, episode_cpu_ms=1000) as box:
        rules = []
        for _ in range(40):
            with pytest.raises(SandboxTimeout) as info:
                box.call(STATE)
            rules.append(info.value.rule)
            if info.value.rule == "cpu-per-episode":
                break
        assert rules[-1] == "cpu-per-episode" and len(rules) <= 21, rules
        assert box.episode_used_ms > 1000
        box.new_episode()
        with pytest.raises(SandboxTimeout) as info:
            box.call(STATE)
        assert info.value.rule == "cpu-per-call"  # a new budget: the tree runs (and fails) again


def test_a_new_episode_runs_the_module_again_in_fresh_globals():
    """Module-level state does not leak from one episode to the next (results would depend on
    the order of seeds and layouts)."""
    code = ("CALLS = []\n"
            "def PredictTeammateThenPlan(state):\n"
            "    CALLS.append(1)\n"
            "    if len(CALLS) > 1:\n"
            "        return 'pickup_onion', 'pickup_dish'\n"
            "    return 'pickup_onion', 'pickup_onion'\n")
    with Sandbox(code) as box:
        assert box.call(STATE) == ("pickup_onion", "pickup_onion")
        assert box.call(STATE) == ("pickup_onion", "pickup_dish")
        pid = box.pid
        box.new_episode()
        assert box.pid == pid  # the same worker, its module run again
        assert box.call(STATE) == ("pickup_onion", "pickup_onion")


def test_iterating_a_set_of_strings_is_the_same_in_every_worker():
    """Workers run with a fixed hash seed: the first element of a set literal is the same in
    every sandbox and every run (it depended on a random per-process seed)."""
    code = _entry("for s in {'pickup_onion', 'pickup_dish', 'put_onion_in_pot', 'fill_dish_with_soup'}:\n"
                  "    return 'pickup_onion', s")
    answers = set()
    for _ in range(6):
        with Sandbox(code) as box:
            answers.add(box.call(STATE))
    assert len(answers) == 1, answers


def test_oversized_code_is_refused_before_a_worker_reads_it(tmp_path):
    from beliefgate.policytree._worker import MAX_CODE_CHARS
    from beliefgate.policytree.agent import TreeSpecError, load_tree_code

    with pytest.raises(SandboxViolation) as info:
        Sandbox(GOOD + "#" * MAX_CODE_CHARS)
    assert info.value.rule == "code-size"
    big = tmp_path / "big.py"
    big.write_text(GOOD + "#" * (4 * MAX_CODE_CHARS))
    with pytest.raises(TreeSpecError, match="more than a tree may have"):
        load_tree_code(str(big))


def test_a_tree_within_its_episode_budget_never_meets_the_lifetime_limit():
    """The worker's RLIMIT_CPU is a backstop, not a budget across episodes: before an episode could
    take the worker past half of it, new_episode replaces the worker (counted in ``restarts``) and
    the tree keeps answering. (Accounting here; the real limit over many episodes is the slow test.)"""
    with Sandbox(GOOD, cpu_ms=50, episode_cpu_ms=1000) as box:
        assert box.call(STATE) == ("put_onion_in_pot", "pickup_dish")
        first, restarts = box.pid, box.restarts
        box.new_episode()
        assert box.pid == first  # far from the limit: the same worker, its module run again
        near = 500.0 * box.lifetime_cpu_s - box.episode_cpu_ms + 1.0
        box.worker_used_ms = near
        box.new_episode()
        assert box.call(STATE) == ("put_onion_in_pot", "pickup_dish")
        assert box.pid != first and box.restarts == restarts + 1 and box.worker_used_ms < near / 10


@pytest.mark.slow
def test_many_episodes_each_within_budget_run_past_the_worker_lifetime_limit():
    code = _entry("x = 0\nfor i in range(20000):\n    x += i")  # a few ms a call
    with Sandbox(code, cpu_ms=50, episode_cpu_ms=1000) as box:
        total = 0.0
        while total < 1.5 * 1000.0 * box.lifetime_cpu_s:
            box.new_episode()
            while box.episode_used_ms < 0.8 * box.episode_cpu_ms:
                box.call(STATE)
            total += box.episode_used_ms
        assert box.restarts >= 1


def test_a_worker_dies_with_a_parent_killed_by_sigkill(tmp_path):
    """A parent killed with SIGKILL runs no finaliser: the kernel kills the worker (PR_SET_PDEATHSIG)
    instead of leaving a tree in a C loop to burn CPU until its lifetime limit."""
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "parent.py"
    script.write_text(
        "import sys\nfrom beliefgate.policytree import Sandbox\n"
        "box = Sandbox('def PredictTeammateThenPlan(state):\\n    x = sum(range(10 ** 13))\\n"
        "    return \"pickup_onion\", \"pickup_onion\"\\n', cpu_ms=50, wall_s=60)\n"
        "print(box.pid, box.limits.get('pdeathsig'), flush=True)\nbox.call({})\n")
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    pid, applied = parent.stdout.readline().split()
    time.sleep(0.5)  # the worker is in its C loop now
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=10)
    parent.stdout.close()
    if applied != "True":
        os.kill(int(pid), signal.SIGKILL)  # what PR_SET_PDEATHSIG would have done
        pytest.skip("this platform has no PR_SET_PDEATHSIG")
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            break  # gone
        if state == "Z":
            break  # dead, waiting for init to reap it
        time.sleep(0.05)
    else:
        os.kill(int(pid), 9)
        pytest.fail("the worker outlived its SIGKILLed parent")


def test_a_sandbox_started_from_a_thread_outlives_the_thread():
    """PR_SET_PDEATHSIG follows the thread that started the worker: asked for only from the main
    thread, so a sandbox made in a short-lived thread keeps its worker when that thread ends."""
    import threading

    made = {}
    thread = threading.Thread(target=lambda: made.setdefault("box", Sandbox(GOOD)))
    thread.start()
    thread.join()
    box = made["box"]
    try:
        assert box.limits.get("pdeathsig") is False
        assert box.call(STATE) == ("put_onion_in_pot", "pickup_dish")
    finally:
        box.close()
    with Sandbox(GOOD) as main_box:
        assert main_box.limits.get("pdeathsig") in (True, False)  # True on Linux
