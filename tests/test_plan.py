"""`dlperf plan`: bounds, makespans known by hand, repeat order, bad input (durations:
test_plan_durations)."""

from __future__ import annotations

from pathlib import Path

import pulp
import pytest
import yaml
from test_plan_durations import write_runs

from dlperf.cli import main
from dlperf.config import validate
from dlperf.launch import allocation
from dlperf.plan import milp
from dlperf.plan.jobs import Job, PlanError, Site
from dlperf.plan.plan import (
    layout_rows,
    machine_site,
    make_plan,
    plan_dict,
    plan_text,
    run_priorities,
)
from dlperf.plan.schedule import list_schedule, schedule_campaign

HOUR_S = 3600.0


def suite(layouts_by_batch: dict[int, list[str]], repeats: int = 1, **top) -> dict:
    """One pytorch/resnet50 case per batch size; no earlier results: every run takes the limit."""
    cases = [
        {"framework": "pytorch", "model": "resnet50", "batch_size": [bsz], "layouts": layouts}
        for bsz, layouts in layouts_by_batch.items()
    ]
    return validate({"repeats": repeats, "time_limit_min": 60, "cases": cases, **top})


def plan_of(config: dict, tmp_path: Path, **site) -> object:
    return make_plan(config, tmp_path / "no-results", **site)


# ------------------------------------------------------------------------ makespans by hand


def test_four_one_node_runs_on_two_nodes_take_two_hours(tmp_path):
    plan = plan_of(suite({1: ["1n8g"], 2: ["1n8g"], 3: ["1n8g"], 4: ["1n8g"]}), tmp_path, nodes=2)
    assert plan.makespan_s == 2 * HOUR_S
    bounds = plan.schedule.bounds
    assert bounds.sequential_s == 4 * HOUR_S
    assert bounds.area_s == 2 * HOUR_S  # 4 runs x 8 GPUs x 1 h / 16 GPUs
    assert bounds.longest_s == HOUR_S
    assert bounds.lower_s == 2 * HOUR_S
    assert plan.gap == 0.0


def test_a_two_node_run_holds_both_nodes(tmp_path):
    plan = plan_of(suite({1: ["2n8g", "1n8g"], 2: ["1n8g"]}), tmp_path, nodes=2)
    assert plan.makespan_s == 2 * HOUR_S  # the 2n8g hour alone, then the two 1n8g side by side
    wide = next(p for p in plan.schedule.placements if p.key[0].endswith("2n8g"))
    assert wide.node_ids == (0, 1)
    narrow = [p for p in plan.schedule.placements if p.key[0].endswith("1n8g")]
    assert all(p.start_s >= wide.end_s or p.end_s <= wide.start_s for p in narrow)


def test_shared_site_packs_small_runs_on_one_node_exclusive_does_not(tmp_path):
    config = suite({b: ["1n1g"] for b in range(1, 9)})  # eight 1-GPU runs of 1 h
    assert plan_of(config, tmp_path, nodes=1, exclusive=False).makespan_s == HOUR_S
    exclusive = plan_of(config, tmp_path, nodes=1, exclusive=True)
    assert exclusive.makespan_s == 8 * HOUR_S
    assert exclusive.schedule.bounds.area_s == 8 * HOUR_S  # each run holds the whole node


def test_bounds_of_unequal_runs():
    site = Site(nodes=2, gpus_per_node=8, exclusive=False)
    jobs = [
        Job(("a", 1), 1, 8, 2 * HOUR_S),
        Job(("b", 1), 1, 8, HOUR_S),
        Job(("c", 1), 1, 8, HOUR_S),
    ]
    result = schedule_campaign(jobs, rounds=1, site=site, time_limit_s=2)
    assert result.bounds.sequential_s == 4 * HOUR_S
    assert result.bounds.area_s == 2 * HOUR_S  # (2 + 1 + 1) h x 8 GPUs / 16 GPUs
    assert result.bounds.longest_s == 2 * HOUR_S
    assert result.makespan_s == 2 * HOUR_S  # a on one node; b then c on the other


def test_configuration_lp_bound_sees_that_wide_runs_exclude_each_other():
    site = Site(nodes=4, gpus_per_node=8, exclusive=False)
    # three 3-node runs of 1 h: area says 2.25 h, but no two run side by side: 3 h
    jobs = [Job((f"w{i}", 1), 3, 8, HOUR_S) for i in range(3)]
    result = schedule_campaign(jobs, rounds=1, site=site, time_limit_s=2)
    assert result.bounds.area_s == pytest.approx(2.25 * HOUR_S)
    assert result.bounds.configuration_lp_s == pytest.approx(3 * HOUR_S)
    assert result.makespan_s == 3 * HOUR_S


