"""Built-in MXNet workload: ResNet-50 v1b (v1.5) or BERT-base pretraining on synthetic data, Gluon.

The models are the model libraries' own Gluon blocks, built from hyperparameters without any
download: GluonCV's `ResNetV1b(BottleneckV1b, [3, 4, 6, 3])`, what `gluoncv.model_zoo.resnet50_v1b`
builds (the stride sits in the 3x3 convolution: ResNet-50 v1.5), and GluonNLP's `BERTModel` over a
`BERTEncoder` with the hyperparameters of `bert_12_768_12` (`gluonnlp.model.bert.bert_hparams`),
as `get_bert_model` builds it, with its masked-LM decoder (tied to the word embedding) and its
next-sentence classifier. The training step is Gluon's: `autograd.record`, `backward`,
`Trainer.step`; BERT clips the global gradient norm (`gluonnlp.utils.clip_grad_global_norm`).

The xla column: `HybridBlock.hybridize(static_alloc=True, static_shape=True)` turns the imperative
model into one static graph run by a CachedOp (--hybridize); without it every operator is
dispatched from Python.

amp: `mxnet.contrib.amp` with float16 and dynamic loss scaling on GPU, bfloat16 on CPU (oneDNN).
MXNet 1.9's bf16 lists leave BERT's fused attention operators unlisted, so they would get a bf16
and a float32 input and fail; they are added to the float32 list here.

Data parallel: one process per device, gradients summed through a `dist_sync` KVStore (ps-lite).
Rank 0 starts the ps-lite scheduler and one server as its children at MASTER_ADDR:MASTER_PORT;
every rank is a worker. Initial weights are broadcast from worker 0 under their own keys, and
the gradients are all-reduced under others (`KVStore.pushpull`) before the local update: Gluon's
Trainer, given the KVStore itself, broadcasts the weights and all-reduces the gradients under the
same keys, and a worker's pull of the initial weights can then return a peer's summed gradients.
BatchNorm's moving statistics stay per rank.

Every rank prints one line per step, in the format of dlperf.parse.builtin:

    dlperf-step rank=0 step=12 samples=32 start=1763780000.123456 end=1763780000.234567 loss=6.9

On GPU no `peak_allocated_mb` is logged: MXNet 1.9 exposes no peak of its memory pool.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import subprocess
import sys
from typing import Any

from dlperf import logline
from dlperf.flops import BertShape
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

ENVIRONMENT = "envs/mxnet.txt"
PACKAGES = (
    "mxnet",
    "gluoncv",
    "gluonnlp",
)  # what the workload imports, and its config line's versions
# transformers' BertConfig names (what every built-in adapter's model_config takes) -> GluonNLP's
# bert_hparams keys. GluonNLP's own `hidden_size` is the feed-forward width, so its names are not
# accepted as well: {"hidden_size": 256} must mean one thing.
BERT_NAMES = {
    "vocab_size": "vocab_size",
    "num_hidden_layers": "num_layers",
    "hidden_size": "units",
    "num_attention_heads": "num_heads",
    "intermediate_size": "hidden_size",
    "max_position_embeddings": "max_length",
    "type_vocab_size": "token_type_vocab_size",
    "hidden_dropout_prob": "dropout",
}
BERT_BASE_VOCAB = 30522  # the uncased English WordPiece vocabulary of BERT-base
RESNET50_DEPTHS = [3, 4, 6, 3]
# Operators of GluonNLP's BERT that MXNet 1.9's AMP lists leave out; run in float32.
AMP_FP32_EXTRA = [
    "_contrib_interleaved_matmul_selfatt_qk",
    "_contrib_interleaved_matmul_selfatt_valatt",
]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = workload_parser(
        __doc__.splitlines()[0],
        precision_help="amp: mxnet.contrib.amp, float16 with loss scaling on GPU, bfloat16 on CPU",
        model_config_help="JSON overrides of the model: for bert_base the transformers config "
        "names the pytorch adapter takes (e.g. num_hidden_layers), for resnet50 depths",
    )
    p.add_argument("--hybridize", action="store_true", help="static graph (the xla=on column)")
    return p.parse_args(argv)


def model_config_problem(model: str, overrides: dict[str, Any]) -> str | None:
    """Why `overrides` is no model_config of `model` (None: it is one). Pure, so the adapter
    checks a suite with it before anything runs (dlperf.adapters.mxnet_builtin)."""
    if model == "resnet50":
        unknown = sorted(set(overrides) - {"depths"})
        if unknown:
            return f"unknown resnet50 model_config key {unknown[0]!r} (known: depths)"
        depths = overrides.get("depths", RESNET50_DEPTHS)
        if not (isinstance(depths, list) and len(depths) == 4):
            return f"resnet50 model_config depths must be 4 numbers: {depths!r}"
        return None
    unknown = [key for key in overrides if key not in BERT_NAMES]
    if unknown:
        return (
            f"unknown bert_base model_config key {unknown[0]!r} (known: "
            f"{', '.join(sorted(BERT_NAMES))}; transformers' BertConfig names)"
        )
    return None


def model_config(
    model: str, overrides: dict[str, Any], bert_base: dict[str, Any]
) -> dict[str, Any]:
    """The model's exact hyperparameters: ResNet {depths}, or GluonNLP's bert_hparams names (plus
    vocab_size) with the overrides applied; `bert_base` is GluonNLP's bert_12_768_12 table."""
    problem = model_config_problem(model, overrides)
    if problem:
        raise SystemExit(f"dlperf: {problem}")
    if model == "resnet50":
        return {"depths": overrides.get("depths", RESNET50_DEPTHS)}
    config = dict(bert_base, vocab_size=BERT_BASE_VOCAB)
    for key, value in overrides.items():
        config[BERT_NAMES[key]] = value
    config["embed_size"] = config["units"]  # BERT's embeddings are as wide as its layers
    return config


