"""pytest plugin registered under the ``band_trio`` entry point (fixtures are added
by the local platform layer)."""
