"""The explorer: an ipywidgets panel over :meth:`Workspace.query`.

The widget only holds UI state (its controls' values) and renders the packet the
core returns; every decision (lanes, policy, budget, abstention) stays in the
core, so the explorer always shows what ``%context`` would. Errors appear inside
the panel, never as a traceback.
"""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Sequence
from pathlib import Path

import ipywidgets as widgets

from .errors import BudgetError, RetrievalKernelError
from .output.packet import BUDGET_UNITS, MIN_BUDGET, Budget, Packet
from .output.render import (
    LIVE_TEXT,
    STYLE,
    abstention_text,
    cell_text,
    conflict_text,
    evidence_html,
    excluded_text,
    lane_text,
    live_html,
)
from .pipeline.candidates import INTENTS
from .pipeline.freshness import parse_as_of
from .pipeline.live import LiveCheck
from .pipeline.requests import LANES, MAX_TOP, checked_lanes, checked_top
from .pipeline.workspace import Workspace
from .settings import DEFAULTS, budget_limits

SLIDER_MAX = 100_000  # the slider's top; larger budgets (up to MAX_BUDGET) can be set from Python


class Explorer:
    """Query a notes folder interactively: ``Explorer("notes/")`` in a cell displays the panel.

    ``explorer.packet`` is the packet on screen; ``explorer.run()`` re-runs the query
    with the current control values (what pressing Enter or the button does).
    """

    def __init__(
        self,
        notes_dir: str | Path | None = None,
        store_dir: str | Path | None = None,
        *,
        workspace: Workspace | None = None,
        query: str = "",
        as_of: str | dt.date | None = None,
        intent: str = DEFAULTS.intent,
        scopes: Sequence[str] = DEFAULTS.scopes,
        budget: Budget = DEFAULTS.budget,
        top: int = DEFAULTS.top,
        audit: bool = False,
        lanes: Sequence[str] | None = None,
        live_checks: Sequence[LiveCheck] = (),
    ) -> None:
        if workspace is None:
            if notes_dir is None:
                raise RetrievalKernelError("Explorer needs a notes folder or a Workspace")
            workspace = Workspace(notes_dir, store_dir)
        self.workspace = workspace
        _check_settings(budget, top, lanes)  # the widgets would clamp a bad value; say so instead
        self.packet: Packet | None = None
        self.error: str | None = None
        self.live_checks = tuple(live_checks) or workspace.live_checks  # what the live toggle asks
        self._build_controls(query, parse_as_of(as_of), intent, scopes, budget, top, audit, lanes)
        self._build_views()
        self.widget = widgets.VBox(
            [self.controls, self.progress_line, self.error_box, self.status, self.results, self.conflicts, self.copy],
            layout=widgets.Layout(width="100%"),
        )
        self._refresh_lane_toggles()
        if query.strip():
            self.run()

    # ------------------------------------------------------------ building

    def _build_controls(
        self,
        query: str,
        as_of: dt.date,
        intent: str,
        scopes: Sequence[str],
        budget: Budget,
        top: int,
        audit: bool,
        lanes: Sequence[str] | None,
    ) -> None:
        self.query_box = widgets.Text(
            value=query,
            placeholder="Ask your notes, then press Enter",
            continuous_update=False,  # the value syncs on Enter (or leaving the box)
            layout=widgets.Layout(width="60%"),
        )
        self.search_button = widgets.Button(description="Search", button_style="primary", icon="search")
        self.intent = widgets.Dropdown(options=list(INTENTS), value=intent, description="intent")
        units = sorted(BUDGET_UNITS, key=lambda unit: unit != DEFAULTS.budget.unit)  # the default unit first
        self.unit = widgets.ToggleButtons(options=units, value=budget.unit, description="unit")
        self.budget = widgets.IntSlider(
            value=budget.limit,
            min=MIN_BUDGET,
            max=max(SLIDER_MAX, budget.limit),
            step=500,
            description="budget",
            continuous_update=False,  # one query when the slider is released, not one per step
        )
        self.top = widgets.BoundedIntText(value=top, min=1, max=MAX_TOP, description="top")
        self.as_of = widgets.DatePicker(value=as_of, description="as of")
        self.scopes = widgets.TagsInput(value=list(scopes), allow_duplicates=False)
        self.audit = widgets.Checkbox(value=audit, description="audit (show excluded)", indent=False)
        names = ", ".join(check.name for check in self.live_checks)
        self.live = widgets.Checkbox(
            value=bool(self.live_checks),
            description=f"live checks ({names})" if names else "live checks (none configured)",
            disabled=not self.live_checks,
            indent=False,
            tooltip="check note assertions against the systems of record (settings: live, live_timeout)",
        )
        chosen = set(lanes if lanes is not None else self.workspace.lanes)
        self.lane_toggles = {
            lane: widgets.Checkbox(value=lane in chosen, description=lane, indent=False)
            for lane in LANES
            if lane in self.workspace.lanes
        }
        self.query_box.observe(lambda _: self.run(), names="value")
        self.search_button.on_click(lambda _: self.run())
        for control in (self.intent, self.unit, self.budget, self.top, self.as_of, self.scopes, self.audit, self.live):
            control.observe(self._rerun, names="value")
        for box in self.lane_toggles.values():
            box.observe(self._rerun, names="value")
        self.controls = widgets.VBox(
            [
                widgets.HBox([self.query_box, self.search_button]),
                widgets.HBox([self.intent, self.as_of, self.top]),
                widgets.HBox([self.budget, self.unit]),
                widgets.HBox([widgets.Label("scopes"), self.scopes, self.audit, self.live]),
                widgets.HBox([widgets.Label("lanes"), *self.lane_toggles.values()]),
            ]
        )

    def _build_views(self) -> None:
        self.progress = widgets.IntProgress(value=0, min=0, max=3, layout=widgets.Layout(width="30%"))
        self.progress_label = widgets.Label("")
        self.progress_line = widgets.HBox([self.progress, self.progress_label])
        self.progress_line.layout.display = "none"
        self.error_box = widgets.HTML("")
        self.status = widgets.HTML("")
        self.results = widgets.HTML("")
        self.conflicts = widgets.HTML("")
        self.packet_json = widgets.Textarea(value="", layout=widgets.Layout(width="100%", height="12em"))
        self.copy = widgets.Accordion(children=[self.packet_json], titles=("packet JSON (copy for an agent)",))
        self.copy.selected_index = None

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)

    # ------------------------------------------------------------ running

    @property
    def chosen_lanes(self) -> list[str]:
        return [lane for lane, box in self.lane_toggles.items() if box.value and not box.disabled]

    @property
    def chosen_budget(self) -> Budget:
        """The budget the unit toggle and the slider show (the core checks its range)."""
        return Budget(self.unit.value, self.budget.value)

    def run(self) -> Packet | None:
        """Query with the current control values; show the packet, or the error inside the panel."""
        self._step(1, "refreshing the index and searching (the first query loads the embedding model)")
        try:
            if not self.chosen_lanes:
                raise RetrievalKernelError("choose at least one lane that can run")
            self.packet = self.workspace.query(
                self.query_box.value,
                as_of=self.as_of.value,
                intent=self.intent.value,
                scopes=list(self.scopes.value),
                audit=self.audit.value,
                top=self.top.value,
                lanes=self.chosen_lanes,
                live_checks=self.live_checks if self.live.value else (),
                **budget_limits(self.chosen_budget),
            )
            self.error = None
        except RetrievalKernelError as exc:
            self.error = str(exc)
        except Exception as exc:  # never a traceback in the panel
            self.error = f"{type(exc).__name__}: {exc}"
        self._step(2, "rendering")
        self._show()
        self._refresh_lane_toggles()
        self._step(3, "")
        return self.packet if self.error is None else None

    def _rerun(self, _change: object) -> None:
        """A changed control re-runs the question on screen (nothing to do before the first one)."""
        if self.query_box.value.strip():
            self.run()

    def _step(self, value: int, label: str) -> None:
        self.progress.value = value
        self.progress_label.value = label
        self.progress_line.layout.display = "none" if value >= self.progress.max else "flex"

    def _refresh_lane_toggles(self) -> None:
        """Grey out a lane that cannot run, with the reason as its tooltip."""
        try:
            availability = self.workspace.lane_availability()
        except RetrievalKernelError as exc:
            availability = {lane: str(exc) for lane in self.lane_toggles}
        for lane, box in self.lane_toggles.items():
            reason = availability.get(lane)
            box.disabled = reason is not None
            box.tooltip = reason or f"run the {lane} lane"

    # ------------------------------------------------------------ showing

    def _show(self) -> None:
        if self.error is not None:
            self.error_box.value = (
                f'<div class="rk-error" style="color:#a00"><b>Error:</b> {html.escape(self.error)}</div>'
            )
            return
        self.error_box.value = ""
        packet = self.packet
        if packet is None:
            return
        self.status.value = STYLE + f'<div class="rk-packet rk-status">{_status_html(packet)}</div>'
        self.results.value = STYLE + f'<div class="rk-packet rk-results">{_results_html(packet)}</div>'
        self.conflicts.value = STYLE + f'<div class="rk-packet">{_conflicts_html(packet)}</div>'
        self.packet_json.value = packet.to_json(indent=2)


