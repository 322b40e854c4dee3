"""How far an output is from the eager PyTorch reference, and whether that passes."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import numpy as np

# (atol, rtol) per dtype: float32 leaves room for reassociation across runtimes, half types for rounding.
TOLERANCES = {
    "float64": (1e-6, 1e-6),
    "float32": (1e-4, 1e-4),
    "float16": (1e-2, 1e-2),
    "bfloat16": (5e-2, 2e-2),
}


# Converted graphs (harness.artifacts.convert) against fp32 eager PyTorch: atol as a fraction of the reference
# output's range (peak to peak), and an rtol. fp16 keeps about three decimal digits through a few layers; int8 has
# 255 steps over each tensor's range, and the error of several quantized layers adds up.
PRECISION_TOLERANCES = {
    "fp16": (1e-2, 1e-2),
    "int8-dynamic": (5e-2, 0.0),
    "int8-static": (5e-2, 0.0),
    "bf16": (2e-2, 2e-2),  # a runtime computing in bfloat16: 8 bits of mantissa, a little more than 2 decimal digits
}


def tolerance_for(dtype: str, override: Optional[Sequence[float]] = None) -> Sequence[float]:
    if override:
        return override
    return TOLERANCES.get(dtype, TOLERANCES["float32"])


def to_numpy_list(value: Any) -> List[np.ndarray]:
    """Flatten a tensor, array or (nested) tuple of them into float64 arrays."""
    if isinstance(value, (list, tuple)):
        out: List[np.ndarray] = []
        for item in value:
            out.extend(to_numpy_list(item))
        return out
    if hasattr(value, "detach"):
        value = value.detach().float().cpu().numpy()
    return [np.asarray(value, dtype=np.float64)]


def compare(actual: Any, expected: Any, atol: float, rtol: float) -> Dict[str, Any]:
    """max_abs, max_rel and the smallest atol that would pass at this rtol; NaN must match NaN. Also the mean
    absolute error, its 99th percentile and, for image-like (4-D) outputs, the PSNR over the reference's range: how
    a converted (fp16, int8) graph's error is spread, not only its worst element."""
    got, want = to_numpy_list(actual), to_numpy_list(expected)
    if len(got) != len(want):
        return _failed(atol, rtol, f"{len(got)} outputs, expected {len(want)}")
    max_abs = max_rel = need = 0.0
    diffs: List[np.ndarray] = []
    psnr: Optional[float] = None
    for a, b in zip(got, want):
        if a.shape != b.shape:
            return _failed(atol, rtol, f"output shape {list(a.shape)}, expected {list(b.shape)}")
        nan_a, nan_b = np.isnan(a), np.isnan(b)
        if (nan_a != nan_b).any():
            return _failed(atol, rtol, f"{int((nan_a != nan_b).sum())} NaN values where the reference has numbers")
        mask = ~nan_b
        if not mask.any():
            continue
        diff = np.abs(a[mask] - b[mask])
        ref = np.abs(b[mask])
        if not np.isfinite(diff).all():
            return _failed(atol, rtol, "infinite difference")
        max_abs = max(max_abs, float(diff.max()))
        max_rel = max(max_rel, float((diff / np.maximum(ref, 1e-12)).max()))
        need = max(need, float((diff - rtol * ref).max()))
        diffs.append(diff.ravel())
        if b.ndim == 4:
            psnr = _worst_psnr(psnr, diff, b[mask])
    need = max(0.0, need)
    every = np.concatenate(diffs) if diffs else np.zeros(0)
    return {
        "ok": need <= atol,
        "max_abs": max_abs,
        "max_rel": max_rel,
        "atol": atol,
        "rtol": rtol,
        "min_passing_atol": need,
        "note": None,
        "mean_abs": float(np.mean(every)) if every.size else 0.0,
        "p99_abs": float(np.percentile(every, 99)) if every.size else 0.0,
        "psnr": psnr,
    }


def _worst_psnr(worst: Optional[float], diff: np.ndarray, ref: np.ndarray) -> Optional[float]:
    """PSNR in dB of one output over the reference's own range (peak to peak); inf for an exact match."""
    peak = float(ref.max() - ref.min()) if ref.size else 0.0
    mse = float(np.mean(diff * diff))
    if peak <= 0:
        return worst
    value = float("inf") if mse == 0 else 10.0 * np.log10(peak * peak / mse)
    return value if worst is None else min(worst, value)


def _failed(atol: float, rtol: float, note: str) -> Dict[str, Any]:
    inf = float("inf")
    return {
        "ok": False,
        "max_abs": inf,
        "max_rel": inf,
        "atol": atol,
        "rtol": rtol,
        "min_passing_atol": inf,
        "note": note,
        "mean_abs": inf,
        "p99_abs": inf,
        "psnr": None,
    }


def merge(results: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """The worst of several comparisons (several shapes of one dynamic cell)."""
    worst = dict(results[0])
    for r in results[1:]:
        for key in ("max_abs", "max_rel", "min_passing_atol", "mean_abs", "p99_abs"):
            worst[key] = max(worst[key], r[key])
        if r.get("psnr") is not None:
            worst["psnr"] = r["psnr"] if worst.get("psnr") is None else min(worst["psnr"], r["psnr"])
        worst["ok"] = worst["ok"] and r["ok"]
        worst["note"] = worst["note"] or r["note"]
    worst["shapes_checked"] = len(results)
    return worst


def describe_mismatch(result: Dict[str, Any], where: str) -> str:
    if result.get("note"):
        return f"{where}: {result['note']}"
    return (
        f"{where}: max abs difference {result['max_abs']:.3g} exceeds atol {result['atol']:.0e} "
        f"+ rtol {result['rtol']:.0e}*|ref| (smallest passing atol {result['min_passing_atol']:.3g})"
    )
