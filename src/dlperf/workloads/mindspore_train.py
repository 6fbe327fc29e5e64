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
from dlperf.workloads.mindspore_networks import build_network

ENVIRONMENT = "envs/mindspore.txt"
PACKAGES = (
    "mindspore",
    "mindcv",
    "mindformers",
)  # what the workload imports, and its config line's versions
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
