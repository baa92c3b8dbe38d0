"""The recovery suite: cause each refresh fault for real, on disposable copies, and check the survival.

``retrieval-kernel eval-recovery --output receipt.json`` runs every scenario; each
builds its own notes and store in a temporary folder, breaks something the way it
breaks in life (a SIGKILL in the middle of a refresh, damaged files, a failing
embedder, a note saved while it is read, two publishers at once, a time limit, a
read-only store, a damaged record store) and checks what the issue promises: the
last good state keeps answering, the packet says what it was built from, and the
next refresh (or ``rebuild``) restores everything, equal to a build from scratch.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CorruptStoreError
from ..pipeline.workspace import Workspace, rebuild
from ..store.records import DATABASE_NAME

AS_OF = "2026-11-30"
FAST_LANES = ("identity", "lexical")
PROBES = ("pump seal inspection", "ledger rounding", "rota handover", "backup restore drill", "zephyr quota")
CHILD_WAIT = 120.0  # seconds a child process may take to reach its pause point


@dataclass
class Scenario:
    """One fault scenario's result: each check, and whether all held."""

    name: str
    fault: str
    checks: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None

    def check(self, what: str, ok: bool, detail: object = None) -> bool:
        self.checks.append({"check": what, "ok": bool(ok), **({"detail": detail} if detail is not None else {})})
        return bool(ok)

    @property
    def passed(self) -> bool:
        return self.error is None and bool(self.checks) and all(item["ok"] for item in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "fault": self.fault,
            "passed": self.passed,
            "seconds": round(self.seconds, 2),
            "checks": self.checks,
            "error": self.error,
        }


# ---------------------------------------------------------------- a disposable corpus


def write_corpus(notes: Path, notes_count: int = 24) -> None:
    """A small corpus with one distinctive topic per note (so probes have a known best answer)."""
    topics = [
        ("pumps", "Pump seal inspection", "Inspect the pump seal every quarter; a weeping seal is replaced."),
        ("ledger", "Ledger rounding", "The ledger rounds half to even at the cent, never per line item."),
        ("rota", "Rota handover", "The on-call rota hands over on Mondays at 10:00 with a written summary."),
        ("backups", "Backup restore drill", "A restore drill runs monthly; the restored copy is checksummed."),
        ("quota", "Zephyr quota", "The zephyr service quota is 400 requests per minute per tenant."),
    ]
    notes.mkdir(parents=True, exist_ok=True)
    for index in range(notes_count):
        slug, title, body = topics[index % len(topics)]
        name = f"{slug}.md" if index < len(topics) else f"{slug}-{index:03d}.md"
        text = f"---\nobserved: 2026-10-01\n---\n# {title} {index}\n\n## Rule\n\n{body}\n\n## Notes\n\nEntry {index}.\n"
        (notes / name).write_text(text, encoding="utf-8")


def edit_corpus(notes: Path) -> None:
    """One update, one addition, one deletion."""
    pumps = notes / "pumps.md"
    pumps.write_text(pumps.read_text(encoding="utf-8") + "\n## Seal torque\n\nTighten the seal to 12 Nm.\n")
    (notes / "gaskets.md").write_text("# Gaskets\n\n## Rule\n\nGaskets are replaced with every seal.\n")
    (notes / "rota.md").unlink()


def snapshot(workspace: Workspace) -> dict[str, Any]:
    """What must be equal between an incrementally refreshed store and one built from scratch."""
    records = workspace.records
    passages = records.passages()
    return {
        "documents": sorted((d.path, d.sha256) for d in records.documents().values()),
        "passages": sorted((pid, sp.passage.sha256) for pid, sp in passages.items()),
        "lexical_count": workspace.lexical.document_count(),
        "ranked": {q: [(h.passage_id, round(h.score, 6)) for h in workspace.lexical.search(q, 20)] for q in PROBES},
    }


def fresh_snapshot(notes: Path, scratch: Path) -> dict[str, Any]:
    with Workspace(notes, scratch, lanes=FAST_LANES) as fresh:
        fresh.index()
        return snapshot(fresh)


