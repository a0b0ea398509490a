"""band-trio-anthropic: a band-trio adapter that answers with Anthropic's Claude."""

__all__: list[str] = []
