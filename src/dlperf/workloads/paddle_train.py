"""Built-in PaddlePaddle workload: ResNet-50 v1.5, BERT-base pretraining or GPT on synthetic data.

Models come from Paddle's own libraries, built from configs without any download:
paddle.vision.models.resnet50 (the 3x3 convolution of a bottleneck has the stride: v1.5),
PaddleNLP's BertForPretraining with BertPretrainingCriterion (MLM + NSP heads, BertConfig's
defaults are BERT-base), and for `gpt` PaddleNLP's decoder-only LMs with their own pretraining
criteria: GPTForCausalLM (GPT-2 small by default, LM head tied to the token embedding) or, with
model_config {"model_type": "llama", ...}, LlamaForCausalLM (LlamaConfig's defaults: Llama-7B
shapes, as transformers'). Their criteria take the labels as given, so a sequence is seq_len + 1
random tokens: the first seq_len the input, the last seq_len the next-token labels.

The `xla` column is Paddle's dynamic-to-static compilation (paddle.jit.to_static of the model;
GPT's by its AST transcription, full_graph); AMP is paddle.amp.auto_cast O1, bfloat16 on a CPU
and float16 with a GradScaler on a GPU. Data parallel: paddle.DataParallel over
paddle.distributed, gloo on a CPU and NCCL on GPUs, one process per device; the harness's
RANK/WORLD_SIZE/MASTER_* become Paddle's PADDLE_TRAINER_* variables (rank i at MASTER_PORT + i).

Runs in its own environment (envs/paddlepaddle.txt); imports nothing of dlperf but the line writer.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from dlperf.flops import BertShape, DecoderShape
from dlperf.workloads.common import (
    fp32_math,
    leave_together,
    log,
    log_measured_peak,
    log_memory,
    log_stated_flops,
    model_config_overrides,
    start_rank,
    train_steps,
    workload_parser,
)


def math_of(args: argparse.Namespace, paddle: Any, on_gpu: bool, products: str = "model") -> str:
    """What the model's products (`products="matmul"`: a paddle.matmul's) run in (the peak its
    MFU is taken at). Paddle lets fp32 products run in TF32 by default, cuBLAS's and cuDNN's
    alike (paddle.base.core's cublas and cudnn switches): an fp32 cell on an A100 or later is a
    tf32 one unless the switch is off."""
    if args.precision == "amp":
        return "fp16" if on_gpu else "bf16"
    if not on_gpu:
        return "fp32"
    core = paddle.base.core
    convs = args.model == "resnet50" and products == "model"
    tf32 = core.get_cudnn_switch() if convs else core.get_cublas_switch()
    return fp32_math(tuple(paddle.device.cuda.get_device_capability()), bool(tf32))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = workload_parser(
        __doc__.splitlines()[0],
        precision_help="amp: auto_cast O1, bfloat16 on CPU, float16 with a GradScaler on GPU",
        model_config_help="JSON overrides of PaddleNLP's BertConfig, GPTConfig (also transformers' "
        "GPT-2 names: n_layer, n_embd, ...) or, with model_type llama, LlamaConfig; resnet50 none",
    )
    p.add_argument("--to-static", action="store_true", help="paddle.jit.to_static (the xla column)")
    return p.parse_args(argv)


def setup_process(args: argparse.Namespace, rank: int, world: int, local_world: int) -> None:
    """Threads, log noise and Paddle's distributed variables: set before paddle is imported."""
    threads = args.threads or max(1, (os.cpu_count() or 1) // local_world)
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    os.environ.setdefault("GLOG_minloglevel", "2")
    if world > 1:
        host, port = os.environ.get("MASTER_ADDR", "127.0.0.1"), int(os.environ["MASTER_PORT"])
        endpoints = [f"{host}:{port + i}" for i in range(world)]
        os.environ |= {
            "PADDLE_TRAINER_ID": str(rank),
            "PADDLE_TRAINERS_NUM": str(world),
            "PADDLE_TRAINER_ENDPOINTS": ",".join(endpoints),
            "PADDLE_CURRENT_ENDPOINT": endpoints[rank],
            "PADDLE_RANK_IN_NODE": os.environ.get("LOCAL_RANK", "0"),
            "PADDLE_DISTRI_BACKEND": "nccl" if args.device == "cuda" else "gloo",
        }


# What defines the network in PaddleNLP's BertConfig (the rest of it is about text generation)
BERT_ARCHITECTURE = (
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
    "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob",
    "max_position_embeddings", "type_vocab_size", "initializer_range", "pad_token_id",
    "layer_norm_eps", "pool_act", "fuse",
)  # fmt: skip


# GPT-2 small in PaddleNLP's GPTConfig, whose own defaults differ: a 50304-token vocabulary, 512
# positions and label 0 left out of the loss. Its feed-forward is 4 x hidden_size unless given,
# as GPT2Config's n_inner None. (PaddleNLP's gelu is the exact one, GPT-2's the tanh approximation.)
GPT2_SMALL: dict[str, Any] = {
    "vocab_size": 50257, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
    "intermediate_size": None, "max_position_embeddings": 1024, "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1, "ignore_index": -100,
}  # fmt: skip
# transformers' GPT2Config's own names (the pytorch workload's model_config) -> GPTConfig's
GPT2_NAMES = {
    "n_layer": "num_hidden_layers", "n_embd": "hidden_size", "n_head": "num_attention_heads",
    "n_inner": "intermediate_size", "n_positions": "max_position_embeddings",
    "resid_pdrop": "hidden_dropout_prob", "attn_pdrop": "attention_probs_dropout_prob",
}  # fmt: skip
# What defines each GPT's network in PaddleNLP's config, logged as its model config
GPT_ARCHITECTURE = {
    "gpt2": (
        "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
        "intermediate_size", "hidden_activation", "hidden_dropout_prob",
        "attention_probs_dropout_prob", "max_position_embeddings", "seq_length",
        "normalize_before", "tie_word_embeddings", "fuse_attention_qkv", "use_flash_attention",
    ),
    "llama": (
        "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
        "num_attention_heads", "num_key_value_heads", "max_position_embeddings", "seq_length",
        "rms_norm_eps", "rope_theta", "tie_word_embeddings", "fuse_attention_qkv",
        "fuse_attention_ffn", "use_flash_attention",
    ),
}  # fmt: skip


def build_gpt(args: argparse.Namespace) -> tuple[Any, Any, dict[str, Any]]:
    """PaddleNLP's GPT-2 or Llama causal LM, its criterion of the next-token labels, the config."""
    from paddlenlp.transformers import (
        GPTConfig,
        GPTForCausalLM,
        GPTPretrainingCriterion,
        LlamaConfig,
        LlamaForCausalLM,
        LlamaPretrainingCriterion,
    )

    family = json.loads(args.model_config).get("model_type", "gpt2")
    if family not in GPT_ARCHITECTURE:
        raise SystemExit(
            f"dlperf: gpt model_config.model_type: {family!r}: expected one of "
            f"{', '.join(GPT_ARCHITECTURE)}"
        )
    gpt2 = family == "gpt2"
    config_class = GPTConfig if gpt2 else LlamaConfig
    names = GPT2_NAMES if gpt2 else {}
    owner = "PaddleNLP's GPTConfig or GPT-2's own names" if gpt2 else "PaddleNLP's LlamaConfig"
    given = model_config_overrides(args, {*config_class().to_dict(), *names, "model_type"}, owner)
    given.pop("model_type", None)
    if "seq_length" in given:
        raise SystemExit("dlperf: model_config: seq_length: the sequence length is option seq_len")
    settings = (GPT2_SMALL if gpt2 else {}) | {names.get(k, k): v for k, v in given.items()}
    if gpt2 and settings["intermediate_size"] is None:
        settings["intermediate_size"] = 4 * settings["hidden_size"]
    config = config_class(**settings, seq_length=args.seq_len)
    if args.seq_len > config.max_position_embeddings:
        raise SystemExit(
            f"dlperf: seq_len {args.seq_len} > the model's max_position_embeddings "
            f"{config.max_position_embeddings}"
        )
    model = (GPTForCausalLM if gpt2 else LlamaForCausalLM)(config)
    criterion = (GPTPretrainingCriterion if gpt2 else LlamaPretrainingCriterion)(config)

    def next_token_loss(out: Any, batch: dict[str, Any]) -> Any:
        logits = out[0] if isinstance(out, tuple | list) else out  # Llama's: a tuple
        return criterion(logits, batch["labels"])

    exact = {k: getattr(config, k) for k in GPT_ARCHITECTURE[family]} | {"model_type": family}
    return model, next_token_loss, exact


def model_config_problem(model: str, overrides: dict[str, Any]) -> str | None:
    """Why `overrides` is no model_config of `model` (None: none the workload can refuse before
    Paddle starts; PaddleNLP's config fields are checked when the run starts). Pure: the adapter
    checks a suite with it. ResNet-50 takes none: paddle.vision's resnet50 arguments (width,
    groups, with_pool, pretrained) change the network, or download one, under ResNet-50's
    stated FLOPs."""
    if model == "resnet50" and overrides:
        return (
            f"resnet50 takes no model_config keys: {', '.join(sorted(overrides))} (paddle.vision's "
            "resnet50 is ResNet-50 v1.5 as its FLOPs are stated; image_size and num_classes are "
            "options)"
        )
    return None


def build_model(args: argparse.Namespace, paddle: Any) -> tuple[Any, Any, dict[str, Any]]:
    """(model, loss function of (model outputs, batch), the exact model config)."""
    if args.model == "gpt":
        return build_gpt(args)
    if problem := model_config_problem(args.model, json.loads(args.model_config)):
        raise SystemExit(f"dlperf: {problem}")
    if args.model == "resnet50":
        from paddle.vision.models import resnet50

        model = resnet50(num_classes=args.num_classes)
        loss = paddle.nn.CrossEntropyLoss()
        config = {"arch": "paddle.vision.models.resnet50", "depth": 50}
        return (
            model,
            lambda out, batch: loss(out, batch["labels"]),
            config | {"num_classes": args.num_classes},
        )
    from paddlenlp.transformers import BertConfig, BertForPretraining, BertPretrainingCriterion

    # PaddleNLP's config takes unknown keys silently, as transformers' does
    given = model_config_overrides(args, BertConfig().to_dict(), "PaddleNLP's BertConfig")
    bert_config = BertConfig(**given)
    model = BertForPretraining(bert_config)
    criterion = BertPretrainingCriterion(bert_config.vocab_size)

    def pretraining_loss(out: Any, batch: dict[str, Any]) -> Any:
        prediction_scores, seq_relationship_score = out[0], out[1]
        return criterion(
            prediction_scores,
            seq_relationship_score,
            batch["masked_lm_labels"],
            batch["next_sentence_labels"],
            batch["masked_lm_scale"],
        )

    config = {k: getattr(bert_config, k) for k in BERT_ARCHITECTURE} | {"model_type": "bert"}
    return model, pretraining_loss, config


def synthetic_batch(args: argparse.Namespace, vocab: int, paddle: Any) -> dict[str, Any]:
    """One fixed batch on the device; the same tensors are fed every step (no input pipeline)."""
    import numpy as np

    rng = np.random.default_rng(1234 + int(os.environ.get("RANK", 0)))
    b = args.batch_size
    if args.model == "resnet50":
        pixels = rng.standard_normal((b, 3, args.image_size, args.image_size), dtype=np.float32)
        labels = rng.integers(0, args.num_classes, (b, 1))
        return {"inputs": [paddle.to_tensor(pixels)], "labels": paddle.to_tensor(labels)}
    if args.model == "gpt":  # seq_len inputs, each position's next token its label
        tokens = paddle.to_tensor(rng.integers(0, vocab, (b, args.seq_len + 1)))
        return {"inputs": [tokens[:, :-1]], "labels": tokens[:, 1:]}
    s, k = args.seq_len, min(args.max_predictions, args.seq_len)
    input_ids = rng.integers(0, vocab, (b, s))
    positions = np.argsort(rng.random((b, s)), axis=1)[:, :k]
    flat = (positions + np.arange(b)[:, None] * s).reshape(-1)  # PaddleNLP's flat positions
    masked_labels = input_ids.reshape(-1)[flat].reshape(-1, 1)
    return {
        "inputs": [
            paddle.to_tensor(input_ids),
            paddle.to_tensor((np.arange(s) >= s // 2).astype(np.int64)[None].repeat(b, 0)),
            None,  # position ids: the default
            None,  # attention mask: everything attended
            paddle.to_tensor(flat),
        ],
        "masked_lm_labels": paddle.to_tensor(masked_labels),
        "next_sentence_labels": paddle.to_tensor(rng.integers(0, 2, (b, 1))),
        "masked_lm_scale": float(b * k),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rank, world, local_rank, local_world = start_rank(args)
    setup_process(args, rank, world, local_world)
    try:
        import paddle
    except ImportError as err:
        raise SystemExit(
            f"dlperf: the paddlepaddle workload needs paddle ({err}): it runs in the environment "
            "the workflow builds from envs/paddlepaddle.txt"
        ) from None
    on_gpu = args.device == "cuda" or (args.device == "auto" and paddle.is_compiled_with_cuda())
    if args.device == "cuda" and not paddle.is_compiled_with_cuda():
        raise SystemExit("dlperf: --device cuda but this paddle build has no CUDA")
    paddle.set_device(f"gpu:{local_rank}" if on_gpu else "cpu")
    if world > 1:
        paddle.distributed.init_parallel_env()
    paddle.seed(0)
    model, loss_fn, model_config = build_model(args, paddle)
    if args.to_static:
        # GPT: PaddleNLP's LM head probes fleet's hybrid group inside a try/except, which SOT,
        # to_static's default bytecode tracer, stops at ("... has no attribute _hcg"); the AST
        # transcription (full_graph) compiles it
        model = paddle.jit.to_static(model, full_graph=args.model == "gpt")
    trained = paddle.DataParallel(model) if world > 1 else model
    if args.model == "resnet50":
        optimizer = paddle.optimizer.Momentum(
            learning_rate=0.1, momentum=0.9, weight_decay=5e-5, parameters=model.parameters()
        )
    else:
        clip = (
            paddle.nn.ClipGradByGlobalNorm(args.clip_grad_norm) if args.clip_grad_norm > 0 else None
        )
        optimizer = paddle.optimizer.AdamW(
            learning_rate=1e-4, weight_decay=0.01, parameters=model.parameters(), grad_clip=clip
        )
    use_amp = args.precision == "amp"
    amp_dtype = "float16" if on_gpu else "bfloat16"
    scaler = paddle.amp.GradScaler(enable=use_amp and on_gpu)
    batch = synthetic_batch(args, model_config.get("vocab_size", 0), paddle)
    if rank == 0:
        log(
            "config",
            model=args.model,
            params=sum(int(p.numel()) for p in model.parameters()),
            device="cuda" if on_gpu else "cpu",
            amp_dtype=amp_dtype if use_amp else "none",
            world_size=world,
            paddle=paddle.__version__,
            paddlenlp=_version("paddlenlp"),
            cuda=paddle.version.cuda() if on_gpu else "none",
            to_static=args.to_static,
            model_config=json.dumps(model_config, sort_keys=True, separators=(",", ":")),
        )
        math = math_of(args, paddle, on_gpu)
        if args.model == "gpt":
            log_stated_flops(rank, args, math, decoder=DecoderShape.from_config(model_config))
        else:  # PaddleNLP's MLM head: masked positions only
            shape = BertShape.from_config(model_config) if args.model == "bert_base" else None
            log_stated_flops(rank, args, math, shape)
        dtype = {"fp16": "float16", "bf16": "bfloat16"}.get(math, "float32")

        def matmul_of(n: int) -> Any:
            a, b = (paddle.randn([n, n]).astype(dtype) for _ in range(2))
            return lambda: paddle.matmul(a, b)

        gpu = paddle.device.cuda.get_device_name() if on_gpu else "none"
        sync = paddle.device.synchronize if on_gpu else lambda: None  # CPU kernels: synchronous
        if math_of(args, paddle, on_gpu, "matmul") == math:  # else it would time another precision
            log_measured_peak(rank, args, math, matmul_of, sync, gpu)

    def train_step() -> float:
        with paddle.amp.auto_cast(enable=use_amp, level="O1", dtype=amp_dtype):
            loss = loss_fn(trained(*batch["inputs"]), batch)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.clear_grad()
        return float(loss)  # waits for the device

    if (
        on_gpu
    ):  # the memory line is the training's peak: the FLOP count and calibration are dlperf's
        paddle.device.cuda.reset_max_memory_allocated()
    train_steps(rank, args, local_rank if on_gpu else None, train_step)
    log_memory(rank, paddle.device.cuda.max_memory_allocated() if on_gpu else None)
    if world > 1:
        leave_together(paddle.distributed.barrier)
    return 0


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "none"


if __name__ == "__main__":
    sys.exit(main())
