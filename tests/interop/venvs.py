"""Private virtual environments for interop peers we did not write.

The official ``band-sdk`` and ``band-client-rest`` are installed from PyPI into
their own venvs under ``<repo>/.interop/`` (ignored by git), never into
band-trio's environment. A venv is reused while its marker file names the same
requirements, so only the first run pays for the install.
"""

from __future__ import annotations

import fcntl
import subprocess
import sys
import threading
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INTEROP_DIR = REPO / ".interop"

BAND_SDK = ("band-sdk==6.0.1",)
BAND_CLIENT_REST = ("band-client-rest==0.0.51",)


_ready: dict[str, Path] = {}
_lock = threading.Lock()


def ensure_venv(name: str, requirements: tuple[str, ...]) -> Path:
    """Create (once) a venv with ``requirements`` and return its python.

    Safe to call from several threads and several processes at once (a file
    lock serialises the installs); after the first success in a process the
    answer is cached. The marker file is written only once pip succeeded, so an
    interrupted install is redone from scratch next time.

    Raises:
        RuntimeError: pip failed (e.g. the package index is unreachable).
    """
    with _lock:
        if name in _ready:
            return _ready[name]
        root = INTEROP_DIR / name
        python = root / "bin" / "python"
        marker = root / ".installed"
        wanted = "\n".join(requirements)
        INTEROP_DIR.mkdir(parents=True, exist_ok=True)
        with open(INTEROP_DIR / f".{name}.lock", "w") as lock_file:
            fcntl.flock(lock_file, fcntl.LOCK_EX)
            if not (python.exists() and marker.exists() and marker.read_text() == wanted):
                venv.EnvBuilder(with_pip=True, clear=True).create(root)
                try:
                    subprocess.run(
                        [
                            str(python),
                            "-m",
                            "pip",
                            "install",
                            "--quiet",
                            "--disable-pip-version-check",
                            *requirements,
                        ],
                        check=True,
                        timeout=600,
                    )
                except subprocess.CalledProcessError as exc:
                    raise RuntimeError(
                        f"could not install {' '.join(requirements)} into {root} "
                        f"(pip exited with {exc.returncode}); the interop tests need the "
                        "package index once, then reuse the venv"
                    ) from exc
                marker.write_text(wanted)
        _ready[name] = python
        return python


def band_sdk_python() -> Path:
    """The python of the venv holding the official ``band-sdk``."""
    return ensure_venv("band-sdk", BAND_SDK)


def band_client_rest_python() -> Path:
    """The python of the venv holding the official ``band-client-rest``."""
    return ensure_venv("band-client-rest", BAND_CLIENT_REST)


if __name__ == "__main__":
    print(band_sdk_python())
    print(band_client_rest_python())
    sys.exit(0)
