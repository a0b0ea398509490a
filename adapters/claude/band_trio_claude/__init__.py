"""band-trio-claude: answer Band messages with a Claude Agent SDK agent."""

__version__ = "0.1.0"

__all__ = ["__version__"]
