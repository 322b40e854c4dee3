"""After CI's small real matrix: the facts the project promises, read from the records it just wrote."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.campaign.files import results_name  # noqa: E402  (the results files' names, as the harness writes them)
from harness.host.environments import ladder as runtime_ladder  # noqa: E402
from harness.record import RecordKind, read_results  # noqa: E402  (the one reader; torch-free)


def load(name, kind=RecordKind.EXPORT):
    path = Path("results") / results_name(kind, name)
    found = read_results(path)
    if not found.records and not path.exists():
        sys.exit(f"FAIL {path}: missing")
    if found.refusal is not None or found.skipped:
        sys.exit(f"FAIL {path}: {found.refusal.line() if found.refusal else found.skipped[0].describe()}")
    newest = {}
    for r in found.records:  # a file resumed with other code holds older records of the same cells
        if r.key() not in newest or r.finished_at >= newest[r.key()].finished_at:
            newest[r.key()] = r
    return [r.to_json() for r in newest.values()]


def pick(records, **want):
    out = []
    for r in records:
        params = r["params"]
        if all(r.get(k, params.get(k)) == v for k, v in want.items()):
            out.append(r)
    return out


def main():
    failures = []

    def expect(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    t18 = load("torch1.8")
    native = pick(t18, case="grid_sample_op", strategy="native", opset=11, rank=4)
    expect(
        native and all(r["verdict"] == "export_failed" for r in native) and "grid_sampler" in native[0]["reason"],
        "torch1.8 native opset 11: export_failed with torch's message",
    )
    for padding in ("zeros", "border"):
        cells = pick(t18, case="grid_sample_op", strategy="custom", opset=11, mode="bilinear", padding_mode=padding)
        expect(
            cells and all(r["verdict"] == "pass" and r["parity"]["max_abs"] < 1e-5 for r in cells),
            f"torch1.8 custom opset 11 bilinear/{padding}: pass, max diff < 1e-5 on grids beyond [-1, 1]",
        )
    mmcv = [
        r
        for opset in (11, 13)
        for r in pick(
            t18, case="grid_sample_op", strategy="mmcv", opset=opset, mode="bilinear", padding_mode="zeros", rank=4
        )
    ]
    expect(
        len(mmcv) == 4 and all(r["verdict"] == "pass" for r in mmcv),
        "torch1.8 mmcv bilinear/zeros (both align_corners, opsets 11 and 13): pass with the real mmcv build",
    )
    other = pick(t18, case="grid_sample_op", strategy="mmcv", mode="bicubic")
    expect(
        other and all(r["verdict"] == "not_applicable" and r["reason"] for r in other),
        "torch1.8 mmcv bicubic: not_applicable with a reason",
    )
    contrib = pick(t18, case="grid_sample_op", strategy="contrib", opset=11, rank=4)
    expect(
        contrib and all(r["portability"] == "ort_contrib" for r in contrib),
        "torch1.8 contrib: labelled onnxruntime-only",
    )
    ties = [r for r in contrib if (r["params"]["mode"], r["params"]["padding_mode"]) == ("nearest", "reflection")]
    bad = [r for r in contrib if r["verdict"] != "pass" and r["params"]["mode"] != "bicubic" and r not in ties]
    expect(contrib and not bad, "torch1.8 contrib opset 11: pass for bilinear, every padding, and nearest zeros/border")
    # onnxruntime's kernel rounds a half-pixel tie reflected from beyond the border otherwise than torch
    tied = [r for r in ties if not r["params"]["align_corners"]]
    expect(
        tied and all(r["verdict"] == "mismatch" for r in tied),
        "torch1.8 contrib opset 11 nearest/reflection: mismatch at reflected half-pixel ties (onnxruntime's rounding)",
    )

    t2 = load("torch2")
    drift = pick(t2, case="grid_sample_dynamic", strategy="native", exporter="dynamo", opset=11)
    expect(drift and all(r["verdict"] == "opset_drift" for r in drift), "torch2 dynamo native opset 11: opset_drift")
    dyn = pick(t2, case="grid_sample_dynamic", strategy="custom", opset=16, exporter="torchscript")
    expect(
        dyn and all(r["verdict"] == "pass" and r["parity"]["shapes_checked"] == 3 for r in dyn),
        "torch2 custom dynamic: pass at three shapes",
    )
    errors = [r for r in t18 + t2 if r["verdict"] == "harness_error"]
    expect(not errors, f"no harness_error ({len(errors)} found)")
    beyond = pick(t18, opset=16) + pick(t18, exporter="dynamo")
    limits = t18[0]["env_limits"] if t18 else {}
    expect(
        not beyond and "exporter dynamo" in limits and "opsets above 13" in limits,
        "torch1.8: no cells beyond the environment (dynamo, opsets above 13); its records name those limits",
    )
    for strategy in ("native", "custom", "mmcv", "contrib"):
        alone = pick(t18, case="stn_tutorial", strategy=strategy, affine_grid="native")
        expect(
            alone and all(r["verdict"] == "export_failed" and "affine_grid_generator" in r["reason"] for r in alone),
            f"torch1.8 tutorial STN, {strategy} grid_sample with torch's affine_grid: export_failed on affine_grid",
        )
        both = pick(t18, case="stn_tutorial", strategy=strategy, affine_grid="custom")
        want = "export_failed" if strategy == "native" else "pass"
        expect(
            both and all(r["verdict"] == want for r in both),
            f"torch1.8 tutorial STN, {strategy} grid_sample with the custom affine_grid: {want}",
        )
    check_replays(t18, expect)
    check_precisions(expect)
    return 1 if failures else 0


def ladder():
    """The default CPU runtime environments, in the order the noxfile chains them after the export matrix."""
    return [e.name for e in runtime_ladder("cpu") if e.default]


def check_replays(t18, expect):
    """Every exported graph judged again on every rung of the ladder, with the runtimes' own findings."""
    replays = {name: load(name, RecordKind.REPLAY) for name in ladder()}
    expect(len(replays) >= 9 and all(replays.values()), f"replay records for every runtime: {sorted(replays)}")
    errors = [r for records in replays.values() for r in records if r["verdict"] == "harness_error"]
    expect(not errors, f"no harness_error in the replays ({len(errors)} found)")
    contrib = pick(replays["ort1.8"], env="torch1.8", case="grid_sample_op", strategy="contrib")
    expect(
        contrib
        and all(r["verdict"] == "load_failed" and "GridSample is not a registered" in r["reason"] for r in contrib),
        "torch1.8 contrib graphs on onnxruntime 1.8.1: load_failed, with onnxruntime's message",
    )
    for name in ("openvino2023", "openvino2026"):
        refused = pick(replays[name], env="torch1.8", case="grid_sample_op", strategy="contrib")
        expect(
            refused
            and all(r["verdict"] == "load_failed" and "GridSample" in r["stages"][0]["message"] for r in refused),
            f"torch1.8 contrib graphs on {name}: load_failed (OpenVINO has no com.microsoft ops)",
        )
    exported = len(pick(t18, case="grid_sample_op", strategy="custom", opset=11, mode="bilinear"))
    for name, records in replays.items():
        if name == "ort1.10":  # torch1.8's own onnxruntime: its exporting cells judged these graphs
            continue
        custom = pick(
            records,
            env="torch1.8",
            case="grid_sample_op",
            strategy="custom",
            opset=11,
            mode="bilinear",
            precision="fp32",
        )
        expect(
            len(custom) == exported and all(r["verdict"] == "pass" for r in custom),
            f"torch1.8 custom bilinear graphs (opset 11) on {name}: pass ({len(custom)} of {exported})",
        )
    for name, want in (("ort1.8", "load_failed"), ("ort1.14", "pass"), ("ort1.20", "pass"), ("openvino2026", "pass")):
        native = pick(
            replays[name],
            env="torch2",
            case="grid_sample_op",
            strategy="native",
            opset=16,
            mode="bilinear",
            padding_mode="zeros",
        )
        expect(
            native and all(r["verdict"] == want for r in native),
            f"torch2 native opset-16 GridSample bilinear/zeros on {name}: {want}",
        )


