"""Translation catalogs (locales/<lang>.yaml): every word of the report, and of what a run's record
or an error says, that is not data.

The report's model holds no words: a sentence it shows is a `Phrase` (a catalog key and the values
it is filled in with), a `Series` of them, or a plain string of data (a name, an id, a number, raw
evidence). `Translator.say` writes any of them in one language.
"""

from __future__ import annotations

import functools
import re
import string
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from dlperf.i18n.mdtext import Md, escape


class CatalogError(KeyError):
    """A key missing from a catalog, or catalogs that disagree."""


def _flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, str]:
    flat: dict[str, str] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat |= _flatten(value, f"{name}.")
        else:
            flat[name] = str(value)
    return flat


@functools.cache
def catalog(lang: str) -> dict[str, str]:
    """The flat catalog of one language: dotted key -> text with {placeholders}."""
    path = resources.files("dlperf.i18n").joinpath(f"locales/{lang}.yaml")
    if not path.is_file():
        raise CatalogError(f"no report language {lang!r} (no locales/{lang}.yaml)")
    return _flatten(yaml.safe_load(path.read_text(encoding="utf-8")))


def languages() -> list[str]:
    root = resources.files("dlperf.i18n").joinpath("locales")
    return sorted(p.name.removesuffix(".yaml") for p in root.iterdir() if p.name.endswith(".yaml"))


def placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


@dataclass(frozen=True)
class Phrase:
    """A sentence as data: a catalog key and the values it is filled in with (numbers already
    formatted, evidence verbatim, or other phrases). Hashable, so equal reasons merge."""

    key: str
    values: tuple[tuple[str, Text], ...] = ()

    @classmethod
    def of(cls, key: str, /, **values: Text) -> Phrase:
        return cls(key, tuple(values.items()))


@dataclass(frozen=True)
class Series:
    """Texts joined by a catalog separator: `list_sep` ("a, b") or `clause_sep` ("a; b")."""

    items: tuple[Text, ...]
    sep: str = "list_sep"


Text = str | Phrase | Series  # what the report's model holds where a reader sees words


@dataclass(frozen=True)
class Translator:
    """`t("section.environment")` or `t("summary.cells", n=3)` in one language. With `markdown`,
    every value it writes that is not already Markdown (mdtext.Md) is escaped, and what it
    returns is Md: the catalog's words are the report's own, the values are data."""

    lang: str
    markdown: bool = False

    def __call__(self, key: str, **values: Any) -> str:
        try:
            text = catalog(self.lang)[key]
        except KeyError:
            raise CatalogError(f"locales/{self.lang}.yaml has no key {key!r}") from None
        if self.markdown:
            return Md(text.format(**{k: escape(v) for k, v in values.items()}))
        return text.format(**values) if values else text

    def has(self, key: str) -> bool:
        return key in catalog(self.lang)

    def say(self, text: Text) -> str:
        """A phrase, series or plain string of the model in this language."""
        if isinstance(text, Phrase):
            return self(text.key, **{name: self.say(v) for name, v in text.values})
        if isinstance(text, Series):
            joined = self(text.sep).join(self.say(item) for item in text.items)
            return Md(joined) if self.markdown else joined
        return escape(text) if self.markdown else text


def recorded(text: str) -> Text:
    """Text kept as it was written (a framework's error, a release's note), marked as such in
    every language (key reason.recorded); '' for none."""
    return Phrase.of("reason.recorded", text=text) if text else ""


def english(text: Text) -> str:
    """A phrase in English, as dlperf's own messages outside the report say it (the CLI, an
    error, a run's recorded detail): the wording lives in locales/en.yaml only."""
    return Translator("en").say(text)


DETAIL = "detail."  # the catalog's sentences a run records in English (its status_detail)
# The placeholders of detail.* templates by what they hold: a number (an exit code, a task, a
# count, a time limit), recognised as a number only, so that "exit code {code}" is not read into
# any text that begins "exit code 1"; a detail within the detail, recognised in turn (else kept as
# recorded text); any other is evidence (a log line, an error, a name), kept verbatim.
NUMBERS = frozenset({"code", "task", "seen", "wanted", "minutes", "seconds"})
NESTED = frozenset({"note", "exit", "detail"})
_NUMBER = r"-?\d+(?:\.\d+)?"


def _template_pattern(key: str, text: str) -> re.Pattern[str]:
    """An English template as a regex: its words literal, a named group per placeholder (a
    number for NUMBERS, else the shortest text that fits; a placeholder repeated must repeat its
    text)."""
    parts, seen = [], set()
    for literal, name, _, _ in string.Formatter().parse(text):
        parts.append(re.escape(literal))
        if name is not None:
            value = _NUMBER if name in NUMBERS else ".+?"
            parts.append(f"(?P={name})" if name in seen else f"(?P<{name}>{value})")
            seen.add(name)
    if not any(literal for literal, *_ in string.Formatter().parse(text)):
        raise CatalogError(f"locales/en.yaml: {key} has no words of its own to be recognised by")
    return re.compile("".join(parts), re.DOTALL)


@functools.cache
def _detail_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """The detail.* templates of en.yaml, the one with the most words of its own first, so that
    the most specific template wins where two fit ("{exit}; last line: (empty log)" before
    "{exit}; last line: {line}")."""
    templates = [(key, text) for key, text in catalog("en").items() if key.startswith(DETAIL)]
    templates.sort(key=lambda kv: -sum(len(lit) for lit, *_ in string.Formatter().parse(kv[1])))
    return tuple((key, _template_pattern(key, text)) for key, text in templates)


def recognise(text: str) -> Phrase | None:
    """The detail.* phrase a sentence dlperf recorded in English says (`english` of it gives
    `text` back); None for any other text (an upstream's log line, an error, older wording)."""
    for key, pattern in _detail_patterns():
        match = pattern.fullmatch(text)
        if match:
            return Phrase.of(key, **{k: _value(k, v) for k, v in match.groupdict().items()})
    return None


def _value(name: str, value: str) -> Text:
    if name in NESTED:
        return recognise(value) or recorded(value)
    return value
