"""Write notebooks 03 and 04 from their cell sources (run once; outputs come from executing them)."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent.parent / "notebooks"


def notebook(cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.cells = [new_markdown_cell(src) if kind == "md" else new_code_cell(src) for kind, src in cells]
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    return nb


NB03 = [
    ("md", """# Authority and conflicts: what may enter the packet, and why

Retrieval proposes candidates; the **assembly policy** decides which of them may enter the packet as
evidence, in what role, and says why (seed 003). This notebook walks the seed's worked example, *a
policy changed today*, on the frozen fixture `fixtures/policy/`: a support agent asks whether an order
can be refunded, and the notes hold an informal forum thread (60 days), refund policy revision A
(30 days, superseded), revision B (14 days, in force since 2026-11-28) and the order record (20 days
old). Then it checks two answers against the packet, shows the trace, shows tenant scopes, and runs
the policy evaluation.

The clock is fixed (`as_of`), so every output here is the same on every run."""),
    ("code", """import tempfile
from pathlib import Path

import pandas as pd

from retrieval_kernel import Workspace
from retrieval_kernel.grounding import check_grounding, parse_claims
from retrieval_kernel.trace import trace_text

pd.set_option("display.max_colwidth", 90)
SUITE = Path("..") / "fixtures" / "policy"
store = tempfile.TemporaryDirectory(prefix="rk-nb03-")
ws = Workspace(SUITE / "notes", store.name)
report = ws.index()
print(f"{len(report.added)} notes indexed; {ws.records.passage_count()} passages")"""),
    ("md", """## 1. What the tool believes about each note

Every policy decision starts from the note facts read from front matter (or ADR status lines). The
inventory is the same as `retrieval-kernel notes fixtures/policy/notes --json`."""),
    ("code", """from retrieval_kernel.inventory import inventory

notes = pd.DataFrame(inventory(SUITE / "notes")["notes"])
refund = notes[notes["id"].isin(["forum-refund-thread", "refund-policy-a", "refund-policy-b", "order-4471"])]
refund[["id", "authority", "status", "valid_from", "valid_to", "revision", "superseded_by", "asserts"]]"""),
    ("md", """## 2. The refund question as of 2026-11-30

Revision B governs: it is admitted as `current`. Revision A is excluded as `superseded` (named, with
its reason, under *Excluded*). The forum thread is lower authority on the same proposition, so it may
only appear as flagged `explanation`, after the governing evidence. Two conflict objects record the
resolutions: `superseded(A, by=B)` and `authority(B over forum)`."""),
    ("code", """packet = ws.query("Can I refund order 4471? The customer says it arrived last month.",
                  as_of="2026-11-30", intent="verify")
packet"""),
    ("code", """pd.DataFrame(
    [{"conflict": c.id, "proposition": c.proposition, "resolution": c.resolution,
      "sides": ", ".join(f"{s.ref or s.id}={s.value}" for s in c.evidence), "required": c.required_behavior}
     for c in packet.conflicts]
)"""),
    ("code", """packet.to_frame()[["ref", "module", "citation", "role", "authority", "status", "observed_at", "freshness"]]"""),
    ("md", """## 3. The audit view

`--audit` (here `audit=True`) also shows what was kept out, as `historical` evidence with its status,
never as current. The conflict now cites revision A by its ref."""),
    ("code", """audit = ws.query("Can I refund order 4471? The customer says it arrived last month.",
                 as_of="2026-11-30", intent="verify", audit=True)
audit.to_frame()[["ref", "module", "citation", "role", "status"]]"""),
    ("md", """## 4. The same question before revision B took effect

As of 2026-11-20 revision B is not valid yet (it is excluded as `not_yet_valid`), so revision A
governs even though its front matter already says `superseded`: supersession takes effect when the
successor does."""),
    ("code", """before = ws.query("Can I refund order 4471? The customer says it arrived last month.",
                  as_of="2026-11-20", intent="verify")
display(before.to_frame()[["ref", "module", "role", "status"]])
pd.DataFrame([{"id": e.id, "reason": e.reason, "detail": e.detail} for e in before.excluded])"""),
    ("md", """## 5. Grounding: a grounded and an ungrounded answer

`check_grounding` (and the `%%context_check` cell magic) checks each claim against the evidence it
cites: the refs must exist, every number in the claim must appear in a cited excerpt, at least half of
its content words must too, and a claim must not repeat a value the packet's conflicts resolved
against."""),
    ("code", """ref = {item.module: item.ref for item in packet.evidence}
