"""The PyTorch workload's special cases: Wide & Deep and InsightFace (its classifier split across
the ranks)."""

from __future__ import annotations

import datetime
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import torch
from workflow_helpers import run_ranks

from dlperf import flops
from dlperf.adapters import get_adapter
from dlperf.launch.oom import is_oom
from dlperf.logline import parse_line
from dlperf.workloads import torch_train
from dlperf.workloads.options import command_flags
from dlperf.workloads.torch_models import insightface

if TYPE_CHECKING:
    from conftest import WorkloadRuns

ADAPTER = get_adapter("pytorch")
# ResNet-50's widths with one block per stage: dlperf.flops' formula still describes it
FEW_BLOCKS = '{"depths": [1, 1, 1, 1]}'
QUIET = ["--device", "cpu", "--threads", "1", "--calibrate-s", "0", "--comm-probe-iters", "0"]


def _args(model: str, *flags: str):
    return torch_train.parse_args(["--model", model, "--batch-size", "4", "--steps", "1", *flags])


def _tiny(model: str) -> list[str]:
    """The adapter's tiny configuration of `model` as the workload's flags (a later flag wins)."""
    return command_flags(ADAPTER.resolved_options(ADAPTER.tiny[model]))


def _lines(text: str, kind: str) -> list[dict[str, str]]:
    parsed = (parse_line(line) for line in text.splitlines())
    return [fields for found in parsed if found and found[0] == kind for fields in [found[1]]]


def test_wide_deep_counted_flops_are_the_mlp_formula():
    """FlopCounterMode counts the deep part's layers only (look-ups are no products), 3 x 2 x
    (13 + 26 x width) x h + (layers - 1) x h^2 + h x 1 MACs, exactly."""
    args = _args("wide_deep", *_tiny("wide_deep"), "--deep-embedding-vec-size", "8")
    model, described = torch_train.build_model(args)
    assert described["vocab_size"] == 1000 and described["hidden_units_num"] == 2
    batch = torch_train.synthetic_batch(args, model, torch.device("cpu"))
    assert batch["deep_ids"].shape == (4, 26) and batch["wide_ids"].shape == (4, 2)
    assert int(batch["deep_ids"].max()) < 1000 and set(batch["labels"].tolist()) <= {0.0, 1.0}
    counted = torch_train.counted_flops_per_sample(model, batch)
    assert counted == 6 * ((13 + 26 * 8) * 32 + 32 * 32 + 32)
    assert counted == torch_train.formula_flops_per_sample(args, described)


def test_wide_deep_takes_its_sizes_from_options_not_model_config():
    with pytest.raises(SystemExit, match="hidden_size: Wide & Deep takes no model_config"):
        torch_train.build_model(_args("wide_deep", "--model-config", '{"hidden_size": 8}'))


@pytest.mark.parametrize("rate", ["1.0", "0.5"])
def test_insightface_counted_flops_are_the_formula_less_the_stems_input_gradient(rate):
    """Backbone, fc5 and the (sampled) ArcFace classifier as counted are dlperf.flops' formula,
    but for one product: the images need no gradient, so the stem's backward is its weights'
    alone (the formula's 3 x forward counts it, as ResNet-50's does)."""
    args = _args(
        "insightface", *_tiny("insightface"), "--num-classes", "100", "--sample-rate", rate
    )
    args.model_config = FEW_BLOCKS
    model, described = torch_train.build_model(args)
    assert described["backbone"]["depths"] == [1, 1, 1, 1]
    assert described["sample_rate"] == float(rate)
    batch = torch_train.synthetic_batch(args, model, torch.device("cpu"))
    counted = torch_train.counted_flops_per_sample(model, batch)
    side = flops._conv_out(32, 7, 2, 3)
    stem = 7 * 7 * 3 * 64 * side * side
    assert counted == torch_train.formula_flops_per_sample(args, described) - 2 * stem
    assert math.isnan(
        torch_train.formula_flops_per_sample(args, {"backbone": {"hidden_sizes": [8]}})
    )


def test_partial_fc_samples_the_batchs_classes_and_renumbers_the_labels():
    head = insightface.ArcFace(8, 1000, 0.1)
    own = torch.tensor([5, 999, 5, 500])
    index, renumbered = head.sample(own)
    assert len(index) == 100 and bool((index.diff() > 0).all())
    assert index[renumbered].tolist() == own.tolist()
    # more classes in the batch than the sample holds: all of them, as arcface_torch does
    index, renumbered = insightface.ArcFace(8, 20, 0.1).sample(torch.tensor([3, 1, 4, 1, -1]))
    assert index.tolist() == [1, 3, 4] and renumbered.tolist() == [1, 0, 2, 0, -1]


