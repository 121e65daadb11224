"""Grid files that are not text: one GridError naming the file, no traceback."""

from __future__ import annotations

import pytest

from beliefgate.eval.grid import GridError, load_grid


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_binary_grid_file_is_a_grid_error_naming_it(tmp_path, suffix):
    path = tmp_path / f"grid{suffix}"
    path.write_bytes(b"agents: [\xff\xfe\x00bayes-belief]\n")
    with pytest.raises(GridError, match=r"grid\.(yaml|json): not UTF-8 text"):
        load_grid(path)


def test_the_cli_reports_a_binary_grid_in_one_line(tmp_path):
    from typer.testing import CliRunner

    from beliefgate.cli import app

    path = tmp_path / "grid.yaml"
    path.write_bytes(b"\xff\xfe\xfd")
    result = CliRunner().invoke(app, ["eval", "run", str(path), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    assert "not UTF-8 text" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "run").exists()