policy, order = ref["refund-policy-b"], ref["order-4471"]
grounded = f\"\"\"The current refund window is 14 days after delivery [{policy}]
Order 4471 was delivered 20 days ago [{order}]
So order 4471 is outside the refund window [{policy}][{order}]\"\"\"
check_grounding(packet, parse_claims(grounded))"""),
    ("code", """ungrounded = f\"\"\"Refunds are allowed up to 30 days after delivery [{policy}]
The forum says 60 days, so the refund is fine
Order 4471 was delivered 20 days ago [e99]\"\"\"
check_grounding(packet, parse_claims(ungrounded))"""),
    ("md", """## 6. The trace

Every packet carries a trace id; the trace (stored in the record store, without note text: the query
is only a digest) shows lanes, candidates, every eligibility decision, conflicts, budget decisions and
the final order. `%context_trace` and `retrieval-kernel trace ID --notes DIR` print the same."""),
    ("code", """print(trace_text(ws.trace(packet.trace_id)))"""),
    ("md", """## 7. Scopes

Harrow (`tenant-a`) and Pellham (`tenant-b`) each have their own service levels. A caller sees only
notes in its scopes (and notes without a scope); a note outside them is never named anywhere, not
even among the exclusions: only `exclusions["scope"]` counts it."""),
    ("code", """question = "How fast must trade support give a first response?"
rows = []
for scopes in ([], ["tenant-a"], ["tenant-b"]):
    p = ws.query(question, as_of="2026-11-30", scopes=scopes)
    rows.append({
        "scopes": ", ".join(scopes) or "(none)",
        "evidence": ", ".join(item.module for item in p.evidence),
        "filtered by scope": p.exclusions["scope"],
        "excluded (in scope)": ", ".join(f"{e.id}: {e.reason}" for e in p.excluded),
    })
pd.DataFrame(rows)"""),
    ("md", """## 8. The policy evaluation

`retrieval-kernel eval fixtures/policy --output receipt.json` runs every frozen question (73, written
from the policy specification by a separate author before any scoring) and reports assembly metrics
apart from retrieval metrics. The gates are 0 scope violations, 0 stale or superseded admissions as
current, and conflict detection recall 1.0."""),
    ("code", """from retrieval_kernel.policy_eval import run_policy_suite

receipt = run_policy_suite(SUITE)
metrics = {k: v for k, v in receipt["metrics"].items() if not isinstance(v, dict)}
metrics.update({f"retrieval.{k}": v for k, v in receipt["metrics"]["retrieval"].items()})
pd.Series(metrics, name="value").to_frame()"""),
    ("code", """pd.DataFrame(receipt["gates"]).T"""),
    ("code", """by_category = pd.DataFrame(receipt["questions"]).groupby("category").agg(
    questions=("id", "count"), abstention_correct=("abstention_correct", "sum")
)
by_category"""),
    ("code", """ws.close()
store.cleanup()"""),
]

NB04 = [
    ("md", """# Real decision records: supersession read from ADR status lines

Real project notes rarely have front matter. Architecture Decision Records carry their state in a
`## Status` section ("Accepted", "Superseded by [ADR019](ADR019-use-amazon-ses.md)",
"⌛️ Superseded [0019](0019-use-bash-go-as-core-languages.md)", "❌ Rejected", "> Accepted") and their
source time in a `Date:` line. This notebook indexes two real ADR collections from
`../shared/corpora/` (read in place, never copied) and checks what the tool read against the
hand-made `metadata.jsonl` that ships with each."""),
    ("code", """import json
import os
import tempfile
from pathlib import Path

import pandas as pd

from retrieval_kernel import Workspace
from retrieval_kernel.inventory import inventory

pd.set_option("display.max_colwidth", 80)
SHARED = Path(os.environ.get("RETRIEVAL_KERNEL_SHARED", Path("..") / ".." / "shared"))
CORPORA = ["alphagov-forms", "moj-modernisation-platform"]
STATUS_OF = {"accepted": "current", "superseded": "superseded", "proposed": "draft", "rejected": "rejected"}"""),
    ("md", """## 1. Status, dates and supersession links against `metadata.jsonl`

