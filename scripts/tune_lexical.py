"""Grid-search the lexical lane's BM25F parameters on SciFact *train* queries only.

Needs an index built by ``retrieval-kernel beir SCIFACT --split train --methods lexical
--store STORE --output /dev/null``. Usage: python scripts/tune_lexical.py STORE [SCIFACT_DIR]
Chosen: k1 1.2, b 0.5, heading boost 0.5 (train nDCG@10 0.694); see retrieval_kernel/projections/lexical.py.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

from retrieval_kernel.evaluation.beir import evaluate, load_beir
from retrieval_kernel.projections.lexical import LexicalProjection
from retrieval_kernel.store.records import RecordStore

# The two passes recorded in tune_lexical.log: boosts 1.0/2.0 first, then 0.0/0.5.
BOOSTS = [0.0, 0.5, 1.0, 2.0]
K1S = [0.7, 0.9, 1.2, 1.5]
BS = [0.3, 0.4, 0.5, 0.75, 0.9]


def main() -> None:
    store = Path(sys.argv[1]) / "index"
    folder = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).parents[2] / "shared/datasets/scifact"
    data = load_beir(folder, "train")
    module = {sp.passage.id: sp.passage.module for sp in RecordStore(store).passages().values()}
    results = []
    for boost, k1, b in itertools.product(BOOSTS, K1S, BS):
        projection = LexicalProjection(store, k1=k1, b=b, heading_boost=boost)
        run = {}
        for query_id, text in data.queries.items():
            scores: dict[str, float] = {}
            for hit in projection.search(text, 100):
                scores.setdefault(module[hit.passage_id], hit.score)
            run[query_id] = scores
        scores_now = evaluate(run, data.qrels)
        results.append((scores_now["ndcg_at_10"], boost, k1, b))
        ndcg, recall = scores_now["ndcg_at_10"], scores_now["recall_at_100"]
        print(f"boost {boost} k1 {k1} b {b}: nDCG@10 {ndcg:.4f} R@100 {recall:.4f}")
    print("best (nDCG@10, boost, k1, b):", max(results))


if __name__ == "__main__":
    main()
