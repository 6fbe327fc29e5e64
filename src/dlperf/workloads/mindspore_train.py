"""Built-in MindSpore workload: ResNet-50 v1.5 (MindCV), BERT-base pretraining or GPT (MindFormers).

The models are MindSpore's own model libraries' Cells, built from configs without any download:
MindCV's `resnet50` (`mindcv.models.create_model("resnet50", pretrained=False)`: the stride of a
bottleneck sits in its 3x3 convolution, ResNet-50 v1.5) with softmax cross-entropy, and
MindFormers' `BertForPreTraining` (`mindformers.models.bert`, the model_zoo BERT of MindSpore's
DLPerf runs: masked-LM head tied to the word embedding, next-sentence head, `BertLoss`), whose
`BertConfig` defaults are BERT-base. MindNLP's BERT does not run on any MindSpore with a Python
3.11 wheel (see docs/frameworks.md), hence MindFormers.

`gpt` is MindFormers' decoder-only LM with its own next-token loss: `GPT2LMHeadModel` (GPT-2 small
by default, LM head tied to the word embedding) or, with model_config {"model_type": "llama", ...},
`LlamaForCausalLM` (Llama-7B shapes, transformers' LlamaConfig defaults). model_config takes
transformers' names, as the pytorch workload's, translated to MindFormers'. Both models take
seq_len + 1 tokens in training: the first seq_len the input, the last seq_len the labels. Three
settings make MindFormers 1.3.2's Llama train outside Ascend: the unfused RMSNorm
(fused_rms_norm=False: "The kernel RmsNorm unregistered" on CPU), the sliced rotate-half of its
rotary embedding (use_rope_slice=True: the default multiplies by a swap matrix whose BatchMatMul
"inputs shape cannot be broadcast on CPU/GPU"), and the Cast its RotaryEmbedding.construct calls
but never creates ("The 'RotaryEmbedding' object has no attribute 'cast'", every training step),
given to each of them here.

The training step is one `nn.TrainOneStepCell` (forward, GradOperation, gradient all-reduce,
optimizer); BERT clips the global gradient norm inside it. The `xla` column is MindSpore's
execution mode: GRAPH_MODE (--graph-mode) compiles that whole cell into one graph, PYNATIVE_MODE
dispatches it operator by operator from Python.

amp: float16 with a static loss scale (MindSpore's FixedLossScaleManager, 1024), on CPU and GPU
alike: `mindspore.amp.auto_mixed_precision(..., "O2")` on ResNet (BatchNorm stays float32), and
MindFormers' own `compute_dtype` on BERT and GPT (their Dense layers in float16, LayerNorm and
softmax in float32, the weights float32). Not bfloat16: MindSpore's CPU Conv2D has no bfloat16
kernel ("Select CPU operator[Conv2D] fail! Unsupported data type"), and MindFormers' BertConfig
knows only float16 and float32.

Data parallel: one process per device over MindSpore's dynamic cluster. Rank 0 starts the
scheduler (MS_ROLE=MS_SCHED at MASTER_ADDR:MASTER_PORT) as its child; every rank is a worker
(MS_ROLE=MS_WORKER, MS_NODE_ID=RANK) and calls `init()`: MCCL on CPU, NCCL on GPU. The parallel
mode DATA_PARALLEL gives TrainOneStepCell its DistributedGradReducer (mean of the gradients).

Runs in its own environment (envs/mindspore.txt); imports nothing of dlperf but the line writer.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

from dlperf import logline
from dlperf.flops import BertShape, DecoderShape
from dlperf.workloads.common import (
    fp32_math,
    log,
    log_measured_peak,
    log_memory,
    log_stated_flops,
    require_modules,
    start_rank,
    train_steps,
    workload_parser,
)

ENVIRONMENT = "envs/mindspore.txt"
PACKAGES = (
    "mindspore",
    "mindcv",
    "mindformers",
)  # what the workload imports, and its config line's versions
# MindFormers' BertConfig takes transformers' names; these define the network (the rest of it is
# about parallelism, checkpoints and inference). Its own default max_position_embeddings is 128:
# BERT-base's 512 is set unless the model_config says otherwise.
BERT_ARCHITECTURE = (
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
    "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob",
    "max_position_embeddings", "type_vocab_size", "initializer_range", "post_layernorm_residual",
    "use_relative_positions", "seq_length", "batch_size",
)  # fmt: skip
BERT_BASE_POSITIONS = 512
# GPT: transformers' GPT2Config names (its own and its attribute_map's, what the pytorch workload's
# model_config takes) -> MindFormers' GPT2Config; the feed-forward width is its expand_ratio.
GPT2_NAMES = {
    "vocab_size": "vocab_size", "n_layer": "num_layers", "num_hidden_layers": "num_layers",
    "n_head": "num_heads", "num_attention_heads": "num_heads", "n_embd": "hidden_size",
    "hidden_size": "hidden_size", "n_inner": "intermediate_size",
    "intermediate_size": "intermediate_size", "n_positions": "max_position_embeddings",
    "max_position_embeddings": "max_position_embeddings", "embd_pdrop": "embedding_dropout_prob",
    "resid_pdrop": "hidden_dropout_rate", "attn_pdrop": "attention_dropout_rate",
}  # fmt: skip
# GPT-2 small: GPT2Config's defaults but its positions, which it sizes to seq_length
GPT2_SMALL: dict[str, Any] = {
    "vocab_size": 50257, "num_layers": 12, "num_heads": 12, "hidden_size": 768,
    "intermediate_size": None, "max_position_embeddings": 1024, "embedding_dropout_prob": 0.1,
    "hidden_dropout_rate": 0.1, "attention_dropout_rate": 0.1,
}  # fmt: skip
# transformers' LlamaConfig names -> MindFormers' LlamaConfig
LLAMA_NAMES = {
    "vocab_size": "vocab_size", "hidden_size": "hidden_size",
    "intermediate_size": "intermediate_size", "num_hidden_layers": "num_layers",
    "num_attention_heads": "num_heads", "num_key_value_heads": "n_kv_heads",
    "max_position_embeddings": "max_position_embedding", "rms_norm_eps": "rms_norm_eps",
    "rope_theta": "theta", "tie_word_embeddings": "tie_word_embeddings",
}  # fmt: skip
# transformers' LlamaConfig defaults (Llama-7B), as the pytorch workload builds them; MindFormers'
# own differ (rms_norm_eps 1e-5, positions sized to seq_length, float16 weights)
LLAMA: dict[str, Any] = {
    "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008, "num_layers": 32,
    "num_heads": 32, "n_kv_heads": None, "max_position_embedding": 2048, "rms_norm_eps": 1e-6,
    "theta": 10000.0, "tie_word_embeddings": False,
}  # fmt: skip
GPT_FAMILIES = {"gpt2": (GPT2_NAMES, GPT2_SMALL), "llama": (LLAMA_NAMES, LLAMA)}
AMP_LOSS_SCALE = 1024.0  # float16: a static loss scale (MindSpore's FixedLossScaleManager)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = workload_parser(
        __doc__.splitlines()[0],
        precision_help="amp: float16 with a static loss scale (O2 on ResNet, compute_dtype on "
        "BERT and GPT)",
        model_config_help="JSON overrides of the model: for bert_base MindFormers' BertConfig, for "
        "gpt GPT2Config or (model_type llama) LlamaConfig (transformers' names, e.g. "
        "num_hidden_layers), for resnet50 none",
    )
    p.add_argument(
        "--graph-mode", action="store_true", help="GRAPH_MODE, one compiled step (the xla column)"
    )
    return p.parse_args(argv)


def scheduler_env(world: int) -> dict[str, str]:
    """MindSpore's dynamic cluster of `world` workers whose scheduler listens at
    MASTER_ADDR:MASTER_PORT."""
    return {
        "MS_SCHED_HOST": os.environ.get("MASTER_ADDR", "127.0.0.1"),
        "MS_SCHED_PORT": os.environ.get("MASTER_PORT", "29500"),
        "MS_WORKER_NUM": str(world),
    }


# The scheduler: init() with MS_ROLE=MS_SCHED serves the workers' rendezvous and returns once
# every worker has unregistered, which a worker does only as its process ends (MindSpore's C++
# teardown; release() does not). So rank 0 never waits for it: the scheduler outlives its parent
# by a moment, and a watchdog ends it if it has not exited 60 s after rank 0 is gone.
SCHEDULER = """
import os, threading, time
parent = os.getppid()
def orphaned():
    while os.getppid() == parent:
        time.sleep(1)
    time.sleep(60)
    os._exit(0)
