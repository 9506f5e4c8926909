"""Rankd: real-time leaderboards for games."""

__version__ = "0.1.0"