@contextmanager
def _disposable(notes_count: int = 24) -> Iterator[tuple[Path, Path, Path]]:
    """A temporary folder holding a fresh corpus: ``(folder, notes, store)``; removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="rk-recovery-"))
    try:
        write_corpus(folder / "notes", notes_count)
        yield folder, folder / "notes", folder / "store"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _child(script: str, *args: str, obey_permissions: bool = False) -> subprocess.Popen[str]:
    """A Python child process running ``script`` (with retrieval_kernel importable).

    ``obey_permissions``: when we are root, the child drops the capabilities that let
    root ignore file permissions (``setpriv``), so a read-only folder is read-only to it.
    """
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    prefix: list[str] = []
    if obey_permissions and os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            raise RuntimeError("running as root without setpriv (util-linux): cannot make a folder read-only to us")
        caps = "-dac_override,-dac_read_search,-fowner"
        prefix = [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"]
    return subprocess.Popen(
        [*prefix, sys.executable, "-c", textwrap.dedent(script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _first_line(process: subprocess.Popen[str], wanted: Callable[[str], bool]) -> str | None:
    """The child's first output line that ``wanted`` accepts (``None``: it ended, or not within CHILD_WAIT)."""
    assert process.stdout is not None
    deadline = time.monotonic() + CHILD_WAIT
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            return None
        if wanted(line):
            return line
    return None


def _wait_for_line(process: subprocess.Popen[str], marker: str) -> bool:
    return _first_line(process, lambda line: line.strip() == marker) is not None


# ---------------------------------------------------------------- scenarios

_KILL_CHILD = """
import sys, time
from pathlib import Path
from retrieval_kernel.projections import lexical
from retrieval_kernel.store import records
from retrieval_kernel.pipeline.workspace import Workspace

where = sys.argv[3]
if where == "store":  # pause after the second note of the refresh is committed (each note its own batch)
    from retrieval_kernel.store import indexing
    indexing.BATCH_NOTES = 1
    original = records.RecordStore._end_batch
    commits = []
    def end_batch(self):
        original(self)
        commits.append(1)
        if len(commits) == 2:
            print("PAUSED", flush=True)
            time.sleep(600)
    records.RecordStore._end_batch = end_batch
else:  # pause with the next lexical version written beside the serving one, before the switch
    def paused(folder, passages):
        print("PAUSED", flush=True)
        time.sleep(600)
    lexical._check_built = paused
with Workspace(sys.argv[1], sys.argv[2], lanes=("identity", "lexical")) as ws:
    if where == "lexical-rebuild":
        state = ws.records.projection("lexical")
        ws.lexical.rebuild(ws.records, state.version + 1)
    else:
        ws.index()
print("FINISHED", flush=True)
"""


def kill_mid_refresh(result: Scenario, where: str) -> None:
    with _disposable() as (work, notes, store):
        with Workspace(notes, store, lanes=FAST_LANES) as ws:
            ws.index()
            before = ws.records.projection("lexical")
            answer_before = ws.query("ledger rounding", as_of=AS_OF).evidence[0].id
        edit_corpus(notes)
        child = _child(_KILL_CHILD, str(notes), str(store), where)
        paused = _wait_for_line(child, "PAUSED")
        child.send_signal(signal.SIGKILL)
        child.communicate()  # reaps it and closes its pipes
        result.check("the refresh was killed at its pause point", paused and child.returncode == -signal.SIGKILL)
        with Workspace(notes, store, lanes=FAST_LANES, refresh="off") as ws:
            packet = ws.query("ledger rounding", as_of=AS_OF)
            result.check("the next open answers from the last good projection", packet.evidence[0].id == answer_before)
            result.check(
                "the packet says it is not consistent",
                packet.projection in ("stale", "failed-with-last-good"),
                packet.projection,
            )
            serving = ws.records.projection("lexical")
            result.check("the serving lexical version is still the last good one", serving == before, str(serving))
            outcome = ws.refresh(wait=True)
            result.check("the next refresh finishes the work", outcome.state == "consistent", outcome.error)
            after = snapshot(ws)
            packet = ws.query("seal torque", as_of=AS_OF)
            result.check("the edit is served after it", any("pumps" in e.id for e in packet.evidence))
            versions = sorted(p.name for p in (store / "lexical").iterdir())
            result.check("only the serving lexical version is left on disk", len(versions) == 1, versions)
        result.check("nothing is lost: equal to a build from scratch", after == fresh_snapshot(notes, work / "fresh"))


