"""Experiments: profiles as data, an artifact store keyed by config hashes, and the runner."""
