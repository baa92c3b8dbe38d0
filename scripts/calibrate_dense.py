"""Calibrate the dense lane's abstention threshold on SciFact *train* queries.

The threshold is the cosine below which a dense hit is not treated as evidence. We take
the 5th percentile of the cosine between each train query and its relevant abstracts, so
95% of true matches pass. Usage: python scripts/calibrate_dense.py [SCIFACT_DIR]
(embeds the 5,183 abstracts: several minutes on two cores).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from retrieval_kernel.evaluation.beir import load_beir, note_text
from retrieval_kernel.projections.embedding import OnnxEmbedder

PERCENTILE = 5


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parents[2] / "shared/datasets/scifact"
    data = load_beir(folder, "train")
    embedder = OnnxEmbedder()
    doc_ids = list(data.corpus)
    # The text the dense lane embeds for a BEIR note: its passage (title heading + abstract).
    passages = [note_text(d, *data.corpus[d]).split("---\n", 2)[2].rstrip("\n") for d in doc_ids]
    vectors = embedder.embed(passages)
    position = {doc_id: i for i, doc_id in enumerate(doc_ids)}
    query_ids = sorted(data.qrels)
    queries = embedder.embed([data.queries[q] for q in query_ids])
    relevant = [float(queries[i] @ vectors[position[d]]) for i, q in enumerate(query_ids) for d in data.qrels[q]]
    print(f"{len(relevant)} relevant (query, abstract) pairs from {len(query_ids)} train queries")
    print("cosine percentiles 1/5/10/50:", np.percentile(relevant, [1, 5, 10, 50]).round(3))
    print(f"threshold (percentile {PERCENTILE}): {np.percentile(relevant, PERCENTILE):.2f}")


if __name__ == "__main__":
    main()