_ANSWER_THEN_WAIT = """
import json, sys, time
from retrieval_kernel.pipeline import upkeep
from retrieval_kernel.pipeline.workspace import Workspace

upkeep.DEFER_IDLE = 600.0  # the deferred writes are still waiting when the process is killed
ws = Workspace(sys.argv[1], sys.argv[2], lanes=("identity", "lexical"))
packet = ws.query("seal torque", as_of=sys.argv[3])
seen = {"ids": [e.id for e in packet.evidence], "projection": packet.projection, "warnings": list(packet.warnings)}
print("ANSWERED " + json.dumps(seen), flush=True)
time.sleep(600)
"""


def _answered(process: subprocess.Popen[str]) -> dict[str, Any] | None:
    """What the child printed on its ``ANSWERED`` line (``None``: it ended or never said)."""
    line = _first_line(process, lambda text: text.startswith("ANSWERED "))
    return None if line is None else dict(json.loads(line.removeprefix("ANSWERED ")))


def kill_after_answer(result: Scenario) -> None:
    """A query answers an edit before writing the projections; the process dies before it writes them."""
    with _disposable() as (work, notes, store):
        with Workspace(notes, store, lanes=FAST_LANES) as ws:
            ws.index()
        edit_corpus(notes)
        child = _child(_ANSWER_THEN_WAIT, str(notes), str(store), AS_OF)
        seen = _answered(child)
        child.send_signal(signal.SIGKILL)
        child.communicate()
        result.check("the query answered, then the process was killed", seen is not None, child.returncode)
        if seen is None:
            return
        result.check("it answered from the edit", any(pid.startswith("pumps") for pid in seen["ids"]), seen["ids"])
        result.check("saying the projections were not written", any("not written" in w for w in seen["warnings"]))
        with Workspace(notes, store, lanes=FAST_LANES, refresh="off") as ws:
            state, newest = ws.records.projection("lexical"), ws.records.high_water()
            result.check("the record store kept the edit", not ws.pending_changes())
            result.check("the lexical projection is behind it", state is not None and state.high_water < newest)
            packet = ws.query("seal torque", as_of=AS_OF)
            result.check("a new process says stale", packet.projection == "stale", packet.projection)
        with Workspace(notes, store, lanes=FAST_LANES) as ws:  # refreshing, no explicit index
            packet = ws.query("seal torque", as_of=AS_OF)
            result.check("its first query serves the edit", any("pumps" in e.id for e in packet.evidence))
        with Workspace(notes, store, lanes=FAST_LANES, refresh="off") as ws:
            state, newest = ws.records.projection("lexical"), ws.records.high_water()
            result.check("closing caught the projection up", state is not None and state.high_water == newest)
            found = [hit.passage_id for hit in ws.lexical.search_with_whoosh("seal torque", 5)]
            result.check("Whoosh itself holds the edit", any(pid.startswith("pumps") for pid in found), found)
            after = snapshot(ws)
        result.check("nothing is lost: equal to a build from scratch", after == fresh_snapshot(notes, work / "fresh"))


def corrupt_lexical(result: Scenario, damage: str) -> None:
    with _disposable() as (_work, notes, store):
        with Workspace(notes, store, lanes=FAST_LANES) as ws:
            ws.index()
            expected = snapshot(ws)
            folder = ws.lexical.folder
        _damage_lexical(folder, damage)
        with Workspace(notes, store, lanes=FAST_LANES, refresh="off") as ws:
            status = ws.status()
            lexical_status = next(p for p in status["projections"] if p["name"] == "lexical")
            result.check("status reports the damage", bool(lexical_status["problem"]), lexical_status["problem"])
            packet = ws.query("zephyr quota", as_of=AS_OF)
            lane = next(lane for lane in packet.lanes if lane.name == "lexical")
            result.check("the query answers, never a traceback", not packet.abstained and bool(packet.evidence))
            result.check("the lexical lane was rebuilt from the record store", lane.status == "ok", lane.reason)
            result.check(
                "and the packet says so", any("rebuilt it from the record store" in w for w in packet.warnings)
            )
            result.check("the best passage is the right one", packet.evidence[0].id.startswith("quota"))
            result.check("the rebuilt index equals the original", snapshot(ws) == expected)


