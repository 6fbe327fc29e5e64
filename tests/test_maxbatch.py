"""`batch_size: max`: the search's rule on a memory model, then for real (tests/test_maxbatch_workflow)."""

from __future__ import annotations

from dlperf.plan.maxbatch import Probe, SearchResult, SearchSettings, load_result, search


def memory(limit: int, other: dict[int, str] | None = None, whole_run: int | None = None):
    """A probe that fits up to `limit` (a whole run: up to `whole_run`), with some batch sizes
    ending otherwise. `tried` lists the probes, confirmations as ("confirm", size)."""
    tried: list = []

    def probe(batch: int, full_length: bool) -> Probe:
        tried.append(("confirm", batch) if full_length else batch)
        if other and batch in other:
            return Probe(batch, other[batch], "exit code 1; last line: boom")
        fits = batch <= (whole_run if full_length and whole_run else limit)
        return Probe(batch, "ok" if fits else "oom", "" if fits else "oom", "", full_length)

    return probe, tried


def test_doubles_until_oom_then_bisects_to_the_exact_largest():
    probe, tried = memory(72)
    result = search(probe, SearchSettings(start=1, ceiling=4096))
    assert (result.status, result.value) == ("ok", 72)
    # 1..64 fit, 128 does not; then 96, 80 oom, 72 ok, 76, 74, 73 oom: 72 and 73 are 1 apart
    assert tried == [1, 2, 4, 8, 16, 32, 64, 128, 96, 80, 72, 76, 74, 73, ("confirm", 72)]
    statuses = ["ok"] * 7 + ["oom"] * 3 + ["ok"] + ["oom"] * 3 + ["ok"]
    assert [p.status for p in result.probes] == statuses
    assert [p.full_length for p in result.probes] == [False] * 14 + [True]
    assert result.detail == "72 fits, 73 runs out of memory"


def test_granularity_stops_the_bisection_early():
    probe, tried = memory(75)
    result = search(probe, SearchSettings(start=16, ceiling=4096, granularity=8))
    assert tried == [16, 32, 64, 128, 96, 80, 72, ("confirm", 72)]  # 72 fits, 80 does not
    assert result.value == 72
    assert result.detail == "72 fits, 80 runs out of memory (granularity 8)"


def test_every_probe_fitting_stops_at_the_ceiling_confirmed_and_a_lower_bound():
    """The ceiling is confirmed by a whole run as any value is, and stated as a lower bound of
    the largest (nothing larger was tried); a whole run out of memory there steps down."""
    probe, tried = memory(10_000)
    result = search(probe, SearchSettings(start=16, ceiling=100))
    assert tried == [16, 32, 64, 100, ("confirm", 100)]
    assert (result.status, result.value, result.at_ceiling) == ("ok", 100, True)
    assert (
        result.detail
        == "100: every probe fit, up to the ceiling (max_batch_search.ceiling): a lower bound"
    )
    assert SearchResult.from_dict(result.to_dict()).at_ceiling
    probe, tried = memory(10_000, whole_run=70)
    result = search(probe, SearchSettings(start=16, ceiling=100))
    # whole runs bisect between 64 (its probe fit) and 100 (its whole run did not), to 1
    whole = [("confirm", s) for s in (100, 82, 73, 68, 70, 71)]
    assert tried == [16, 32, 64, 100, *whole]
    assert (result.value, result.at_ceiling) == (70, False)
    assert result.detail == "70 fits, 71 runs out of memory"


def test_the_first_probe_out_of_memory_makes_the_cell_oom():
    probe, tried = memory(4)
    result = search(probe, SearchSettings(start=8))
    assert tried == [8]
    assert (result.status, result.value) == ("oom", None)
    assert "batch size 8 (max_batch_search.start) already runs out of memory" in result.detail


def test_a_probe_that_fails_otherwise_ends_the_search_with_its_status():
    probe, tried = memory(72, other={96: "failed"})
    result = search(probe, SearchSettings(start=32))
    assert tried == [32, 64, 128, 96]
    assert (result.status, result.value) == ("failed", None)
    assert result.detail == (
        "the probe at batch size 96 ended failed: exit code 1; last line: boom"
    )
    probe, _ = memory(72, other={32: "skipped"})
    assert search(probe, SearchSettings(start=32)).status == "skipped"