def test_the_lower_bound_is_never_above_the_planned_makespan(tmp_path):
    """Review: CBC writes its solution with 8 significant digits and the configuration LP was read
    as written: one run of 1234.56789 s had a lower bound of 1234.5679 s, above the makespan that
    meets it, and the plan read 'planned is -0.0% above the lower bound'."""
    site = Site(nodes=1, gpus_per_node=8, exclusive=True)
    result = schedule_campaign([Job(("a", 1), 1, 1, 1234.56789)], 1, site, time_limit_s=1)
    assert result.makespan_s == 1234.56789
    assert result.bounds.configuration_lp_s == pytest.approx(1234.56789, rel=1e-6)
    assert result.bounds.configuration_lp_s <= 1234.56789
    assert result.bounds.lower_s == 1234.56789  # the area bound: one run on the one node
    t0, cell = 1_700_000_000.0, "pytorch.resnet50.fp32.noxla.b1.1n1g"
    row = {"cell_id": cell, "status": "ok", "submitted_at": t0, "workload_wall_s": 1000}
    write_runs(tmp_path, [row | {"noticed_at": t0 + 1234.56789}])
    plan = make_plan(suite({1: ["1n1g"]}, repeats=3), tmp_path, nodes=1, exclusive=True)
    assert plan.gap == 0.0
    assert "gap: planned is 0.0% above the lower bound" in plan_text(plan)


def test_list_schedule_backfills_without_delaying_the_waiting_wide_run():
    site = Site(nodes=2, gpus_per_node=8, exclusive=True)
    jobs = [
        Job(("long", 1), 1, 8, 2 * HOUR_S),
        Job(("wide", 1), 2, 8, HOUR_S),  # waits for both nodes: reserved at 2 h
        Job(("short", 1), 1, 8, HOUR_S),  # ends by 2 h on the idle node: backfilled
        Job(("late", 1), 1, 8, 3 * HOUR_S),  # would delay the wide run: after it
    ]
    starts = {p.key[0]: p.start_s for p in list_schedule(jobs, site)}
    assert starts == {"long": 0, "wide": 2 * HOUR_S, "short": 0, "late": 3 * HOUR_S}


def test_a_shape_that_finds_no_gpus_does_not_stop_a_smaller_one_behind_it():
    """Within one event the scheduler skips a shape that found no GPUs (starting jobs only
    takes GPUs); another shape behind it still backfills."""
    site = Site(nodes=1, gpus_per_node=8, exclusive=False)
    jobs = [
        Job(("six", 1), 1, 6, HOUR_S),
        Job(("four", 1), 1, 4, HOUR_S),  # 2 GPUs free: reserved at 1 h
        Job(("four", 2), 1, 4, HOUR_S),  # the same shape: not asked again
        Job(("two", 1), 1, 2, HOUR_S),  # fits beside the six, ends by 1 h: backfilled
    ]
    starts = {p.key: p.start_s for p in list_schedule(jobs, site)}
    assert starts == {("six", 1): 0, ("four", 1): HOUR_S, ("four", 2): HOUR_S, ("two", 1): 0}


def test_gpu_and_node_hours_per_layout(tmp_path):
    config = suite({1: ["1n1g", "2n8g"]}, repeats=2)
    rows = layout_rows(plan_of(config, tmp_path, nodes=2))
    layouts = {row["layout"]: row for row in rows}
    assert [row["layout"] for row in rows] == ["1n1g", "2n8g", "total"]  # fewest devices first
    assert layouts["1n1g"]["gpu_hours"] == 2  # 2 runs x 1 GPU x 1 h
    assert layouts["1n1g"]["node_hours"] == 2 / 8  # shared: its GPU's share of a node
    assert layouts["2n8g"]["gpu_hours"] == 2 * 16
    assert layouts["2n8g"]["node_hours"] == 2 * 2
    assert layouts["total"]["gpu_hours"] == 34


# ------------------------------------------------------------------------ order


