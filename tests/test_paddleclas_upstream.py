"""PaddleClas' own trainer, executed: adapter `paddle` release `package` runs the `paddleclas`
wheel's engine (PaddleClas v2.4.0's ppcls, envs/paddleclas.txt) through the workflow on this CPU,
with the adapter's own command, at tiny size (ResNet-50 on 32-pixel crops of a made-up ImageNet
folder). The trainer's log goes through the release's parser and gives an ok run whose figure is
the window's samples over its wall time, worked out here by hand from the logged meters.

And what running it (and pytorch/examples' main.py, by hand: docs/upstream-releases.md) showed,
each fixed and tested here: Paddle's launcher on a CPU takes --nproc_per_node, not --devices;
PaddleClas' configs say `device: gpu`; v2.4's batch_cost is a running mean (its log, from the CPU
run, is tests/fixtures/logs/paddleclas_v24/workerlog.0); pytorch/examples asks a CPU torch for
NCCL.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml
from test_adapters import context
from test_upstream_releases import CURRENT
from workflow_helpers import ROOT, environment_python, snakemake

from dlperf.adapters import get_adapter
from dlperf.adapters.base import TaskContext
from dlperf.errors import ConfigError
from dlperf.launch.record import RunRecord
from dlperf.matrix import Cell, Layout
from dlperf.measure.stats import Window, run_throughput
from dlperf.parse.upstream import RunFacts
from dlperf.parse.upstream.paddle import parse_paddleclas, parse_paddleclas_v24
from dlperf.upstream_data import paddleclas as paddleclas_data
from dlperf.upstream_data.paddleclas import ImageFolderSpec, lay_out_checkout, make_imagenet_folder

BATCH = 2
WINDOW = {"warmup": 2, "measure": 4}
STEPS = 8  # Paddle's steps_for(2, 4): the window, two more, as whole logging intervals
# paddle.distributed.launch passes its workers' output on every 2 s, so the stop comes up to 2 s
# of iterations late (16 of 0.16 s seen): the epoch is long enough to show that it came at all
EPOCH_STEPS = 8 * STEPS
TINY = "DataLoader.Train.dataset.transform_ops.1.RandCropImage.size=32"
CELL = "paddle.resnet50.fp32.noxla.b2.1n1g"
LINE = re.compile(r"\[Train\]\[Epoch 1/1\]\[Iter: (\d+)/\d+\].*batch_cost: ([\d.]+)s,")


def seconds_by_hand(means: dict[int, float], first: int, last: int) -> float:
    """Seconds of iterations first..last (0-based) from v2.4's running means: the meters restart
    at iteration 5, so the mean at i covers iterations 0..i (i < 5) or 5..i."""

    def total(i: int) -> float:  # seconds of the iterations since the restart, up to i
        return (i + 1) * means[i] if i < 5 else (i - 4) * means[i]

    def before(i: int) -> float:  # the same, up to the iteration before i
        return 0.0 if i in (0, 5) else total(i - 1)

    if first < 5 <= last:
        return total(4) - before(first) + total(last)
    return total(last) - before(first)


@pytest.mark.integration
@pytest.mark.frameworks
def test_paddleclas_trainer_runs_through_the_workflow(tmp_path: Path):
    python = environment_python(ROOT / "envs" / "paddleclas.txt")
    source_root = tmp_path / "src"
    lay_out_checkout(source_root, python)
    data = tmp_path / "data"
    # an epoch of EPOCH_STEPS iterations: v2.4 trains whole epochs, the adapter stops it once
    # iteration STEPS - 1 is logged
    make_imagenet_folder(data, ImageFolderSpec(images=BATCH * EPOCH_STEPS, image_size=40))
    options = {
        "release": "package",
        "source_root": str(source_root),
        "python": python,
        "data_dir": str(data),
        "reader_thread": 0,
        "extra_args": ["-o", TINY],
    }
    suite = {
        "name": "paddleclas",
        "repeats": 1,
        "window": WINDOW,
        "device": "cpu",
        "cases": [
            {"framework": "paddle", "model": "resnet50", "precision": ["fp32"],
             "batch_size": [BATCH], "layouts": ["1n1g"], "options": options}
        ],
    }  # fmt: skip
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    snakemake(tmp_path, "--cores", "2", "--config", "suite=suite.yaml", timeout=300)

    runs = pd.read_csv(tmp_path / "results/tables/runs.tsv", sep="\t").set_index("cell_id")
    assert runs.loc[CELL, "status"] == "ok", runs.loc[CELL, "status_detail"]
    run_dir = tmp_path / "results/runs" / CELL / "r1"
    worker = (run_dir / "paddle_node0" / "workerlog.0").read_text()
    means = {int(i): float(s) for i, s in LINE.findall(worker)}
    assert set(range(STEPS)) <= set(means)  # stopped once iteration STEPS - 1 was logged
    assert len(means) < EPOCH_STEPS  # stopped, not the epoch's end
    # the window: iterations 3..6 in the harness's 1-based count, 2..5 in ppcls' 0-based one
    seconds = seconds_by_hand(means, WINDOW["warmup"], WINDOW["warmup"] + WINDOW["measure"] - 1)
    throughput = runs.loc[CELL, "throughput_samples_per_s"]
    assert throughput == pytest.approx(WINDOW["measure"] * BATCH / seconds, rel=1e-6)

    command = RunRecord.read(run_dir / "manifest.json").tasks[0]["command"]
    script = str(source_root / "PaddleClas" / "tools" / "train.py")
    assert command[1:3] == ["-m", "dlperf.adapters.stop_after"]
    assert command[command.index("--step") + 1] == str(STEPS - 1)
    assert command[command.index("--") + 1 :][:5] == [
        "env", "FLAGS_set_to_1d=1", python, "-m", "paddle.distributed.launch",
    ]  # fmt: skip
    assert "--nproc_per_node=1" in command and not any(a.startswith("--devices") for a in command)
    config = str(source_root / "PaddleClas" / "ppcls/configs/ImageNet/ResNet/ResNet50.yaml")
    assert command[command.index(script) + 1 :][:2] == ["-c", config]
    overrides = [a for a in command[command.index(script) :] if "=" in a]
    assert f"Global.iter_per_epoch={STEPS}" in overrides
    assert f"DataLoader.Train.sampler.batch_size={BATCH}" in overrides
    assert f"DataLoader.Train.dataset.image_root={data}" in overrides
    assert overrides[-2:] == ["Global.device=cpu", TINY]


# ----------------------------------------------------------------------------- the parser

FIXTURE = Path(__file__).parent / "fixtures" / "logs" / "paddleclas_v24" / "workerlog.0"
# batch_cost at iterations 0..7 of the fixture (the CPU run at 224 pixels, batch 2), and the
# seconds of each iteration those running means give (the meters restart at iteration 5)
LOGGED = [2.47360, 2.69289, 3.59098, 4.10714, 4.01141, 5.00162, 6.43397, 6.54026]
BY_HAND = [
    2.47360,
    2 * 2.69289 - 2.47360,
    3 * 3.59098 - 2 * 2.69289,
    4 * 4.10714 - 3 * 3.59098,
    5 * 4.01141 - 4 * 4.10714,
    5.00162,
    2 * 6.43397 - 5.00162,
    3 * 6.54026 - 2 * 6.43397,
]


def test_paddleclas_v24_parser_undoes_the_running_means():
    result = parse_paddleclas_v24([FIXTURE], RunFacts(batch_size_per_device=2, world_size=1))
    assert [r.step for r in result.records] == list(range(8))
    assert [r.duration_s for r in result.records] == pytest.approx(BY_HAND, abs=1e-9)
    tp = run_throughput(result, Window(2, 4))
    assert tp.throughput_samples_per_s == pytest.approx(4 * 2 / sum(BY_HAND[2:6]), rel=1e-12)
    # the logger's whole-second stamps (14:48:12 at iteration 0's line, 14:48:49 at 7's) agree
    # with this reading of iterations 1..7 and not with release/2.5's (batch_cost as is)
    assert abs(sum(BY_HAND[1:]) - 37) < 1
    v25 = parse_paddleclas([FIXTURE], RunFacts(batch_size_per_device=2, world_size=1))
    assert [r.duration_s for r in v25.records] == pytest.approx(LOGGED, abs=1e-9)
    assert abs(sum(LOGGED[1:]) - 37) > 4


def test_paddleclas_v24_parser_times_an_interval_over_the_restart_by_its_later_iterations(
    tmp_path: Path,
):
    """Lines every 3 iterations (print_batch_step 3): 0, 3, 6, 9; the meters restart at 5."""
    log = tmp_path / "workerlog.0"
    means = {0: 1.0, 3: 1.5, 6: 2.0, 9: 2.5}
    log.write_text(
        "".join(
            f"[2026/11/24 10:00:0{k}] ppcls INFO: [Train][Epoch 1/1][Iter: {i}/10]lr(Piecewise"
            f"Decay): 0.10000000, loss: 6.9, batch_cost: {m:.5f}s, reader_cost: 0.00100, ips: "
            f"{2 / m:.5f} samples/s, eta: 0:00:09\n"
            for k, (i, m) in enumerate(means.items())
        )
    )
    result = parse_paddleclas_v24([log], RunFacts(batch_size_per_device=2, world_size=1))
    assert [(r.step, r.steps) for r in result.records] == [(0, 1), (3, 3), (6, 3), (9, 3)]
    seconds = [r.duration_s for r in result.records]
    # 0: 1 s; 1..3: 4 x 1.5 - 1; 4..6: only 5 and 6 are known (2 x 2.0), so 3 x their mean;
    # 7..9: 5 x 2.5 (iterations 5..9) - 2 x 2.0
    assert seconds == pytest.approx([1.0, 5.0, 6.0, 8.5], abs=1e-9)
    assert any("iteration 5" in note for note in result.notes)


# ----------------------------------------------------------------------------- the commands


def cpu(ctx: TaskContext) -> TaskContext:
    return dataclasses.replace(ctx, device="cpu")


def test_paddle_collective_launcher_on_a_cpu_starts_processes_not_devices(tmp_path: Path):
    """paddle.distributed.launch of a CPU build: `--devices=0` is a ValueError (no device
    labels), `--nproc_per_node=N` starts N workers; a GPU run keeps --devices."""
    adapter = get_adapter("paddle")
    options = {"release": "current", "data_dir": "/d"}
    gpu = adapter.command(context(adapter, "resnet50", "1n2g", 0, "fp32", False, tmp_path, options))
    on_cpu = adapter.command(
        cpu(context(adapter, "resnet50", "1n2g", 0, "fp32", False, tmp_path, options))
    )
    assert "--devices=0,1" in gpu and "--nproc_per_node=2" not in gpu
    assert "--nproc_per_node=2" in on_cpu and not any(a.startswith("--devices") for a in on_cpu)
    assert on_cpu[-2:] == ["-o", "Global.device=cpu"]  # the configs say gpu (below)
    assert [a for a in on_cpu[:-2] if a != "--nproc_per_node=2"] == [
        a for a in gpu if a != "--devices=0,1"
    ]


@pytest.mark.parametrize("release", ["current", "package"])
def test_paddleclas_runs_on_the_suites_device(release: str, tmp_path: Path):
    """The configs say `Global.device: gpu`, which a CPU build refuses: a cpu suite overrides it."""
    adapter = get_adapter("paddle")
    options = {"release": release, "data_dir": "/d"}
    ctx = context(adapter, "resnet50", "1n1g", 0, "fp32", False, tmp_path, options)
    assert "Global.device=cpu" not in adapter.command(ctx)
    command = adapter.command(cpu(ctx))
    assert command[command.index("Global.device=cpu") - 1] == "-o"


def test_paddle_package_release(tmp_path: Path):
    adapter = get_adapter("paddle")
    options = adapter.resolved_options({"release": "package", "data_dir": "/d"})
    release = adapter.release(options)
    assert release.environment == "envs/paddleclas.txt"
    assert release.models["resnet50"].tag == "3a28ee29003621ecdb9fd4bb8633a681fb1f8ddf"
    assert adapter.parser_of("resnet50", options) is parse_paddleclas_v24
    assert adapter.script("resnet50", options) == "/workspace/PaddleClas/tools/train.py"
    with pytest.raises(ConfigError, match="has no bert_base benchmark"):
        adapter.check_case(
            {"framework": "paddle", "model": "bert_base", "precision": ["fp32"],
             "batch_size": [2], "layouts": ["1n1g"], "options": {"release": "package"}}
        )  # fmt: skip
    one = Cell("paddle", "resnet50", "fp32", False, 2, Layout(1, 1))
    two = Cell("paddle", "resnet50", "fp32", False, 2, Layout(1, 2))
    assert adapter.skip_reason(one, options) is None
    assert "rank 0 only" in adapter.skip_reason(two, options)
    assert "data_dir" in adapter.skip_reason(one, adapter.resolved_options({"release": "package"}))
    # v2.4 has no iteration limit: stopped once rank 0 logged iteration steps - 1 (0-based)
    ctx = context(adapter, "resnet50", "1n1g", 0, "fp32", False, tmp_path, options)
    command = adapter.command(ctx)
    assert command[1:3] == ["-m", "dlperf.adapters.stop_after"]
    assert command[command.index("--step") + 1] == str(ctx.steps - 1)
    pattern = command[command.index("--pattern") + 1]
    line = FIXTURE.read_text().splitlines()[3]
    assert re.search(pattern, line)["step"] == "0"
    # the rest is release current's command, with FLAGS_set_to_1d (v2.4's `loss.numpy()[0]` of a
    # 0-D tensor is an IndexError in Paddle 2.6 without it)
    current = adapter.command(
        context(adapter, "resnet50", "1n1g", 0, "fp32", False, tmp_path, options | CURRENT)
    )
    assert command[command.index("--") + 1 :] == ["env", "FLAGS_set_to_1d=1", *current]


@pytest.mark.parametrize("layout", ["1n1g", "2n8g"])
def test_pytorch_examples_current_on_a_cpu_uses_gloo(layout: str, tmp_path: Path):
    """main.py at main trains on the CPU where there is no accelerator, but takes --dist-backend
    as given, and a CPU torch has no NCCL; DLPerf v1.0's release keeps its command."""
    adapter = get_adapter("pytorch_examples")
    ctx = context(adapter, "resnet50", layout, 0, "fp32", False, tmp_path, CURRENT)
    gpu, on_cpu = adapter.command(ctx), adapter.command(cpu(ctx))
    assert gpu[gpu.index("--dist-backend") + 1] == "nccl"
    assert on_cpu[on_cpu.index("--dist-backend") + 1] == "gloo"
    assert [a if a != "gloo" else "nccl" for a in on_cpu] == gpu
    v1 = context(adapter, "resnet50", layout, 0, "fp32", False, tmp_path, {"data_dir": "/i"})
    assert adapter.command(cpu(v1)) == adapter.command(v1)