def test_insightface_sample_rate_outside_zero_to_one_stops_the_run():
    with pytest.raises(SystemExit, match="sample_rate 0.0: expected 0 < sample_rate <= 1"):
        torch_train.build_model(_args("insightface", "--sample-rate", "0"))


def test_classes_split_across_ranks_cover_them_once():
    assert [flops.arcface_shard(101, r, 2) for r in range(2)] == [(0, 51), (51, 101)]
    assert [flops.arcface_shard(10, r, 4) for r in range(4)] == [(0, 3), (3, 6), (6, 8), (8, 10)]


PER_RANK = 4


def _insightface_rank(rank: int, world: int, store: str, results) -> None:
    """One rank of the model-parallel check: a one-rank model first (no process group yet: the
    whole classifier) on all ranks' images, each rank's through the backbone apart (its own
    batch statistics, as on its rank); then this rank's share of the same weights, wrapped as
    the workload wraps it."""
    import torch.distributed as dist

    torch.set_num_threads(1)
    args = _args("insightface", *_tiny("insightface"), "--sample-rate", "1")  # 101 classes
    torch.manual_seed(0)
    whole, _ = torch_train.build_model(args)
    g = torch.Generator().manual_seed(1)
    pixels = torch.randn(world * PER_RANK, 3, 32, 32, generator=g)
    labels = torch.randint(0, 101, (world * PER_RANK,), generator=g)
    features = torch.cat([whole.backbone(images) for images in pixels.chunk(world)])
    expected = whole.head(features, labels)
    expected.backward()

    # a file store, not a port: a free port picked here can be taken by another test's ranks
    # before these bind it (a rank then waited for its peer for ever); a lost peer is an error
    dist.init_process_group(
        "gloo", init_method=f"file://{store}", rank=rank, world_size=world,
        timeout=datetime.timedelta(seconds=120),
    )  # fmt: skip
    try:
        results.put(_sharded_outcome(rank, world, args, whole, expected, pixels, labels))
    finally:
        # the DDP model is gone by now (it was _sharded_outcome's): freed after this, its reducer
        # would tear the process group down once the peer had left, and wait for it for ever
        dist.destroy_process_group()


def _sharded_outcome(rank, world, args, whole, expected, pixels, labels) -> tuple:
    """(rank, loss, one rank's loss, gradients compared, largest relative error) of this rank's
    share of `whole`'s weights, wrapped as the workload wraps it."""
    model, _ = torch_train.build_model(args)
    model.backbone.load_state_dict(whole.backbone.state_dict())
    start, end = flops.arcface_shard(101, rank, world)
    assert model.head.weight.shape == (end - start, 16)
    with torch.no_grad():
        model.head.weight.copy_(whole.head.weight[start:end])
    wrapped = insightface.RECIPE.wrap(model, torch.device("cpu"))
    mine = slice(rank * PER_RANK, (rank + 1) * PER_RANK)
    loss = wrapped(pixel_values=pixels[mine], labels=labels[mine])
    loss.backward()
    backbone = zip(model.backbone.module.parameters(), whole.backbone.parameters(), strict=True)
    grads = [(p.grad, q.grad) for p, q in backbone]
    grads.append((model.head.weight.grad, whole.head.weight.grad[start:end]))
    # fc's bias feeds batch norm, which takes the mean out: its gradient is rounding (1e-6)
    grads = [(ours, one) for ours, one in grads if one.abs().max() > 1e-3]
    errors = [float((ours - one).abs().max() / one.abs().max()) for ours, one in grads]
    return (rank, loss.item(), expected.item(), len(grads), max(errors))


def test_insightface_loss_and_gradients_on_two_ranks_are_one_ranks(tmp_path):
    """Two gloo ranks, 101 classes split 51 + 50: the model-parallel cross entropy gives the loss
    of the same weights on one rank over both ranks' images, and the gradients too (the
    classifier's shard on its rank; the backbone's, summed by DDP over the ranks), to float
    precision."""
    import torch.multiprocessing as mp

    results = mp.get_context("spawn").SimpleQueue()
    store = str(tmp_path / "rendezvous")
    mp.spawn(_insightface_rank, args=(2, store, results), nprocs=2, join=True)
    outcome = sorted(results.get() for _ in range(2))
    for rank, loss, expected, compared, error in outcome:
        assert loss == pytest.approx(expected, rel=1e-6), rank
        assert compared > 20 and error < 1e-5, (rank, compared, error)


