"""Render an applicability selection as text, Markdown or HTML. Rendering never changes what it says.

Every piece of note text is escaped for its target (see :mod:`retrieval_kernel.output.render`).
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from .render import md_escape

if TYPE_CHECKING:
    from ..applicability.selection import ApplicabilitySelection, SelectedRecord


def _record_lines(record: SelectedRecord) -> list[str]:
    lines = [f"{record.record}  ({record.path})", f"   why: {record.why}"]
    if record.needs:
        lines.append(f"   need: {', '.join(record.needs)}")
    if record.capsule and record.capsule.claims:
        lines += [f"   claim: {claim}" for claim in record.capsule.claims]
    lines += [f"   flag: {flag}" for flag in record.flags]
    return lines


def render_text(selection: ApplicabilitySelection) -> str:
    """A plain-text view: conditions, each record with why/need/claims/flags, then the rejected."""
    head = f"Applicable records for: {selection.query}"
    lines = [
        head,
        f"selector: {selection.selector}" + (f" (fallback: {selection.fallback})" if selection.fallback else ""),
    ]
    if selection.conditions:
        stated = "; ".join(
            f"{m.key}={m.value} ({m.source}{': ' + repr(m.words) if m.words else ''})"
            for m in selection.condition_matches
        )
        lines.append(f"conditions: {stated}")
    if selection.fork is not None:
        lines.append(f"needs_condition: {selection.fork.describe()}")
    if selection.empty:
        lines.append(f"Nothing applies ({selection.candidates} candidates checked).")
    for index, record in enumerate(selection.records, 1):
        body = _record_lines(record)
        lines.append(f"{index}. {body[0]}")
        lines += body[1:]
    lines += [f"open question (no evidence): {part}" for part in selection.open_questions]
    if selection.rejected:
        lines.append(f"rejected ({len(selection.rejected)}):")
        lines += [f" - {r.record}: {r.reason} - {r.detail}" for r in selection.rejected]
    return "\n".join(lines)


def render_markdown(selection: ApplicabilitySelection) -> str:
    """Markdown with every piece of note text escaped."""
    lines = [f"**Applicable records** for _{md_escape(selection.query)}_ (selector `{md_escape(selection.selector)}`)"]
    if selection.fallback:
        lines.append(f"\n> fallback: {md_escape(selection.fallback)}")
    if selection.condition_matches:
        lines.append(
            "\nConditions: "
            + ", ".join(f"`{md_escape(m.key)}={md_escape(m.value)}` ({m.source})" for m in selection.condition_matches)
        )
    if selection.fork is not None:
        lines.append(f"\n> **needs_condition**: {md_escape(selection.fork.describe())}")
    if selection.empty:
        lines.append(f"\n**Nothing applies** ({selection.candidates} candidates checked).")
    for index, record in enumerate(selection.records, 1):
        lines.append(f"\n{index}. **{md_escape(record.title)}** ({md_escape(record.record)}, {md_escape(record.path)})")
        lines.append(f"   - why: {md_escape(record.why)}")
        if record.needs:
            lines.append(f"   - need: {md_escape(', '.join(record.needs))}")
        if record.capsule:
            lines += [f"   - claim: {md_escape(claim)}" for claim in record.capsule.claims]
        lines += [f"   - flag: {md_escape(flag)}" for flag in record.flags]
    if selection.open_questions:
        lines.append("\nOpen questions (no evidence found):")
        lines += [f"- {md_escape(part)}" for part in selection.open_questions]
    if selection.rejected:
        lines.append("\n| rejected | reason | detail |\n|---|---|---|")
        lines += [f"| {md_escape(r.record)} | {r.reason} | {md_escape(r.detail)} |" for r in selection.rejected]
    return "\n".join(lines)


def render_html(selection: ApplicabilitySelection) -> str:
    """Self-contained HTML; every piece of note text is escaped."""
    esc = html.escape
    parts = [
        f'<div class="rk-select"><p><b>Applicable records</b> for <i>{esc(selection.query)}</i> '
        f"(selector <code>{esc(selection.selector)}</code>)</p>"
    ]
    if selection.fallback:
        parts.append(f"<p>fallback: {esc(selection.fallback)}</p>")
    if selection.condition_matches:
        items = ", ".join(
            f"<code>{esc(m.key)}={esc(m.value)}</code> ({esc(m.source)})" for m in selection.condition_matches
        )
        parts.append(f"<p>Conditions: {items}</p>")
    if selection.fork is not None:
        parts.append(f"<p><b>needs_condition</b>: {esc(selection.fork.describe())}</p>")
    if selection.empty:
        parts.append(f"<p><b>Nothing applies</b> ({selection.candidates} candidates checked).</p>")
    else:
        parts.append("<ol>")
        for record in selection.records:
            claims = "".join(f"<li>claim: {esc(c)}</li>" for c in (record.capsule.claims if record.capsule else ()))
            flags = "".join(f"<li>flag: {esc(f)}</li>" for f in record.flags)
            need = f"<li>need: {esc(', '.join(record.needs))}</li>" if record.needs else ""
            parts.append(
                f"<li><b>{esc(record.title)}</b> <code>{esc(record.record)}</code> ({esc(record.path)})"
                f"<ul><li>why: {esc(record.why)}</li>{need}{claims}{flags}</ul></li>"
            )
        parts.append("</ol>")
    if selection.open_questions:
        items = "".join(f"<li>{esc(part)}</li>" for part in selection.open_questions)
        parts.append(f"<p>Open questions (no evidence found):</p><ul>{items}</ul>")
    if selection.rejected:
        rows = "".join(
            f"<tr><td><code>{esc(r.record)}</code></td><td>{esc(r.reason)}</td><td>{esc(r.detail)}</td></tr>"
            for r in selection.rejected
        )
        parts.append(f"<table><tr><th>rejected</th><th>reason</th><th>detail</th></tr>{rows}</table>")
    parts.append("</div>")
    return "".join(parts)