def check_precisions(expect):
    """The real models' graphs converted once and judged at fp16 and int8 where each is shipped: fp16 on two
    onnxruntime releases, int8-dynamic on onnxruntime (1.14 has no ConvInteger kernel), QDQ int8 there and on
    OpenVINO."""
    converted = {name: load(name, RecordKind.REPLAY) for name in ("ort1.32", "ort1.14", "openvino2026")}
    judging = {"fp16": ("ort1.32", "ort1.14"), "int8-dynamic": ("ort1.32",)}
    for precision in ("fp16", "int8-dynamic", "int8-static-weighted"):
        for name in judging.get(precision, ("ort1.32", "openvino2026")):
            records = converted[name]
            net = pick(records, env="torch2", case="convnet", strategy="native", precision=precision)
            expect(
                net and all(r["verdict"] == "pass" and r["converter"] and r["parity"]["psnr"] for r in net),
                f"torch2 convnet {precision} on {name}: pass, with the converter and the PSNR recorded",
            )
    stn = pick(converted["ort1.32"], env="torch1.8", case="stn_tutorial", strategy="custom", precision="int8-static")
    expect(
        stn and all(r["verdict"] == "mismatch" and r["parity"]["max_abs"] > r["parity"]["atol"] for r in stn),
        "torch1.8 tutorial STN, custom rewrite, int8-static on onnxruntime 1.32: mismatch (quantized coordinates)",
    )
    check_converters(converted, expect)
    check_recipes(expect)
    check_runtime_precisions(converted["openvino2026"], expect)


