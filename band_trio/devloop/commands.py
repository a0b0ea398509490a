"""Commands printed for the user to type, written so that they work as printed.

A command printed by ``dev`` or ``platform`` is typed in another terminal, from
another folder, where the virtual environment that runs band-trio is usually
not active (``uv run`` activates it only for the command it runs). So the
printed ``band-trio`` is the absolute path of this environment's script unless
the bare name already finds that script from outside the environment.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import sysconfig
from pathlib import Path

__all__ = ["band_trio_command"]

SCRIPT = "band-trio.exe" if os.name == "nt" else "band-trio"


def _in_virtual_environment() -> bool:
    return sys.prefix != sys.base_prefix


def _program() -> list[str]:
    scripts = Path(sysconfig.get_path("scripts"))
    script = scripts / SCRIPT
    if not script.is_file():
        # Run from a source tree without the console script (python -m band_trio.cli).
        return [sys.executable, "-m", "band_trio.cli"]
    found = shutil.which("band-trio")
    # Found through a virtual environment's own scripts folder, the bare name
    # works only where that environment is active, which another terminal is not.
    through_venv = found is not None and _in_virtual_environment() and Path(found).parent == scripts
    if found is not None and os.path.samefile(found, script) and not through_venv:
        return ["band-trio"]
    return [str(script)]


def band_trio_command(*args: str) -> str:
    """The shell command that runs ``band-trio ARGS`` from any folder and terminal.

    Args:
        *args: the command's arguments (quoted for a POSIX shell as needed).
    """
    return shlex.join([*_program(), *args])
