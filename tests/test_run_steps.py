"""The steps of `harness run`, each on its own, on the real environment and built-in cases."""

from __future__ import annotations

import json
import sys

import pytest

from harness.cli import build_parser
from harness.errors import ExitCode, UserError
from harness.record import Verdict, read_results
from harness.run import steps
from harness.run.steps import Run


def _run(tmp_path, *flags):
    args = build_parser().parse_args(["run", "--env", "stepenv", "--out", str(tmp_path / "r.jsonl"), "--quiet", *flags])
    return Run(args)


def _through(run, *chain):
    for step in chain:
        code = step(run)
        assert code is None, f"{step.__name__} ended the chain with {code}"
    return run


def test_load_checks_every_name_against_what_exists(tmp_path):
    with pytest.raises(UserError, match="--family warp: unknown; known families: .*grid_sample"):
        steps.load(_run(tmp_path, "--family", "warp"))
    with pytest.raises(UserError, match="--strategy fast: unknown; known: "):
        steps.load(_run(tmp_path, "--strategy", "fast"))
    run = _through(_run(tmp_path, "--case", "layernorm"), steps.load)
    assert "grid_sample_op" in run.cases and run.selection.cases == ("layernorm",)


def test_expand_keeps_the_environments_limits_out_of_the_cells(tmp_path):
    run = _through(_run(tmp_path, "--case", "layernorm", "--opset", "13,99"), steps.load, steps.discover)
    assert steps.expand_cells(run) is None
    assert {c.opset for c in run.cells} == {13}
    assert run.beyond == {f"opsets above {run.env.max_opset}": len(run.cells)}
    assert run.out == tmp_path / "r.jsonl"


def test_a_selection_wholly_beyond_the_environment_ends_the_chain_saying_so(tmp_path, capsys):
    run = _through(_run(tmp_path, "--case", "layernorm", "--opset", "99"), steps.load, steps.discover)
    assert steps.expand_cells(run) == ExitCode.OK
    err = capsys.readouterr().err
    assert "nothing to run" in err and "opsets above" in err


def test_shards_split_the_cells_within_the_limits(tmp_path):
    whole = _through(_run(tmp_path, "--case", "layernorm"), steps.load, steps.discover, steps.expand_cells)
    parts = [
        _through(_run(tmp_path, "--case", "layernorm", "--shard", f"{i}/2"), steps.load, steps.discover) for i in (1, 2)
    ]
    for part in parts:
        steps.expand_cells(part)
    assert sorted(c.cell_id for p in parts for c in p.cells) == sorted(c.cell_id for c in whole.cells)
    assert parts[0].out.name == "r.jsonl"  # --out wins over the shard's default name


def test_drop_done_sets_torn_lines_aside_and_keeps_what_was_measured(tmp_path, capsys):
    run = _through(_run(tmp_path, "--case", "layernorm"), steps.load, steps.discover, steps.expand_cells)
    steps.drop_done(run)
    first = run.cells[0]
    record = steps._new_record(run, first, Verdict.PASS, None).with_(
        code_hash=run.code, harness_version=steps.__version__, finished_at="2026-11-30T00:00:00Z"
    )
    run.out.write_text(record.to_line() + "\n" + '{"torn' + "\n")
    again = _through(_run(tmp_path, "--case", "layernorm"), steps.load, steps.discover, steps.expand_cells)
    steps.drop_done(again)
    assert "1 torn line(s) moved" in capsys.readouterr().err
    assert again.resumed == 1 and first not in again.todo and len(again.todo) == len(again.cells) - 1
    assert (tmp_path / "r.jsonl.torn").read_text() == '{"torn\n'


def test_drop_done_refuses_to_append_to_a_file_of_another_schema(tmp_path):
    run = _through(_run(tmp_path, "--case", "layernorm"), steps.load, steps.discover, steps.expand_cells)
    run.out.write_text(json.dumps({"schema_version": 99}) + "\n")
    with pytest.raises(UserError, match="schema_version 99.*pass --out"):
        steps.drop_done(run)


def test_split_applicable_records_what_cannot_run_and_keeps_the_rest(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_MMCV_UNAVAILABLE", "mmcv did not build here (test)")
    run = _run(tmp_path, "--case", "grid_sample_op", "--strategy", "mmcv,custom", "--opset", "11")
    _through(run, steps.load, steps.discover, steps.expand_cells, steps.drop_done, steps.split_applicable)
    run.writer.close()
    written = read_results(run.out).records
    assert written and all(r.verdict is Verdict.NOT_APPLICABLE and r.strategy == "mmcv" for r in written)
    assert all(r.reason == "mmcv did not build here (test)" for r in written)
    assert all(r.env_limits and r.run_id == run.run_id and r.reference == "native" for r in written)
    assert run.runnable and {c.strategy for c in run.runnable} == {"custom"}


def test_summarise_turns_the_run_into_an_exit_code(tmp_path):
    run = _through(
        _run(tmp_path, "--case", "layernorm", "--opset", "13"), steps.load, steps.discover, steps.expand_cells
    )
    steps.drop_done(run)
    steps.split_applicable(run)
    run.writer.close()
    assert steps.summarise(run) == ExitCode.OK
    run.harness_errors = 1
    assert steps.summarise(run) == ExitCode.HARNESS_ERROR
    run.interrupted = True
    assert steps.summarise(run) == ExitCode.INTERRUPTED


def test_the_chain_in_order():
    names = [s.__name__ for s in steps.STEPS]
    assert names == ["load", "discover", "expand_cells", "drop_done", "split_applicable", "execute", "summarise"]


def test_list_names_the_cells_and_the_limits(tmp_path):
    from harness.run.listing import list_command

    args = build_parser().parse_args(["list", "--cells", "--case", "layernorm", "--opset", "13,99"])
    assert list_command(args) == ExitCode.OK
    args = build_parser().parse_args(["list", "--case", "layernorm"])
    assert list_command(args) == ExitCode.OK


def test_list_cells_through_the_command_line(harness_cli):
    proc = harness_cli("list", "--cells", "--case", "layernorm", "--opset", "13,99")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("layernorm[") >= 2 and "opset99" not in proc.stdout
    assert "beyond this environment" in proc.stderr and "opsets above" in proc.stderr


def test_a_memory_limit_where_posix_rlimits_are_missing_is_refused_naming_the_fix(monkeypatch, capsys):
    parser = build_parser()
    assert parser.parse_args(["run", "--memory-limit-mb", "2048"]).memory_limit_mb == 2048
    monkeypatch.setitem(sys.modules, "resource", None)  # as on Windows: `import resource` raises ImportError
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(["replay", "--memory-limit-mb", "2048"])
    assert exit_.value.code == 2
    assert "lacks; drop --memory-limit-mb" in capsys.readouterr().err
