"""Private virtual environments for interop peers we did not write.

The official ``band-sdk`` and ``band-client-rest`` are installed from PyPI into
their own venvs under ``<repo>/.interop/`` (ignored by git), never into
band-trio's environment. A venv is reused while its marker file names the same
requirements, so only the first run pays for the install.
"""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INTEROP_DIR = REPO / ".interop"

BAND_SDK = ("band-sdk==6.0.1",)
BAND_CLIENT_REST = ("band-client-rest==0.0.51",)


def ensure_venv(name: str, requirements: tuple[str, ...]) -> Path:
    """Create (once) a venv with ``requirements`` and return its python."""
    root = INTEROP_DIR / name
    python = root / "bin" / "python"
    marker = root / ".installed"
    wanted = "\n".join(requirements)
    if python.exists() and marker.exists() and marker.read_text() == wanted:
        return python
    venv.EnvBuilder(with_pip=True, clear=True).create(root)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *requirements],
        check=True,
        timeout=600,
    )
    marker.write_text(wanted)
    return python


def band_sdk_python() -> Path:
    return ensure_venv("band-sdk", BAND_SDK)


def band_client_rest_python() -> Path:
    return ensure_venv("band-client-rest", BAND_CLIENT_REST)


if __name__ == "__main__":
    print(band_sdk_python())
    print(band_client_rest_python())
    sys.exit(0)
