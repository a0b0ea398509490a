"""Testing helpers for band-trio users: the local-platform pytest fixture, fakes,
and the adapter conformance kit."""