def test_a_confirmation_out_of_memory_bisects_again_by_whole_runs():
    """Review: probes fit up to 72 but a whole run only up to 40; the search stepped down from
    each confirmation that ran out of memory to the next size whose probe fit and stopped at 32,
    saying "32 fits, 64 runs out of memory (granularity 8)": 40 fit, and the stated granularity
    was not reached. Whole runs now bisect between the two, to the granularity."""
    probe, tried = memory(72, whole_run=40)
    result = search(probe, SearchSettings(start=16, granularity=8))
    probes = [16, 32, 64, 128, 96, 80, 72]
    whole = [("confirm", s) for s in (72, 64, 48, 40)]  # 64 to 32: 48 oom, 40 ok
    assert tried == [*probes, *whole]
    assert (result.status, result.value) == ("ok", 40)
    assert result.detail == "40 fits, 48 runs out of memory (granularity 8)"
    assert [p.full_length for p in result.probes] == [False] * 7 + [True] * 4
    probe, tried = memory(72, whole_run=8)
    result = search(probe, SearchSettings(start=16, granularity=8))
    confirmations = [t for t in tried if isinstance(t, tuple)]
    assert confirmations == [("confirm", s) for s in (72, 64, 48, 40, 32, 24, 16)]
    assert (result.status, result.value) == ("oom", None)
    assert "no batch size from max_batch_search.start runs a whole run (16 oom)" in result.detail
    probe, _ = memory(72, other={48: "timeout"}, whole_run=40)
    result = search(probe, SearchSettings(start=16, granularity=8))
    assert (result.status, result.value) == ("timeout", None)
    assert result.detail.startswith("the confirmation at batch size 48 ended timeout")


def test_result_round_trips_and_a_missing_one_is_failed(tmp_path):
    import json

    result = SearchResult("ok", 72, "72 fits", [Probe(72, "ok", "", "m.json", True)])
    path = tmp_path / "r.json"
    path.write_text(json.dumps(result.to_dict()))
    assert load_result(path) == result
    missing = load_result(tmp_path / "none.json")
    assert missing.status == "failed" and missing.value is None
    assert "none.json" in missing.detail


def test_a_result_of_another_cell_or_edited_past_its_probes_is_failed(tmp_path):
    """A search result copied from another cell's search, or whose value none of its ok probes
    confirmed (edited by hand), trains nothing: the run is recorded failed, saying why."""
    import json

    result = SearchResult("ok", 72, "72 fits", [Probe(72, "ok", "", "m.json", True)])
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"cell": {"cell_id": "a.cell"}} | result.to_dict()))
    assert load_result(path, "a.cell") == result
    other = load_result(path, "b.cell")
    assert other.status == "failed" and "it is the search of a.cell" in other.detail
    path.write_text(json.dumps(result.to_dict() | {"value": 96}))
    edited = load_result(path)
    assert (
        edited.status == "failed" and "its value 96 is none of its ok probes' [72]" in edited.detail
    )


def test_a_value_its_whole_run_confirmation_ran_out_of_memory_at_is_not_confirmed(tmp_path):
    """2 ok, 4 oom, 3 ok (short), 3 oom and 2 ok at full length: the search found 2; the same
    result edited to 3 (a short probe's value, whose whole run ran out of memory) is failed."""
    import json

    probes = [
        Probe(2, "ok"), Probe(4, "oom"), Probe(3, "ok"),
        Probe(3, "oom", full_length=True), Probe(2, "ok", full_length=True),
    ]  # fmt: skip
    path = tmp_path / "r.json"
    path.write_text(json.dumps(SearchResult("ok", 2, "2 fits", probes).to_dict()))
    assert load_result(path).value == 2
    path.write_text(json.dumps(SearchResult("ok", 3, "3 fits", probes).to_dict()))
    edited = load_result(path)
    assert (
        edited.status == "failed" and "its value 3 is none of its ok probes' [2]" in edited.detail
    )


def test_a_result_written_before_option_searches_reads_its_batch_size(tmp_path):
    """Results folders measured before `value` replaced `batch_size` keep their searches."""
    import json

    old = {"status": "ok", "batch_size": 72, "detail": "72 fits", "probes": []}
    old["probes"] = [{"batch_size": 72, "status": "ok", "full_length": True}]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(old))
    assert load_result(path) == SearchResult("ok", 72, "72 fits", [Probe(72, "ok", "", "", True)])