def test_repeat_k_of_every_cell_comes_before_repeat_k_plus_1(tmp_path):
    config = suite({1: ["1n1g", "1n8g", "2n8g"], 2: ["1n8g"]}, repeats=3)
    priorities = run_priorities(plan_of(config, tmp_path, nodes=2))
    assert len(priorities) == 4 * 3
    assert sorted(priorities.values()) == list(range(1, 13))
    for (_, repeat), priority in priorities.items():
        later = [p for (_, r), p in priorities.items() if r > repeat]
        assert all(priority > p for p in later)


def test_plan_dict_states_the_plan(tmp_path):
    data = plan_dict(plan_of(suite({1: ["1n8g"], 2: ["1n8g"]}), tmp_path, nodes=2))
    assert data["runs"] == 2 and data["makespan_s"] == HOUR_S
    assert data["bounds"]["lower_s"] == HOUR_S
    assert {c["duration_source"] for c in data["cells"]} == {"limit"}
    yaml.safe_dump(data)  # plain data


# ------------------------------------------------------------------------ bad input


def test_layout_wider_than_the_site_names_the_cell_and_key(tmp_path):
    config = suite({1: ["4n8g"]}, site={"nodes": 2})
    with pytest.raises(
        PlanError, match=r"cell pytorch\.resnet50\.fp32\.noxla\.b1\.4n8g.*site\.nodes"
    ):
        make_plan(config, tmp_path)
    with pytest.raises(PlanError, match="--nodes"):
        make_plan(config, tmp_path, nodes=3)
    with pytest.raises(PlanError, match=r"1n8g.*site\.gpus_per_node_max"):
        make_plan(suite({1: ["1n8g"]}, site={"gpus_per_node_max": 4}), tmp_path)


def test_a_layout_this_machine_cannot_run_names_the_machine_not_a_site_key(tmp_path):
    """Review: a local suite's 1n8g on a 2-CPU machine was refused as needing '8 GPUs per node;
    a node of the site has 2 (site.gpus_per_node_max)', a key the suite never set; a 2n1g as
    'the site has 1 (site.nodes). Give the campaign more nodes'."""
    site = machine_site(2, "CPUs")
    for layout, needs in (("1n8g", "1 node(s) x 8 device(s)"), ("2n1g", "2 node(s) x 1 device(s)")):
        with pytest.raises(PlanError) as refused:
            make_plan(suite({1: ["1n1g", layout]}), tmp_path, **site)
        assert str(refused.value) == (
            f"cell pytorch.resnet50.fp32.noxla.b1.{layout}: layout {layout} needs {needs}; the "
            "site is this machine (2 CPUs, the local backend: one run at a time). Drop the "
            "layout from the local suite, or plan it for a cluster (backend: slurm, or --nodes "
            "and --gpus-per-node)."
        )


