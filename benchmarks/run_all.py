"""Run every benchmark script in this folder (``make bench``).

Each script measures beliefgate against a baseline run in the same process and
prints its own table; pass ``--quick`` to run them all at smoke-test sizes.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = sorted(p.name for p in HERE.glob("bench_*.py"))


def load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    failed = []
    for name in SCRIPTS:
        path = HERE / name
        if not path.exists():
            print(f"[skip] {name}: not present")
            continue
        print(f"\n=== {name} ===", flush=True)
        started = time.perf_counter()
        try:
            load(path).main(argv)
        except SystemExit as exc:  # argparse exits; a benchmark that cannot run says why
            if exc.code not in (0, None):
                failed.append(name)
        print(f"({name}: {time.perf_counter() - started:.1f} s)")
    if failed:
        print(f"failed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
