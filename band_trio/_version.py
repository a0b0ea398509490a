"""The distribution's version, in a module with no imports (private).

The root package re-exports it as ``band_trio.__version__``; lower layers (the
REST client's default ``User-Agent``) read it here, since importing the root
package from below it would be an import cycle.
"""

__version__ = "0.1.0"