def parameter_server_env(world: int) -> dict[str, str]:
    """ps-lite's environment for a dist_sync KVStore of `world` workers and one server, whose
    scheduler listens at MASTER_ADDR:MASTER_PORT."""
    return {
        "DMLC_PS_ROOT_URI": os.environ.get("MASTER_ADDR", "127.0.0.1"),
        "DMLC_PS_ROOT_PORT": os.environ.get("MASTER_PORT", "29500"),
        "DMLC_NUM_SERVER": "1",
        "DMLC_NUM_WORKER": str(world),
    }


def start_parameter_server(ps_env: dict[str, str]) -> list[subprocess.Popen[bytes]]:
    """The ps-lite scheduler and server: importing mxnet with DMLC_ROLE set to either runs its
    loop (mxnet.kvstore.kvstore_server), until every worker has finalized."""
    return [
        subprocess.Popen(
            [sys.executable, "-c", "import mxnet"],
            env={**os.environ, **ps_env, "DMLC_ROLE": role, "OMP_NUM_THREADS": "1"},
        )
        for role in ("scheduler", "server")
    ]


def stop_parameter_server(children: list[subprocess.Popen[bytes]], timeout_s: float) -> None:
    for child in children:
        try:
            child.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def pick_context(mx: Any, choice: str, local_rank: int) -> Any:
    gpus = mx.context.num_gpus()
    if choice == "cuda" and gpus == 0:
        raise SystemExit(
            f"dlperf: --device cuda but MXNet sees no GPU (this build: mxnet "
            f"{mx.__version__}; a GPU site installs mxnet-cu117, see {ENVIRONMENT})"
        )
    if choice == "cuda" or (choice == "auto" and gpus > 0):
        return mx.gpu(local_rank % gpus)
    return mx.cpu()


def _cpu_flags() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return f.read()
    except OSError:
        return ""


def init_amp(dtype: str) -> None:
    """Patch MXNet's operators for mixed precision (before the model is built, as AMP requires)."""
    from mxnet.contrib import amp
    from mxnet.contrib.amp.lists import symbol_bf16, symbol_fp16

    lists = symbol_bf16 if dtype == "bfloat16" else symbol_fp16
    amp.init(target_dtype=dtype, fp32_ops=[*lists.FP32_FUNCS, *AMP_FP32_EXTRA])


def build_model(args: argparse.Namespace, config: dict[str, Any]) -> Any:
    if args.model == "resnet50":
        from gluoncv.model_zoo.resnetv1b import BottleneckV1b, ResNetV1b

        # what gluoncv.model_zoo.resnet50_v1b builds, with the depths of the config
        return ResNetV1b(
            BottleneckV1b, config["depths"], classes=args.num_classes, name_prefix="resnetv1b_"
        )
    from gluonnlp.model.bert import BERTEncoder, BERTModel

    encoder = BERTEncoder(
        num_layers=config["num_layers"],
        units=config["units"],
        hidden_size=config["hidden_size"],
        max_length=config["max_length"],
        num_heads=config["num_heads"],
        dropout=config["dropout"],
    )
    return BERTModel(
        encoder,
        config["vocab_size"],
        token_type_vocab_size=config["token_type_vocab_size"],
        units=config["units"],
        embed_size=config["embed_size"],
        word_embed=config["word_embed"],
        use_pooler=True,
        use_decoder=True,
        use_classifier=True,
    )