threading.Thread(target=orphaned, daemon=True).start()
from mindspore.communication import init
init()
"""


def start_scheduler(cluster_env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", SCHEDULER],
        env={**os.environ, **cluster_env, "MS_ROLE": "MS_SCHED", "OMP_NUM_THREADS": "1"},
        stdout=subprocess.DEVNULL,
    )


def model_config_problem(model: str, overrides: dict[str, Any]) -> str | None:
    """Why `overrides` is no model_config of `model` (None: its keys are known). Pure: the adapter
    checks a suite with it before anything runs."""
    if model == "resnet50":
        return f"resnet50 takes no model_config keys: {sorted(overrides)}" if overrides else None
    family = overrides.get("model_type", "gpt2") if model == "gpt" else None
    if family is not None and family not in GPT_FAMILIES:
        return f"gpt model_config.model_type: {family!r}: expected one of {', '.join(GPT_FAMILIES)}"
    names = {*GPT_FAMILIES[family][0], "model_type"} if family else set(BERT_ARCHITECTURE)
    owner = {None: "BertConfig", "gpt2": "GPT2Config", "llama": "LlamaConfig"}[family]
    unknown = sorted(set(overrides) - names)
    if not unknown:
        return None
    return (
        f"unknown {model}{f' ({family})' if family else ''} model_config key {unknown[0]!r} "
        f"(known: {', '.join(sorted(names))}; transformers' {owner} names)"
    )


def bert_config(overrides: dict[str, Any], args: argparse.Namespace, compute: str) -> Any:
    from mindformers.models.bert import BertConfig

    settings = {"max_position_embeddings": BERT_BASE_POSITIONS} | overrides
    return BertConfig(
        **settings,
        batch_size=args.batch_size,
        seq_length=args.seq_len,
        compute_dtype=compute,
        checkpoint_name_or_path="",  # built from the config: never a download
    )


def gpt_settings(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The family (gpt2 or llama) and MindFormers' config arguments of its sizes: the defaults with
    model_config's overrides, every key checked (model_config_problem, as dlperf check does)."""
    given = json.loads(args.model_config)
    if problem := model_config_problem("gpt", given):
        raise SystemExit(f"dlperf: {problem}")
    family = given.get("model_type", "gpt2")
    names, defaults = GPT_FAMILIES[family]
    settings = defaults | {names[k]: v for k, v in given.items() if k != "model_type"}
    if family == "gpt2":  # GPT2Config's feed-forward: expand_ratio x hidden_size
        h, inner = settings["hidden_size"], settings.pop("intermediate_size")
        if inner is not None and inner % h:
            raise SystemExit(
                f"dlperf: gpt model_config: intermediate_size {inner} is not a multiple of "
                f"hidden_size {h}: MindFormers' GPT2Config sets it as expand_ratio x hidden_size"
            )
        settings["expand_ratio"] = inner // h if inner else 4
    positions = settings[
        "max_position_embeddings" if family == "gpt2" else "max_position_embedding"
    ]
    if args.seq_len > positions:
        raise SystemExit(f"dlperf: seq_len {args.seq_len} > the model's positions {positions}")
    return family, settings