def _check_settings(budget: Budget, top: int, lanes: Sequence[str] | None) -> None:
    """Raise the core's own error for a value the widgets cannot hold."""
    if not isinstance(budget, Budget):
        raise BudgetError(f"budget must be a Budget such as {DEFAULTS.budget!r}, not {budget!r}")
    Budget.checked(budget.unit, budget.limit)
    checked_top(top)
    if lanes is not None:
        checked_lanes(lanes)


def _status_html(packet: Packet) -> str:
    esc = html.escape
    budget = packet.budget
    lanes = " · ".join(esc(lane_text(lane)) for lane in packet.lanes)
    counts = ", ".join(f"{count} {esc(code)}" for code, count in packet.exclusions.items() if count)
    return (
        f'<div class="rk-lanes"><b>lanes</b>: {lanes}</div>'
        f'<div class="rk-meta">projection {esc(packet.projection)} · {budget.used:,}/{budget.limit:,} {budget.unit}'
        f" · as of {esc(packet.as_of)} · intent {esc(packet.intent)}"
        f" · scopes {esc(', '.join(packet.scopes) or '(none)')}{' · excluded: ' + counts if counts else ''}</div>"
        + "".join(f'<div class="rk-warn">warning: {esc(warning)}</div>' for warning in packet.warnings)
    )