def test_a_cuda_suite_on_a_machine_without_gpus_is_refused_not_planned_on_one_gpu(
    tmp_path, capsys, monkeypatch
):
    """Review: a local suite with `device: cuda` planned on a machine with no GPU (a login node)
    printed a plan 'on 1 nodes x 1 GPUs' with a makespan, under 'site: this machine (0 GPUs,
    ...)': machine_site counted 0 GPUs as 1, while `dlperf check` of the same suite refused it.
    It is now refused as any layout this machine cannot run is, naming the machine."""
    monkeypatch.setattr(allocation, "visible_gpus", lambda: 0)
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump({"device": "cuda", "cases": [
        {"framework": "pytorch", "model": "resnet50", "batch_size": [8], "layouts": ["1n1g"]}
    ]}))  # fmt: skip
    assert main(["plan", str(path), "--results", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "dlperf: cell pytorch.resnet50.fp32.noxla.b8.1n1g: layout 1n1g needs 1 node(s) x 1 "
        "device(s); the site is this machine (0 GPUs, the local backend: one run at a time). "
        "Drop the layout from the local suite, or plan it for a cluster (backend: slurm, or "
        "--nodes and --gpus-per-node).\n"
    )
    assert main(["plan", str(path), "--results", str(tmp_path), "--gpus-per-node", "1"]) == 0
    assert "7 runs on 1 nodes x 1 GPUs" in capsys.readouterr().out


def test_a_plan_of_this_machines_cpus_says_cpus_throughout(tmp_path):
    """Review: on the local backend with device cpu the first line read 'on 1 nodes x 2 GPUs'
    and the lower bound '/ 2 GPUs', while the site line below said '2 CPUs'."""
    text = plan_text(make_plan(suite({1: ["1n1g"]}), tmp_path, **machine_site(2, "CPUs")))
    first, site, *_ = text.splitlines()
    assert first.endswith("1 runs on 1 nodes x 2 CPUs (exclusive)")
    assert site == "  site: this machine (2 CPUs, the local backend: one run at a time)"
    (lower,) = [line for line in text.splitlines() if "lower bound:" in line]
    assert "max(allocated CPU-hours / 2 CPUs" in lower
    assert "GPU" not in first + site + lower
    cluster = plan_text(make_plan(suite({1: ["1n1g"]}), tmp_path, nodes=1, gpus_per_node=8))
    assert "on 1 nodes x 8 GPUs (shared)" in cluster and "GPU-hours / 8 GPUs" in cluster


def test_nothing_to_run(tmp_path):
    config = suite({1: ["1n1g"]})
    config["cases"] = []
    with pytest.raises(PlanError, match="nothing to run"):
        make_plan(config, tmp_path)


def test_solver_without_solution_falls_back_to_the_list_schedule(tmp_path, monkeypatch):
    monkeypatch.setattr(milp, "_solve", lambda prob, time_limit_s: pulp.LpSolutionNoSolutionFound)
    plan = plan_of(suite({1: ["1n8g"], 2: ["1n8g"], 3: ["2n8g"]}), tmp_path, nodes=2)
    assert plan.makespan_s == 2 * HOUR_S
    assert plan.schedule.solver.order == "widest, longest first"
    assert plan.schedule.bounds.configuration_lp_s is None
    assert "no MILP solution: the list schedule alone" in plan_text(plan)


def test_cli_prints_the_plan_and_refuses_bad_sites_without_traceback(tmp_path, capsys):
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump({"repeats": 2, "cases": [
        {"framework": "pytorch", "model": "resnet50", "batch_size": [8], "layouts": ["2n1g"]}
    ]}))  # fmt: skip
    assert main(["plan", str(path), "--results", str(tmp_path), "--gpus-per-node", "1"]) == 0
    out = capsys.readouterr().out
    assert "makespan, planned: 1.00 h" in out and "lower bound" in out and "gap" in out
    assert main(["plan", str(path), "--results", str(tmp_path), "--nodes", "1"]) == 2
    err = capsys.readouterr().err
    assert "cell pytorch.resnet50.fp32.noxla.b8.2n1g" in err and "--nodes" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("flag", "value"), [("--nodes", "0"), ("--nodes", "-1"), ("--gpus-per-node", "0")]
)
def test_cli_refuses_a_site_size_below_one_naming_the_flag(tmp_path, capsys, flag, value):
    """Review: `--nodes 0` (or -1, or `--gpus-per-node 0`) was taken, then refused as 'a site
    needs at least 1 node and 1 GPU per node, not 0x8', naming neither flag."""
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump({"cases": [
        {"framework": "pytorch", "model": "resnet50", "batch_size": [8], "layouts": ["1n1g"]}
    ]}))  # fmt: skip
    with pytest.raises(SystemExit) as exit_:
        main(["plan", str(path), "--results", str(tmp_path), flag, value])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.endswith(f"error: argument {flag}: '{value}' is not a whole number of at least 1\n")


def test_cli_notes_a_results_folder_without_runs_and_plans_the_same(tmp_path, capsys):
    """`--results` on an empty folder, or one level too deep, silently planned every cell at
    the time limit: a one-line note says no earlier runs were found there (the plan is as it was)."""
    from dlperf.config import load
    from dlperf.launch.allocation import LocalMachine
    from dlperf.plan.plan import machine_site

    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump({"repeats": 2, "time_limit_min": 30, "cases": [
        {"framework": "pytorch", "model": "resnet50", "batch_size": [8], "layouts": ["1n1g"]}
    ]}))  # fmt: skip
    cell = "pytorch.resnet50.fp32.noxla.b8.1n1g"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["plan", str(path), "--results", str(empty)]) == 0
    out, err = capsys.readouterr()
    assert f"note: no earlier runs were found under {empty} (no {empty}/tables/runs.tsv)" in err
    assert "every cell is planned at the time limit" in err and len(err.splitlines()) == 1
    local = LocalMachine.probe("auto")
    site = machine_site(local.devices, local.kind)
    assert out == plan_text(make_plan(load(path), empty, **site)) + "\n"  # the plan is unchanged

    results = tmp_path / "results"
    t0 = 1_700_000_000.0
    write_runs(results, [{"cell_id": cell, "status": "ok", "submitted_at": t0, "noticed_at": t0 + 60, "workload_wall_s": 50}])  # fmt: skip
    for deep in (results / "tables", results / "runs"):
        deep.mkdir(exist_ok=True)
        assert main(["plan", str(path), "--results", str(deep)]) == 0
        err = capsys.readouterr().err
        assert f"note: no earlier runs were found under {deep}" in err
        assert f"did you mean --results {results}?" in err
    assert main(["plan", str(path), "--results", str(results)]) == 0
    out, err = capsys.readouterr()
    assert "note:" not in err and "measured" in out