def gpt_network(args: argparse.Namespace, ms: Any, compute: str) -> tuple[Any, dict[str, Any]]:
    """MindFormers' GPT-2 or Llama causal LM (its loss the next-token cross entropy), its config."""
    family, settings = gpt_settings(args)
    common = {
        "seq_length": args.seq_len, "batch_size": args.batch_size, "compute_dtype": compute,
        "param_init_type": "float32", "checkpoint_name_or_path": "",  # never a download
    }  # fmt: skip
    if family == "gpt2":
        from mindformers.models.gpt2 import GPT2Config, GPT2LMHeadModel

        config = GPT2Config(**settings, **common)
        network = GPT2LMHeadModel(config)
    else:
        from mindformers.models.llama import LlamaConfig, LlamaForCausalLM
        from mindformers.modules.layers import RotaryEmbedding

        config = LlamaConfig(**settings, **common, fused_rms_norm=False, use_rope_slice=True)
        network = LlamaForCausalLM(config)
        for _, cell in network.cells_and_names():  # the Cast its construct calls (docstring)
            if isinstance(cell, RotaryEmbedding) and not hasattr(cell, "cast"):
                cell.cast = ms.ops.Cast()
    exact = {k: getattr(config, k) for k in [*settings, "seq_length"]}
    exact["compute_dtype"] = str(config.compute_dtype)
    if family == "llama":
        exact |= {"fused_rms_norm": False, "use_rope_slice": True}
    return network, exact | {"model_type": family}