def _damage_lexical(folder: Path, damage: str) -> None:
    if damage == "segment-deleted":
        for segment in folder.glob("*.seg"):
            segment.unlink()
    elif damage == "toc-garbage":
        for toc in folder.glob("_*.toc"):
            toc.write_bytes(b"\x00garbage" * 64)
    elif damage == "folder-deleted":
        shutil.rmtree(folder)
    else:
        raise ValueError(damage)


def corrupt_projection_table(result: Scenario) -> None:
    with _disposable() as (_work, notes, store):
        with Workspace(notes, store, lanes=FAST_LANES) as ws:
            ws.index()
            expected = snapshot(ws)
        with sqlite3.connect(store / DATABASE_NAME) as db:  # the read pointer names a version that does not exist
            db.execute("UPDATE projections SET version = 77, high_water = 999 WHERE name = 'lexical'")
        with Workspace(notes, store, lanes=FAST_LANES) as ws:
            packet = ws.query("backup restore drill", as_of=AS_OF)
            result.check("the query answers", bool(packet.evidence) and packet.evidence[0].id.startswith("backups"))
            state = ws.records.projection("lexical")
            result.check("the pointer was repaired by a rebuild", state is not None and state.high_water <= 999)
            result.check("the rebuilt index equals the original", snapshot(ws) == expected)
        with sqlite3.connect(store / DATABASE_NAME) as db:  # the projection rows are gone altogether
            db.execute("DELETE FROM projections")
        with Workspace(notes, store, lanes=FAST_LANES, refresh="off") as ws:
            packet = ws.query("backup restore drill", as_of=AS_OF)
            lane = next(lane for lane in packet.lanes if lane.name == "lexical")
            result.check("without refreshing, the lexical lane says how far behind it is", lane.lag > 0, lane.lag)
            result.check("without refreshing, the packet says stale", packet.projection == "stale", packet.projection)
            ws.refresh(wait=True)
            result.check("a refresh rebuilds it", snapshot(ws) == expected)


def embedding_raises(result: Scenario) -> None:
    with _disposable(6) as (_work, notes, store), Workspace(notes, store) as ws:
        ws.index()
        result.check("the dense lane is built", "dense" not in ws.lane_errors, ws.lane_errors.get("dense"))

        def broken(texts: Any) -> Any:
            raise RuntimeError("embedding model crashed")

        ws.dense.embedder.embed = broken  # type: ignore[method-assign]
        packet = ws.query("ledger rounding", as_of=AS_OF)
        _check_dense_down_others_answer(result, packet, "embedding model crashed")
        (notes / "ledger.md").write_text("# Ledger\n\n## Rule\n\nRound the ledger half up.\n", encoding="utf-8")
        packet = ws.query("ledger rounding half up", as_of=AS_OF)  # a refresh that must embed the edit
        _check_dense_down_others_answer(result, packet, "embedding model crashed")
        result.check("the edit still reaches the lexical lane", "half up" in packet.evidence[0].excerpt)


def _check_dense_down_others_answer(result: Scenario, packet: Any, reason: str) -> None:
    lanes = {lane.name: lane for lane in packet.lanes}
    result.check(
        "the dense lane reports unavailable with the reason",
        lanes["dense"].status == "unavailable" and reason in (lanes["dense"].reason or ""),
        lanes["dense"].reason,
    )
    result.check("lexical and identity still answer", lanes["lexical"].status == "ok" and bool(packet.evidence))
    result.check(
        "the best passage is the right one", bool(packet.evidence) and packet.evidence[0].id.startswith("ledger")
    )


