"""Each vocabulary has one source (issue 16): the report spells no status word, it uses Status."""

from __future__ import annotations

import re
from pathlib import Path

import dlperf.report
from dlperf.status import Status

REPORT = Path(dlperf.report.__file__).parent
# A status word in quotes: "ok", 'missing', ... (the locales translate them, and are not scanned).
WORDS = "|".join(re.escape(s.value) for s in Status)
QUOTED_STATUS = re.compile(rf"""(["'])({WORDS})\1""")


def _sources() -> list[Path]:
    return sorted([*REPORT.rglob("*.py"), *REPORT.rglob("*.j2")])


def test_the_pattern_finds_each_status_word() -> None:
    for status in Status:
        assert QUOTED_STATUS.search(f'if r.status == "{status.value}" %}}')
        assert QUOTED_STATUS.search(f"x.replace('', '{status.value}')")
    assert not QUOTED_STATUS.search('t("status.ok") or "okay" or Status.OK')


def test_report_and_templates_spell_no_status_word() -> None:
    sources = _sources()
    names = {p.relative_to(REPORT).as_posix() for p in sources}
    # not vacuous: the modules and both templates that once spelled them are read
    assert {"groups.py", "render.py", "templates/report.md.j2", "templates/report.html.j2"} <= names
    found = [
        f"{path.relative_to(REPORT)}:{number}: {line.strip()}"
        for path in sources
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if QUOTED_STATUS.search(line)
    ]
    assert not found, "status words spelled outside dlperf.status (use Status):\n" + "\n".join(
        found
    )