def synthetic_batch(args: argparse.Namespace, config: dict[str, Any], rank: int) -> dict[str, Any]:
    """One fixed batch of this rank (numpy, host); the same arrays are fed every step."""
    import numpy as np

    rng = np.random.default_rng(1234 + rank)
    b = args.batch_size
    if args.model == "resnet50":
        return {
            "pixels": rng.standard_normal((b, 3, args.image_size, args.image_size)),
            "labels": rng.integers(0, args.num_classes, (b,)),
        }
    s = args.seq_len
    p = min(args.max_predictions, s)
    token_ids = rng.integers(0, config["vocab_size"], (b, s))
    positions = rng.random((b, s)).argsort(axis=1)[:, :p]
    return {
        "token_ids": token_ids,
        "segment_ids": np.broadcast_to(np.arange(s) >= s // 2, (b, s)),
        "valid_length": np.full((b,), s),
        "positions": positions,
        "mlm_labels": np.take_along_axis(token_ids, positions, axis=1),
        "nsp_labels": rng.integers(0, 2, (b,)),
    }


def forward_loss(args: argparse.Namespace, net: Any, batch: dict[str, Any], mx: Any) -> Any:
    """This rank's mean loss over its batch (a scalar NDArray)."""
    xent = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    if args.model == "resnet50":
        return xent(net(batch["pixels"]), batch["labels"]).mean()
    _, _, nsp, mlm = net(
        batch["token_ids"], batch["segment_ids"], batch["valid_length"], batch["positions"]
    )
    vocab = mlm.shape[-1]
    mlm_loss = xent(mlm.reshape((-1, vocab)), batch["mlm_labels"].reshape((-1,))).mean()
    return mlm_loss + xent(nsp, batch["nsp_labels"]).mean()


class GradientSum:
    """Data parallel over a dist_sync KVStore: the initial weights of worker 0 broadcast to every
    worker (keys 0..n-1), then each step's gradients summed over the workers (keys n..2n-1)."""

    def __init__(self, kv: Any, params: list[Any]) -> None:
        self.kv, self.params = kv, params
        n = len(params)
        for i, param in enumerate(params):
            kv.broadcast(i, param.data(), out=param.data())
        for i, param in enumerate(params):
            kv.init(n + i, param.grad().zeros_like())
        self.first_grad_key = n

    def __call__(self) -> None:
        for i, param in enumerate(self.params):
            # priority: the last layers' gradients are ready first, send them first (as Trainer)
            self.kv.pushpull(self.first_grad_key + i, param.grad(), out=param.grad(), priority=-i)


def versions() -> dict[str, str]:
    return {m: importlib.metadata.version(m) for m in PACKAGES}


def train(args: argparse.Namespace, rank: int, world: int, local_rank: int) -> None:
    import mxnet as mx
    from mxnet import autograd, gluon

    ctx = pick_context(mx, args.device, local_rank)
    on_gpu = ctx.device_type == "gpu"
    use_amp = args.precision == "amp"
    amp_dtype = "float16" if on_gpu else "bfloat16"
    if use_amp and not on_gpu and "avx512" not in _cpu_flags():
        raise SystemExit(
            "dlperf: MXNet's bfloat16 on a CPU runs on oneDNN kernels that need AVX-512 "
            "(this CPU has none: its fully connected layers fail with 'could not create a "
            "primitive descriptor'); run amp on a GPU or an AVX-512 CPU"
        )
    if use_amp:
        init_amp(amp_dtype)
    from gluonnlp.model.bert import bert_hparams
    from gluonnlp.utils import clip_grad_global_norm

    config = model_config(args.model, json.loads(args.model_config), bert_hparams["bert_12_768_12"])
    mx.random.seed(0)
    net = build_model(args, config)
    # BERT: normal(0.02) as its paper; ResNet: He (MSRA) as gluoncv's train_imagenet.py
    initializer = mx.init.Normal(0.02) if args.model == "bert_base" else mx.init.MSRAPrelu()
    net.initialize(initializer, ctx=ctx)
    if args.hybridize:
        net.hybridize(static_alloc=True, static_shape=True)
    host = synthetic_batch(args, config, rank)
    # float32 on the device, token ids too: Gluon's Embedding takes float indices
    batch = {k: mx.nd.array(v, ctx=ctx, dtype="float32") for k, v in host.items()}
    # Shape the deferred parameters with a training forward: an inference forward (outside
    # autograd.record) leaves convolution weights in oneDNN's blocked layout, which a KVStore
    # push refuses ("We can't generate TBlob for MKLDNN data").
    with autograd.record():
        forward_loss(args, net, batch, mx).wait_to_read()
    params = [p for p in net.collect_params().values() if p.grad_req != "null"]
    kv = mx.kv.create("dist_sync") if world > 1 else None
    sum_gradients = GradientSum(kv, params) if kv else None
    if args.model == "resnet50":
        optimizer, settings = "sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 5e-5}
    else:
        optimizer, settings = "bertadam", {"learning_rate": 1e-4, "wd": 0.01}
    trainer = gluon.Trainer(net.collect_params(), optimizer, settings, kvstore=None)
    scale_loss = use_amp and on_gpu
    if scale_loss:
        from mxnet.contrib import amp

        amp.init_trainer(trainer)
    mx.nd.waitall()
    if rank == 0:
        log(
            "config",
            model=args.model,
            params=sum(p.data().size for p in params),
            device="cuda" if on_gpu else "cpu",
            amp_dtype=amp_dtype if use_amp else "none",
            world_size=world,
            graph="hybridized" if args.hybridize else "imperative",
            kvstore=kv.type if kv else "none",
            threads=os.environ["OMP_NUM_THREADS"],
            **versions(),
            model_config=json.dumps(config, sort_keys=True, separators=(",", ":")),
        )
        log_compute(args, config, ctx, amp_dtype if use_amp else "float32", mx)

    def train_step() -> float:
        with autograd.record():
            loss = forward_loss(args, net, batch, mx)
            share = loss / world  # the summed gradients are those of the global mean loss
        if scale_loss:
            with amp.scale_loss(share, trainer) as scaled:
                autograd.backward(scaled)
        else:
            share.backward()
        if sum_gradients:
            sum_gradients()
        if args.model == "bert_base" and args.clip_grad_norm > 0:
            if scale_loss:
                amp.unscale(trainer)
            clip_grad_global_norm(params, args.clip_grad_norm)
        trainer.step(1)
        mx.nd.waitall()  # the update is done
        return float(loss.asscalar())

    train_steps(rank, args, local_rank if on_gpu else None, train_step)
    log_memory(rank)
    # a worker's KVStore finalizes ps-lite when it is freed: now, not when the frame goes
    trainer = sum_gradients = kv = None


def math_of(dtype: str, ctx: Any, mx: Any) -> str:
    """What the model's products run in. MXNet 1.9 (built with CUDA 11+) lets fp32 use TF32 on an
    A100 or later, with no switch of its own: FullyConnected's GEMMs (linalg_gemm sets cuBLAS's
    TF32 math) and cuDNN convolutions (default math) alike; NVIDIA_TF32_OVERRIDE=0 turns it off."""
    if dtype != "float32" or ctx.device_type != "gpu":
        return {"float16": "fp16", "bfloat16": "bf16"}.get(dtype, "fp32")
    major, minor = divmod(mx.util.get_cuda_compute_capability(ctx), 10)
    return fp32_math((major, minor), os.environ.get("NVIDIA_TF32_OVERRIDE") != "0")


def log_compute(
    args: argparse.Namespace, config: dict[str, Any], ctx: Any, dtype: str, mx: Any
) -> None:
    """Rank 0's FLOPs per sample (dlperf.flops' formulas; GluonNLP's names: `units` is the model
    width, `hidden_size` the feed-forward's) and this device's measured peak (mx.nd.dot, or
    FullyConnected for tf32)."""
    math = math_of(dtype, ctx, mx)
    if args.model == "bert_base":
        shape = BertShape(
            config["num_layers"], config["units"], config["hidden_size"], config["vocab_size"]
        )
        log_stated_flops(0, args, math, shape)  # the MLM decoder runs on masked positions only
    else:
        log_stated_flops(0, args, math, depths=tuple(config["depths"]))

    def matmul_of(n: int) -> Any:
        a, b = (mx.nd.random.normal(shape=(n, n), ctx=ctx).astype(dtype) for _ in range(2))
        if math == "tf32":  # nd.dot's cuBLAS keeps fp32 math; FullyConnected runs a x b.T in TF32
            return lambda: mx.nd.FullyConnected(a, b, num_hidden=n, no_bias=True)
        return lambda: mx.nd.dot(a, b)

    gpu = logline.UNNAMED_GPU if ctx.device_type == "gpu" else "none"  # no name in MXNet's API
    log_measured_peak(0, args, math, matmul_of, mx.nd.waitall, gpu)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rank, world, local_rank, local_world = start_rank(args)
    require_modules("mxnet", PACKAGES, ENVIRONMENT)
    # MXNet sizes its OpenMP pool when it loads: each rank gets its share of the cores.
    os.environ["OMP_NUM_THREADS"] = str(
        args.threads or max(1, (os.cpu_count() or 1) // local_world)
    )
    children: list[subprocess.Popen[bytes]] = []
    if world > 1:
        ps_env = parameter_server_env(world)
        if rank == 0:
            children = start_parameter_server(ps_env)
        os.environ.update(ps_env, DMLC_ROLE="worker")
    try:
        train(args, rank, world, local_rank)
    except BaseException:
        stop_parameter_server(children, timeout_s=0)  # the run is lost: no waiting for peers
        raise
    # the scheduler and server exit once every worker has finalized
    stop_parameter_server(children, timeout_s=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
