"""The steps of `harness run`, each on its own, on the real environment and built-in cases."""

from __future__ import annotations

import dataclasses
import json
import sys

import pytest

from harness import __version__
from harness.campaign import chain
from harness.cli import build_parser
from harness.errors import ExitCode, UserError
from harness.record import Verdict, read_results
from harness.run import steps
from harness.run.steps import ExportKind, Run


def _run(tmp_path, *flags):
    args = build_parser().parse_args(["run", "--env", "stepenv", "--out", str(tmp_path / "r.jsonl"), "--quiet", *flags])
    return Run(args)


def _through(value, *chain):
    for step in chain:
        value = step(value)
        assert not isinstance(value, int), f"{step.__name__} ended the chain with {value}"
    return value


def _kind(tmp_path, *flags):
    return ExportKind.of(_through(_run(tmp_path, *flags), steps.load, steps.discover, steps.expand_cells))


def test_load_checks_every_name_against_what_exists(tmp_path):
    with pytest.raises(UserError, match="--family warp: unknown; known families: .*grid_sample"):
        steps.load(_run(tmp_path, "--family", "warp"))
    with pytest.raises(UserError, match="--strategy fast: unknown; known: "):
        steps.load(_run(tmp_path, "--strategy", "fast"))
    run = _through(_run(tmp_path, "--case", "layernorm"), steps.load)
    assert "grid_sample_op" in run.cases and run.selection.cases == ("layernorm",)


def test_expand_keeps_the_environments_limits_out_of_the_cells(tmp_path):
    run = _through(_run(tmp_path, "--case", "layernorm", "--opset", "13,99"), steps.load, steps.discover)
    assert steps.expand_cells(run) is run
    assert {c.opset for c in run.cells} == {13}
    assert run.beyond == {f"opsets above {run.env.max_opset}": len(run.cells)}
    assert ExportKind.of(run).out == tmp_path / "r.jsonl"


def test_a_selection_wholly_beyond_the_environment_ends_the_chain_saying_so(tmp_path, capsys):
    run = _through(_run(tmp_path, "--case", "layernorm", "--opset", "99"), steps.load, steps.discover)
    assert steps.expand_cells(run) == ExitCode.OK
    err = capsys.readouterr().err
    assert "nothing to run" in err and "opsets above" in err


def test_shards_split_the_cells_within_the_limits(tmp_path):
    whole = _kind(tmp_path, "--case", "layernorm")
    parts = [_kind(tmp_path, "--case", "layernorm", "--shard", f"{i}/2") for i in (1, 2)]
    assert all(p.jobs for p in parts)
    assert sorted(c.cell_id for p in parts for c in p.jobs) == sorted(c.cell_id for c in whole.jobs)
    assert parts[0].out.name == "r.jsonl"  # --out wins over the shard's default name


def test_drop_done_sets_torn_lines_aside_and_keeps_what_was_measured(tmp_path, capsys):
    kind = _kind(tmp_path, "--case", "layernorm")
    first = kind.jobs[0]
    record = kind.blank(first, Verdict.PASS, None).with_(
        code_hash=kind.code, harness_version=__version__, finished_at="2026-11-30T00:00:00Z"
    )
    kind.out.write_text(record.to_line() + "\n" + '{"torn' + "\n")
    again = chain.drop_done(chain.Campaign(_kind(tmp_path, "--case", "layernorm")))
    assert "1 torn line(s) moved" in capsys.readouterr().err
    assert again.resumed == 1 and first not in again.todo and len(again.todo) == len(kind.jobs) - 1
    assert (tmp_path / "r.jsonl.torn").read_text() == '{"torn\n'


def test_drop_done_refuses_to_append_to_a_file_of_another_schema(tmp_path):
    kind = _kind(tmp_path, "--case", "layernorm")
    kind.out.write_text(json.dumps({"schema_version": 99}) + "\n")
    with pytest.raises(UserError, match="schema_version 99.*pass --out"):
        chain.drop_done(chain.Campaign(kind))


def test_decide_records_what_cannot_run_and_keeps_the_rest(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_MMCV_UNAVAILABLE", "mmcv did not build here (test)")
    kind = _kind(tmp_path, "--case", "grid_sample_op", "--strategy", "mmcv,custom", "--opset", "11")
    c = _through(chain.Campaign(kind), chain.drop_done, chain.open_results, chain.decide)
    c.writer.close()
    written = read_results(kind.out).records
    assert written and all(r.verdict is Verdict.NOT_APPLICABLE and r.strategy == "mmcv" for r in written)
    assert all(r.reason == "mmcv did not build here (test)" for r in written)
    assert all(r.env_limits and r.run_id == c.run_id and r.reference == "native" for r in written)
    assert all(r.kind == "export" and r.runtime_fingerprint is None for r in written)
    assert c.runnable and {j.strategy for j in c.runnable} == {"custom"}


def test_without_mmcv_leaves_its_cells_for_later_and_installing_it_keeps_the_others(tmp_path):
    flags = ("--case", "grid_sample_op", "--strategy", "mmcv,custom", "--opset", "11")
    early = _kind(tmp_path, *flags, "--without", "mmcv")
    assert early.jobs and {j.strategy for j in early.jobs} == {"custom"}
    assert early.run.left_out > 0 and "left for later" in " ".join(early.summary())
    later = _kind(tmp_path, *flags)
    fp = dataclasses.replace(later.run.env.fingerprint, mmcv="1.7.2")
    later.run.env = dataclasses.replace(later.run.env, fingerprint=fp)
    custom = next(j for j in later.jobs if j.strategy == "custom")
    mmcv = next(j for j in later.jobs if j.strategy == "mmcv")
    assert early.key(custom) == later.key(custom)  # a custom cell does not depend on mmcv
    record = early.blank(custom, Verdict.PASS, None).with_(code_hash=early.code, harness_version=__version__)
    assert later.record_key(record) == later.key(custom)
    before = dataclasses.replace(fp, mmcv=None)
    assert later.run.env.fingerprint.hash(("mmcv",)) == before.hash(("mmcv",)) != before.hash()
    assert mmcv not in early.jobs and later.key(mmcv)[1] == fp.hash()


def test_summarise_turns_the_campaign_into_an_exit_code(tmp_path):
    kind = _kind(tmp_path, "--case", "layernorm", "--opset", "13")
    c = _through(chain.Campaign(kind), chain.drop_done, chain.open_results)
    c.writer.close()
    assert chain.summarise(c) == ExitCode.OK
    c.harness_errors = 1
    assert chain.summarise(c) == ExitCode.HARNESS_ERROR
    c.interrupted = True
    assert chain.summarise(c) == ExitCode.INTERRUPTED


def test_the_chain_in_order():
    assert [s.__name__ for s in chain.CAMPAIGN_STEPS] == [
        "drop_done",
        "open_results",
        "decide",
        "share",
        "execute",
        "summarise",
    ]


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
