"""The package's structure: no import cycle among toolplan's modules, counting every import
statement (lazy and type-checking ones too), so each layer can be read, and changed, from the
bottom up. The layer order itself is import-linter's contract in pyproject.toml (`lint-imports`,
run by .ci/run)."""

from __future__ import annotations

import grimp


def _cycles(graph: grimp.ImportGraph) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[set[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_no_import_cycles_among_toolplan_modules() -> None:
    graph = grimp.build_graph("toolplan", include_external_packages=False)
    cycles = _cycles(graph)
    details = [
        f"{a} -> {b} (line {d['line_number']})"
        for component in cycles
        for a in sorted(component)
        for b in sorted(graph.find_modules_directly_imported_by(a) & component)
        for d in graph.get_import_details(importer=a, imported=b)
    ]
    assert cycles == [], "import cycles:\n" + "\n".join(details)


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for module in ("p", "p.a", "p.b", "p.c"):
        graph.add_module(module)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.a")
    graph.add_import(importer="p.c", imported="p.a")
    assert _cycles(graph) == [{"p.a", "p.b"}]
