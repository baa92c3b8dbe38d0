"""``retrieval-kernel``: the command-line adapter for scripts and agents.

Exit codes: 0 success; 1 an evaluation gate failed (the receipt is still
written), or ``verify`` found a citation that no longer matches; 2 bad input
or usage (a message on stderr, no traceback); 3 frozen evaluation inputs
changed, so nothing was scored.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import FrozenInputChangedError, InputError, RetrievalKernelError
from .pipeline.candidates import INTENTS
from .pipeline.live_sources import DEFAULT_LIVE_TIMEOUT
from .pipeline.requests import LANES, checked_lanes
from .pipeline.workspace import Workspace
from .projections.embedding import DEFAULT_EMBEDDER, EMBEDDERS
from .settings import DEFAULTS, ENV_URL, Settings, budget_limits, default_store_dir, resolve_settings

if TYPE_CHECKING:
    from .applicability import ApplicabilitySelection
    from .output.packet import Packet

EXIT_OK, EXIT_GATE_FAILED, EXIT_BAD_INPUT, EXIT_FROZEN_CHANGED = 0, 1, 2, 3
LIVE_HELP = (
    "a system of record to check notes against (repeatable): a JSON file, 'cmd:COMMAND' printing JSON, "
    "or an http(s):// URL (default: pyproject live)"
)
CHROMA_HELP = f"where dense vectors live: 'embedded' or http://host:port (default: pyproject chroma, ${ENV_URL})"


def _settings(**options: Any) -> Settings:
    """The flags given (``None``: not given) over pyproject, the environment and the defaults."""
    return resolve_settings(options)


def _index(args: argparse.Namespace) -> int:
    settings = _settings(store_dir=args.store, chroma=args.chroma, refresh_timeout=args.timeout)
    with Workspace(
        args.notes_dir,
        settings.store_dir,
        chroma=settings.chroma,
        refresh_timeout=settings.refresh_timeout,
        progress=sys.stderr.isatty(),  # a bar on a terminal; logs and pipes stay clean
    ) as workspace:
        report = workspace.index()
        summary = {
            "notes_dir": str(args.notes_dir),
            "store": str(workspace.store_dir),
            "added": list(report.added),
            "updated": list(report.updated),
            "deleted": list(report.deleted),
            "unchanged": report.unchanged,
            "passages": workspace.passage_count(),
            "problems": [
                {"path": p.path, "message": p.message, "kept_last_good": p.kept_last_good} for p in report.problems
            ],
            "warnings": list(report.warnings),
            "lanes": {lane: reason or "ok" for lane, reason in workspace.lane_availability().items()},
        }
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    return EXIT_OK


def _status(args: argparse.Namespace) -> int:
    from .store.refresh import status_text

    settings = _settings(store_dir=args.store, chroma=args.chroma)
    with Workspace(args.notes_dir, settings.store_dir, chroma=settings.chroma, refresh="off") as workspace:
        status = workspace.status()
    print(json.dumps(status, indent=2, ensure_ascii=False) if args.json else status_text(status))
    return EXIT_OK


def _rebuild(args: argparse.Namespace) -> int:
    from .pipeline.workspace import rebuild

    settings = _settings(store_dir=args.store, chroma=args.chroma)
    report = rebuild(args.notes_dir, settings.store_dir, chroma=settings.chroma)
    summary = {"rebuilt": str(args.notes_dir), "notes": len(report.added), "problems": len(report.problems)}
    print(json.dumps(summary, indent=2))
    return EXIT_OK


def _eval_recovery(args: argparse.Namespace) -> int:
    from .evaluation.recovery import SCENARIOS, run_recovery

    names = args.scenario or list(SCENARIOS)
    receipt = run_recovery(names, progress=lambda line: print(line, file=sys.stderr))
    text = json.dumps(receipt, indent=2, ensure_ascii=False)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text + "\n", encoding="utf-8")
    print(text)
    return EXIT_OK if receipt["passed"] else EXIT_GATE_FAILED


def _query_settings(args: argparse.Namespace) -> Settings:
    return _settings(
        store_dir=args.store,
        as_of=args.as_of,
        max_bytes=args.max_bytes,
        max_chars=args.max_chars,
        top=args.top,
        refresh=False if args.no_refresh else None,
        scope=args.scope,
        intent=args.intent,
        chroma=args.chroma,
        live=[] if args.no_live else args.live,
        live_timeout=args.live_timeout,
    )


def _query(args: argparse.Namespace) -> int:
    if args.select or args.when:
        return _query_select(args)
    settings = _query_settings(args)
    lanes = checked_lanes(args.lanes)
    with Workspace(
        args.notes, settings.store_dir, lanes=lanes, chroma=settings.chroma, refresh_timeout=settings.refresh_timeout
    ) as workspace:
        packet = workspace.query(
            args.text,
            as_of=settings.as_of,
            top=settings.top,
            refresh=settings.refresh,
            scopes=settings.scopes,
            intent=settings.intent,
            audit=args.audit,
            live_checks=settings.live_checks(),
            **budget_limits(settings.budget),
        )
    print(_rendered(packet, args.format))
    return EXIT_OK


def _verify(args: argparse.Namespace) -> int:
    from .output.verify import verify_packet

    notes = args.notes or _settings().notes_dir
    report = verify_packet(args.packet, notes)
    print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) if args.json else str(report))
    return EXIT_OK if report.all_match else EXIT_GATE_FAILED


def _rendered(result: Packet | ApplicabilitySelection, fmt: str) -> str:
    """A packet or a selection as ``json``, ``text``, ``markdown`` or ``html``."""
    renderers: dict[str, Callable[[], str]] = {
        "json": result.to_json,
        "text": result.__str__,
        "markdown": result._repr_markdown_,
        "html": result._repr_html_,
    }
    return renderers[fmt]()


def _query_select(args: argparse.Namespace) -> int:
    """``query --select [--when key=value ...]``: a packet of the records that apply (see :func:`select_packet`)."""
    from .applicability import select_packet

    if not args.select:
        raise InputError("--when states conditions for applicability selection: add --select")
    settings = _query_settings(args)
    lanes = checked_lanes(args.lanes)
    with Workspace(
        args.notes, settings.store_dir, lanes=lanes, chroma=settings.chroma, refresh_timeout=settings.refresh_timeout
    ) as workspace:
        selection = select_packet(
            workspace,
            args.text,
            conditions=args.when or None,
            intent="audit" if args.audit else settings.intent,
            lanes=lanes,
            scopes=settings.scopes,
            refresh=settings.refresh,
            as_of=settings.as_of,
            top=settings.top,
            live_checks=settings.live_checks(),
            **budget_limits(settings.budget),
        )
    print(_rendered(selection, args.format))
    return EXIT_OK


def _notes(args: argparse.Namespace) -> int:
    from .corpus.inventory import inventory

    listing = inventory(args.notes_dir)
    if args.json:
        print(json.dumps(listing, indent=2, ensure_ascii=False))
        return EXIT_OK
    for entry in listing["notes"]:
        links = "".join(
            f" {name}={','.join(entry[name])}"
            for name in ("superseded_by", "partly_superseded_by", "requires")
            if entry[name]
        )
        as_written = entry["status_as_written"]
        written = f" ({as_written})" if as_written and as_written.lower() != entry["status"] else ""
        print(
            f"{entry['path']}  id={entry['id']} status={entry['status']}{written} authority={entry['authority']} "
            f"observed={entry['observed']} scope={','.join(entry['scope']) or '-'}{links}"
        )
    for problem in listing["problems"]:
        print(f"{problem['path']}  NOT PARSED: {problem['error']}")
    return EXIT_OK


def _trace(args: argparse.Namespace) -> int:
    from .pipeline.trace import trace_text
    from .store.records import DATABASE_NAME, RecordStore

    store = _settings(store_dir=args.store).store_dir  # the store `query` wrote the trace to
    if store is None and not args.notes.is_dir():
        raise InputError(f"notes directory {args.notes} does not exist")
    store = store or default_store_dir(args.notes)
    if not (store / DATABASE_NAME).is_file():  # a read command never creates a store
        raise InputError(f"no store at {store}: index {args.notes} and query it first")
    with RecordStore(store) as records:
        trace = records.trace(args.trace_id)
    if trace is None:
        raise InputError(f"no trace {args.trace_id!r} in the store {store}")
    print(json.dumps(trace, indent=2, ensure_ascii=False) if args.json else trace_text(trace))
    return EXIT_OK


def _eval(args: argparse.Namespace) -> int:
    from .evaluation.suites import run_suite, suite_kind

    if args.output and not args.output.parent.is_dir():
        raise InputError(f"cannot write the receipt: folder {args.output.parent} does not exist")
    chroma = _settings(chroma=args.chroma).chroma  # the suites build their own workspaces with it
    lanes = checked_lanes(args.lanes)
    if suite_kind(args.suite_dir) == "lessons":
        from .evaluation.lessons_eval import lessons_summary, run_lessons_suite

        if args.questions:
            raise InputError("a lessons suite scores only its frozen query files; drop --questions")
        receipt = run_lessons_suite(args.suite_dir, split=args.split, lanes=lanes, chroma=chroma)
        table = lessons_summary(receipt)
    elif suite_kind(args.suite_dir) == "policy":
        from .evaluation.policy_eval import policy_summary, run_policy_suite

        if args.questions:
            raise InputError("a policy suite scores only its frozen question file; drop --questions")
        receipt = run_policy_suite(args.suite_dir, lanes=lanes, chroma=chroma)
        table = policy_summary(receipt)
    elif suite_kind(args.suite_dir) == "abstention":
        from .evaluation.abstention_suite import abstention_summary, run_abstention_suite

        if args.questions:
            raise InputError("an abstention suite scores only its frozen question file; drop --questions")
        receipt = run_abstention_suite(args.suite_dir, lanes=lanes, chroma=chroma)
        table = abstention_summary(receipt)
    else:
        from .evaluation.study import summary_table

        receipt = run_suite(args.suite_dir, questions=args.questions, lanes=lanes, chroma=chroma)
        table = summary_table(receipt)
    if args.output:
        Path(args.output).write_text(json.dumps(receipt, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{table}\n{'all gates passed' if receipt['passed'] else 'A GATE FAILED'}")
    return EXIT_OK if receipt["passed"] else EXIT_GATE_FAILED


def _serve_check(args: argparse.Namespace) -> int:
    from .projections.chroma_client import ChromaConfigError
    from .projections.servecheck import report_text, serve_check

    if args.url.strip().lower() == "embedded":
        raise ChromaConfigError("serve-check needs a server URL such as http://localhost:8000")
    settings = _settings(  # tenant, database, prefix and timeout not given: pyproject's, the environment's
        chroma=args.url,
        chroma_tenant=args.tenant,
        chroma_database=args.database,
        chroma_prefix=args.prefix,
        chroma_timeout=args.timeout,
    )
    result = serve_check(settings.chroma)
    print(json.dumps(result, indent=2) if args.json else report_text(result))
    return EXIT_OK


def _beir(args: argparse.Namespace) -> int:
    import tempfile

    from .evaluation.beir import run_beir

    if not args.output.parent.is_dir():
        raise InputError(f"cannot write the run: folder {args.output.parent} does not exist")
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    with tempfile.TemporaryDirectory(prefix="rk-beir-") as scratch:
        store = args.store or Path(scratch)
        run = run_beir(
            args.data_dir,
            store,
            split=args.split,
            methods=methods,
            embedder=args.embedder,
            progress=lambda line: print(line, file=sys.stderr),
            chroma=_settings().chroma,
        )
    args.output.write_text(json.dumps(run, indent=1) + "\n", encoding="utf-8")
    for method, scores in run["methods"].items():
        print(
            f"{method:8} nDCG@10 {scores['ndcg_at_10']:.4f}  R@100 {scores['recall_at_100']:.4f}  "
            f"MRR@10 {scores['mrr_at_10']:.4f}"
        )
    return EXIT_OK


def _bench(args: argparse.Namespace) -> int:
    from .evaluation.bench import CORPORA, default_shared, run_bench

    if not args.output.parent.is_dir():
        raise InputError(f"cannot write the benchmark: folder {args.output.parent} does not exist")
    sizes = [int(size) for size in args.passages.split(",") if size.strip()]
    if any(size < 100 for size in sizes):
        raise InputError("--passages sizes must be at least 100")
    shared = args.shared or default_shared()
    corpora = tuple(name for name in args.corpora.split(",") if name.strip())
    unknown = sorted(set(corpora) - set(CORPORA))
    if unknown:
        raise InputError(f"unknown --corpora {unknown}; known: {', '.join(CORPORA)}")
    if (sizes or corpora) and not (shared / "datasets" / "scifact").is_dir():
        raise InputError(f"the bench reads real text from {shared} (datasets/scifact, corpora/tldr-pages): not found")
    result = run_bench(
        sizes,
        progress=lambda line: print(line, file=sys.stderr),
        chroma=_settings().chroma,
        corpora=corpora,
        shared=shared,
    )
    args.output.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=1))
    return EXIT_OK


def _mcp(args: argparse.Namespace) -> int:
    from .agents.mcp_server import parse_http, serve  # the SDK loads only here: other commands start cold faster
    from .agents.service import EvidenceService, ServerConfig

    http = parse_http(args.http) if args.http else None
    s = _settings(
        store_dir=args.store,
        as_of=args.as_of,
        scope=args.scope,
        chroma=args.chroma,
        live=args.live,
        live_timeout=args.live_timeout,
    )
    config = ServerConfig(
        args.notes,
        s.store_dir,
        frozenset(s.scopes),
        s.as_of,
        checked_lanes(args.lanes),
        s.chroma,
        options={"live_checks": s.live_checks()},
    )
    serve(EvidenceService(config), http)
    return EXIT_OK


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "mcp": _mcp,
    "bench": _bench,
    "index": _index,
    "query": _query,
    "notes": _notes,
    "trace": _trace,
    "verify": _verify,
    "eval": _eval,
    "beir": _beir,
    "serve-check": _serve_check,
    "status": _status,
    "rebuild": _rebuild,
    "eval-recovery": _eval_recovery,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="retrieval-kernel", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    index = sub.add_parser("index", help="index (or incrementally refresh) a notes folder")
    index.add_argument("notes_dir", type=Path)
    index.add_argument("--store", type=Path, help="store folder (default: NOTES_DIR/.retrieval_kernel)")
    index.add_argument("--chroma", help=CHROMA_HELP)
    index.add_argument("--timeout", type=float, help="seconds the refresh may take (default: no limit)")

    status = sub.add_parser("status", help="each projection's version, high-water mark, lag, last refresh and error")
    status.add_argument("notes_dir", type=Path)
    status.add_argument("--store", type=Path)
    status.add_argument("--chroma", help=CHROMA_HELP)
    status.add_argument("--json", action="store_true")

    rebuild = sub.add_parser("rebuild", help="set a damaged store aside and rebuild everything from the notes")
    rebuild.add_argument("notes_dir", type=Path)
    rebuild.add_argument("--store", type=Path)
    rebuild.add_argument("--chroma", help=CHROMA_HELP)

    recovery = sub.add_parser("eval-recovery", help="cause every refresh fault on disposable copies; write a receipt")
    recovery.add_argument("--output", type=Path, help="where to write the receipt JSON")
    recovery.add_argument("--scenario", action="append", help="run only this scenario (repeatable)")

    query = sub.add_parser("query", help="print the evidence packet for a question")
    query.add_argument("text", help="the question (quote it)")
    query.add_argument("--notes", type=Path, required=True, help="notes folder")
    query.add_argument("--store", type=Path)
    query.add_argument("--as-of", help="clock for source ages, YYYY-MM-DD (default: today, UTC)")
    budget = query.add_mutually_exclusive_group()
    budget.add_argument("--max-bytes", type=int, help="cap the serialized packet in UTF-8 bytes")
    budget.add_argument(
        "--max-chars", type=int, help=f"cap the serialized packet in characters (default {DEFAULTS.budget.limit:,})"
    )
    query.add_argument("--top", type=int, help=f"most evidence items (default {DEFAULTS.top})")
    query.add_argument("--format", choices=["json", "text", "markdown", "html"], default="json")
    query.add_argument("--no-refresh", action="store_true", help="answer from the index as it is")
    query.add_argument("--lanes", default=",".join(LANES), help="comma-separated lanes (default: all)")
    query.add_argument("--scope", help="the caller's scopes, comma-separated ('*' sees every note)")
    query.add_argument("--intent", choices=INTENTS, help=f"orders evidence roles (default {DEFAULTS.intent})")
    query.add_argument("--audit", action="store_true", help="also show excluded items, as history")
    query.add_argument("--chroma", help=CHROMA_HELP)
    query.add_argument("--select", action="store_true", help="return the records that apply (applicability selection)")
    query.add_argument(
        "--when", action="append", metavar="KEY=VALUE", help="a condition of the task, for --select (repeatable)"
    )
    live = query.add_mutually_exclusive_group()
    live.add_argument("--live", action="append", metavar="SOURCE", help=LIVE_HELP)
    live.add_argument("--no-live", action="store_true", help="ask no system of record (ignore configured ones)")
    query.add_argument(
        "--live-timeout",
        type=float,
        metavar="SECONDS",
        help=f"each live source's time limit (default {DEFAULT_LIVE_TIMEOUT:g})",
    )

    verify = sub.add_parser("verify", help="re-read every cited range of a packet; exit 1 when one no longer matches")
    verify.add_argument("packet", type=Path, help="the packet JSON (query --format json)")
    verify.add_argument("--notes", type=Path, help="the notes folder it cites (default: pyproject notes_dir)")
    verify.add_argument("--json", action="store_true", help="print the report as JSON")

    notes = sub.add_parser("notes", help="list every note as parsed: identity, dates, status, links, scope")
    notes.add_argument("notes_dir", type=Path)
    notes.add_argument("--json", action="store_true", help="print the inventory as JSON")

    trace = sub.add_parser("trace", help="show how the packet with a trace id was built")
    trace.add_argument("trace_id")
    trace.add_argument("--notes", type=Path, required=True, help="notes folder")
    trace.add_argument("--store", type=Path)
    trace.add_argument("--json", action="store_true")

    evaluate = sub.add_parser("eval", help="run a frozen evaluation suite and write a receipt")
    evaluate.add_argument("suite_dir", type=Path)
    evaluate.add_argument("--questions", type=Path, help="another question file in the suite's JSONL format")
    evaluate.add_argument("--output", type=Path, help="where to write the receipt JSON")
    evaluate.add_argument("--lanes", default=",".join(LANES), help="comma-separated lanes (default: all)")
    evaluate.add_argument("--chroma", help=CHROMA_HELP)
    evaluate.add_argument(
        "--split", choices=["dev", "calibration", "holdout"], default="holdout", help="lessons suites: which split"
    )

    beir = sub.add_parser("beir", help="score lexical, dense and hybrid retrieval on a BEIR dataset")
    beir.add_argument("data_dir", type=Path, help="BEIR folder: corpus.jsonl[.gz], queries.jsonl, qrels/")
    beir.add_argument("--split", default="test")
    beir.add_argument("--methods", default="lexical,dense,hybrid")
    beir.add_argument("--embedder", choices=list(EMBEDDERS), default=DEFAULT_EMBEDDER)
    beir.add_argument("--store", type=Path, help="keep the index here (default: a temporary folder)")
    beir.add_argument("--output", type=Path, required=True, help="where to write RUN.json")

    bench = sub.add_parser("bench", help="measure speed and memory against bm25s and numpy references")
    bench.add_argument(
        "--passages", default="10000", help="comma-separated sizes of scaled real text (default 10000; '' for none)"
    )
    bench.add_argument(
        "--corpora", default="scifact,tldr-pages,synthetic-90", help="real corpora to bench too ('' for none)"
    )
    bench.add_argument(
        "--shared",
        type=Path,
        default=None,
        help="the shared data folder (default: $RETRIEVAL_KERNEL_SHARED or ../shared)",
    )
    bench.add_argument("--output", type=Path, required=True, help="where to write BENCH.json")

    mcp = sub.add_parser("mcp", help="serve packets to agents over MCP (stdio; Streamable HTTP with --http)")
    mcp.add_argument("--notes", type=Path, required=True, help="notes folder")
    mcp.add_argument("--store", type=Path)
    mcp.add_argument("--scope", help="the most a client sees, comma-separated ('*' sees every note); calls may narrow")
    mcp.add_argument("--as-of", help="default clock for source ages, YYYY-MM-DD (default: today, UTC)")
    mcp.add_argument("--lanes", default=",".join(LANES), help="comma-separated lanes (default: all)")
    mcp.add_argument("--http", metavar="HOST:PORT", help="serve Streamable HTTP (host default 127.0.0.1)")
    mcp.add_argument("--chroma", help=CHROMA_HELP)
    mcp.add_argument("--live", action="append", metavar="SOURCE", help=LIVE_HELP)
    mcp.add_argument("--live-timeout", type=float, metavar="SECONDS", help="each live source's time limit")

    check = sub.add_parser("serve-check", help="check a Chroma server: heartbeat, version, collections, a probe")
    check.add_argument("url", help="the server, e.g. http://localhost:8000")
    check.add_argument("--tenant", help="Chroma tenant (default: pyproject chroma_tenant, else Chroma's default)")
    check.add_argument("--database", help="Chroma database (default: pyproject chroma_database, else default)")
    check.add_argument("--prefix", help="list only collections with this prefix (default: pyproject chroma_prefix)")
    check.add_argument("--timeout", type=float, help="seconds to wait for each answer (default 5)")
    check.add_argument("--json", action="store_true", help="print the result as JSON")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except FrozenInputChangedError as exc:
        print(f"retrieval-kernel: {exc}", file=sys.stderr)
        return EXIT_FROZEN_CHANGED
    except RetrievalKernelError as exc:
        print(f"retrieval-kernel {args.command}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