@pytest.mark.integration
def test_wide_deep_trains_through_the_cli(workload_runs: WorkloadRuns):
    """The workload contract's run of the tiny configuration (test_workload_contract.py)."""
    run = workload_runs.tiny("pytorch", "wide_deep").check_ok()
    steps = run.lines("step")
    assert [s["step"] for s in steps] == ["1", "2", "3"]
    assert all(math.isfinite(float(s["loss"])) for s in steps)
    (counted,) = run.lines("flops")
    assert float(counted["per_sample"]) == pytest.approx(float(counted["formula"]), rel=1e-5)


@pytest.mark.integration
def test_insightface_trains_on_two_ranks_through_the_cli(workload_runs: WorkloadRuns):
    """The workload as the harness starts it (the workload contract's two-rank run of the tiny
    configuration): DDP on the backbone, the classifier split, every rank in the FLOP count (its
    forward all-gathers)."""
    run = workload_runs.tiny("pytorch", "insightface").check_ok()
    assert len(run.logs) == 2
    losses = [[float(s["loss"]) for s in run.lines("step", rank)] for rank in (0, 1)]
    assert len(losses[0]) == 3 and all(math.isfinite(x) for x in losses[0])
    assert losses[0] == losses[1]  # every rank's loss is the mean over both ranks' images
    assert len(run.lines("flops")) == 1


@pytest.mark.integration
def test_wide_deep_beyond_the_memory_limit_is_an_out_of_memory_failure(
    workload_runs: WorkloadRuns,
):
    """A billion-row vocabulary under --memory-limit-gb (the workload contract's out-of-memory
    run): the tables cannot be allocated, and the harness reads the failure as out of memory."""
    run = workload_runs.oom("pytorch")
    assert run.cell.model == "wide_deep" and run.options["vocab_size"] == 1_000_000_000
    assert run.exit_codes[0] != 0
    assert is_oom(run.text()), run.text()[-2000:]


TINY_GPT = ["--seq-len", "16", "--model-config"]
# no dropout: the ranks draw their random numbers differently (under fsdp every rank runs the
# FLOP count's forward), and the runs are compared step by step
TINY_GPT_CONFIG = (
    '{"n_layer": 2, "n_embd": 32, "n_head": 2, "vocab_size": 128, "n_positions": 32, '
    '"resid_pdrop": 0, "embd_pdrop": 0, "attn_pdrop": 0}'
)


@pytest.mark.integration
@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_gpt_sharded_with_fsdp_trains_as_ddp_does(family: str, tmp_path: Path):
    """Issue 17: sharding fsdp (FSDP2 per decoder block) on two gloo ranks: the same losses, step
    by step, as DDP of the same model on the same data (same init, mean gradients either way);
    every rank joins the FLOP count, whose forward gathers the shards."""
    config = TINY_GPT_CONFIG
    if family == "llama":
        config = (
            '{"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 32, '
            '"intermediate_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, '
            '"vocab_size": 128, "max_position_embeddings": 32}'
        )
    command = [sys.executable, "-m", "dlperf.workloads.torch_train", "--model", "gpt"]
    command += ["--batch-size", "2", "--steps", "3", *QUIET, *TINY_GPT, config]
    losses = {}
    for sharding in ("ddp", "fsdp"):
        folder = tmp_path / sharding
        folder.mkdir()
        logs = run_ranks([*command, "--sharding", sharding], folder)
        texts = [log.read_text() for log in logs]
        losses[sharding] = [[float(s["loss"]) for s in _lines(t, "step")] for t in texts]
        (config_line,) = _lines(texts[0], "config")
        assert config_line["sharding"] == sharding
        assert len(_lines(texts[0], "flops")) == 1
    assert len(losses["fsdp"][0]) == 3
    for ddp, fsdp in zip(losses["ddp"], losses["fsdp"], strict=True):
        assert fsdp == pytest.approx(ddp, rel=1e-4)


def test_fsdp_is_refused_for_a_model_without_it():
    with pytest.raises(Exception, match=r"\.options\.sharding: pytorch trains resnet50 with ddp"):
        get_adapter("pytorch").check_case(
            {"framework": "pytorch", "model": "resnet50", "precision": ["fp32"], "xla": [False],
             "batch_size": [8], "layouts": ["1n2g"], "options": {"sharding": "fsdp"}}
        )  # fmt: skip