def test_an_option_search_names_its_option_and_its_settings():
    probe, tried = memory(1000)
    result = search(probe, SearchSettings(start=250, ceiling=4000, granularity=250), "num_classes")
    assert (result.status, result.value) == ("ok", 1000)
    assert tried[:3] == [250, 500, 1000]
    starved = search(memory(10)[0], SearchSettings(start=250), "num_classes")
    assert starved.detail == "num classes 250 (max_search.start) already runs out of memory"


def test_a_resumed_search_reuses_the_probes_that_finished(tmp_path, monkeypatch):
    """Review: Ctrl-C after three probes, and the search ran them all again (on a cluster each
    probe queues for its allocation): Snakemake deleted the probes folder, a declared output, and
    nothing reused them. A probe that ended ok or oom, of this very measure, is reused; a failed
    one, or one of another measure, runs again."""
    import dataclasses

    from dlperf.launch import probes
    from dlperf.launch.record import RunRecord
    from dlperf.launch.spec import Harness
    from dlperf.matrix import Cell
    from dlperf.paths import MaxBatchPaths

    cell = Cell.parse("pytorch.resnet50.fp32.noxla.bmax.1n1g")
    measure = {"cell": cell.key(), "options": {"image_size": 16}, "steps": 9, "device": "cpu"}
    paths = MaxBatchPaths(cell.id, tmp_path)
    harness = Harness("local", {}, time_limit_min=1, wait_grace_s=1, results_root=str(tmp_path))
    settings = SearchSettings(start=2, ceiling=16, probe_steps=3)
    ran: list[str] = []

    def run_cell(probe_measure, repeat, probe_harness, manifest_path):
        ran.append(Cell.from_key(probe_measure["cell"]).id)
        record = RunRecord(
            cell=probe_measure["cell"], repeat=repeat, status="ok", adapter={"name": "pytorch"},
            measure=probe_measure, backend="local", tasks=[],
        )  # fmt: skip
        manifest_path.parent.mkdir(parents=True, exist_ok=True)
        return record.write(manifest_path)

    monkeypatch.setattr(probes, "run_cell", run_cell)
    probe = probes.probe_run(measure, harness, paths, settings)
    first = [probe(v, False).status for v in (2, 4)]
    assert first == ["ok", "ok"] and len(ran) == 2
    b4 = RunRecord.read(paths.probe(ran[1], 1).manifest)
    dataclasses.replace(b4, status="failed").write(paths.probe(ran[1], 1).manifest)
    ran.clear()
    again = probes.probe_run(measure, harness, paths, settings)
    assert [again(v, False).status for v in (2, 4, 8)] == ["ok", "ok", "ok"]
    assert ran == ["pytorch.resnet50.fp32.noxla.b4.1n1g", "pytorch.resnet50.fp32.noxla.b8.1n1g"]
    ran.clear()
    other = probes.probe_run(measure | {"options": {"image_size": 32}}, harness, paths, settings)
    other(2, False)  # b2's probe, of another measure: run again
    assert ran == ["pytorch.resnet50.fp32.noxla.b2.1n1g"]


def test_only_an_interrupted_search_reuses_its_probes(tmp_path, monkeypatch):
    """Review: with the probes folder kept, a search redone on purpose (forcerun, a changed
    environment pin) reused every old probe and changed nothing. Probes are reused only when
    this same search was interrupted before it wrote its result."""
    import json

    import pytest

    from dlperf.launch import probes
    from dlperf.launch.record import RunRecord
    from dlperf.launch.spec import Harness
    from dlperf.matrix import Cell
    from dlperf.paths import MaxBatchPaths

    cell = Cell.parse("pytorch.resnet50.fp32.noxla.bmax.1n1g")
    params = {
        "cell": cell.key(), "options": {}, "steps": 9, "device": "cpu",
        "search": {"start": 2, "ceiling": 16, "granularity": 1, "probe_steps": 3},
    }  # fmt: skip
    harness = Harness("local", {}, time_limit_min=1, wait_grace_s=1, results_root=str(tmp_path))
    result = MaxBatchPaths(cell.id, tmp_path).result
    ran: list[str] = []
    stop_after: list[int] = [2]

    def run_cell(measure, repeat, probe_harness, manifest_path):
        if len(ran) == stop_after[0]:
            raise KeyboardInterrupt  # Ctrl-C while the third probe queues
        ran.append(f"{Cell.from_key(measure['cell']).batch_size}/r{repeat}")
        status = "ok" if int(Cell.from_key(measure["cell"]).batch_size) <= 8 else "oom"
        record = RunRecord(
            cell=measure["cell"], repeat=repeat, status=status, adapter={"name": "pytorch"},
            measure=measure, backend="local", tasks=[],
        )  # fmt: skip
        manifest_path.parent.mkdir(parents=True, exist_ok=True)
        return record.write(manifest_path)

    monkeypatch.setattr(probes, "run_cell", run_cell)
    with pytest.raises(KeyboardInterrupt):
        probes.find_max_batch(params, harness, result)
    assert ran == ["2/r1", "4/r1"] and not result.exists()
    ran.clear()
    stop_after[0] = 99
    assert probes.find_max_batch(params, harness, result).value == 8
    assert ran[0] == "8/r1" and "2/r1" not in ran and "4/r1" not in ran  # resumed
    assert json.loads(result.read_text())["value"] == 8
    ran.clear()
    assert probes.find_max_batch(params, harness, result).value == 8  # redone on purpose
    assert ran[:2] == ["2/r1", "4/r1"]  # every probe again