_DENSE_CHILD = """
import json, sys
from retrieval_kernel.pipeline.workspace import Workspace
with Workspace(sys.argv[1], sys.argv[2], refresh=sys.argv[3]) as ws:
    before = ws.status()
    packet = ws.query("ledger rounding", as_of="2026-11-30")
    after = ws.status()
lanes = {lane.name: [lane.status, lane.reason, lane.index_version] for lane in packet.lanes}
print(json.dumps({"lanes": lanes, "first": packet.evidence[0].id if packet.evidence else None,
                  "warnings": list(packet.warnings),
                  "last": after["last_refresh"], "dense_before": before["projections"][1]}))
"""


def chroma_damaged(result: Scenario, damage: str) -> None:
    """The dense projection's Chroma folder is deleted or overwritten; a fresh process must cope."""
    with _disposable(6) as (_work, notes, store):
        with Workspace(notes, store) as ws:
            ws.index()
            version = ws.records.projection("dense").version  # type: ignore[union-attr]
        folder = store / "dense"
        for mode in ("off", "on-query"):  # repaired whatever the refresh mode: it is derived from the record store
            if damage == "folder-deleted":
                shutil.rmtree(folder)
            else:
                for database in folder.glob("*.sqlite3"):
                    database.write_bytes(b"\xde\xad\xbe\xef" * 4096)
            child = _child(_DENSE_CHILD, str(notes), str(store), mode)
            out, err = child.communicate(timeout=CHILD_WAIT)
            result.check(f"[{mode}] a fresh process answers, never a traceback", child.returncode == 0, err[-400:])
            if child.returncode != 0:
                return
            seen = json.loads(out)
            status, reason, serving = seen["lanes"]["dense"]
            result.check(f"[{mode}] the dense lane was rebuilt and answers", status == "ok", reason)
            result.check(f"[{mode}] into a new version", serving is not None and serving > version, serving)
            said = any("rebuilt it from the record store" in w for w in seen["warnings"]) or seen["last"]["rebuilt"]
            result.check(f"[{mode}] and says so", bool(said), seen["warnings"])
            result.check(f"[{mode}] the best passage is the right one", str(seen["first"]).startswith("ledger"))
            version = serving or version


def note_changes_while_read(result: Scenario) -> None:
    from ..store import indexing

    with _disposable(6) as (_work, notes, store), Workspace(notes, store, lanes=FAST_LANES) as ws:
        ws.index()
        target = notes / "ledger.md"
        target.write_text("# Ledger rounding\n\n## Rule\n\nFirst save: round per line item.\n", encoding="utf-8")
        original = indexing.note_from_bytes
        saves: list[str] = []

        def saved_meanwhile(rel: str, raw: bytes, *args: Any, **kwargs: Any) -> Any:
            note = original(rel, raw, *args, **kwargs)
            if rel == "ledger.md" and not saves:  # the editor saves again while we parse the first save
                saves.append(rel)
                target.write_text("# Ledger rounding\n\n## Rule\n\nSecond save: half to even.\n", encoding="utf-8")
            return note

        indexing.note_from_bytes = saved_meanwhile
        try:
            report = ws.index()
        finally:
            indexing.note_from_bytes = original
        stored = ws.records.passages_of("ledger.md")
        text = "\n".join(p.text for p in stored)
        result.check("the change during the read happened", saves == ["ledger.md"])
        result.check("the stored revision is the second save, whole", "Second save" in text and "First" not in text)
        document = ws.records.documents()["ledger.md"]
        on_disk = indexing.hashlib.sha256(target.read_bytes()).hexdigest()
        result.check("the stored hash is the file's", document.sha256 == on_disk)
        result.check("no problem is reported", not report.problems, [p.message for p in report.problems])


_CONCURRENT_CHILD = """
import sys, time
from pathlib import Path
from retrieval_kernel.projections import lexical
from retrieval_kernel.pipeline.workspace import Workspace

original = lexical.LexicalProjection.sync
def slow_sync(self, records, deadline=None):
    time.sleep(1.5)  # hold the lock long enough for the other process to try
    return original(self, records, deadline)
lexical.LexicalProjection.sync = slow_sync
go = Path(sys.argv[3])
with Workspace(sys.argv[1], sys.argv[2], lanes=("identity", "lexical"), refresh="off") as ws:
    print("READY", flush=True)
    while not go.exists():
        time.sleep(0.01)
    outcome = ws.refresh()
    print("STATE", outcome.state, flush=True)
"""


