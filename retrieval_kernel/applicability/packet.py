"""A selection as a packet: select what applies, then build the workspace's packet from those records only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..output.selection_packet import SelectionPacket, selection_size
from .retrieve import select_applicable
from .selection import Selector

if TYPE_CHECKING:
    import datetime as dt

    from ..pipeline.live import LiveCheck
    from ..pipeline.workspace import Workspace


def select_packet(
    workspace: Workspace,
    query: str,
    conditions: Mapping[str, Any] | Sequence[str] | None = None,
    intent: str = "orient",
    selector: Selector | None = None,
    lanes: Sequence[str] | None = None,
    scopes: Sequence[str] | str | None = None,
    refresh: bool = True,
    as_of: str | dt.date | None = None,
    max_bytes: int | None = None,
    max_chars: int | None = None,
    top: int | None = None,
    audit: bool = False,
    live_checks: Sequence[LiveCheck] | None = None,
) -> SelectionPacket:
    """:func:`select_applicable`, then the packet for ``query`` holding only the selected records' passages.

    The budget covers the whole packet, the selection's fields included: the evidence
    gets what the selection leaves. Under ``needs_condition`` the evidence holds the
    passages of the records on each side, so the caller can see what the answer hinges on.
    """
    from ..errors import BudgetError
    from ..output.packet import MIN_BUDGET
    from ..pipeline.requests import DEFAULT_TOP, budget_from

    budget = budget_from(max_bytes, max_chars)
    selection = select_applicable(workspace, query, conditions, intent, selector, lanes, scopes, refresh)
    own = selection_size(selection, budget.unit) + 16  # the key, its comma, and used's digits
    room = budget.limit - own
    if room < MIN_BUDGET:
        raise BudgetError(
            f"the selection alone takes {own:,} {budget.unit}; a budget of {budget.limit:,} leaves less than "
            f"{MIN_BUDGET:,} for the packet"
        )
    limits = {"max_bytes": room} if budget.unit == "bytes" else {"max_chars": room}
    packet = workspace.query(
        query,
        as_of=as_of,
        top=top or DEFAULT_TOP,
        refresh=False,
        lanes=lanes,
        scopes=scopes,
        intent=intent,
        audit=audit or intent == "audit",
        live_checks=live_checks,
        only_paths=frozenset(record.path for record in selection.records)
        | frozenset(selection.fork.paths.values() if selection.fork else ()),
        **limits,
    )
    fields = {name: getattr(packet, name) for name in packet.__dataclass_fields__}
    whole = SelectionPacket(**fields, selection=selection)
    measured = replace(whole, budget=replace(whole.budget, limit=budget.limit)).with_measured_budget()
    assert isinstance(measured, SelectionPacket)
    return measured
