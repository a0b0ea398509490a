"""The browser playground (``/playground``): a page to talk to agents.

The page is plain HTML, CSS and JavaScript shipped in the package
(``band_trio/local/playground``): no build step and nothing fetched from
elsewhere. ``/playground?token=<user key>`` opens it: the page sends that key
to the human API and the live feed, keeps it for the tab (``sessionStorage``)
and takes it out of the address bar. A key that is no user key of this
platform is answered 401 with a page that says so. The page itself, its
script, style sheet and icon hold no secret and are served to anyone (without
a key the page says how to open it).
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

from band_trio.local._input import Query
from band_trio.local.asgi import Response, Services
from band_trio.local.model import UserRecord
from band_trio.local.refusal import fail

__all__ = ["PATH", "respond", "serves"]

PATH = "/playground"

_ASSETS = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
# The page may load only its own files and talk only to its own origin.
_PAGE_HEADERS = [
    (
        "content-security-policy",
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    ),
    ("referrer-policy", "no-referrer"),
    ("x-content-type-options", "nosniff"),
    ("cache-control", "no-store"),
]


def serves(path: str) -> bool:
    """Whether ``path`` is the playground's."""
    return path == PATH or path.startswith(PATH + "/")


@cache
def _asset(name: str) -> bytes:
    return resources.files("band_trio.local").joinpath("playground", name).read_bytes()


def respond(
    services: Services, method: str, path: str, query: Query, headers: dict[str, Any]
) -> Response:
    """The page or one of its files.

    Raises:
        RequestRefusedError: 405 for another method than GET/HEAD, 404 for an
            unknown file; the page with a key that is no user key is a 401 page.
    """
    if method not in ("GET", "HEAD"):
        raise fail(405, f"method {method} is not allowed on {path}", code="method_not_allowed")
    name = path[len(PATH) :].strip("/") or "index.html"
    if name not in _ASSETS:
        raise fail(404, f"no route for {method} {path}")
    if name == "index.html":
        key = query.str_("token") or headers.get("x-api-key")
        if key is not None and not isinstance(services.state.authenticate(key), UserRecord):
            return _unauthorized()
    return Response(200, _asset(name), list(_PAGE_HEADERS), _ASSETS[name])


def _unauthorized() -> Response:
    body = (
        b"<!doctype html><meta charset=utf-8><title>Band playground</title>"
        b"<p>This key is wrong: it is no user key of this platform (an agent's key, a "
        b"mistyped one, or one of an earlier run without <code>--state</code>).</p>"
        b"<p>Open the playground with your user key: <code>/playground?token=&lt;key&gt;</code> "
        b"(<code>band-trio dev --web</code> opens it for you).</p>"
    )
    return Response(401, body, list(_PAGE_HEADERS), "text/html; charset=utf-8")