def concurrent_refresh(result: Scenario) -> None:
    with _disposable() as (work, notes, store):
        with Workspace(notes, store, lanes=FAST_LANES) as ws:
            ws.index()
        edit_corpus(notes)
        go = work / "go"
        children = [_child(_CONCURRENT_CHILD, str(notes), str(store), str(go)) for _ in range(2)]
        ready = all(_wait_for_line(child, "READY") for child in children)
        go.write_text("go")
        states = []
        for child in children:
            out, _ = child.communicate(timeout=CHILD_WAIT)
            states += [line.split()[1] for line in out.splitlines() if line.startswith("STATE")]
        result.check("both processes started a refresh at once", ready and len(states) == 2, states)
        result.check("exactly one published", sorted(states) == ["consistent", "refreshing"], states)
        with Workspace(notes, store, lanes=FAST_LANES, refresh="off") as ws:
            result.check("the store is consistent afterwards", ws.observe().state == "consistent")
            result.check("and equal to a build from scratch", snapshot(ws) == fresh_snapshot(notes, work / "fresh"))


def refresh_timeout(result: Scenario) -> None:
    with _disposable(60) as (work, notes, store):
        with Workspace(notes, store, lanes=FAST_LANES) as ws:
            ws.index()
            answer = ws.query("zephyr quota", as_of=AS_OF).evidence[0].id
        for path in sorted(notes.glob("*.md"))[:40]:
            path.write_text(path.read_text(encoding="utf-8") + "\nRevised.\n", encoding="utf-8")
        with Workspace(notes, store, lanes=FAST_LANES, refresh_timeout=0.000_001) as ws:
            packet = ws.query("zephyr quota", as_of=AS_OF)
            result.check("the refresh fails on its time limit", packet.projection == "failed-with-last-good")
            result.check("and says so", any("time limit" in warning for warning in packet.warnings), packet.warnings)
            result.check("the last good projection answers", bool(packet.evidence) and packet.evidence[0].id == answer)
            status = ws.status()
            result.check(
                "status shows the failure", status["last_refresh"]["result"] == "timeout", status["last_error"]
            )
        with Workspace(notes, store, lanes=FAST_LANES) as ws:
            result.check("an unhurried refresh completes", ws.refresh(wait=True).state == "consistent")
            result.check("equal to a build from scratch", snapshot(ws) == fresh_snapshot(notes, work / "fresh"))


_READ_ONLY_CHILD = """
import json, sys
from retrieval_kernel.pipeline.workspace import Workspace
with Workspace(sys.argv[1], sys.argv[2], lanes=("identity", "lexical")) as ws:
    packet = ws.query("pump seal inspection", as_of="2026-11-30")
    status = ws.status()
print(json.dumps({"projection": packet.projection, "warnings": list(packet.warnings),
                  "first": packet.evidence[0].id if packet.evidence else None,
                  "read_only": status["record_store"]["read_only"], "last": status["last_refresh"]}))
"""


