"""Markdown the report writes, and the one escaper for every text it did not compose (a title,
footnotes, a baseline's name and notes, a variant, a run's log): backslashes before Markdown's
inline marks, HTML's < and > as entities, newlines folded. `Md` is text already safe (catalog
words, a composed sentence, a code span); anything else is escaped where it is written."""

from __future__ import annotations

import re
from typing import Any


class Md(str):
    """Markdown the report composed: written as is."""

    __slots__ = ()


_MARKS = re.compile(r"([\\`*\[\]#|~])")
# `_` emphasises unless between two letters or digits (bert_base stays as is)
_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
_ENTITY = re.compile(r"&(?=#?\w+;)")  # an ampersand that starts an HTML entity
_SPACE = re.compile(r"\s+")


def escape(value: Any) -> Md:
    """`value` as Markdown text that reads as itself: on one line, no mark, link, heading,
    table cell boundary or HTML tag of its own. Md is returned as is."""
    if isinstance(value, Md):
        return value
    text = _SPACE.sub(" ", str(value))
    text = _UNDERSCORE.sub(r"\\_", _MARKS.sub(r"\\\1", text))
    text = _ENTITY.sub("&amp;", text)  # `&lt;` in a log line reads as itself, not as `<`
    return Md(text.replace("<", "&lt;").replace(">", "&gt;"))


def one_line(value: Any) -> Md:
    """escape, its ends stripped (a table cell, a title); Md has its whitespace folded."""
    if isinstance(value, Md):
        return Md(" ".join(value.split()))
    return escape(" ".join(str(value).split()))


def code(value: Any) -> Md:
    """`value` as a code span, on one line: fenced by more backticks than it holds in a row, a
    pipe escaped (GitHub's tables split on it even in code)."""
    text = " ".join(str(value).split()).replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return Md(f"{fence}{pad}{text}{pad}{fence}")


def fenced(value: Any, info: str = "") -> Md:
    """`value` as a fenced code block, its lines kept: the fence longer than any backtick run."""
    text = str(value)
    fence = "`" * max(3, max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    return Md(f"{fence}{info}\n{text}\n{fence}")