def test_a_resumed_search_runs_again_the_probes_of_an_environment_whose_pins_changed(
    tmp_path, monkeypatch
):
    """Review: pins edited while a search was interrupted, and the resumed search reused probes
    measured in the old environment (the same search params, the same measure). The measure
    names the environment now."""
    from dlperf.launch.measured import measure_of
    from dlperf.launch.probes import finished_probe
    from dlperf.launch.record import RunRecord
    from dlperf.matrix import Cell, CellSpec

    (tmp_path / "envs").mkdir()
    pins = tmp_path / "envs" / "tensorflow.txt"
    pins.write_text("tensorflow==2.16.1\n")
    monkeypatch.setenv("DLPERF_WORKFLOW_DIR", str(tmp_path))
    site = {"environments": {"root": str(tmp_path / "cache"), "python": {}}}
    config = {"window": {"warmup": 1, "measure": 2}, "device": "cpu", "site": site}
    cell = Cell.parse("tensorflow.resnet50.fp32.noxla.b8.1n1g")
    before = measure_of(CellSpec(cell, {}), config)
    manifest = tmp_path / cell.id / "r1" / "manifest.json"
    manifest.parent.mkdir(parents=True)
    RunRecord(
        cell=cell.key(), repeat=1, status="ok", adapter={"name": "tensorflow"},
        measure=before, backend="local", tasks=[], environment={"key": before["environment"]},
    ).write(manifest)  # fmt: skip
    assert finished_probe(manifest, before) is not None
    pins.write_text("tensorflow==2.17.0\n")
    after = measure_of(CellSpec(cell, {}), config)
    assert after["environment"] not in (before["environment"], None)
    assert finished_probe(manifest, after) is None
    site["environments"]["python"] = {"tensorflow": "/opt/tf/bin/python"}  # the site's own
    assert measure_of(CellSpec(cell, {}), config)["environment"] == "site /opt/tf/bin/python"


def test_a_setting_left_out_is_the_schemas_default(monkeypatch):
    """The schema owns max_batch_search's defaults: SearchSettings has no copy of its own."""
    import copy

    from dlperf import defaults

    schema = copy.deepcopy(defaults.schema_data())
    schema["properties"]["max_batch_search"]["properties"]["ceiling"]["default"] = 512
    monkeypatch.setattr(defaults, "schema_data", lambda: schema)
    assert SearchSettings(start=8) == SearchSettings(8, 512, 1, 3)


def test_a_probe_cell_replaces_the_searched_part_of_the_variant_alone():
    """A probe's cell has the probed value in place of the part `<option>_max` of its variant
    (the part rule of matrix.names_slug, as find_max_batch checks it), not in every substring:
    a case variant num_classes_maximal made the probe num_classes_2000imal_num_classes_2000."""
    from dlperf.matrix import Cell, Layout
    from dlperf.plan.maxbatch import probe_cell

    cell = Cell("pytorch", "insightface", "amp", False, 64, Layout(1, 1),
                "num_classes_maximal_num_classes_max")  # fmt: skip
    probed = probe_cell(cell, "num_classes", 2000)
    assert probed.variant == "num_classes_maximal_num_classes_2000"
    assert probe_cell(cell, "batch_size", 128).batch_size == 128
