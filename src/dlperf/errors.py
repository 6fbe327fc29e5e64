"""Errors a user acts on. Their messages say where: the file and line, or the config key."""

from __future__ import annotations


class ConfigError(ValueError):
    """A suite configuration the user must fix; the message names the file and key at fault."""
