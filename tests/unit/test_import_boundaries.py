"""Import boundaries checked on the code itself.

The store conformance suite is for tests only: nothing in the runtime package imports it.

``toolplan_conformance`` ships in the same wheel so that store authors can run it, but toolplan
itself never imports it, at module level, inside a function or under ``TYPE_CHECKING`` (grimp
reads every import statement). ``tests/e2e/test_wheel.py`` checks the installed wheel the same
way at run time.
"""

from __future__ import annotations

import json
import subprocess
import sys

import grimp

SUITE = "toolplan_conformance"


def test_toolplan_never_imports_the_conformance_suite() -> None:
    graph = grimp.build_graph("toolplan", SUITE, cache_dir=None)
    offenders = sorted(
        f"{importer} imports {imported} (line {detail['line_number']}: {detail['line_contents']})"
        for imported in graph.find_descendants(SUITE) | {SUITE}
        for importer in graph.find_modules_that_directly_import(imported)
        if importer.split(".")[0] == "toolplan"
        for detail in graph.get_import_details(importer=importer, imported=imported)
    )
    assert offenders == [], (
        "toolplan must not import the conformance suite (it is for store backends' tests); "
        "move what the runtime needs into toolplan itself:\n" + "\n".join(offenders)
    )
    assert not graph.chain_exists(importer="toolplan", imported=SUITE, as_packages=True)


def test_the_suite_is_seen_by_the_import_graph() -> None:
    """The check above is not vacuous: grimp sees the suite, and the suite importing toolplan."""
    graph = grimp.build_graph("toolplan", SUITE, cache_dir=None)
    assert f"{SUITE}.core" in graph.modules
    assert graph.chain_exists(importer=SUITE, imported="toolplan", as_packages=True)


def test_the_planner_loads_neither_the_engine_nor_the_runs() -> None:
    """Planning writes plans and returns them: importing every module of ``toolplan.planning``
    (in a fresh interpreter, since this one has imported everything) loads no module of the
    engine, of the runs layer or of the layers that store and run plans."""
    script = (
        "import importlib, json, pkgutil, sys\n"
        "import toolplan.planning as planning\n"
        "for found in pkgutil.iter_modules(planning.__path__):\n"
        "    importlib.import_module(f'toolplan.planning.{found.name}')\n"
        "forbidden = ('toolplan.engine', 'toolplan.runs', 'toolplan.temporal', 'toolplan.pipeline',"
        " 'toolplan.service.operations')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(forbidden))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert json.loads(done.stdout) == []
