"""Settings: one precedence (option > %config > pyproject > environment > default) for every key.

Each key is resolved with all four sources set, then with the strongest one removed, and so
on down to the default, so a source ignored or ranked wrongly changes an asserted value.
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib
import json
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.getipython import get_ipython
from IPython.testing.globalipapp import start_ipython
from traitlets import TraitError

import retrieval_kernel.magics as magics_module
from retrieval_kernel import Budget, Workspace
from retrieval_kernel.cli import main
from retrieval_kernel.errors import BudgetError, ChromaConfigError, DateError, InputError
from retrieval_kernel.magics import TRAITLETS, ContextMagics
from retrieval_kernel.projections.chroma_client import ChromaSettings
from retrieval_kernel.settings import (
    DEFAULTS,
    ENV_URL,
    ENV_VARS,
    SETTING_KEYS,
    PyprojectCache,
    Settings,
    budget_limits,
    resolve_chroma,
    resolve_settings,
)

ip = start_ipython() or get_ipython()
REPO = Path(__file__).resolve().parent.parent
AS_OF = "2026-10-15"
FAST = ("identity", "lexical")
NOTE = "# Pumps\n\n## Intake\n\nThe intake filter of the pump is cleaned weekly by the night shift.\n"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No setting comes from the real environment."""
    for name in ENV_VARS.values():
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder (its pyproject written by each test); the working folder is a subfolder."""
    root = tmp_path / "project"
    (root / "sub").mkdir(parents=True)
    monkeypatch.chdir(root / "sub")
    return root


def write_pyproject(root: Path, table: str) -> Path:
    path = root / "pyproject.toml"
    path.write_text(f'[project]\nname = "x"\n\n[tool.retrieval_kernel]\n{table}\n', encoding="utf-8")
    return path


# ---------------------------------------------------------------- precedence, key by key

# key: (option, %config, pyproject TOML lines, environment, what each level yields, how to read it)
# The five expected values are: all sources set, then without the option, without %config,
# without pyproject, and with nothing set (the default). Neighbours always differ.
Case = tuple[
    dict[str, Any], dict[str, Any], str, dict[str, str], Callable[[Path], list[Any]], Callable[[Settings], Any]
]
CASES: dict[str, Case] = {
    "notes_dir": (
        {"notes_dir": "opt-notes"},
        {"notes_dir": "cfg-notes"},
        'notes_dir = "proj-notes"',
        {"notes_dir": "env-notes"},
        lambda root: [Path("opt-notes"), Path("cfg-notes"), root / "proj-notes", Path("env-notes"), None],
        lambda s: s.notes_dir,
    ),
    "store_dir": (
        {"store_dir": Path("opt-store")},
        {"store_dir": "cfg-store"},
        'store_dir = "proj-store"',
        {"store_dir": "env-store"},
        lambda root: [Path("opt-store"), Path("cfg-store"), root / "proj-store", Path("env-store"), None],
        lambda s: s.store_dir,
    ),
    "as_of": (
        {"as_of": "2026-10-15"},
        {"as_of": "2026-09-01"},
        "as_of = 2026-08-01",  # a TOML date, not text
        {"as_of": "2026-07-01"},
        lambda root: [dt.date(2026, 10, 15), dt.date(2026, 9, 1), dt.date(2026, 8, 1), dt.date(2026, 7, 1), None],
        lambda s: s.as_of,
    ),
    "budget": (
        {"max_bytes": 5000},
        {"max_chars": 6000},
        "max_bytes = 7000",
        {"max_chars": "8000"},
        lambda root: [
            Budget("bytes", 5000),
            Budget("chars", 6000),
            Budget("bytes", 7000),
            Budget("chars", 8000),
            Budget("chars", 20_000),
        ],
        lambda s: s.budget,
    ),
    "top": ({"top": 3}, {"top": 4}, "top = 5", {"top": "6"}, lambda root: [3, 4, 5, 6, 8], lambda s: s.top),
    "refresh": (
        {"refresh": True},
        {"refresh": False},
        "refresh = true",
        {"refresh": "off"},
        lambda root: [True, False, True, False, True],
        lambda s: s.refresh,
    ),
    "scope": (
        {"scope": "a,b"},
        {"scope": "c"},
        'scope = ["d", "e"]',
        {"scope": " f , g "},
        lambda root: [("a", "b"), ("c",), ("d", "e"), ("f", "g"), ()],
        lambda s: s.scopes,
    ),
    "intent": (
        {"intent": "plan"},
        {"intent": "verify"},
        'intent = "plan"',
        {"intent": "audit"},
        lambda root: ["plan", "verify", "plan", "audit", "orient"],
        lambda s: s.intent,
    ),
    "refresh_mode": (
        {"refresh_mode": "off"},
        {"refresh_mode": "watch"},
        'refresh_mode = "off"',
        {"refresh_mode": "watch"},
        lambda root: ["off", "watch", "off", "watch", "on-query"],
        lambda s: s.refresh_mode,
    ),
    "debounce": (
        {"debounce": 1.0},
        {"debounce": 2.0},
        "debounce = 3",
        {"debounce": "4.5"},
        lambda root: [1.0, 2.0, 3.0, 4.5, 0.0],
        lambda s: s.debounce,
    ),
    "refresh_timeout": (
        {"refresh_timeout": 10},
        {"refresh_timeout": 20.0},
        "refresh_timeout = 30",
        {"refresh_timeout": "40"},
        lambda root: [10.0, 20.0, 30.0, 40.0, None],
        lambda s: s.refresh_timeout,
    ),
    "chroma": (
        {"chroma": "http://opt"},
        {"chroma": "http://cfg:2"},
        'chroma = "http://proj:3"',
        {"chroma": "http://env:4"},
        lambda root: ["http://opt:8000", "http://cfg:2", "http://proj:3", "http://env:4", None],
        lambda s: s.chroma.url,
    ),
    "chroma_tenant": (
        {"chroma_tenant": "t1"},
        {"chroma_tenant": "t2"},
        'chroma_tenant = "t3"',
        {"chroma_tenant": "t4"},
        lambda root: ["t1", "t2", "t3", "t4", None],
        lambda s: s.chroma.tenant,
    ),
    "chroma_database": (
        {"chroma_database": "d1"},
        {"chroma_database": "d2"},
        'chroma_database = "d3"',
        {"chroma_database": "d4"},
        lambda root: ["d1", "d2", "d3", "d4", None],
        lambda s: s.chroma.database,
    ),
    "chroma_prefix": (
        {"chroma_prefix": "p1-"},
        {"chroma_prefix": "p2-"},
        'chroma_prefix = "p3-"',
        {"chroma_prefix": "p4-"},
        lambda root: ["p1-", "p2-", "p3-", "p4-", ""],
        lambda s: s.chroma.prefix,
    ),
    "chroma_timeout": (
        {"chroma_timeout": 1.5},
        {"chroma_timeout": 2.5},
        "chroma_timeout = 3.5",
        {"chroma_timeout": "4.5"},
        lambda root: [1.5, 2.5, 3.5, 4.5, 5.0],
        lambda s: s.chroma.timeout_s,
    ),
    "live": (
        {"live": ["opt.json", "cmd:python owners.py"]},
        {"live": ["http://cfg:1/values"]},
        'live = ["proj.json"]',  # a relative file: beside the pyproject
        {"live": "env.json\nhttps://env/values"},
        lambda root: [
            ("opt.json", "cmd:python owners.py"),
            ("http://cfg:1/values",),
            (f"file:{root / 'proj.json'}",),
            ("env.json", "https://env/values"),
            (),
        ],
        lambda s: s.live,
    ),
    "live_timeout": (
        {"live_timeout": 1.5},
        {"live_timeout": 2.5},
        "live_timeout = 3.5",
        {"live_timeout": "4.5"},
        lambda root: [1.5, 2.5, 3.5, 4.5, 2.0],
        lambda s: s.live_timeout,
    ),
}


def test_every_key_has_a_precedence_case() -> None:
    covered = {key for case in CASES.values() for source in (case[0], case[1], case[3]) for key in source}
    assert covered == SETTING_KEYS


@pytest.mark.parametrize("name", list(CASES))
def test_option_beats_config_beats_pyproject_beats_env_beats_default(name: str, project: Path) -> None:
    options, configured, table, env, expected, read = CASES[name]
    environ = {ENV_VARS[key]: value for key, value in env.items()}
    got = []
    for level in range(5):
        (project / "pyproject.toml").unlink(missing_ok=True)
        if level <= 2:
            write_pyproject(project, table)
        settings = resolve_settings(
            options if level == 0 else None,
            configured if level <= 1 else None,
            environ=environ if level <= 3 else {},
        )
        got.append(read(settings))
    assert got == expected(project)


def test_the_environment_is_read_from_os_environ_by_default(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RETRIEVAL_KERNEL_TOP", "7")
    monkeypatch.setenv(ENV_URL, "http://from-env:9")
    monkeypatch.setenv("RETRIEVAL_KERNEL_CHROMA_PREFIX", "")  # empty: not set
    settings = resolve_settings()
    assert (settings.top, settings.chroma.url, settings.chroma.prefix) == (7, "http://from-env:9", "")


def test_the_budget_wins_whole_from_the_strongest_source_naming_either_unit(project: Path) -> None:
    write_pyproject(project, "max_bytes = 3000")
    assert resolve_settings(configured={"max_chars": 6000}).budget == Budget("chars", 6000)
    assert resolve_settings({"max_bytes": 4000}, {"max_chars": 6000}).budget == Budget("bytes", 4000)
    assert resolve_settings().budget == Budget("bytes", 3000)


def test_defaults_are_the_cores_and_resolve_with_no_source(project: Path) -> None:
    assert resolve_settings(environ={}) == DEFAULTS == Settings()
    assert DEFAULTS.budget == Budget("chars", 20_000)
    assert (DEFAULTS.top, DEFAULTS.intent, DEFAULTS.refresh, DEFAULTS.refresh_mode) == (8, "orient", True, "on-query")
    assert DEFAULTS.chroma == ChromaSettings()


def test_budget_limits_is_the_keyword_of_the_unit() -> None:
    assert budget_limits(Budget("bytes", 4000)) == {"max_bytes": 4000}
    assert budget_limits(Budget("chars", 6000)) == {"max_chars": 6000}


def test_workspace_chroma_none_follows_the_same_precedence(project: Path) -> None:
    environ = {ENV_URL: "http://env:4", "RETRIEVAL_KERNEL_CHROMA_PREFIX": "envp-"}
    assert resolve_chroma(environ=environ).url == "http://env:4"
    write_pyproject(project, 'chroma = "http://proj:3"')
    chosen = resolve_chroma(environ=environ)
    assert (chosen.url, chosen.prefix) == ("http://proj:3", "envp-")  # each key from its own strongest source
    assert resolve_chroma("embedded", environ=environ).embedded
    given = ChromaSettings(url="http://given:1", prefix="g-")
    assert resolve_chroma(given, environ=environ) == given


def test_only_chroma_keys_are_read_for_a_workspace(project: Path) -> None:
    """A bad query setting in pyproject does not stop Workspace(chroma=None) from resolving Chroma."""
    write_pyproject(project, 'top = 0\nchroma_prefix = "ok-"')
    assert resolve_chroma(environ={}).prefix == "ok-"
    with pytest.raises(BudgetError, match="top"):
        resolve_settings(environ={})


# ---------------------------------------------------------------- bad values, named with key and source

PYPROJECT = r"pyproject\.toml \[tool\.retrieval_kernel\]"


@pytest.mark.parametrize(
    ("options", "configured", "table", "env", "error", "message"),
    [
        ({"top": 0}, None, "", {}, BudgetError, r"^option --top = 0: top must be between 1 and 100, not 0$"),
        (None, {"top": 0}, "", {}, BudgetError, r"^%config ContextMagics\.top = 0: top must be between 1 and 100"),
        (None, None, 'top = "five"', {}, BudgetError, PYPROJECT + r" top = 'five': must be a whole number"),
        (None, None, "", {"TOP": "many"}, BudgetError, r"^environment variable RETRIEVAL_KERNEL_TOP = 'many': "),
        ({"as_of": "yesterday"}, None, "", {}, DateError, r"^option --as-of = 'yesterday': as-of 'yesterday' is not"),
        (None, {"as_of": "2026-02-30"}, "", {}, DateError, r"^%config ContextMagics\.as_of = '2026-02-30'"),
        (None, None, "as_of = 5", {}, DateError, PYPROJECT + r" as_of = 5: as_of must be an ISO date"),
        (None, None, "", {"AS_OF": "soon"}, DateError, r"^environment variable RETRIEVAL_KERNEL_AS_OF = 'soon'"),
        ({"max_bytes": 10}, None, "", {}, BudgetError, r"^option --max-bytes = 10: budget of 10 bytes is outside"),
        (None, {"max_chars": 2_000_000}, "", {}, BudgetError, r"^%config ContextMagics\.max_chars = 2000000: "),
        (None, None, "max_bytes = 3000\nmax_chars = 4000", {}, BudgetError, PYPROJECT + r" max_bytes and .*both"),
        (None, None, "", {"MAX_CHARS": "lots"}, BudgetError, r"RETRIEVAL_KERNEL_MAX_CHARS = 'lots': must be a whole"),
        (None, {"intent": "x"}, "", {}, InputError, r"^%config ContextMagics\.intent = 'x': intent must be one of"),
        (None, None, "", {"INTENT": "loud"}, InputError, r"RETRIEVAL_KERNEL_INTENT = 'loud': intent must be one of"),
        (None, None, 'refresh = "sometimes"', {}, InputError, PYPROJECT + r" refresh = 'sometimes': must be true or"),
        (None, None, "", {"REFRESH": "maybe"}, InputError, r"RETRIEVAL_KERNEL_REFRESH = 'maybe': must be true or"),
        (None, None, "scope = 5", {}, InputError, PYPROJECT + r" scope = 5: must be scope names"),
        (None, None, "notes_dir = 3", {}, InputError, PYPROJECT + r" notes_dir = 3: must be a folder path"),
        ({"store_dir": ""}, None, "", {}, InputError, r"^option --store = '': must be a folder path"),
        (None, {"refresh_mode": "never"}, "", {}, InputError, r"refresh_mode = 'never': refresh mode must be one of"),
        (None, None, "debounce = -1", {}, InputError, PYPROJECT + r" debounce = -1: debounce must be between 0 and"),
        (None, None, "", {"REFRESH_TIMEOUT": "0"}, InputError, r"REFRESH_TIMEOUT = '0': refresh timeout must be"),
        ({"chroma": "tcp://x:1"}, None, "", {}, ChromaConfigError, r"^option --chroma = 'tcp://x:1': chroma must be"),
        (None, None, "", {"CHROMA": "nope"}, ChromaConfigError, r"^environment variable RETRIEVAL_KERNEL_CHROMA_URL"),
        (None, None, 'chroma_prefix = "-bad"', {}, ChromaConfigError, PYPROJECT + r" chroma_prefix = '-bad'"),
        (None, {"chroma_timeout": 0}, "", {}, ChromaConfigError, r"chroma_timeout = 0: chroma timeout must be"),
        (None, None, 'chroma_timeout = "soon"', {}, ChromaConfigError, r"chroma_timeout = 'soon': must be a number"),
        ({"chroma_tenant": "a/b"}, None, "", {}, ChromaConfigError, r"^option --tenant = 'a/b': chroma_tenant"),
        (None, None, "", {"CHROMA_DATABASE": "a b"}, ChromaConfigError, r"RETRIEVAL_KERNEL_CHROMA_DATABASE = 'a b'"),
    ],
)
def test_a_bad_value_names_its_key_and_source(
    project: Path,
    options: dict[str, Any] | None,
    configured: dict[str, Any] | None,
    table: str,
    env: dict[str, str],
    error: type[InputError],
    message: str,
) -> None:
    write_pyproject(project, table)
    environ = {ENV_VARS[key.lower()]: value for key, value in env.items()}
    with pytest.raises(InputError) as raised:
        resolve_settings(options, configured, environ=environ)
    assert type(raised.value) is error
    assert raised.match(message)


def test_a_bad_value_in_a_weaker_source_is_not_in_force(project: Path) -> None:
    write_pyproject(project, "top = 0")
    assert resolve_settings({"top": 5}).top == 5
    assert resolve_settings(configured={"top": 6}).top == 6


def test_unknown_keys_are_named(project: Path) -> None:
    write_pyproject(project, "max_byets = 3000")
    with pytest.raises(InputError, match=r"unknown \[tool\.retrieval_kernel\] keys \['max_byets'\]"):
        resolve_settings()
    (project / "pyproject.toml").unlink()
    with pytest.raises(InputError, match=r"unknown settings \['scopes'\]"):
        resolve_settings({"scopes": "a"})


def test_the_old_config_module_is_gone() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("retrieval_kernel.config")


# ---------------------------------------------------------------- the pyproject cache


def test_pyproject_cache_reads_once_and_sees_an_edit(project: Path) -> None:
    path = write_pyproject(project, "top = 3")
    cache = PyprojectCache()
    assert resolve_settings(pyproject=cache, environ={}).top == 3
    assert resolve_settings(pyproject=cache, environ={}).top == 3
    assert cache.reads == 1
    before = path.stat().st_mtime_ns
    write_pyproject(project, "top = 4")  # same size, same inode: only the modification time tells
    os.utime(path, ns=(before + 2_000_000_000, before + 2_000_000_000))
    assert resolve_settings(pyproject=cache, environ={}).top == 4
    assert cache.reads == 2


def test_pyproject_cache_follows_the_working_folder(project: Path, tmp_path: Path, monkeypatch) -> None:
    write_pyproject(project, "top = 3")
    other = tmp_path / "other"
    other.mkdir()
    write_pyproject(other, "top = 9")
    cache = PyprojectCache()
    assert resolve_settings(pyproject=cache, environ={}).top == 3
    monkeypatch.chdir(other)
    assert resolve_settings(pyproject=cache, environ={}).top == 9
    (other / "pyproject.toml").unlink()
    assert resolve_settings(pyproject=cache, environ={}).top == DEFAULTS.top


# ---------------------------------------------------------------- the magics


@pytest.fixture
def magics(project: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ContextMagics]:
    """The loaded magics (identity+lexical workspaces); settings, config and workspaces reset afterwards."""
    monkeypatch.setattr(magics_module, "Workspace", functools.partial(Workspace, lanes=FAST))
    ip.run_line_magic("load_ext", "retrieval_kernel")
    instance = ip.magics_manager.registry["ContextMagics"]  # the instance %context runs on
    yield instance
    if "ContextMagics" in ip.config:
        del ip.config["ContextMagics"]
    for name in TRAITLETS:
        setattr(instance, name, None)
    for workspace in instance._workspaces.values():
        workspace.close()
    instance._workspaces.clear()
    instance.last_packet = None


def test_magics_read_the_pyproject_once_and_see_an_edit(magics: ContextMagics, project: Path, make_notes) -> None:
    notes = make_notes({"pumps.md": NOTE})
    table = f'notes_dir = "{notes}"\nstore_dir = "store"\nmax_chars = 5000\nas_of = "{AS_OF}"'
    path = write_pyproject(project, table)
    reads = magics._pyproject.reads
    first = ip.run_line_magic("context", "intake filter")
    second = ip.run_line_magic("context", "intake filter")
    assert first.budget.limit == second.budget.limit == 5000
    assert magics._pyproject.reads == reads + 1
    before = path.stat().st_mtime_ns
    write_pyproject(project, table.replace("5000", "6000"))
    os.utime(path, ns=(before + 2_000_000_000, before + 2_000_000_000))
    edited = ip.run_line_magic("context", "intake filter")
    assert (edited.budget.unit, edited.budget.limit) == ("chars", 6000)
    assert magics._pyproject.reads == reads + 2
    assert (project / "store" / "records.sqlite3").exists()  # relative to the pyproject


def test_magics_settings_come_from_resolve_settings_with_the_environment(
    magics: ContextMagics, project: Path, make_notes, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = make_notes({"pumps.md": NOTE})
    monkeypatch.setenv("RETRIEVAL_KERNEL_NOTES_DIR", str(notes))
    monkeypatch.setenv("RETRIEVAL_KERNEL_STORE_DIR", str(project / "env-store"))
    monkeypatch.setenv("RETRIEVAL_KERNEL_MAX_BYTES", "4000")
    write_pyproject(project, "max_chars = 7000")  # pyproject beats the environment
    packet = ip.run_line_magic("context", f"--as-of {AS_OF} intake filter")
    assert (packet.budget.unit, packet.budget.limit) == ("chars", 7000)
    assert (project / "env-store" / "records.sqlite3").exists()
    magics.max_bytes = 3000  # %config beats pyproject
    packet = ip.run_line_magic("context", f"--as-of {AS_OF} intake filter")
    assert (packet.budget.unit, packet.budget.limit) == ("bytes", 3000)
    packet = ip.run_line_magic("context", f"--as-of {AS_OF} --max-chars 9000 intake filter")  # the option beats all
    assert (packet.budget.unit, packet.budget.limit) == ("chars", 9000)


BAD_TRAITLETS = [
    ("notes_dir", "", r"must be a folder path"),
    ("store_dir", "  ", r"must be a folder path"),
    ("as_of", "yesterday", r"as-of 'yesterday' is not an ISO date"),
    ("max_bytes", 10, r"budget of 10 bytes is outside the accepted range"),
    ("max_chars", 2_000_000, r"budget of 2,000,000 chars is outside the accepted range"),
    ("top", 0, r"top must be between 1 and 100, not 0"),
    ("top", 101, r"top must be between 1 and 100, not 101"),
    ("intent", "x", r"intent must be one of orient, verify, plan, audit"),
    ("chroma", "localhost:8000", r"chroma must be 'embedded' or a server URL"),
    ("refresh_mode", "sometimes", r"refresh mode must be one of off, on-query, watch"),
    ("debounce", -1.0, r"debounce must be between 0 and 3600 seconds"),
    ("refresh_timeout", 0.0, r"refresh timeout must be between 0 and 86400 seconds"),
]


@pytest.mark.parametrize(("name", "value", "message"), BAD_TRAITLETS, ids=[f"{n}={v!r}" for n, v, _ in BAD_TRAITLETS])
def test_validate_refuses_a_bad_traitlet_at_assignment(
    magics: ContextMagics, name: str, value: Any, message: str
) -> None:
    with pytest.raises(TraitError, match=rf"^ContextMagics\.{name} = {value!r}: .*{message}"):
        setattr(magics, name, value)
    assert getattr(magics, name) is None


GOOD_TRAITLETS = {
    "notes_dir": "notes",
    "store_dir": "store",
    "as_of": AS_OF,
    "max_bytes": 4000,
    "top": 5,
    "refresh": False,
    "scope": "a,b",
    "intent": "plan",
    "chroma": "http://localhost:8000",
    "refresh_mode": "watch",
    "debounce": 2.0,
    "refresh_timeout": 30.0,
    "live": ["ledger.json", "cmd:python owners.py"],
    "live_timeout": 1.5,
}


def test_validate_keeps_a_good_traitlet(magics: ContextMagics) -> None:
    for name, value in GOOD_TRAITLETS.items():
        setattr(magics, name, value)
        assert getattr(magics, name) == value
    magics.max_bytes = None
    magics.max_chars = 6000
    assert magics.max_chars == 6000
    assert set(GOOD_TRAITLETS) | {"max_chars"} == set(TRAITLETS)


def test_percent_config_refuses_a_bad_value_when_it_is_set(
    magics: ContextMagics, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR):
        ip.run_line_magic("config", "ContextMagics.top = 0")
        ip.run_line_magic("config", "ContextMagics.as_of = '2026-13-01'")
    assert "ContextMagics.top = 0: top must be between 1 and 100, not 0" in caplog.text
    assert "ContextMagics.as_of = '2026-13-01': as-of '2026-13-01' is not an ISO date" in caplog.text
    assert (magics.top, magics.as_of) == (None, None)
    ip.run_line_magic("config", "ContextMagics.top = 5")
    assert magics.top == 5


def test_the_budget_traitlets_are_one_setting(magics: ContextMagics) -> None:
    magics.max_bytes = 4000
    with pytest.raises(TraitError, match=r"ContextMagics\.max_bytes is already set .* = None first"):
        magics.max_chars = 6000
    assert (magics.max_bytes, magics.max_chars) == (4000, None)


# ---------------------------------------------------------------- the CLI


SUITES = {
    "workshop": (
        "retrieval_kernel.evaluation.suites",
        "run_suite",
        "retrieval_kernel.evaluation.study",
        "summary_table",
    ),
    "policy": (
        "retrieval_kernel.evaluation.policy_eval",
        "run_policy_suite",
        "retrieval_kernel.evaluation.policy_eval",
        "policy_summary",
    ),
    "lessons": (
        "retrieval_kernel.evaluation.lessons_eval",
        "run_lessons_suite",
        "retrieval_kernel.evaluation.lessons_eval",
        "lessons_summary",
    ),
}


@pytest.mark.parametrize("suite", list(SUITES))
def test_cli_eval_passes_chroma_to_the_runner_not_through_the_environment(
    suite: str, project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    runner_module, runner, summary_module, summary = SUITES[suite]
    seen: list[tuple[Any, str | None]] = []

    def fake_runner(*args: Any, **kwargs: Any) -> dict[str, Any]:
        seen.append((kwargs["chroma"], os.environ.get(ENV_URL)))
        return {"passed": True}

    monkeypatch.setattr(importlib.import_module(runner_module), runner, fake_runner)
    monkeypatch.setattr(importlib.import_module(summary_module), summary, lambda receipt: "table")
    suite_dir = str(REPO / "fixtures" / suite)
    assert main(["eval", suite_dir, "--chroma", "http://flag:1"]) == 0
    write_pyproject(project, 'chroma = "http://proj:2"\nchroma_prefix = "team-"')
    assert main(["eval", suite_dir]) == 0
    monkeypatch.setenv(ENV_URL, "http://env:3")
    assert main(["eval", suite_dir]) == 0  # pyproject beats the environment
    (project / "pyproject.toml").unlink()
    assert main(["eval", suite_dir]) == 0
    assert seen == [
        (ChromaSettings(url="http://flag:1"), None),
        (ChromaSettings(url="http://proj:2", prefix="team-"), None),
        (ChromaSettings(url="http://proj:2", prefix="team-"), "http://env:3"),
        (ChromaSettings(url="http://env:3"), "http://env:3"),
    ]
    assert "all gates passed" in capsys.readouterr().out


def test_cli_query_takes_settings_from_pyproject_below_its_flags(
    project: Path, make_notes, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = make_notes({"pumps.md": NOTE})
    write_pyproject(project, f'store_dir = "store"\nmax_chars = 5000\nas_of = "{AS_OF}"\nintent = "plan"')
    base = ["query", "intake filter", "--notes", str(notes), "--lanes", "identity,lexical"]
    assert main(base) == 0
    packet = json.loads(capsys.readouterr().out)
    assert (packet["budget"]["unit"], packet["budget"]["limit"], packet["as_of"], packet["intent"]) == (
        "chars",
        5000,
        AS_OF,
        "plan",
    )
    assert (project / "store" / "records.sqlite3").exists()
    assert main([*base, "--max-bytes", "4000", "--intent", "verify", "--as-of", "2026-01-02"]) == 0
    packet = json.loads(capsys.readouterr().out)
    assert (packet["budget"]["unit"], packet["budget"]["limit"], packet["as_of"], packet["intent"]) == (
        "bytes",
        4000,
        "2026-01-02",
        "verify",
    )


def test_cli_reports_a_bad_pyproject_value_with_its_source(
    project: Path, make_notes, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = make_notes({"pumps.md": NOTE})
    write_pyproject(project, "top = 0")
    assert main(["query", "intake filter", "--notes", str(notes), "--lanes", "lexical"]) == 2
    assert "pyproject.toml [tool.retrieval_kernel] top = 0: top must be between 1 and 100" in capsys.readouterr().err
