"""The behaviour reference (issue 42): 160 episodes recorded before the domain-seam refactor are
replayed on the current code and compared row by row and step by step (tests/reference/)."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("reference_record", Path(__file__).parent / "reference" / "record.py")
record = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(record)


def test_the_comparison_can_fail():
    ref = record.load_reference()
    key = sorted(ref)[0]
    changed = copy.deepcopy(ref)
    changed[key]["steps"][5][0] = [5, 5]
    assert any("step 5" in d for d in record.differences(ref, changed))
    changed = copy.deepcopy(ref)
    changed[key]["metrics"]["reward"] = "999.0"
    assert any("reward" in d for d in record.differences(ref, changed))
    changed = copy.deepcopy(ref)
    del changed[key]
    assert record.differences(ref, changed) == [f"{key}: missing"]
    assert record.differences(ref, ref) == []


def test_reference_grid_reproduces(tmp_path):
    record.play(tmp_path / "run")
    diffs = record.differences(record.load_reference(), record.summarize(tmp_path / "run"))
    assert not diffs, f"{len(diffs)} differences from the reference, first: " + "\n".join(diffs[:20])