def build_network(args: argparse.Namespace, ms: Any, amp: bool) -> tuple[Any, dict[str, Any]]:
    """(the network with its loss: a Cell of the batch's tensors, the exact model config)."""
    from mindspore import nn

    if args.model == "gpt":
        return gpt_network(args, ms, "float16" if amp else "float32")
    overrides = json.loads(args.model_config)
    if problem := model_config_problem(args.model, overrides):
        raise SystemExit(f"dlperf: {problem}")
    if args.model == "resnet50":
        from mindcv.models import create_model

        backbone = create_model("resnet50", num_classes=args.num_classes, pretrained=False)
        if amp:
            backbone = ms.amp.auto_mixed_precision(backbone, "O2", dtype=ms.float16)
        loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        config = {"arch": "mindcv.models.resnet50", "num_classes": args.num_classes}
        return nn.WithLossCell(backbone, loss), config
    from mindformers.models.bert import BertForPreTraining

    config = bert_config(overrides, args, "float16" if amp else "float32")
    network = BertForPreTraining(config)
    exact = {k: getattr(config, k) for k in BERT_ARCHITECTURE}
    exact["compute_dtype"] = str(config.compute_dtype)
    return network, exact | {"model_type": "bert"}


def train_step_cell(nn: Any, ops: Any, network: Any, optimizer: Any, clip: float, scale: float):
    """TrainOneStepCell with a static loss scale (undone before the update) and global-norm
    clipping of the summed gradients."""

    class TrainStep(nn.TrainOneStepCell):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__(network, optimizer, sens=scale)
            self.clip, self.scale = clip, scale

        def construct(self, *inputs: Any) -> Any:
            loss = self.network(*inputs)
            sens = ops.fill(loss.dtype, loss.shape, self.sens)
            grads = self.grad(self.network, self.weights)(*inputs, sens)
            grads = self.grad_reducer(grads)
            if self.scale != 1.0:
                grads = tuple(g / self.scale for g in grads)
            if self.clip > 0:
                grads = ops.clip_by_global_norm(grads, self.clip)
            return ops.depend(loss, self.optimizer(grads))

    return TrainStep()