def read_only_store(result: Scenario) -> None:
    with _disposable() as (_work, notes, store):
        with Workspace(notes, store, lanes=FAST_LANES) as ws:
            ws.index()
        edit_corpus(notes)
        for path in [store, *store.rglob("*")]:
            path.chmod(0o555 if path.is_dir() else 0o444)
        for path in [notes, *notes.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        child = _child(_READ_ONLY_CHILD, str(notes), str(store), obey_permissions=True)
        out, err = child.communicate(timeout=CHILD_WAIT)
        for path in [store, *store.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        result.check("the query ran without a traceback", child.returncode == 0, err.strip()[-400:] or None)
        if child.returncode != 0:
            return
        seen = json.loads(out)
        result.check("it answers from what exists", seen["first"] is not None and seen["first"].startswith("pumps"))
        result.check("the packet says the refresh failed", seen["projection"] == "failed-with-last-good")
        result.check("with the reason", any("refresh failed" in w for w in seen["warnings"]), seen["warnings"])
        result.check("the store was opened read-only", seen["read_only"] is True)


def corrupt_record_store(result: Scenario) -> None:
    with _disposable() as (_work, notes, store):
        with Workspace(notes, store, lanes=FAST_LANES) as ws:
            ws.index()
            expected = snapshot(ws)
        database = store / DATABASE_NAME
        with database.open("r+b") as handle:  # overwrite the header and the first pages
            handle.write(b"\xde\xad\xbe\xef" * 4096)
        try:
            Workspace(notes, store, lanes=FAST_LANES).close()
            message = ""
        except CorruptStoreError as exc:
            message = str(exc)
        result.check("opening it is a clear error naming the file", str(database) in message, message)
        result.check("which names the recovery command", f"retrieval-kernel rebuild {notes}" in message)
        report = rebuild(notes, store, lanes=FAST_LANES)
        result.check("rebuild re-reads every note", len(report.added) == len(list(notes.glob("*.md"))))
        kept = [p.name for p in store.glob(f"{DATABASE_NAME}.damaged-*")]
        result.check("the damaged file is kept aside, not deleted", bool(kept), kept)
        with Workspace(notes, store, lanes=FAST_LANES, refresh="off") as ws:
            result.check("the rebuilt store equals the original", snapshot(ws) == expected)


SCENARIOS: dict[str, tuple[str, Callable[[Scenario], None]]] = {
    "kill-during-store-sync": (
        "SIGKILL after 2 notes of a refresh are committed",
        lambda r: kill_mid_refresh(r, "store"),
    ),
    "kill-during-lexical-rebuild": (
        "SIGKILL with a new lexical version half built beside the serving one",
        lambda r: kill_mid_refresh(r, "lexical-rebuild"),
    ),
    "kill-after-answer": (
        "SIGKILL after a query answered an edit, before its deferred projection writes",
        kill_after_answer,
    ),
    "lexical-segment-deleted": ("a Whoosh segment file deleted", lambda r: corrupt_lexical(r, "segment-deleted")),
    "lexical-toc-garbage": ("the Whoosh table of contents overwritten", lambda r: corrupt_lexical(r, "toc-garbage")),
    "lexical-folder-deleted": ("the lexical index folder deleted", lambda r: corrupt_lexical(r, "folder-deleted")),
    "projection-table-corrupt": (
        "the SQLite projections table points nowhere, then is emptied",
        corrupt_projection_table,
    ),
    "embedding-raises": ("the embedding model raises on every call", embedding_raises),
    "chroma-folder-deleted": ("the Chroma folder deleted", lambda r: chroma_damaged(r, "folder-deleted")),
    "chroma-files-damaged": ("Chroma's SQLite file overwritten", lambda r: chroma_damaged(r, "files-damaged")),
    "note-changes-while-read": ("a note is saved again while the refresh reads it", note_changes_while_read),
    "two-refreshes-at-once": ("two processes start a refresh at the same moment", concurrent_refresh),
    "refresh-timeout": ("a refresh runs past its time limit", refresh_timeout),
    "read-only-store": ("the store folder is read-only", read_only_store),
    "record-store-corrupt": ("the record store file is overwritten with garbage", corrupt_record_store),
}


def run_scenario(name: str) -> Scenario:
    fault, body = SCENARIOS[name]
    result = Scenario(name, fault)
    started = time.monotonic()
    try:
        body(result)
    except Exception as exc:  # a scenario that raises has failed; say how
        result.error = f"{type(exc).__name__}: {exc}"
    result.seconds = time.monotonic() - started
    return result


def run_recovery(names: list[str], progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the named scenarios; the receipt passes only when every one does."""
    from .suites import implementation_hashes, versions

    unknown = sorted(set(names) - set(SCENARIOS))
    if unknown:
        from ..errors import InputError

        raise InputError(f"unknown recovery scenarios {unknown}; known: {sorted(SCENARIOS)}")
    results = []
    for name in names:
        result = run_scenario(name)
        results.append(result)
        if progress:
            progress(f"{'pass' if result.passed else 'FAIL'}  {name}  ({result.seconds:.1f} s)")
    return {
        "suite": "recovery",
        "passed": all(result.passed for result in results),
        "summary": {"scenarios": len(results), "passed": sum(result.passed for result in results)},
        "scenarios": [result.to_dict() for result in results],
        "versions": versions(),
        "implementation": implementation_hashes(),
    }