def test_cli_plans_as_the_workflow_does_on_its_backend(tmp_path, capsys):
    """Review: `dlperf plan` planned a local suite on 1 node x 8 GPUs, shared (the site's
    defaults), while the workflow runs it on this machine one run at a time; and it took no site
    file, as `check` and the Slurm profile do."""
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump({"repeats": 1, "cases": [
        {"framework": "pytorch", "model": "resnet50", "batch_size": [8], "layouts": ["1n1g", "2n8g"]}
    ]}))  # fmt: skip
    site = tmp_path / "site.yaml"
    site.write_text("backend: slurm\nsite: {nodes: 2}\n")
    assert main(["plan", str(path), str(site), "--results", str(tmp_path)]) == 0
    assert "on 2 nodes x 8 GPUs (shared)" in capsys.readouterr().out
    path.write_text(yaml.safe_dump({"repeats": 1, "device": "cpu", "cases": [
        {"framework": "pytorch", "model": "resnet50", "batch_size": [8], "layouts": ["1n1g"]}
    ]}))  # fmt: skip
    assert main(["plan", str(path), "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "(exclusive)" in out and "site: this machine (" in out and "the local backend" in out


def test_the_plan_says_what_it_leaves_out(tmp_path):
    """Review: 52 max searches' probe runs and the runs adaptive repeats may add were in no
    figure of the plan, and nothing said so."""
    from dlperf.config import load

    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump({"repeats": 3, "adaptive_repeats": {"max": 6, "ci_width_pct": 2}, "cases": [
        {"framework": "pytorch", "model": "resnet50", "batch_size": [8, "max"], "layouts": ["1n1g"]}
    ]}))  # fmt: skip
    text = plan_text(make_plan(load(path), tmp_path))
    assert "not planned: the probe runs of 1 max search (each probe a run" in text
    assert (
        "not planned: up to 3 more runs per cell that adaptive repeats may add (6 runs at most)"
        in text
    )


def test_hours_are_written_with_their_digits_under_an_hour():
    """Review: a campaign under 18 s read 'makespan, planned: 0.00 h' in the plan and report."""
    from dlperf.plan.plan import hours

    assert [hours(s) for s in (0, 10, 36, 1800, 5400, 40000)] == [
        "0.00", "0.00278", "0.01", "0.5", "1.50", "11.11",
    ]  # fmt: skip


def test_hours_just_under_one_and_the_layout_tables_hours_keep_their_digits(tmp_path):
    """Review: 3599 s read '1 h' beside '1.00 h'; and the layout table wrote its GPU-hours and
    node-hours with two decimals, so a short campaign's read 0.00 and 0.00 (the fault the
    makespan's digits were fixed for)."""
    from dlperf.plan.plan import hours

    assert [hours(s) for s in (3599, 3598, 3600)] == ["1.00", "0.999", "1.00"]
    t0, cell = 1_700_000_000.0, "pytorch.resnet50.fp32.noxla.b1.1n1g"
    row = {"cell_id": cell, "status": "ok", "submitted_at": t0, "workload_wall_s": 8}
    write_runs(tmp_path, [row | {"noticed_at": t0 + 10}])  # 10 s: 0.00278 h
    text = plan_text(make_plan(suite({1: ["1n1g"]}), tmp_path, nodes=1, exclusive=False))
    header, one, total = text.splitlines()[3:6]
    assert header.split() == [
        "layout",
        "runs",
        "measured",
        "scaled",
        "limit",
        "gpu_hours",
        "node_hours",
    ]
    assert one.split() == ["1n1g", "1", "1", "0", "0", "0.00278", "0.000347"]  # 1/8 of the node
    assert total.split() == ["total", "1", "1", "0", "0", "0.00278", "0.000347"]
    assert len(header) == len(one) == len(total)  # the numbers to the right
