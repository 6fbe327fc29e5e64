"""Turning raw logs into per-step records (one parser per log format)."""

from dlperf.parse.records import Method, ParseError, ParseResult, StepRecord

__all__ = ["Method", "ParseError", "ParseResult", "StepRecord"]
