"""httpx's rule for the public surface: a package's private modules (``_name``) are its own.

Another package reaches its names through the owner's ``__init__`` or a public module. A
private module serves its package and the packages inside it (``aimu._sync`` serves the
whole library), and a package may use the private modules of its own subpackages. What is
checked is ``aimu_jupyter`` reaching into ``aimu``, and one package of ``aimu`` reaching
into a sibling's private modules (``aimu.tools.mcp`` into ``aimu.tools.builtin._x``).
Inside ``aimu_jupyter`` its parts still share private modules; that is not checked here.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Imports still waiting for a public home, each with why it is left.
LEFT = {
    ("aimu_jupyter/magics/_nested.py", "aimu._sync"): "run: the library's one sync-over-async "
    "bridge, which a nested %%agent run must share rather than copy; not a public API",
    ("aimu_jupyter/run/_spec.py", "aimu._checks"): "the library's value checks, shared so a "
    "notebook option fails as the library's keyword does; no public home chosen yet",
}


def owner(module: str) -> str | None:
    """The package a private module belongs to, or ``None`` for a public module."""
    parts = module.split(".")
    for index, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:index])
    return None


def within(package: str, other: str) -> bool:
    return package == other or package.startswith(other + ".")


def may_use(package: str, owning: str) -> bool:
    """Whether modules of ``package`` may import a private module of ``owning``."""
    if within(package, "aimu_jupyter") and within(owning, "aimu_jupyter"):
        return True
    return within(package, owning) or within(owning, package)


def crossings(root: Path = ROOT) -> set[tuple[str, str]]:
    """``(file, private module)`` for every import that breaks the rule."""
    found = set()
    for path in sorted([*root.glob("aimu/**/*.py"), *root.glob("aimu_jupyter/**/*.py")]):
        package = ".".join(path.relative_to(root).parts[:-1])
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [node.module]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            for target in targets:
                owning = owner(target)
                if owning and within(owning, "aimu") and not may_use(package, owning):
                    found.add((path.relative_to(root).as_posix(), target))
    return found


def test_no_package_reaches_into_another_packages_private_modules():
    found = crossings()
    assert found - set(LEFT) == set()
    assert set(LEFT) - found == set(), "an import listed as left is gone: drop it from LEFT"


def test_the_rule_tells_a_crossing_from_a_package_using_its_own():
    assert not may_use("aimu.agents", "aimu.tools")
    assert not may_use("aimu.tools.mcp", "aimu.tools.builtin")
    assert not may_use("aimu_jupyter.view", "aimu.batch")
    assert may_use("aimu.tools.mcp", "aimu.tools")
    assert may_use("aimu.models", "aimu.models.providers")
    assert owner("aimu.tools.builtin._capture") == "aimu.tools.builtin"
    assert owner("aimu.tools.results") is None
