"""The documentation site builds as the README says, with no warning: ``scripts/docs.sh`` (what
.ci/run runs) builds it strictly and fails on any warning, and the ``docs`` extra installs every
package ``mkdocs.yml`` names, so that ``pip install -e '.[docs]' && mkdocs serve`` works on a
fresh clone.

A broken link or anchor between pages (the README's ``docs/planning.md#...``, which the site
includes in ``index.md``, one folder down) is a warning MkDocs counts in strict mode; ``--quiet``
hid those warnings and the build passed with them, so the script reads the output too.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.requirements import Requirement

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


def _docs_build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """``scripts/docs.sh --site-dir SITE`` run in the project at ``root``."""
    mkdocs = Path(sys.executable).parent / "mkdocs"
    if not mkdocs.exists():
        pytest.skip("mkdocs is not installed here (the docs extra: pip install -e '.[docs]')")
    return subprocess.run(
        ["bash", str(root / "scripts" / "docs.sh"), "--site-dir", str(site)],
        cwd=root,
        env={**os.environ, "MKDOCS": str(mkdocs)},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_docs_site_builds_strictly_without_a_warning(tmp_path: Path) -> None:
    done = _docs_build(REPO, tmp_path / "site")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert "WARNING" not in output, output[-4000:]
    index = (tmp_path / "site" / "index.html").read_text()
    # The README's links into docs/ lead to the site's pages, anchors kept.
    assert 'href="planning/#plan-formats-python-the-default-or-json"' in index
    assert "docs/planning.md" not in index
    assert "blog_chain.json" in index  # the quick start is included, not only its heading


def test_a_broken_anchor_fails_the_docs_build(tmp_path: Path) -> None:
    # The gate can fail: a page linking to a heading that is not there stops the build.
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n\n[gone](other.md#no-such-heading)\n")
    (tmp_path / "docs" / "other.md").write_text("# Other\n")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: broken\nnav:\n  - index.md\n  - other.md\nvalidation:\n  anchors: warn\n"
    )
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "docs.sh").write_text((REPO / "scripts" / "docs.sh").read_text())
    done = _docs_build(tmp_path, tmp_path / "site")
    assert done.returncode != 0
    assert "no-such-heading" in done.stdout + done.stderr


def _closure(requirements: list[str], extras: set[str]) -> set[str]:
    """The distributions ``requirements`` install, transitively, as installed here."""
    seen: set[str] = set()
    todo = [(Requirement(text), extras) for text in requirements]
    while todo:
        requirement, wanted = todo.pop()
        environment = [{"extra": extra} for extra in wanted or {""}]
        if requirement.marker is not None and not any(
            requirement.marker.evaluate(env) for env in environment
        ):
            continue
        name = _normal(requirement.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(requirement.name) or []
        except metadata.PackageNotFoundError:
            continue
        todo += [(Requirement(text), set(requirement.extras)) for text in requires]
    return seen


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _mkdocs_config() -> dict[str, Any]:
    class Loader(yaml.SafeLoader):
        pass

    # mkdocs.yml names a Python function with a tag of PyYAML's unsafe loader; not needed here.
    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda *_: None)
    loaded: dict[str, Any] = yaml.load((REPO / "mkdocs.yml").read_text(), Loader=Loader)
    return loaded


def _names(entries: list[Any]) -> list[str]:
    return [entry if isinstance(entry, str) else next(iter(entry)) for entry in entries]


def test_the_docs_extra_installs_everything_mkdocs_yml_names() -> None:
    pytest.importorskip("mkdocs", reason="the docs extra is not installed here")
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    installed = _closure(project["optional-dependencies"]["docs"], set())
    config = _mkdocs_config()
    plugins = {ep.name: ep for ep in metadata.entry_points(group="mkdocs.plugins")}
    themes = {ep.name: ep for ep in metadata.entry_points(group="mkdocs.themes")}
    by_module = metadata.packages_distributions()
    needed: dict[str, str] = {}
    for name in _names(config["plugins"]):
        assert name in plugins, f"mkdocs.yml names the plugin {name!r}, which nothing installs"
        dist = plugins[name].dist
        assert dist is not None
        needed[f"plugin {name}"] = dist.name
    theme = config["theme"]["name"]
    theme_dist = themes[theme].dist
    assert theme_dist is not None
    needed[f"theme {theme}"] = theme_dist.name
    for name in _names(config["markdown_extensions"]):
        top = name.split(".", 1)[0]
        # Python-Markdown's own extensions are named without their package (``toc``).
        needed[f"extension {name}"] = (by_module.get(top) or ["Markdown"])[0]
    missing = {what: dist for what, dist in needed.items() if _normal(dist) not in installed}
    assert not missing, f"mkdocs.yml needs these, which the docs extra does not install: {missing}"
