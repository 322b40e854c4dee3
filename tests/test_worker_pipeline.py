"""One cell's stages, walked in the order of STAGES, on small real models: which stage names the verdict, which
failures stop the walk, and what each stage leaves in the record."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from conftest import ROOT, scale_model, unit_case, unit_env

from harness.campaign.options import Options
from harness.plan.spec import CellSpec
from harness.record import CellRecord, Verdict
from harness.strategies import get_strategy
from harness.worker import pipeline
from harness.worker.pipeline import STAGE_NAMES, STAGES, StageFailed, run_cell

ENV = unit_env()
OPTS = Options(threads=1, latency=False, memory=False)
NATIVE, CUSTOM = get_strategy("layernorm", "native"), get_strategy("layernorm", "decomposed")


def _cell(opset=13, strategy="decomposed", exporter="torchscript"):
    return CellSpec("unitenv", "layernorm", "unit", "{}", strategy, opset, exporter, "static", "cpu", "float32")


def _run(case, cell, opts=OPTS):
    blank = cell.record(ENV.fingerprint, Verdict.PASS, reference="native", portability="standard", tags=())
    strategy = get_strategy("layernorm", cell.strategy)
    return run_cell(blank, cell, case, strategy, NATIVE, opts)


def _outcomes(record: CellRecord):
    return {s.name: s.outcome for s in record.stages}


def test_every_stage_is_recorded_in_the_order_of_STAGES():
    record = _run(unit_case(), _cell())
    assert record.verdict is Verdict.PASS, record.reason
    assert tuple(s.name for s in record.stages) == STAGE_NAMES == tuple(spec.name for spec in STAGES)
    assert _outcomes(record)["dynamic"] == "skipped" and _outcomes(record)["latency"] == "skipped"
    assert record.parity.max_abs < 1e-5 and record.parity.shapes_checked == 1
    assert record.actual_opset == 13 and record.export.nodes > 1


def test_a_finding_names_the_verdict_and_the_walk_goes_on():
    wrong = unit_case(model=lambda params, op: scale_model(op, factor=2.0 if op is NATIVE.op() else 3.0))
    record = _run(wrong, _cell())
    assert record.verdict is Verdict.MISMATCH and record.reason.startswith("eager: eager vs reference")
    outcomes = _outcomes(record)
    assert outcomes["eager"] == "failed" and outcomes["export"] == "ok" and outcomes["parity"] == "failed"
    assert record.eager_parity.max_abs > 0.1


def test_a_fatal_raise_skips_every_later_stage():
    def broken(params, shape, gen):
        raise KeyError("a bug in the case")

    record = _run(unit_case(inputs=broken), _cell())
    assert record.verdict is Verdict.HARNESS_ERROR and "KeyError" in record.reason
    assert "KeyError" in record.traceback
    assert [s.outcome for s in record.stages] == ["failed"] + ["skipped"] * (len(STAGES) - 1)


def test_a_non_fatal_raise_keeps_its_verdict_and_later_stages_run(monkeypatch):
    def checker_refuses(blob):
        raise ValueError("the checker says no")

    monkeypatch.setattr(pipeline, "check_model", checker_refuses)
    record = _run(unit_case(), _cell())
    assert record.verdict is Verdict.CHECK_FAILED and "the checker says no" in record.reason
    assert _outcomes(record)["load"] == "ok" and _outcomes(record)["parity"] == "ok"


def test_opset_drift_is_a_finding_of_the_opset_stage():
    blank = _cell(opset=13).record(ENV.fingerprint, Verdict.PASS, reference="native", portability="standard", tags=())
    state = pipeline.CellState(_cell(opset=13), unit_case(), CUSTOM, NATIVE, OPTS, blank)
    pipeline.build(state)
    pipeline.export(state)  # the graph is written at opset 13
    state.cell = _cell(opset=12)  # as though 12 had been asked for
    with pytest.raises(StageFailed) as found:
        pipeline.opset(state)
    assert found.value.verdict is Verdict.OPSET_DRIFT and "asked for opset 12" in found.value.message
    assert state.found["actual_opset"] == 13


def test_variants_and_other_shapes_are_judged_and_merged():
    def inputs(params, shape, gen):
        return (torch.randn(shape.get("N", 2), 5, generator=gen) * (-1 if shape.get("variant") else 1),)

    case = unit_case(
        inputs=inputs,
        shapes=({"N": 2}, {"N": 4}, {"N": 1}),
        variants=1,
        input_names=("x",),
        dynamic_axes={"x": {0: "n"}, "output": {0: "n"}},
        shape_modes=("static", "dynamic"),
    )
    cell = CellSpec("unitenv", "layernorm", "unit", "{}", "decomposed", 13, "torchscript", "dynamic", "cpu", "float32")
    record = _run(case, cell)
    assert record.verdict is Verdict.PASS, record.reason
    assert record.parity.shapes_checked == 4  # the export shape, one variant, two other shapes


def test_latency_and_memory_time_the_reference_beside_the_strategy():
    record = _run(unit_case(), _cell(), Options(threads=1, latency_budget_s=0.005))
    targets = {"eager", "ort", "reference"}
    assert set(record.latency) == targets and set(record.memory) == targets | {t + ".working_set" for t in targets}
    assert all(t.median_s > 0 and t.samples >= 5 for t in record.latency.values())
    native = _run(unit_case(), _cell(strategy="native"), Options(threads=1, latency_budget_s=0.005))
    assert set(native.latency) == {"eager", "ort"}  # the reference's own eager timing is the reference


def test_the_worker_loop_answers_a_cell_with_its_record():
    cell = CellSpec(
        "loopenv",
        "layernorm",
        "layernorm",
        json.dumps({"normalized": "last"}),
        "native",
        13,
        "torchscript",
        "static",
        "cpu",
        "float32",
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.worker",
            "--env",
            "loopenv",
            "--options",
            Options(latency=False, memory=False).to_json(),
        ],
        input=json.dumps({"cell_id": cell.cell_id, "cell": cell.to_dict()}) + "\n",
        capture_output=True,
        text=True,
        cwd=str(ROOT),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    ready, answer = [json.loads(line) for line in proc.stdout.splitlines()]
    assert ready["ready"] is True and answer["cell_id"] == cell.cell_id
    record = CellRecord.from_json(answer["record"])
    assert record.verdict is Verdict.PASS and record.env == "loopenv" and record.reference == "native"