def check_converters(converted, expect):
    """A converter that writes invalid ONNX fails as itself, checked by onnx.checker; no runtime judges that graph."""
    conversions = load("convert", RecordKind.CONVERSION)
    invalid = [r for r in conversions if r["verdict"] == "check_failed" and r["kind"] == "conversion"]
    expect(
        invalid and all(r["reason"].startswith("check: ") and "wrote invalid ONNX" in r["reason"] for r in invalid),
        f"conversions onnx.checker refused ({len(invalid)}): the converter's failure, named with the converter",
    )
    refused = {(r["env"], r["cell_id"], r["precision"]) for r in invalid}
    judged = [
        r for records in converted.values() for r in records if (r["env"], r["cell_id"], r["precision"]) in refused
    ]
    expect(not judged, f"no runtime judged a graph onnx.checker refused ({len(judged)} found)")
    fp32 = {(r["cell_id"], r["env"]) for r in pick(converted["ort1.32"], precision="fp32") if r["verdict"] == "pass"}
    for strategy in ("custom", "mmcv"):
        fp16 = pick(converted["ort1.32"], env="torch1.8", case="stn_tutorial", strategy=strategy, precision="fp16")
        same = [r for r in fp16 if (r["cell_id"], r["env"]) in fp32]
        expect(
            same and all(r["verdict"] == "pass" and r["converter"].startswith("onnxruntime ") for r in same),
            f"torch1.8 tutorial STN, {strategy}, fp16 by onnxruntime's converter on onnxruntime 1.32: pass wherever "
            f"its fp32 graph does ({len(same)} graphs)",
        )


def check_recipes(expect):
    """Every strategy of the real STNs whose graphs exported has an int8-static answer: a recipe that passes, the
    search's best, or why there is none (the converter's failure, a runtime's refusal, an fp32 graph that misses)."""
    records = load("convert", RecordKind.SEARCH)
    searches = [r for r in records if r["kind"] == RecordKind.SEARCH.value]
    for case in ("stn", "stn_tutorial"):
        for strategy in ("native", "custom", "mmcv", "contrib"):
            made = pick(records, env="torch1.8", case=case, strategy=strategy, precision="int8-static-weighted")
            if not made:  # the strategy exported no graph of this case here (native on torch 1.8)
                continue
            found = pick(searches, env="torch1.8", case=case, strategy=strategy, precision="int8-static-recipe")
            explained = all(r["recipe"] if r["verdict"] in ("pass", "mismatch") else r["reason"] for r in found)
            budgets = {r["recipe"]["budget"] for r in found if r["verdict"] in ("pass", "mismatch")}
            expect(
                found and explained and budgets <= {12},
                f"torch1.8 {case} {strategy}: an int8-static recipe search answered ({len(found)} graphs: "
                f"{', '.join(sorted(r['verdict'] for r in found))})",
            )


def check_runtime_precisions(openvino, expect):
    """OpenVINO computes the fp32 graphs at its default, bf16 and f16, and names what it chose."""
    default = pick(openvino, case="convnet", precision="runtime-default")
    expect(
        default and all(r["runtime_settings"].get("inference_precision") for r in default),
        "OpenVINO 2026 at its default inference precision names what it chose",
    )
    for precision in ("runtime-bf16", "runtime-f16"):
        found = pick(openvino, case="convnet", precision=precision)
        expect(
            found and all(r["verdict"] in ("pass", "mismatch", "not_applicable") for r in found),
            f"OpenVINO 2026 {precision}: judged, or not applicable with OpenVINO's reason",
        )
    ort = load("ort1.32", RecordKind.REPLAY)
    passing = [r for r in ort if r["verdict"] == "pass" and r["precision"] == "fp32"]
    measured = [r for r in passing if "sweep" not in r["tags"]]
    expect(
        measured and all({"ort", "ort.working_set"} <= set(r["memory"]) for r in measured),
        "onnxruntime 1.32 replays record a footprint and a working set",
    )
    swept = [r for r in passing if "sweep" in r["tags"]]
    expect(
        swept and all(not r["memory"] and not r["latency"] for r in swept),
        "a correctness sweep's replays (grid_sample_op) are judged, not costed",
    )
    expect(
        measured and all("forked from a fresh runtime" in m["method"] for r in measured for m in r["memory"].values()),
        "onnxruntime 1.32 replays measure memory in a process forked from a fresh runtime (the zygote)",
    )


if __name__ == "__main__":
    sys.exit(main())
