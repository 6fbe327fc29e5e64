"""Upstream adapters held to their scripts at the pinned commits: each flag a command passes is
one the script defines, the launcher hands ranks over the way the script reads them, the steps
run cover what the script logs, and its parser reads the lines that commit prints.

The facts below were read from the upstream files named beside them (their flags, a launcher's
behaviour, a hook's hidden steps); the log lines are hand-made in those formats.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dlperf.adapters import TaskContext, get_adapter
from dlperf.adapters.upstream import UpstreamAdapter
from dlperf.launch.measured import measure_of
from dlperf.matrix import Cell, CellSpec, Layout
from dlperf.measure.stats import Window, run_throughput
from dlperf.parse.upstream import RunFacts
from dlperf.parse.upstream.dllogger import parse_dle_tf1_bert

WINDOW = Window(20, 100)


def context(
    adapter: UpstreamAdapter,
    model: str,
    layout: str,
    run_dir: Path,
    precision: str = "fp32",
    options: dict | None = None,
) -> TaskContext:
    lay = Layout.parse(layout)
    variant = adapter.only_variant.get(model, "default")
    cell = Cell(adapter.name, model, precision, False, 64, lay, variant)
    resolved = adapter.resolved_options({"data_dir": "/data/set", **(options or {})})
    return TaskContext(
        cell=cell,
        options=resolved,
        steps=adapter.steps_for(WINDOW.warmup, WINDOW.measure, resolved, model),
        device="cuda",
        rank=0,
        node_rank=0,
        nodes=lay.nodes,
        gpus_per_node=lay.gpus_per_node,
        master_addr="127.0.0.1",
        master_port=29517,
        run_dir=run_dir,
    )


def script_flags(cmd: list[str], entry: str) -> list[str]:
    """The option names (`--x` of `--x=v` or `--x v`) passed to the script `entry`."""
    start = next(i for i, a in enumerate(cmd) if a.endswith("/" + entry)) + 1
    return [a.split("=", 1)[0] for a in cmd[start:] if a.startswith("--")]


# ----------------------------------------------------------------------- launchers and flags


def test_ngc_pytorch_dlperf_v1_resnet50_reads_its_rank_from_the_environment(tmp_path: Path):
    """ConvNets main.py at DLE 46ff370 has no --local_rank argument (parse_args() stops at the
    one torch.distributed.launch appends) and reads LOCAL_RANK: DLPerf ran it under DLE's
    multiproc.py, which sets the environment only. BERT's run_pretraining.py at 26c2676 takes
    the argument; release current runs both under torchrun."""
    adapter = get_adapter("ngc_pytorch")
    rn50 = adapter.command(context(adapter, "resnet50", "1n8g", tmp_path))
    launcher = rn50[: rn50.index(adapter.script("resnet50", adapter.resolved_options({})))]
    assert launcher[1:4] == ["-m", "torch.distributed.launch", "--use_env"]
    assert "--nproc_per_node=8" in launcher

    bert = adapter.command(context(adapter, "bert_base", "1n8g", tmp_path))
    assert "torch.distributed.launch" in bert and "--use_env" not in bert

    current = adapter.command(
        context(adapter, "resnet50", "1n8g", tmp_path, options={"release": "current"})
    )
    assert "torch.distributed.run" in current and "--use_env" not in current


# train_horovod.py's options at gluon-cv f9a8a28 (scripts/classification/imagenet)
GLUONCV_TRAIN_HOROVOD_FLAGS = set(
    "--use-rec --data-nthreads --rec-train --rec-val --batch-size --dtype --num-epochs --lr "
    "--momentum --wd --warmup-lr --warmup-epochs --last-gamma --mixup --mixup-alpha "
    "--mixup-off-epoch --label-smoothing --no-wd --teacher --temperature --hard-weight --model "
    "--use-pretrained --no-cuda --eval-frequency --log-interval --save-frequency --save-dir "
    "--input-size --crop-ratio --resume-epoch --resume-params --resume-states --dropblock-prob "
    "--use_sk --auto_aug --use_avd".split()
)


@pytest.mark.parametrize("precision", ["fp32", "amp"])
def test_gluoncv_passes_only_flags_train_horovod_defines(tmp_path: Path, precision: str):
    """Its parse_args() stops at any other (`--rec-train-idx` was one: ImageRecordDataset finds
    train.idx beside train.rec itself); an abbreviation (`--mode` of --model) sets nothing."""
    adapter = get_adapter("mxnet_gluoncv")
    cmd = adapter.command(context(adapter, "resnet50", "1n8g", tmp_path, precision))
    flags = script_flags(cmd, "train_horovod.py")
    assert set(flags) <= GLUONCV_TRAIN_HOROVOD_FLAGS, set(flags) - GLUONCV_TRAIN_HOROVOD_FLAGS
    assert "--rec-train=/data/set/train.rec" in cmd and "--model=resnet50_v1b" in cmd


def test_gluonnlp_bert_skips_the_accuracy_as_dlperf_did(tmp_path: Path):
    """DLPerf's MxNet/BERT/pretrain.sh passed --no_compute_acc: run_pretraining.py at gluon-nlp
    7b7bf60 otherwise updates the masked-LM and NSP accuracy metrics every step."""
    adapter = get_adapter("mxnet_gluonnlp")
    cmd = adapter.command(context(adapter, "bert_base", "1n8g", tmp_path, "amp"))
    assert "--no_compute_acc" in script_flags(cmd, "run_pretraining.py")


# ------------------------------------------------------------------- what the scripts log


def tf1_rn50_train_log(path: Path, steps: int, hidden: int) -> Path:
    """DLE fed7ba9 ConvNets `--mode=train`: TrainingLoggingHook logs `(epoch, global_step)
    imgs_per_sec ...` for every step after its first `hidden` ones, 0.45 s a step."""
    lines = ["DLL 2020-09-18 09:00:00.000000 - PARAMETER arch : resnet50  batch_size : 128 "]
    for step in range(hidden, steps):
        t = 60 + step * 0.45
        stamp = f"2020-09-18 09:{int(t // 60):02d}:{t % 60:09.6f}"
        lines.append(
            f"DLL {stamp} - (0, {step + 1}) imgs_per_sec : 284.4  cross_entropy : 6.9  "
            "l2_loss : 0.34  total_loss : 7.2  learning_rate : 0.256"
        )
    path.write_text("\n".join(lines) + "\n")
    return path


def test_ngc_tensorflow_dlperf_v1_resnet50_runs_the_steps_its_hook_hides(tmp_path: Path):
    """The training hook of DLE fed7ba9 (utils/hooks/training_hooks.py, warmup_steps=20, never
    set by runtime/runner.py) logs nothing for 20 steps: the run must go 20 steps further for
    the window, counted from the first logged step, to fit (it ended 10 iterations short: every
    run a parse_error)."""
    adapter = get_adapter("ngc_tensorflow")
    options = adapter.resolved_options({"data_dir": "/data/set"})
    assert adapter.steps_for(20, 100, options, "resnet50") == 150
    assert adapter.steps_for(20, 100, options, "bert_base") == 130
    current = adapter.resolved_options({"data_dir": "/d", "release": "current"})
    assert adapter.steps_for(20, 100, current, "resnet50") == 130  # benchmark hook, warm-up 0

    cell = Cell("ngc_tensorflow", "resnet50", "fp32", False, 128, Layout(1, 1))
    config = {"window": {"warmup": 20, "measure": 100}, "device": "cuda"}
    steps = measure_of(CellSpec(cell, options), config)["steps"]
    assert steps == 150

    log = tf1_rn50_train_log(tmp_path / "node0.log", steps, hidden=20)
    result = adapter.parse([log], cell, options)
    tp = run_throughput(result, WINDOW)
    assert tp.window_first_step == 21 and tp.window_last_step == 120
    assert tp.throughput_samples_per_s == pytest.approx(128 / 0.45, rel=1e-6)


def test_dle_tf1_bert_dlperf_v1_amp_repeats_iteration_one_while_the_scale_settles(
    tmp_path: Path,
):
    """DLE fed7ba9 TF1 BERT with --use_fp16: optimization.py keeps the global step where the
    loss scaler skipped an update (scale from 2**32), and the hook prints at print_step 1 and
    every 10: `Iteration: 1` once per skipped update, each one iteration run. The v1 parser
    stopped at the first repeat ('repeats the previous line's counter')."""
    lines = ["[1,0]<stdout>:INFO:tensorflow:  Batch size = 32"]
    t = 0.0
    counters = [1, 1, 1, 1] + list(range(10, 141, 10))
    previous = None
    for counter in counters:
        covered = 1 if previous in (None, counter) else counter - previous
        t += 0.3 * covered
        previous = counter
        lines.append(
            f"[1,0]<stdout>:DLL 2020-09-19 08:01:{t:09.6f} - Iteration: {counter}  "
            "throughput_train : 853.333 seq/s mlm_loss : 9.00  nsp_loss : 0.69  "
            "total_loss : 9.8  avg_loss_step : 9.9  learning_rate : 5e-05  loss_scaler : 65536 "
        )
    log = tmp_path / "node0.log"
    log.write_text("\n".join(lines) + "\n")
    result = parse_dle_tf1_bert([log], RunFacts(32, 8, 1, 128))
    assert [(r.step, r.steps) for r in result.records[:6]] == [(1, 1)] * 4 + [(10, 9), (20, 10)]
    assert sum(r.steps for r in result.records) == 4 + 9 + 13 * 10  # 3 repeats, counters to 140
    tp = run_throughput(result, Window(10, 100))
    assert tp.throughput_samples_per_s == pytest.approx(32 * 8 / 0.3, rel=1e-6)
