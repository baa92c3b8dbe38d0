"""Read an evaluation receipt: the results table, per-question rows, and the misses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas


def summary_rows(receipt: dict[str, Any]) -> list[tuple[str, str]]:
    """(check, observed result) pairs, in the order the study reports them."""
    m = receipt["metrics"]
    n = m["questions"]
    unit = receipt["budget_unit"]

    def count(fraction: float) -> str:
        return f"{round(fraction * n)} / {n}"

    return [
        ("Expected module ranked first", count(m["module_at_1"])),
        ("Expected passage ranked first", count(m["passage_at_1"])),
        ("Expected passage anywhere in the top five", count(m["passage_in_top5"])),
        ("Returned citation excerpts matched source lines", f"{m['citations_exact']} / {m['citations_checked']}"),
        (f"Responses within their {unit} caps", f"{m['within_cap']} / {m['responses']}"),
        ("Responses kept stale-source and not-live-verified signals", f"{m['freshness_honest']} / {m['responses']}"),
        (
            f"Response size at the {receipt['rank_cap']:,}-{unit} cap",
            f"{m['rank_cap_size_min']:,} to {m['rank_cap_size_max']:,} {unit}",
        ),
    ]


def summary_table(receipt: dict[str, Any]) -> str:
    """The results as a Markdown table (it reads fine in a terminal too)."""
    rows = summary_rows(receipt)
    width = max(len(check) for check, _ in rows)
    lines = [f"| {'Check':<{width}} | Observed result |", f"|{'-' * (width + 2)}|-----------------|"]
    lines += [f"| {check:<{width}} | {result} |" for check, result in rows]
    return "\n".join(lines)


def summary_frame(receipt: dict[str, Any]) -> pandas.DataFrame:
    import pandas

    return pandas.DataFrame(summary_rows(receipt), columns=["check", "observed"]).set_index("check")


def questions_frame(receipt: dict[str, Any]) -> pandas.DataFrame:
    """One row per question: what was expected, what ranked first, sizes at each cap."""
    import pandas

    rows = []
    for row in receipt["questions"]:
        module_ok = row["top_module"] == row["expected_module"]
        record = {
            "id": row["id"],
            "question": row["question"],
            "expected_heading": row["expected_heading"],
            "top_heading": row["top_heading"],
            "module_at_1": module_ok,
            "passage_at_1": module_ok and row["top_heading"] == row["expected_heading"],
            "expected_rank": row["expected_rank"],
        }
        record.update({f"size@{cap}": response["size"] for cap, response in row["responses"].items()})
        rows.append(record)
    return pandas.DataFrame(rows).set_index("id")


def misses_frame(receipt: dict[str, Any]) -> pandas.DataFrame:
    """The questions whose expected passage did not rank first, with what did."""
    frame = questions_frame(receipt)
    return frame.loc[~frame["passage_at_1"], ["question", "expected_heading", "top_heading", "expected_rank"]]