def synthetic_batch(
    args: argparse.Namespace, config: dict[str, Any], rank: int, ms: Any
) -> list[Any]:
    """One fixed batch of this rank (Tensors); the same batch is fed every step."""
    import numpy as np

    rng = np.random.default_rng(1234 + rank)
    b, vocab = args.batch_size, config.get("vocab_size", 0)
    if args.model == "resnet50":
        pixels = rng.standard_normal((b, 3, args.image_size, args.image_size), dtype=np.float32)
        labels = rng.integers(0, args.num_classes, (b,)).astype(np.int32)
        return [ms.Tensor(pixels), ms.Tensor(labels)]
    if args.model == "gpt":
        # seq_len + 1 tokens, never 0: Llama's pad_token_id, which its loss leaves out
        tokens = rng.integers(1, vocab, (b, args.seq_len + 1)).astype(np.int32)
        if config["model_type"] == "llama":
            return [ms.Tensor(tokens)]
        # GPT-2's attention and loss mask: everything (by default every token but its eos id)
        return [ms.Tensor(tokens), ms.Tensor(np.ones_like(tokens))]
    s, k = args.seq_len, min(args.max_predictions, args.seq_len)
    input_ids = rng.integers(0, vocab, (b, s)).astype(np.int32)
    positions = np.sort(np.argsort(rng.random((b, s)), axis=1)[:, :k], axis=1).astype(np.int32)
    return [
        ms.Tensor(input_ids),
        ms.Tensor(np.ones((b, s), np.int32)),  # input mask: everything attended
        ms.Tensor(np.broadcast_to(np.arange(s) >= s // 2, (b, s)).astype(np.int32)),
        ms.Tensor(rng.integers(0, 2, (b, 1)).astype(np.int32)),  # next-sentence labels
        ms.Tensor(positions),
        ms.Tensor(np.take_along_axis(input_ids, positions, axis=1)),  # masked-LM labels
        ms.Tensor(np.ones((b, k), np.float32)),  # masked-LM weights
    ]


def math_of(args: argparse.Namespace, ms: Any, on_gpu: bool, products: str = "model") -> str:
    """What the model's products (`products="matmul"`: a MatMul's) run in. MindSpore lets cuDNN
    convolutions use TF32 by default (context conv_allow_tf32), cuBLAS not (matmul_allow_tf32)."""
    if args.precision == "amp" or not on_gpu:
        return "fp16" if args.precision == "amp" else "fp32"
    convs = args.model == "resnet50" and products == "model"
    tf32 = ms.get_context("conv_allow_tf32" if convs else "matmul_allow_tf32")
    return fp32_math(tuple(ms.hal.get_device_capability(ms.get_context("device_id"))), tf32)


def versions() -> dict[str, str]:
    return {m: importlib.metadata.version(m) for m in PACKAGES}


def train(args: argparse.Namespace, rank: int, world: int) -> None:
    import mindspore as ms
    from mindspore import nn, ops

    on_gpu = args.device == "cuda"
    ms.set_context(mode=ms.GRAPH_MODE if args.graph_mode else ms.PYNATIVE_MODE)
    ms.set_device("GPU" if on_gpu else "CPU")
    if world > 1:
        from mindspore.communication import init

        init()  # MCCL on CPU, NCCL on GPU
        ms.set_auto_parallel_context(
            parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True, device_num=world
        )
    ms.set_seed(0)
    use_amp = args.precision == "amp"
    network, config = build_network(args, ms, use_amp)
    if args.model == "resnet50":
        optimizer = nn.Momentum(
            network.trainable_params(), learning_rate=0.1, momentum=0.9, weight_decay=5e-5
        )
        clip = 0.0
    else:
        optimizer = nn.AdamWeightDecay(
            network.trainable_params(), learning_rate=1e-4, weight_decay=0.01
        )
        clip = args.clip_grad_norm
    scale = AMP_LOSS_SCALE if use_amp else 1.0
    step_cell = train_step_cell(nn, ops, network, optimizer, clip, scale)
    step_cell.set_train()
    batch = synthetic_batch(args, config, rank, ms)
    if rank == 0:
        log(
            "config",
            model=args.model,
            params=sum(int(p.size) for p in network.trainable_params()),
            device="cuda" if on_gpu else "cpu",
            amp_dtype="float16" if use_amp else "none",
            loss_scale=scale,
            world_size=world,
            mode="GRAPH_MODE" if args.graph_mode else "PYNATIVE_MODE",
            threads=os.environ["OMP_NUM_THREADS"],
            **versions(),
            model_config=json.dumps(config, sort_keys=True, separators=(",", ":")),
        )
        math = math_of(args, ms, on_gpu)
        if args.model == "gpt":
            log_stated_flops(rank, args, math, decoder=DecoderShape.from_config(config))
        else:  # MindFormers' MLM head: masked positions only
            shape = BertShape.from_config(config) if args.model == "bert_base" else None
            log_stated_flops(rank, args, math, shape)
        dtype = ms.float16 if use_amp else ms.float32

        def matmul_of(n: int) -> Any:
            a, b = (ms.Tensor(ms.numpy.randn(n, n), dtype) for _ in range(2))
            return lambda: ops.matmul(a, b)

        gpu = logline.UNNAMED_GPU if on_gpu else "none"
        if math_of(args, ms, on_gpu, "matmul") == math:  # else it would time another precision
            log_measured_peak(rank, args, math, matmul_of, ms.runtime.synchronize, gpu)
    train_steps(
        rank,
        args,
        int(os.environ.get("LOCAL_RANK", 0)) if on_gpu else None,
        lambda: step_cell(*batch).asnumpy().item(),  # asnumpy waits for the device
    )
    log_memory(rank)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rank, world, local_rank, local_world = start_rank(args)
    require_modules("mindspore", PACKAGES, ENVIRONMENT)
    threads = args.threads or max(1, (os.cpu_count() or 1) // local_world)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ.setdefault("GLOG_v", "3")  # MindSpore's C++ log: errors only
    # MindFormers writes its own log files under ./output/log of the working directory (the
    # repository's root in a workflow run): keep them out of it
    outside = os.path.join(tempfile.gettempdir(), f"dlperf-mindformers-{os.getuid()}")
    os.environ.setdefault("LOCAL_DEFAULT_PATH", outside)
    os.environ.setdefault("LOG_MF_PATH", os.path.join(outside, "log"))
    scheduler = None
    if world > 1:
        cluster_env = scheduler_env(world)
        if rank == 0:
            scheduler = start_scheduler(cluster_env)
        os.environ.update(cluster_env, MS_ROLE="MS_WORKER", MS_NODE_ID=str(rank))
    if args.device == "cuda":
        os.environ.setdefault("CUDA_VISIBLE_DEVICES", str(local_rank))
    try:
        train(args, rank, world)
    except BaseException:
        if scheduler:  # the run is lost: no waiting for peers
            scheduler.kill()
        raise
    return 0  # the scheduler exits once this worker has unregistered, as this process ends


if __name__ == "__main__":
    sys.exit(main())
