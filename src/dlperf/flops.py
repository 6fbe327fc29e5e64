"""FLOPs per training sample by stated formulas, and a device's measured rate of matrix products.

Nameplate peaks and MFU: dlperf.peaks.

Conventions (as in the papers cited below):

- one multiply-accumulate (MAC) = 2 FLOPs; only matrix multiplications and convolutions are
  counted (normalisation, activations, softmax, residual adds and the optimizer are a few per
  cent at most and are left out, as FlopCounterMode and the papers leave them out);
- training = forward + backward, backward = 2 x forward (one product for the gradient of the
  input, one for the gradient of the weights): training FLOPs = 3 x forward FLOPs
  (Kaplan et al. 2020, "Scaling Laws for Neural Language Models", section 2.1;
  Hoffmann et al. 2022, "Training Compute-Optimal Large Language Models", appendix F);
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

TRAINING_OVER_FORWARD = 3.0

# --- ResNet-50 v1.5 ------------------------------------------------------------------------------

RESNET50_STAGES = ((3, 64, 256, 1), (4, 128, 512, 2), (6, 256, 1024, 2), (3, 512, 2048, 2))


def _conv_out(size: int, kernel: int, stride: int, padding: int) -> int:
    return (size + 2 * padding - kernel) // stride + 1


def resnet50_forward_macs(
    image_size: int = 224, num_classes: int = 1000, depths: tuple[int, ...] = (3, 4, 6, 3)
) -> int:
    """MACs of one forward pass of ResNet-50 v1.5 on one image_size x image_size image.

    Walks the architecture (He et al. 2016, "Deep Residual Learning", table 1; v1.5 puts the
    stride-2 of a bottleneck on its 3x3 convolution instead of the first 1x1, as NVIDIA's
    DeepLearningExamples and transformers' ResNetConfig default do): every convolution costs
    k*k*c_in*c_out*h_out*w_out MACs, the classifier 2048*num_classes. About 4.09 G at 224 with
    1000 classes (4.1 GMACs as usually quoted); the count grows as (S/224)^2 apart from rounding
    of the strided sizes.
    """
    size = _conv_out(image_size, 7, 2, 3)
    macs = 7 * 7 * 3 * 64 * size * size  # stem
    size = _conv_out(size, 3, 2, 1)  # max pool
    channels = 64
    for depth, (_, mid, out, stride) in zip(depths, RESNET50_STAGES, strict=True):
        blocks = depth
        for block in range(blocks):
            s = stride if block == 0 else 1
            out_size = _conv_out(size, 3, s, 1)
            macs += size * size * channels * mid  # 1x1 reduce, at the input resolution
            macs += 3 * 3 * mid * mid * out_size * out_size  # 3x3, strided (v1.5)
            macs += out_size * out_size * mid * out  # 1x1 expand
            if block == 0:  # projection shortcut: 1x1, strided
                macs += out_size * out_size * channels * out
            size, channels = out_size, out
    return macs + channels * num_classes


def resnet50_training_flops_per_sample(
    image_size: int = 224, num_classes: int = 1000, depths: tuple[int, ...] = (3, 4, 6, 3)
) -> float:
    """2 FLOPs per MAC x 3 (forward + backward) x forward MACs: about 24.5 GFLOPs at 224.
    `depths`: blocks per stage (ResNet-50's by default; fewer for a toy model on a CPU)."""
    return 2 * TRAINING_OVER_FORWARD * resnet50_forward_macs(image_size, num_classes, depths)


# --- BERT pretraining ----------------------------------------------------------------------------


@dataclass(frozen=True)
class BertShape:
    """What the FLOP count needs of a BertConfig (defaults: BERT-base)."""

    num_hidden_layers: int = 12
    hidden_size: int = 768
    intermediate_size: int = 3072
    vocab_size: int = 30522

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | Any) -> BertShape:
        """From a transformers BertConfig, its dict, or a dict of overrides (BERT-base fills in)."""
        items = config if isinstance(config, Mapping) else vars(config)
        names = ("num_hidden_layers", "hidden_size", "intermediate_size", "vocab_size")
        return cls(**{name: int(items[name]) for name in names if name in items})

    @property
    def nonembedding_params(self) -> int:
        """Weights of the encoder's matrix products (biases and layer norms left out):
        per layer Q, K, V and output projections 4 h^2, feed-forward 2 h i."""
        h, i = self.hidden_size, self.intermediate_size
        return self.num_hidden_layers * (4 * h * h + 2 * h * i)


def bert_forward_flops_per_sequence(shape: BertShape, seq_len: int, mlm_positions: int) -> float:
    """Forward FLOPs of BertForPreTraining on one sequence of seq_len tokens.

    - encoder, matrix products with weights: 2 N s, N = non-embedding parameters (the "6 N D"
      rule's forward third: Kaplan et al. 2020 table 1; Hoffmann et al. 2022 appendix F);
    - attention scores and attention-weighted values: 2 s^2 h + 2 s^2 h = 4 s^2 h per layer
      (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters
      Using Megatron-LM", section 5.1);
    - masked-LM head on mlm_positions tokens: transform h x h and decoder h x V,
      2 p (h^2 + h V);
    - pooler h x h and next-sentence classifier h x 2 on one token: 2 (h^2 + 2 h).
    Embedding look-ups cost no FLOPs.
    """
    h, s, layers = shape.hidden_size, seq_len, shape.num_hidden_layers
    encoder = 2 * shape.nonembedding_params * s + layers * 4 * s * s * h
    mlm_head = 2 * mlm_positions * (h * h + h * shape.vocab_size)
    nsp_head = 2 * (h * h + 2 * h)
    return float(encoder + mlm_head + nsp_head)


def bert_pretraining_flops_per_sample(
    shape: BertShape | None = None,
    seq_len: int = 128,
    max_predictions: int = 20,
    mlm_head_on_all_tokens: bool = False,
) -> float:
    """Training FLOPs per sequence: 3 x forward.

    The masked-LM head runs on max_predictions gathered positions in Google's BERT, NVIDIA's
    DeepLearningExamples and the built-in workloads; transformers' BertForPreTraining computes it
    on every token and masks the loss: pass mlm_head_on_all_tokens=True for it. BERT-base at 128
    tokens: 69.9 GFLOPs (gathered, 20 predictions) or 85.5 GFLOPs (all tokens).
    """
    shape = shape or BertShape()
    positions = seq_len if mlm_head_on_all_tokens else min(max_predictions, seq_len)
    return TRAINING_OVER_FORWARD * bert_forward_flops_per_sequence(shape, seq_len, positions)


# --- decoder-only language models (GPT-2, Llama) ------------------------------------------------


@dataclass(frozen=True)
class DecoderShape:
    """What the FLOP count needs of a decoder-only LM (defaults: GPT-2 small). `gated_mlp`: a
    SwiGLU feed-forward (Llama: three h x i matrices) instead of GPT-2's two; `kv_heads` below
    `heads`: grouped-query attention (narrower key and value projections); `head_dim`: a Llama
    config's own head size where it is not hidden_size / heads (None: it is)."""

    num_layers: int = 12
    hidden_size: int = 768
    intermediate_size: int = 3072
    vocab_size: int = 50257
    heads: int = 12
    kv_heads: int = 12
    gated_mlp: bool = False
    head_dim: int | None = None

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> DecoderShape:
        """From a GPT-2 or Llama config's dict: transformers' (to_dict(): GPT-2's own names),
        PaddleNLP's (GPTConfig, model_type gpt: the generic names) or MindFormers' (num_layers,
        num_heads, n_kv_heads; its GPT2Config's feed-forward is expand_ratio x hidden_size)."""
        mindformers = {
            "num_layers": "num_hidden_layers",
            "num_heads": "num_attention_heads",
            "n_kv_heads": "num_key_value_heads",
        }
        config = {mindformers.get(k, k): v for k, v in config.items()}
        if config.get("model_type", "gpt2") in ("gpt2", "gpt"):
            h = int(config.get("n_embd") or config.get("hidden_size") or 768)
            heads = int(config.get("n_head") or config.get("num_attention_heads") or 12)
            inner = config.get("n_inner") or config.get("intermediate_size")
            return cls(
                num_layers=int(config.get("n_layer") or config.get("num_hidden_layers") or 12),
                hidden_size=h,
                intermediate_size=int(inner or int(config.get("expand_ratio") or 4) * h),
                vocab_size=int(config.get("vocab_size", 50257)),
                heads=heads,
                kv_heads=heads,
            )
        heads = int(config["num_attention_heads"])
        return cls(
            num_layers=int(config["num_hidden_layers"]),
            hidden_size=int(config["hidden_size"]),
            intermediate_size=int(config["intermediate_size"]),
            vocab_size=int(config["vocab_size"]),
            heads=heads,
            kv_heads=int(config.get("num_key_value_heads") or heads),
            gated_mlp=True,
            head_dim=int(config["head_dim"]) if config.get("head_dim") else None,
        )

    @property
    def attention_width(self) -> int:
        """heads x head size: the width of the queries, of the attention's products and of the
        output projection's input (hidden_size unless the config sets its own head_dim)."""
        return self.heads * (self.head_dim or self.hidden_size // self.heads)

    @property
    def matmul_params(self) -> int:
        """Weights every token multiplies by (biases and norms left out; the LM head counted, tied
        or not): per layer Q and output h x (heads x head size) each, K and V h x (kv_heads x head
        size) each, the feed-forward 2 or 3 h i; then the LM head h V."""
        h, i = self.hidden_size, self.intermediate_size
        kv = self.kv_heads * (self.attention_width // self.heads)
        per_layer = 2 * h * self.attention_width + 2 * h * kv + (3 if self.gated_mlp else 2) * h * i
        return self.num_layers * per_layer + h * self.vocab_size


def decoder_training_flops_per_token(shape: DecoderShape, seq_len: int) -> float:
    """6 N + 12 L s h per token (Chowdhery et al. 2022, "PaLM", appendix B; Narayanan et al. 2021,
    section 5.1): N = the weights of the matrix products including the LM head, and the attention
    scores and weighted values, 4 s h per layer forward, over the whole s x s matrix (the causal
    mask's unused half counted, as PaLM and Megatron-LM count it); h there is heads x head size
    (PaLM's H Q), the hidden size unless a config sets its own head_dim."""
    n, layers = shape.matmul_params, shape.num_layers
    return 6.0 * n + 12.0 * layers * seq_len * shape.attention_width


def decoder_training_flops_per_sequence(shape: DecoderShape, seq_len: int) -> float:
    """A sample of the GPT workload is one sequence of seq_len tokens."""
    return seq_len * decoder_training_flops_per_token(shape, seq_len)


@dataclass(frozen=True)
class FlopsFormula:
    """Training FLOPs per sample by a formula, and which: what an upstream run's figures use,
    its logs stating none (dlperf.adapters.base.Adapter.flops_formula)."""

    per_sample: float
    method: str
    math: str = "fp32"  # what its products run in (the peak its MFU is taken against)


# --- GPT (Megatron-LM) ---------------------------------------------------------------------------


GPT2_VOCAB = 50257  # GPT-2's BPE vocabulary, which Megatron-LM's and OneFlow-GPT's GPT use
MEGATRON_VOCAB_MULTIPLE = 128  # --make-vocab-size-divisible-by's default, times the TP size


def megatron_formula(options: Mapping[str, Any], precision: str) -> FlopsFormula:
    """A Megatron-style GPT run's FLOPs per sample (one sequence) from the adapter's options: model
    FLOPs, 6 N + 12 L s h per token as for every GPT column, with the vocabulary padded as
    Megatron-LM pads it. That is eq. 3 of Narayanan et al. 2021 without recomputation,
    72 B s l h^2 (1 + s / (6 h) + V / (12 l h)); Megatron-LM's own `throughput per GPU
    (TFLOP/s/GPU)`, kept beside it, counts the forward passes its activation recomputation
    repeats as well (eq. 3's 96 B s l h^2 (1 + s / (6 h) + V / (16 l h))). Its products run in
    fp16 for `amp` (--fp16, as DLPerf ran both), else fp32."""
    multiple = MEGATRON_VOCAB_MULTIPLE * int(options.get("tensor_parallel", 1))
    vocab = math.ceil(int(options.get("vocab_size", GPT2_VOCAB)) / multiple) * multiple
    h, heads = int(options["hidden_size"]), int(options["num_attention_heads"])
    shape = DecoderShape(
        num_layers=int(options["num_layers"]),
        hidden_size=h,
        intermediate_size=4 * h,
        vocab_size=vocab,
        heads=heads,
        kv_heads=heads,
    )
    per_sample = decoder_training_flops_per_sequence(shape, int(options["seq_len"]))
    method = f"6 N + 12 L s h per token (model FLOPs), V={vocab}"
    return FlopsFormula(per_sample, method, "fp16" if precision == "amp" else "fp32")


# --- Wide & Deep ---------------------------------------------------------------------------------


# The special cases' fixed shapes, one owner for every framework's model of them (the PyTorch
# recipes, the Keras models) and for the formulas below
DENSE_FIELDS, DEEP_SPARSE_FIELDS, WIDE_SPARSE_FIELDS = 13, 26, 2  # Criteo's, as DLPerf's W&D
ARCFACE_SCALE, ARCFACE_MARGIN = 64.0, 0.5  # ArcFace's s and m (Deng et al. 2019), insightface's


@dataclass(frozen=True)
class WideDeepShape:
    """What the FLOP count needs of Wide & Deep (defaults: OneFlow-Benchmark's WideDeepLearning,
    DLPerf's W&D: Criteo's 13 dense and 26 sparse fields, 32-wide deep embeddings, 7 x 1024 units)."""

    hidden_units_num: int = 7
    hidden_size: int = 1024
    deep_embedding_vec_size: int = 32
    dense_fields: int = DENSE_FIELDS
    deep_sparse_fields: int = DEEP_SPARSE_FIELDS

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> WideDeepShape:
        """From the workload's facts (the defaults fill in what they leave out)."""
        return cls(**{k: int(config[k]) for k in cls.__dataclass_fields__ if k in config})

    @property
    def mlp_macs(self) -> int:
        """The deep part's fully connected layers: (dense + sparse x width) x h, then h x h for
        each further layer, then h x 1 to the logit."""
        h = self.hidden_size
        inputs = self.dense_fields + self.deep_sparse_fields * self.deep_embedding_vec_size
        return inputs * h + (self.hidden_units_num - 1) * h * h + h


def wide_deep_training_flops_per_sample(shape: WideDeepShape | None = None) -> float:
    """3 x 2 x the deep MLP's MACs per example. The look-ups of both embeddings (the wide part is
    a sum of looked-up weights) are gathers, not products, and cost no FLOPs whatever the
    vocabulary (DLPerf reports W&D's latency and memory, not its FLOPs). The default sizes (13 +
    26 x 32 = 845 inputs): 6 x (845 x 1024 + 6 x 1024^2 + 1024) = 42.9 MFLOPs per example."""
    return 2 * TRAINING_OVER_FORWARD * (shape or WideDeepShape()).mlp_macs


# --- InsightFace ---------------------------------------------------------------------------------

RESNET50_FEATURES = 2048  # channels of ResNet-50's last stage, pooled


def arcface_shard(num_classes: int, rank: int, world: int) -> tuple[int, int]:
    """The classes [start, end) of InsightFace's split classifier that a rank holds (every
    framework's split, one rule): num_classes // world each, and one more on each of the first
    num_classes % world ranks."""
    each, more = divmod(num_classes, world)
    start = rank * each + min(rank, more)
    return start, start + each + (rank < more)


def insightface_training_flops_per_sample(
    image_size: int = 112,
    num_classes: int = 85742,
    embedding_size: int = 512,
    sample_rate: float = 1.0,
    depths: tuple[int, ...] = (3, 4, 6, 3),
) -> float:
    """3 x 2 x forward MACs of a face-recognition step per image: the ResNet-50 v1.5 backbone
    without its classifier (resnet50_forward_macs; 112 x 112 faces end in a 4 x 4 map), its pooled
    2048 features to the embedding (2048 x embedding_size, insightface's fc5), then the ArcFace
    classifier, embedding_size x num_classes x sample_rate (defaults: MS1M-ArcFace's 85742
    identities, all of them).

    The classifier is split across the ranks (model parallel, as insightface's partial FC runs
    it): each rank multiplies the features of all world x b images of the step by its
    num_classes / world columns (sample_rate of them with partial FC), world b x num_classes /
    world = b x num_classes per step, so per image of a rank the same as one rank's whole
    classifier. Exact where world divides num_classes and sample_rate x num_classes / world is
    whole; otherwise rank 0 (the first ranks get one class more, the sample count is rounded
    down) differs by less than world columns."""
    backbone = resnet50_forward_macs(image_size, 0, depths)
    head = RESNET50_FEATURES * embedding_size + embedding_size * num_classes * sample_rate
    return 2 * TRAINING_OVER_FORWARD * (backbone + head)


# --- measured peak: matrix products on this device ----------------------------------------------


def measure_gemm_peak_tflops(
    dtype: str = "fp32", device: str = "cpu", seconds: float = 1.0, size: int | None = None
) -> float:
    """A measured peak: TFLOP/s of square matrix products (2 n^3 FLOPs each) on this device.

    Default size 8192 on CUDA, 1024 on a CPU. tf32 runs fp32 matrices with TF32 tensor cores
    allowed (restored afterwards). CUDA work is synchronised before the clock is read.
    """
    import torch

    torch_dtype = {"fp32": torch.float32, "tf32": torch.float32}.get(dtype) or {
        "fp16": torch.float16,
        "bf16": torch.bfloat16,
    }.get(dtype)
    if torch_dtype is None:
        raise ValueError(f"unknown dtype {dtype!r}; expected one of fp32, tf32, fp16, bf16")
    dev = torch.device(device)
    n = size or (8192 if dev.type == "cuda" else 1024)
    allow_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    try:
        return _time_matmuls(torch, dev, torch_dtype, n, seconds)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = allow_tf32


def _time_matmuls(torch: Any, dev: Any, dtype: Any, n: int, seconds: float) -> float:
    a = torch.randn(n, n, device=dev).to(dtype)
    b = torch.randn(n, n, device=dev).to(dtype)
    out = torch.empty(n, n, device=dev, dtype=dtype)

    def sync() -> None:
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    return time_matmuls(lambda: torch.matmul(a, b, out=out), sync, n, seconds)


def time_matmuls(
    matmul: Callable[[], Any], sync: Callable[[], Any], n: int, seconds: float
) -> float:
    """TFLOP/s of `matmul` (one n x n by n x n product per call, 2 n^3 FLOPs) over about
    `seconds`, after 3 warm-up products (kernel selection, clocks); `sync` waits for the device.
    Any framework's product: the workloads outside PyTorch pass their own. Batches of products
    between syncs grow, but never past the time left, so a run pays `seconds`, not twice that.

    The figure is the fastest batch's rate, not the mean: a peak is what the device can do, and a
    machine busy with other work slows some batches, never speeds one up (a mean taken beside
    other work once gave a peak 7.5 times too low, and an MFU of 755%)."""
    for _ in range(3):
        matmul()
    sync()
    done, batch, best = 0, 1, 0.0
    start = time.perf_counter()
    while True:
        began = time.perf_counter()
        for _ in range(batch):
            matmul()
        sync()
        now = time.perf_counter()
        if now > began:
            best = max(best, 2.0 * n**3 * batch / (now - began) / 1e12)
        done += batch
        elapsed = now - start
        if elapsed >= seconds:
            return best
        calls_left = math.ceil((seconds - elapsed) / (elapsed / done))
        batch = max(1, min(batch * 2, 64, calls_left))