For every record: the normalized status (the metadata's `unclear (template text left in)` must come
out unknown), the source date, and every `superseded_by` link (precision and recall of the edges)."""),
    ("code", """def compare(name: str) -> dict:
    root = SHARED / "corpora" / name
    truth = {row["file"]: row for row in map(json.loads, (root / "metadata.jsonl").read_text().splitlines())}
    listing = inventory(root / "notes")
    mine = {entry["path"]: entry for entry in listing["notes"]}
    records = [path for path, row in truth.items() if row["kind"] == "record"]
    true_edges = {(path, new) for path, row in truth.items() for new in row["superseded_by"]}
    found_edges = {(path, new) for path, entry in mine.items() for new in entry["superseded_by"]}
    hits = len(true_edges & found_edges)
    return {
        "corpus": name,
        "records": len(records),
        "status agrees": sum(STATUS_OF.get(truth[p]["status_normalized"]) == mine[p]["status"] for p in records),
        "date agrees": sum(truth[p]["date_iso_guess"] == mine[p]["observed"] for p in records),
        "superseded_by edges (truth)": len(true_edges),
        "edges found": len(found_edges),
        "precision": hits / len(found_edges) if found_edges else None,
        "recall": hits / len(true_edges) if true_edges else None,
        "ambiguous links": len(listing["ambiguous_links"]),
    }

pd.DataFrame([compare(name) for name in CORPORA]).set_index("corpus").T"""),
    ("md", """`ADR013` says "Superseded by ADR025" and the collection has two ADR025 files; the tool links
both and reports the reference as ambiguous, as the metadata does. `ADR004` links to a file that does
not exist (`ADR045-use-forms-api.md`); the number in the file name resolves it to
`ADR045-remove-forms-api.md`."""),
    ("code", """listing = inventory(SHARED / "corpora" / "alphagov-forms" / "notes")
superseded = [e for e in listing["notes"] if e["status"] == "superseded"]
pd.DataFrame(superseded)[["path", "status_as_written", "superseded_by", "observed"]]"""),
    ("code", """pd.DataFrame(listing["ambiguous_links"])"""),
    ("md", """## 2. Superseded decisions in packets

Index the collection and ask about a superseded decision. The old record is excluded as
`superseded` and named under *Excluded* with its successor; the successor is admitted (pulled in if
the lanes had not found it), and a `supersession` conflict records the resolution. With `--audit` the
old decision is shown too, as history."""),
    ("code", """store = tempfile.TemporaryDirectory(prefix="rk-nb04-")
ws = Workspace(SHARED / "corpora" / "alphagov-forms" / "notes", store.name)
report = ws.index()
print(f"{len(report.added)} notes, {ws.records.passage_count()} passages")"""),
    ("code", """packet = ws.query("How do we send emails to form fillers? GOV.UK Notify", as_of="2026-11-30")
packet"""),
    ("code", """audit = ws.query("How do we send emails to form fillers? GOV.UK Notify", as_of="2026-11-30", audit=True)
audit.to_frame()[["ref", "module", "citation", "role", "status", "observed_at"]]"""),
    ("code", """pd.DataFrame(
    [{"conflict": c.id, "proposition": c.proposition, "resolution": c.resolution,
      "sides": ", ".join(s.ref or s.id for s in c.evidence)} for c in audit.conflicts]
)"""),
    ("md", """## 3. The other collection: emoji statuses

The Ministry of Justice records write `✅ Accepted`, `❌ Rejected`, `🤔 Proposed` and `⌛️ Superseded`.
0004 (core languages) is superseded by 0019; a question about core languages gets 0019."""),
    ("code", """ws.close()
store2 = tempfile.TemporaryDirectory(prefix="rk-nb04b-")
moj = Workspace(SHARED / "corpora" / "moj-modernisation-platform" / "notes", store2.name)
moj.index()
langs = moj.query("Which core programming languages do we use?", as_of="2026-11-30")
display(langs.to_frame()[["ref", "module", "role", "status", "observed_at"]])
pd.DataFrame([{"id": e.id, "reason": e.reason, "detail": e.detail} for e in langs.excluded])"""),
    ("code", """status_counts = pd.DataFrame(inventory(SHARED / "corpora" / "moj-modernisation-platform" / "notes")["notes"])
status_counts["status"].fillna("unknown").value_counts().to_frame()"""),
    ("code", """moj.close()
store.cleanup()
store2.cleanup()"""),
]


def main() -> None:
    which = sys.argv[1:] or ["03", "04"]
    if "03" in which:
        nbformat.write(notebook(NB03), HERE / "03_authority_and_conflicts.ipynb")
    if "04" in which:
        nbformat.write(notebook(NB04), HERE / "04_real_decision_records.ipynb")


if __name__ == "__main__":
    main()