# ----------------------------------------------------------------------------- the data


def test_imagenet_folder_is_what_imagenetdataset_reads_and_the_same_for_a_seed(tmp_path: Path):
    spec = ImageFolderSpec(images=6, classes=4, image_size=8, seed=3)
    listing = make_imagenet_folder(tmp_path / "a", spec)
    make_imagenet_folder(tmp_path / "b", spec)
    lines = listing.read_text().splitlines()
    assert lines[:2] == ["train/n00000000/n00000000_0.JPEG 0", "train/n00000001/n00000001_1.JPEG 1"]
    assert [int(line.split(" ")[1]) for line in lines] == [0, 1, 2, 3, 0, 1]
    for line in lines:
        relative = line.split(" ")[0]
        image = tmp_path / "a" / relative
        assert image.read_bytes()[:2] == b"\xff\xd8"  # a JPEG
        assert image.read_bytes() == (tmp_path / "b" / relative).read_bytes()
    other = make_imagenet_folder(tmp_path / "c", dataclasses.replace(spec, seed=4))
    first = lines[0].split(" ")[0]
    assert (other.parent / first).read_bytes() != (tmp_path / "a" / first).read_bytes()


def test_checkout_is_laid_out_from_the_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    package = tmp_path / "site" / "paddleclas"
    for folder in ("engine", "utils"):
        (package / "ppcls" / folder).mkdir(parents=True)
    (package / "ppcls" / "__init__.py").write_text("")
    monkeypatch.setattr(paddleclas_data, "package_dir", lambda python: package)
    checkout = lay_out_checkout(tmp_path / "src", "python3")
    assert checkout == tmp_path / "src" / "PaddleClas"
    assert (checkout / "ppcls" / "engine").resolve() == (package / "ppcls" / "engine").resolve()
    assert (checkout / "ppcls" / "__init__.py").is_symlink()
    config = yaml.safe_load((checkout / paddleclas_data.RESNET50_CONFIG).read_text())
    assert config["Arch"] == {"name": "ResNet50", "class_num": 1000}
    assert "AMP" not in config  # v2.4's engine turns AMP on for any AMP section
    train = config["DataLoader"]["Train"]
    assert train["dataset"]["transform_ops"][1] == {"RandCropImage": {"size": 224}}
    assert (checkout / "tools" / "train.py").read_text().count("Engine(config") == 1
