"""Fixtures shared with the tools tests: a scripted platform and a RestClient on it."""

from tests.scripted_platform import platform, rest

__all__ = ["platform", "rest"]
