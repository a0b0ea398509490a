"""The agent runtime: public types, sans-io cores and the Trio engine."""
