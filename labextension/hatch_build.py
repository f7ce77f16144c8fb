"""Build the JupyterLab extension while hatchling builds the wheel (hatch-jupyter-builder hook).

Wraps `hatch_jupyter_builder.npm_builder` to say plainly what is missing when Node.js or npm
is not installed, and to skip the npm steps when the built extension is newer than every
input (a re-install, or a wheel built from an sdist that already carries the build).
"""

import re
import shutil
import subprocess
from pathlib import Path

PACKAGE_DIR = Path("labextension")
OUTPUT_DIR = Path("aimu_jupyter/labextension")
INPUTS = ("src", "style", "schema", "package.json", "package-lock.json", "tsconfig.json")
#: The bundler (rspack, through @jupyter/builder) needs Node.js ^20.19 or >= 22.12.
NODE_RANGE = "^20.19 or >= 22.12"


class NodeMissingError(RuntimeError):
    """Node.js or npm is not on PATH (or too old) while the extension needs building."""


def node_version_ok(version: str) -> bool:
    """Whether `node --version` output (``v20.19.1``) is in NODE_RANGE."""
    match = re.match(r"v?(\d+)\.(\d+)", version.strip())
    if match is None:
        return False
    major, minor = int(match.group(1)), int(match.group(2))
    return (major == 20 and minor >= 19) or (major, minor) >= (22, 12)


def check_node() -> None:
    """Raise NodeMissingError, saying what to install, unless node and npm can build."""
    hint = (
        f"aimu-jupyter's JupyterLab extension is built with Node.js {NODE_RANGE} and npm "
        "when the package is installed from source. Install them (https://nodejs.org, or "
        "your distribution's packages if recent enough) and run the install again, "
        "install the prebuilt wheel from PyPI instead, or set SKIP_JUPYTER_BUILDER=1 to "
        "install without the extension (everything but its JupyterLab view works)."
    )
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        found = {"node": node, "npm": npm}
        missing = " and ".join(f"`{name}`" for name, path in found.items() if path is None)
        raise NodeMissingError(f"{missing} not found on PATH. {hint}")
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    if not node_version_ok(version):
        raise NodeMissingError(f"Node.js {version or '(unknown version)'} cannot build it. {hint}")


def _newest(path: Path) -> float:
    """The latest modification time of ``path`` or of any file below it (0 when absent)."""
    if not path.exists():
        return 0.0
    times = [path.stat().st_mtime]
    if path.is_dir():
        times += [p.stat().st_mtime for p in path.rglob("*") if "node_modules" not in p.parts]
    return max(times)


def needs_build() -> bool:
    """True when the built extension is missing or older than one of its inputs."""
    built = OUTPUT_DIR / "package.json"
    if not built.exists():
        return True
    return any(_newest(PACKAGE_DIR / name) > built.stat().st_mtime for name in INPUTS)


def build_labextension(target_name: str, version: str, build_cmd: str = "build:prod") -> None:
    """hatch-jupyter-builder build function: `npm install` then `npm run <build_cmd>`.

    hatch_jupyter_builder is imported here, not at the top, because it exists only in the
    build environment; the Node.js check is importable (and tested) without it.
    """
    if not needs_build():
        return
    check_node()
    from hatch_jupyter_builder import npm_builder

    npm_builder(
        target_name, version, path=str(PACKAGE_DIR), build_cmd=build_cmd, npm=["npm"], force=True
    )
