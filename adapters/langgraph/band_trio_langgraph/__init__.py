"""band-trio-langgraph."""