def _results_html(packet: Packet) -> str:
    esc = html.escape
    rows = [live_html(packet)]
    if packet.abstained:
        rows.append(f'<div class="rk-abstain"><b>{esc(abstention_text(packet))}</b></div>')
    for item in packet.evidence:
        lanes = ", ".join(f"{hit.lane} #{hit.rank}" for hit in item.retrieved_by) or "pulled in"
        observed = item.observed_at or "unknown"
        badges = " ".join(
            f'<span class="rk-badge rk-badge-{esc(kind)}">{esc(text)}</span>'
            for kind, text in (
                ("age", f"observed {observed} ({item.freshness}) · indexed {item.indexed_at[:10]}"),
                ("authority", item.authority or "authority unknown"),
                ("status", item.status or "status unknown"),
                ("role", item.role),
                ("live", LIVE_TEXT.get(item.live_status, item.live_status)),
                ("lanes", lanes),
            )
        )
        summary = (
            f"<b>[{esc(item.ref)}] {esc(item.module)} &rsaquo; {esc(item.heading)}</b> "
            f"{esc(cell_text(item))} lines {item.line_start}-{item.line_end} {badges}"
        )
        rows.append(
            f'<details class="rk-row" data-evidence-id="{esc(item.id)}"><summary>{summary}</summary>'
            f'{evidence_html(item, packet.source_root)}<div class="rk-meta">why: {esc(item.reason)}</div></details>'
        )
    if packet.excluded:
        rows.append('<div class="rk-meta"><b>Excluded</b><ul>')
        rows += [f"<li>{esc(excluded_text(e))}</li>" for e in packet.excluded]
        rows.append("</ul></div>")
    return "".join(rows)


def _conflicts_html(packet: Packet) -> str:
    if not packet.conflicts:
        return '<div class="rk-meta">No conflicts among the candidates.</div>'
    items = "".join(f'<li class="rk-conflict">{html.escape(conflict_text(c))}</li>' for c in packet.conflicts)
    return f"<div><b>Conflicts</b><ul>{items}</ul></div>"
