"""Print the performance table of docs/performance.md from a bench JSON (``retrieval-kernel bench``).

Usage: python scripts/bench_table.py docs/bench.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROWS = [
    ("passages", "passages", ""),
    (
        "`%context` warm p50 / p95 (ms)",
        ("e2e_p50_ms", "e2e_p95_ms"),
        "≤ 50 (10k), ≤ 150 (100k), ≤ 40 / 80 (SciFact)",
    ),
    ("share outside the lanes' own work", "overhead_fraction", "≤ 25% (10k)"),
    ("lexical p50 (ms) / bm25s p50 (ms)", ("lexical_p50_ms", "bm25s_p50_ms"), ""),
    ("lexical ÷ bm25s", "lexical_vs_bm25s", "≤ 3x"),
    ("lexical, first question after a change (ms) / ÷ bm25s", ("lexical_cold_p50_ms", "lexical_cold_vs_bm25s"), ""),
    ("dense search p50 (ms) / numpy exact (ms)", ("dense_search_p50_ms", "numpy_p50_ms"), ""),
    ("dense search ÷ numpy", "dense_vs_numpy", "≤ 2x"),
    ("query embedding p50 (ms)", "query_embed_p50_ms", ""),
    (
        "first query after a one-note edit (ms) / ÷ warm",
        ("after_edit_ms", "after_edit_vs_warm"),
        "≤ 2x warm (50k)",
    ),
    ("one-note refresh (s)", "refresh_one_s", ""),
    ("peak RSS (MB)", "peak_rss_mb", "≤ 2,048 (100k)"),
    ("lexical indexing (passages/s)", "lexical_index_per_s", "≥ 2,000"),
    ("dense indexing ÷ plain `encode`", "dense_index_vs_encode", "≥ 2x"),
    ("`encode` reference (passages/s)", "encode_reference_per_s", ""),
]


def cell(figures: dict, key: str | tuple[str, ...]) -> str:
    keys = key if isinstance(key, tuple) else (key,)
    values = [figures.get(k) for k in keys]
    return " / ".join("—" if v is None else f"{v:,}" if isinstance(v, int) else f"{v:g}" for v in values)


def main(path: str) -> None:
    bench = json.loads(Path(path).read_text(encoding="utf-8"))
    runs = {f"scaled {int(size):,}": f for size, f in sorted(bench["sizes"].items(), key=lambda kv: int(kv[0]))}
    runs.update(bench.get("corpora", {}))
    print("| figure | " + " | ".join(runs) + " | target |")
    print("|---|" + "---|" * (len(runs) + 1))
    for label, key, target in ROWS:
        print(f"| {label} | " + " | ".join(cell(f, key) for f in runs.values()) + f" | {target} |")
    print()
    stages = sorted({stage for f in runs.values() for stage in f.get("stages_p50_ms", {})})
    print("| stage p50 (ms) | " + " | ".join(runs) + " |")
    print("|---|" + "---|" * len(runs))
    for stage in stages:
        print(
            f"| {stage} | " + " | ".join(f"{f.get('stages_p50_ms', {}).get(stage, 0):g}" for f in runs.values()) + " |"
        )
    print(f"\ncold start: %load_ext {bench.get('load_ext_s')} s, first %context {bench.get('first_query_s')} s")
    if "first_query_stages_ms" in bench:
        stages_s = sum(bench["first_query_stages_ms"].values()) / 1000
        print(f"of it in the query's stages: {stages_s:.2f} s (the rest opens the workspace and renders)")
    if "cold_start_waits" in bench:
        print(f"what it waited for: {bench['cold_start_waits']}")
    if "first_query_again_s" in bench:
        print(f"again: %load_ext {bench['load_ext_again_s']} s, first %context {bench['first_query_again_s']} s")
        print(f"what it waited for: {bench.get('cold_start_again_waits')}")


if __name__ == "__main__":
    main(sys.argv[1])
