"""Upstream benchmark sources' parsers: values from hand-written fixtures, ranks, prefixes, errors.

Every expected throughput below is worked out by hand from the fixture's own numbers (see the
comment beside it), never from the parser.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

import dlperf.parse.upstream
from dlperf.adapters import upstream_parsers
from dlperf.measure.stats import Window, run_throughput
from dlperf.parse.records import Method, ParseError, ParseResult
from dlperf.parse.upstream import RunFacts

FIX = Path(__file__).parent / "fixtures" / "logs"
PARSERS = upstream_parsers()  # every parser an adapter binds, by source name
TAG = re.compile(r"^\[(?:\d+,)?\d+\]<(?:stdout|stderr)>:")


@dataclass(frozen=True)
class Case:
    name: str
    files: tuple[str, ...]
    facts: RunFacts
    window: Window
    method: Method
    records: int
    ranks: tuple[int, ...]
    throughput: float  # by hand
    samples: float  # samples in the window, by hand
    bad: tuple[str, str]  # (pattern, replacement) that makes a progress line's number unreadable
    cut: str  # a line cut off right after this pattern has lost a number the parser needs
    parser: str = ""  # the parser, when another source's reads this fixture ("": `name`)

    def paths(self) -> list[Path]:
        return [FIX / self.name / f for f in self.files]

    def parse(self, paths: list[Path] | None = None, facts: RunFacts | None = None) -> ParseResult:
        return PARSERS[self.parser or self.name](paths or self.paths(), facts or self.facts)

    @property
    def is_global(self) -> bool:
        return self.ranks == (-1,)


DLL_FIELD = (r"(train\.total_ips|step_loss|imgs_per_sec|throughput_train) : \S+", r"\1 : nan")
DLL_CUT = r"\s(train\.t|step_l|imgs_p|throughput_t)"
CASES = [
    # iter 2..20 every 2 iters; window = iters 5..16 = records iter 6..16, timed from iter 4's
    # stamp 1600000001.0 to iter 16's 1600000003.6; 12 iters * 32 * 2 GPUs
    Case(
        "oneflow_cnn",
        ("1n2g_rn50_b32_fp32_1.log",),
        RunFacts(32, 2, 1),
        Window(4, 12),
        Method.TIMESTAMPS,
        10,
        (-1,),
        12 * 32 * 2 / (1600000003.6 - 1600000001.0),
        768,
        (r"(\d+\.\d+)$", "16000x0001.4"),
        r"samples/s: \d+",
    ),
    # steps 4..19: 8 even steps of 0.12 s, 8 odd of 0.10 s; the cut-off step 25 is skipped
    Case(
        "oneflow_bert",
        ("1n1g_bert_b24_fp32_1.log",),
        RunFacts(24, 1, 1, 128),
        Window(4, 16),
        Method.TIMESTAMPS,
        25,
        (-1,),
        16 * 24 / (8 * 0.12 + 8 * 0.10),
        384,
        (r"(\d+\.\d+)$", "nan"),
        r"throughput: \d+",
    ),
    # iters 300..1000: k=3,6,9 took 3.2 s, k=2,4,5,7,8 took 2.9 s; header batch_size is global
    Case(
        "oneflow_wdl",
        ("n1g8_wdl_1.log",),
        RunFacts(2048, 8, 1),
        Window(200, 800),
        Method.TIMESTAMPS,
        12,
        (-1,),
        800 * 16384 / (3 * 3.2 + 5 * 2.9),
        800 * 16384,
        (r"time \S+", "time 16028368x"),
        r"time \d+",
    ),
    # Release current (Oneflow-Inc/models fc7cbf8, wide_and_deep): `[rank:0] iter: i/27, loss: l,
    # latency(ms): t | stamp`, rank 0 only. Iterations 6..25: 10 even of 31.25 ms, 10 odd of
    # 32.5 ms; the argument list's batch_size 16384 (2048 * 8 GPUs) is the global batch
    Case(
        "oneflow_wdl_current",
        ("1n8g_wdl_b2048_fp32_1.log",),
        RunFacts(2048, 8, 1),
        Window(5, 20),
        Method.STEP_TIMES,
        27,
        (-1,),
        20 * 16384 / (10 * 0.03125 + 10 * 0.0325),
        20 * 16384,
        (r"latency\(ms\): \S+", "latency(ms): nan"),
        r"latency\(ms\): \d",
    ),
    # Release current of `oneflow` (Oneflow-Inc/models fc7cbf8, resnet50): `[rank:r] [train],
    # epoch: 0/1, iter: i/27, ..., throughput: t | stamp` per rank, b256 per device. Iterations
    # 6..25: rank 0 10 even of 256/1600 = 0.16 s and 10 odd of 256/1280 = 0.2 s (3.6 s), rank 1
    # 20 of 0.2 s (4.0 s, the slowest)
    Case(
        "oneflow_cnn_current",
        ("1n2g_rn50_b256_amp_1.log",),
        RunFacts(256, 2, 1),
        Window(5, 20),
        Method.PRINTED_RATES,
        54,
        (0, 1),
        2 * 20 * 256 / 4.0,
        2 * 20 * 256,
        (r"throughput: [\d.]+", "throughput: nan"),
        r"throughput: \d",
    ),
    # Release current of `oneflow_gpt` (LiBai v0.3.0, CommonMetricPrinter): `iteration: k/110`
    # (0-based) every 10, `time` the running mean of iterations 3..k+1. Window = iterations
    # 21..100: 1.5100 * (100 - 2) - 1.5000 * (20 - 2) = 147.98 - 27.0 = 120.98 s for 80 * 64
    Case(
        "libai",
        ("1n8g_gpt_b8_amp_1.log",),
        RunFacts(8, 8, 1, 2048),
        Window(20, 80),
        Method.STEP_TIMES,
        11,
        (-1,),
        80 * 64 / 120.98,
        80 * 64,
        (r"time: [\d.]+ s/iter", "time: nan s/iter"),
        r"(?<!\w)time: \d",
    ),
    # Real lines: Oneflow-Inc/DLPerf OneFlow/LanguageModeling/GPT/README.md, the output it shows
    # of a 4n8g pretrain (tensor 4 x pipeline 4 x data 2, micro batch 8, 32 accumulated: 512
    # samples a step), verbatim. Window = steps 21..80: rows 30..80, 5120 samples each, timed by
    # their printed throughput
    Case(
        "oneflow_gpt",
        ("4n8g_gpt_b8_fp16_1.log",),
        RunFacts(8, 32, 4, 2048),
        Window(20, 60),
        Method.PRINTED_RATES,
        10,
        (-1,),
        6
        * 5120
        / sum(
            5120 / t for t in (39.01045, 39.01279, 38.99669, 39.00954, 39.04432, 39.05294)
        ),  # fmt: skip
        6 * 5120,
        (r"\| (\d+\.\d+)", "| nan"),
        r"\| \d+\.\d",
    ),
    # iterations 6..25 (the window crosses midnight): 10 even of 0.55 s, 10 odd of 0.5 s
    Case(
        "dle_pytorch_rn50",
        ("1n1g_rn50_b256_fp32_1.log",),
        RunFacts(256, 1, 1),
        Window(5, 20),
        Method.TIMESTAMPS,
        30,
        (-1,),
        20 * 256 / (10 * 0.55 + 10 * 0.5),
        5120,
        DLL_FIELD,
        DLL_CUT,
    ),
    # Release current (DLE 729963d, ConvNets a684cf0): the same parser reads the new line
    # (`train.loss : {v} None ... train.total_ips : {v} images/s ...`). Iterations 6..25: 10 even
    # of 0.086 s, 10 odd of 0.084 s; 256 images each on one GPU
    Case(
        "dle_pytorch_rn50_current",
        ("1n1g_rn50_b256_amp_1.log",),
        RunFacts(256, 1, 1),
        Window(5, 20),
        Method.TIMESTAMPS,
        30,
        (-1,),
        20 * 256 / (10 * 0.086 + 10 * 0.084),
        5120,
        DLL_FIELD,
        DLL_CUT,
        parser="dle_pytorch_rn50",
    ),
    # iterations 6..25: 7 multiples of 3 took 0.31 s, 13 others 0.25 s; 64 * 8 GPUs per iteration
    Case(
        "dle_pytorch_bert",
        ("1n8g_bert_b64_fp32_1.log",),
        RunFacts(64, 8, 1),
        Window(5, 20),
        Method.TIMESTAMPS,
        30,
        (-1,),
        20 * 64 * 8 / (7 * 0.31 + 13 * 0.25),
        10240,
        DLL_FIELD,
        DLL_CUT,
    ),
    # Release current (DLE 729963d, BERT a0781f8): iterations = Training Iteration + skipped_steps
    # (1..30; the first three AMP steps skipped). Iterations 6..25: the 5 multiples of 4 took
    # 0.125 s, the 15 others 0.115 s; 96 sequences * 8 GPUs per iteration
    Case(
        "dle_pytorch_bert_current",
        ("1n8g_bert_b96_amp_1.log",),
        RunFacts(96, 8, 1),
        Window(5, 20),
        Method.TIMESTAMPS,
        30,
        (-1,),
        20 * 96 * 8 / (5 * 0.125 + 15 * 0.115),
        15360,
        (r"average_loss : \S+", "average_loss : nan"),
        r"\saverage_l",
    ),
    # steps 26..45 (the hook hid 1..20): 10 even of 0.44 s, 10 odd of 0.40 s
    Case(
        "dle_tf1_rn50",
        ("1n1g_rn50_b128_fp32_1.log",),
        RunFacts(128, 1, 1),
        Window(5, 20),
        Method.TIMESTAMPS,
        30,
        (-1,),
        20 * 128 / (10 * 0.44 + 10 * 0.40),
        2560,
        DLL_FIELD,
        DLL_CUT,
    ),
    # lines at 1, 10, 20..200 cover 1, 9, 10.. iterations; window = lines 20..110: five 10-step
    # intervals of 3.3 s and five of 3.0 s; 32 * 8 per iteration
    # Release current (last TF1 ConvNets, 9de48bc), --mode=training_benchmark: `(0, k) total_ips`
    # with k from 0. Iterations 6..25 = k 5..24: 10 odd k of 0.090 s, 10 even of 0.088 s;
    # 256 images * 8 GPUs. Only Horovod rank 0 logs; other ranks' tagged noise interleaves.
    Case(
        "dle_tf1_rn50_benchmark",
        ("1n8g_rn50_b256_amp_1.log",),
        RunFacts(256, 8, 1),
        Window(5, 20),
        Method.TIMESTAMPS,
        30,
        (-1,),
        20 * 256 * 8 / (10 * 0.090 + 10 * 0.088),
        40960,
        (r"total_ips : \S+", "total_ips : nan"),
        r"\stotal_i",
    ),
    # tensorflow/models 00b830c (orbit/controller.py), official/vision/train.py resnet_imagenet:
    # lines every 100 steps, each twice (absl-stamped, bare). Window = steps 101..400, timed from
    # step 100's stamp: 8.80 + 8.70 + 8.75 s for 300 steps of 256 * 8 images
    Case(
        "tf2_orbit",
        ("1n8g_rn50_b256_amp_1.log",),
        RunFacts(256, 8, 1),
        Window(100, 300),
        Method.TIMESTAMPS,
        5,
        (-1,),
        300 * 2048 / (8.80 + 8.70 + 8.75),
        614400,
        (r"steps/sec:\s*\S+", "steps/sec: nan"),
        r"steps/sec:",
    ),
    # The same orbit line under official/nlp/train.py bert/pretraining (base_trainer's output
    # dict: the masked-LM metrics, training_loss, learning_rate): steps 101..400 timed from step
    # 100's stamp: 27.50 + 27.00 + 27.30 s for 300 steps of 64 * 8 sequences
    Case(
        "tf2_orbit_bert",
        ("1n8g_bert_b64_amp_1.log",),
        RunFacts(64, 8, 1, 128),
        Window(100, 300),
        Method.TIMESTAMPS,
        5,
        (-1,),
        300 * 512 / (27.50 + 27.00 + 27.30),
        153600,
        (r"steps/sec:\s*\S+", "steps/sec: nan"),
        r"steps/sec:",
        parser="tf2_orbit",
    ),
    Case(
        "dle_tf1_bert",
        ("1n8g_bert_b32_fp32_1.log",),
        RunFacts(32, 8, 1),
        Window(10, 100),
        Method.TIMESTAMPS,
        21,
        (-1,),
        100 * 32 * 8 / (5 * 3.3 + 5 * 3.0),
        25600,
        DLL_FIELD,
        DLL_CUT,
    ),
    # Release current (DLE 729963d TF1 BERT, display_loss_steps 1, AMP): 30 lines, one iteration
    # each (`Iteration: 1` four times while the loss scale settles, then 2..27); window = lines
    # 6..25 timed from line 5's stamp: 10 * 0.250 s (even lines) + 10 * 0.270 s (odd); 20 * 64 * 8
    Case(
        "dle_tf1_bert_current",
        ("1n8g_bert_b64_amp_1.log",),
        RunFacts(64, 8, 1),
        Window(5, 20),
        Method.TIMESTAMPS,
        30,
        (-1,),
        20 * 64 * 8 / (10 * 0.250 + 10 * 0.270),
        10240,
        DLL_FIELD,
        DLL_CUT,
    ),
    # Batch [20-39]..[100-119]: rank 0's asctime 15:02:10,000 -> 15:02:34,300 (rank 1's copy
    # dropped); 100 iterations * 96 * 2 GPUs, once
    Case(
        "dle_mxnet_rn50",
        ("1n2g_rn50_b96_fp32_1.log",),
        RunFacts(96, 2, 1),
        Window(20, 100),
        Method.TIMESTAMPS,
        8,
        (-1,),
        100 * 96 * 2 / 24.3,
        19200,
        (r"Speed: \S+", "Speed: nan"),
        r"Speed: \d",
    ),
    # Release current (DLE 729963d fit.py via dllogger, rank 0 only, `Iteration: i` 0-based):
    # iterations 5..20 = i 4..19, timed from i 3's stamp 10:00:11.200000 to i 19's 10:00:15.200000
    # (8 * 0.24 s + 8 * 0.26 s = 4.0 s); 16 iterations * 256 * 4 GPUs
    Case(
        "dle_mxnet_rn50_current",
        ("1n4g_rn50_b256_amp_1.log",),
        RunFacts(256, 4, 1),
        Window(4, 16),
        Method.TIMESTAMPS,
        20,
        (-1,),
        16 * 256 * 4 / 4.0,
        16 * 256 * 4,
        (r"train\.ips : \S+", "train.ips : nan"),
        r"\strain\.i",
    ),
    # job-wide rates 2048, 2560, 2048, 4096, 2560 for 20 * 128 * 8 = 20480 samples each:
    # 10 + 8 + 10 + 5 + 8 = 41 s (harmonic mean; the arithmetic mean would be 2662.4)
    Case(
        "gluoncv_rn50",
        ("1n8g_rn50_b128_fp32_1.log",),
        RunFacts(128, 8, 1),
        Window(20, 100),
        Method.PRINTED_RATES,
        8,
        (-1,),
        5 * 20480 / 41,
        102400,
        (r"Speed: \S+", "Speed: -"),
        r"Speed: \d",
    ),
    # steps 20..70 per rank: rank 0 6 * 10 * 0.100 s, rank 1 6 * 10 * 0.110 s (the slowest);
    # 2 ranks * 60 steps * 32
    Case(
        "gluonnlp_bert",
        ("1n2g_bert_b32_fp32_1.log",),
        RunFacts(32, 2, 1),
        Window(10, 60),
        Method.STEP_TIMES,
        16,
        (0, 1),
        2 * 60 * 32 / (60 * 0.110),
        3840,
        (r"latency=\S+", "latency=nan"),
        r"latency=\d",
    ),
    # batches 5..19 per rank by asctime: rank 0 15 * 0.300 s, rank 1 15 * 0.320 s
    Case(
        "paddle_cv",
        ("1n2g_rn50_b64_fp32_1/workerlog.0", "1n2g_rn50_b64_fp32_1/workerlog.1"),
        RunFacts(64, 2, 1),
        Window(5, 15),
        Method.TIMESTAMPS,
        50,
        (0, 1),
        2 * 15 * 64 / (15 * 0.320),
        1920,
        (r"elapse \S+", "elapse nan"),
        r"elapse \d",
    ),
    # speed (steps/s incl. 2 trainers) 4, 5, 4, 5, 4, 5 for steps 20..70: 10 iterations each take
    # 10 * 2 / speed s; batch 8192 tokens / 128 = 64 sequences * 16 GPUs
    Case(
        "paddle_nlp_bert",
        ("2n8g_bert_b64_fp32_1/node0.log", "2n8g_bert_b64_fp32_1/node1.log"),
        RunFacts(64, 16, 2, 128),
        Window(10, 60),
        Method.PRINTED_RATES,
        8,
        (-1,),
        60 * 64 * 16 / (3 * 20 / 4 + 3 * 20 / 5),
        61440,
        (r"speed: \S+", "speed: inf"),
        r"speed: \d",
    ),
    # PaddleClas (release current), print_batch_step 1: iterations 6..15 (iter ids 5..14) by
    # batch_cost, rank 0 5 * 0.19 + 5 * 0.21 = 2.0 s, rank 1 10 * 0.22 = 2.2 s (the slowest)
    Case(
        "paddleclas",
        ("1n2g_rn50_b64_fp32_1/workerlog.0", "1n2g_rn50_b64_fp32_1/workerlog.1"),
        RunFacts(64, 2, 1),
        Window(5, 10),
        Method.STEP_TIMES,
        40,
        (0, 1),
        2 * 10 * 64 / 2.2,
        1280,
        (r"batch_cost: \S+", "batch_cost: nan"),
        r"batch_cost: \d",
    ),
    # PaddleClas v2.4 (release package; the paddleclas wheel's trainer run on a CPU, a real log):
    # batch_cost is a running mean restarted at iteration 5, so iterations 2..5 (window 2 + 4)
    # take (3 x 3.59098 - 2 x 2.69289) + (4 x 4.10714 - 3 x 3.59098) + (5 x 4.01141 - 4 x
    # 4.10714) + 5.00162 s = 5 x 4.01141 - 2 x 2.69289 + 5.00162 s, 4 x 2 images
    Case(
        "paddleclas_v24",
        ("workerlog.0",),
        RunFacts(2, 1, 1),
        Window(2, 4),
        Method.STEP_TIMES,
        8,
        (0,),
        4 * 2 / (5 * 4.01141 - 2 * 2.69289 + 5.00162),
        8,
        (r"batch_cost: \S+", "batch_cost: nan"),
        r"batch_cost: \d",
    ),
    # PaddleNLP BERT (release current), logging_steps 1: steps 11..25 timed by the stamps from
    # step 10's, rank 0 15 * 0.500 s, rank 1 15 * 0.520 s (avg_batch_cost 0.45/0.47 s ignored)
    Case(
        "paddlenlp_bert",
        ("1n2g_bert_b32_fp32_1/workerlog.0", "1n2g_bert_b32_fp32_1/workerlog.1"),
        RunFacts(32, 2, 1, 128),
        Window(10, 15),
        Method.TIMESTAMPS,
        60,
        (0, 1),
        2 * 15 * 32 / (15 * 0.520),
        960,
        (r"avg_batch_cost: \S+", "avg_batch_cost: nan"),
        r"avg_batch_cost: \d",
    ),
    # TimeHistory steps 100..600: 25.6 + 25.6 + 26.0 + 25.8 + 25.6 s
    Case(
        "tf2_rn50",
        ("1n8g_rn50_b128_fp32_1.log",),
        RunFacts(128, 8, 1),
        Window(100, 500),
        Method.STEP_TIMES,
        8,
        (-1,),
        500 * 128 * 8 / 128.6,
        512000,
        (r"TimeHistory: \S+", "TimeHistory: nan"),
        r"between steps \d+",
    ),
    # steps 15..50 in 5s across midnight: 4 intervals of 1.6 s, 4 of 1.5 s
    Case(
        "tf2_bert",
        ("1n1g_bert_b32_fp32_1.log",),
        RunFacts(32, 1, 1),
        Window(10, 40),
        Method.TIMESTAMPS,
        12,
        (-1,),
        40 * 32 / (4 * 1.6 + 4 * 1.5),
        1280,
        (r"Train Step: \d+", "Train Step: x"),
        r"Train Step: \d",
    ),
    # 2 ranks interleaved untagged; batches 2..17: 16 * 0.250 s and 16 * 0.260 s
    Case(
        "pytorch_examples",
        ("1n2g_rn50_b128_fp32_1.log",),
        RunFacts(128, 2, 1),
        Window(2, 16),
        Method.STEP_TIMES,
        40,
        (0, 1),
        2 * 16 * 128 / (16 * 0.260),
        4096,
        (r"Time\s+\S+", "Time   nan"),
        r"Time\s+\d",
    ),
    # Release current (pytorch/examples 77f55b9, --dummy): the same line, the batch printed
    # 1-based; the same parser. 2 ranks interleaved untagged, 22 batches each; batches 3..18:
    # rank 0 16 * 0.118 s, rank 1 16 * 0.121 s (the slower)
    Case(
        "pytorch_examples_current",
        ("1n2g_rn50_b128_fp32_1.log",),
        RunFacts(128, 2, 1),
        Window(2, 16),
        Method.STEP_TIMES,
        44,
        (0, 1),
        2 * 16 * 128 / (16 * 0.121),
        4096,
        (r"Time\s+\S+", "Time   nan"),
        r"Time\s+\d",
        parser="pytorch_examples",
    ),
    # sinks 5..20 of one step: rank 0 16 * 200 ms, rank 1 16 * 210 ms
    Case(
        "mindspore",
        ("1n2g_rn50_b256_fp32_1.log",),
        RunFacts(256, 2, 1),
        Window(4, 16),
        Method.STEP_TIMES,
        48,
        (0, 1),
        2 * 16 * 256 / (16 * 0.210),
        8192,
        (r"epoch time: \S+", "epoch time: nan"),
        r"epoch time: \d+",
    ),
    # Release current (mindspore-ai/models gpu_resnet_benchmark.py, MyTimeMonitor): `epoch: [k/K]
    # step: [s/S], loss is L Epoch time: X ms, per_step_time: Y ms, fps: N img/sec.` per rank,
    # one step per sink; sink 1 (graph compile) 90 s; sinks 5..20: rank 0 16 * 200 ms, rank 1
    # 16 * 210 ms
    Case(
        "mindspore_benchmark",
        ("1n2g_rn50_b256_amp_1.log",),
        RunFacts(256, 2, 1),
        Window(4, 16),
        Method.STEP_TIMES,
        40,
        (0, 1),
        2 * 16 * 256 / (16 * 0.210),
        8192,
        (r"Epoch time: \S+", "Epoch time: nan"),
        r"Epoch time: \d+",
    ),
    # Release current's BERT (mindspore-ai/models official/nlp/Bert run_pretrain.py): LossCallBack
    # `epoch: 0, current epoch percent: p, step: s, outputs are (...)` then TimeMonitor's `Train
    # epoch time: X ms, per step time: Y ms` per rank, one step per sink; sink 1 (compile) 120 s and
    # 121 s; sinks 5..20: rank 0 16 * 100 ms, rank 1 16 * 102 ms (the slower); 2 * 16 * 64
    Case(
        "mindspore_bert_current",
        ("1n2g_bert_b64_amp_1.log",),
        RunFacts(64, 2, 1, 128),
        Window(4, 16),
        Method.STEP_TIMES,
        44,
        (0, 1),
        2 * 16 * 64 / (16 * 0.102),
        2048,
        (r"epoch time: \S+", "epoch time: nan"),
        r"Train epoch time: \d+",
    ),
    # Iter 200..1100, Time(100 iters) summed; header batch_size = 16384 is the global batch
    Case(
        "hugectr",
        ("n1g8_wdl_1.log",),
        RunFacts(2048, 8, 1),
        Window(100, 1000),
        Method.STEP_TIMES,
        12,
        (-1,),
        1000
        * 16384
        / (0.213347 + 0.222373 + 0.215 + 0.23 + 0.21 + 0.225 + 0.22 + 0.215 + 0.23 + 0.21),
        16384000,
        (r"Time\(100 iters\): \S+", "Time(100 iters): nans"),
        r"Time\(100 iters\): \d",
    ),
    # Release current (HugeCTR 24.06 Python API, display 1): 2 nodes under mpirun, the root rank
    # prints; `Training batchsize: 32768` is the global batch; iterations 5..20 take 8 * 0.0102 s
    # + 8 * 0.0098 s = 0.16 s
    Case(
        "hugectr_current",
        ("2n8g_wdl_b2048_amp_1.log",),
        RunFacts(2048, 16, 2),
        Window(4, 16),
        Method.STEP_TIMES,
        24,
        (-1,),
        16 * 32768 / 0.16,
        16 * 32768,
        (r"Time\(1 iters\): \S+", "Time(1 iters): nans"),
        r"Time\(1 iters\): \d",
    ),
    # iterations 30..100 in 10s: ms/iteration 1520 1480 1510 1500 1490 1530 1500 1510; consumed
    # samples advance 640 per line; the cut-off last line is skipped
    Case(
        "megatron",
        ("1n8g_gpt_b8_fp16_1.log",),
        RunFacts(8, 8, 1),
        Window(20, 80),
        Method.STEP_TIMES,
        12,
        (-1,),
        80 * 64 / (10 * (1520 + 1480 + 1510 + 1500 + 1490 + 1530 + 1500 + 1510) / 1000),
        5120,
        (r"\(ms\): \S+", "(ms): nan"),
        r"\(ms\): \d",
    ),
    # Release current (Megatron-LM core_v0.19.0, training.py training_log): `[datetime] iteration
    # i/n | ...` at iteration 1 (the first-iteration line, 9000.0 ms) and every 10; line 10's
    # average 2295.0 ms covers iterations 1..10, so 2..10 took 10 * 2295.0 - 9000.0 = 13950 ms.
    # Window = iterations 21..100: ms/iteration 1480 1510 1500 1490 1530 1500 1510 1495
    Case(
        "megatron_current",
        ("1n8g_gpt_b8_fp16_1.log",),
        RunFacts(8, 8, 1, 2048),
        Window(20, 80),
        Method.STEP_TIMES,
        12,
        (-1,),
        80 * 64 / (10 * (1480 + 1510 + 1500 + 1490 + 1530 + 1500 + 1510 + 1495) / 1000),
        5120,
        (r"\(ms\): \S+", "(ms): nan"),
        r"\(ms\): \d",
    ),
    # Real lines: Oneflow-Inc/oneflow_face README.md at 09d1d8f (2021-01-08), the R100 model
    # parallel + partial FC run (8 GPUs x 64, train_batch_size 512), verbatim from `train: iter
    # 159996` to the validation lines after it; callback_util.py's TrainMetric prints the same
    # line at DLPerf's commit 1705ae5. Iterations 159997..159999 at the printed job-wide rates.
    Case(
        "oneflow_face",
        ("1n8g_r100_b64_fp32_1.log",),
        RunFacts(64, 8, 1),
        Window(1, 3),
        Method.PRINTED_RATES,
        4,
        (-1,),
        3 * 512 / (512 / 1263.307 + 512 / 1286.902 + 512 / 1269.964),
        1536,
        (r"throughput: \S+", "throughput: nan"),
        r"loss \d",
    ),
    # Real lines: Oneflow-Inc/DLPerf pull request #106, the 8-GPU partial FC log that anxiangsir
    # (its author) posted on 2021-01-08 (config.frequent 20; the 13th line, cut off in the
    # comment, left out). Window = updates 481..680: records Iter:480..660, timed from Iter:460's
    # asctime 19:22:59,208 to Iter:660's 19:24:00,984 = 61.776 s; 200 x 64 x 8 GPUs samples
    # (the printed Total rates, ~1657, agree with 64 per GPU).
    Case(
        "insightface_partial_fc",
        ("1n8g_r100_b64_pr106.log",),
        RunFacts(64, 8, 1),
        Window(20, 200),
        Method.TIMESTAMPS,
        12,
        (-1,),
        200 * 64 * 8 / 61.776,
        102400,
        (r"Total:\S+", "Total:nan"),
        r"Total:\d",
    ),
]
BY_NAME = {case.name: case for case in CASES}
ids = [case.name for case in CASES]


def test_every_parser_is_bound_to_an_adapter_and_has_a_fixture_case():
    assert set(PARSERS) == {case.parser or case.name for case in CASES}
    assert len(PARSERS) == 36
    for name, parser in PARSERS.items():  # each in its source's module, saying its method
        assert parser.__module__.startswith("dlperf.parse.upstream."), name
        assert re.search(r"\n\s*Method: \S", parser.__doc__ or ""), name


def test_parser_modules_hold_no_unbound_parser():
    """Every `parse_<source>` function in dlperf.parse.upstream's modules is one an adapter
    binds (the modules are listed here only to look for a parser left out of the table)."""
    bound = set(PARSERS.values())
    package = dlperf.parse.upstream
    modules = [
        importlib.import_module(f"{package.__name__}.{info.name}")
        for info in pkgutil.iter_modules(package.__path__)
    ]
    defined = {
        f
        for module in modules
        for name, f in vars(module).items()
        if name.startswith("parse_") and callable(f) and f.__module__ == module.__name__
    }
    assert defined == bound


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_values(case: Case):
    result = case.parse()
    assert result.method is case.method
    assert len(result.records) == case.records
    assert tuple(sorted(result.by_rank())) == case.ranks
    wanted = {
        Method.TIMESTAMPS: "time_s",
        Method.STEP_TIMES: "duration_s",
        Method.PRINTED_RATES: "rate",
    }
    for record in result.records:  # exactly the time field the method needs
        set_fields = {
            f for f in ("time_s", "start_s", "duration_s", "rate") if getattr(record, f) is not None
        }
        assert set_fields == {wanted[case.method]}
        assert record.steps >= 1 and record.samples > 0 and record.line >= 1
    tp = run_throughput(result, case.window)
    assert tp.window_samples == pytest.approx(case.samples)
    assert tp.throughput_samples_per_s == pytest.approx(case.throughput, rel=1e-6)
    assert tp.method == str(case.method)
    assert tp.ranks == len(case.ranks)
    assert result.notes  # every parser says how it timed the records


# ------------------------------------------------------------------ ranks, prefixes, interleaving


def claimed_lines(result: ParseResult) -> dict[int, list[tuple[str, int]]]:
    """(path, line) of the records per rank, in order."""
    return {rank: [(r.path, r.line) for r in records] for rank, records in result.by_rank().items()}


def raw(path: str | Path) -> list[str]:
    return Path(path).read_text().splitlines()


def strip_tag(text: str) -> str:
    return TAG.sub("", text)


def rank0_complete_lines(path: Path) -> list[str]:
    """The file's lines without other ranks' tagged copies and without a cut-off last line."""
    text = path.read_text()
    lines = text.splitlines() if text.endswith("\n") else text.splitlines()[:-1]
    return [line for line in lines if not TAG.match(line) or line.startswith("[1,0]<")]


@pytest.mark.parametrize("case", [c for c in CASES if c.is_global], ids=lambda c: c.name)
def test_global_lines_printed_by_every_rank_count_once(case: Case, tmp_path: Path):
    """Four ranks print the same job-wide lines (tagged, interleaved in one file per node): one
    rank's copy is kept and the figure is unchanged, never multiplied by the ranks."""
    baseline = run_throughput(case.parse(), case.window)
    out = []
    for i, path in enumerate(case.paths()):
        merged = []
        for line in rank0_complete_lines(path):
            for rank in (2, 0, 3, 1):
                copy = strip_tag(line).replace("Rank : 0", f"Rank : {rank}")
                merged.append(f"[1,{rank}]<stdout>:" + copy.replace("[RANK0]", f"[RANK{rank}]"))
        out.append(tmp_path / f"node{i}.log")
        out[-1].write_text("\n".join(merged) + "\n")
    result = case.parse(out)
    assert set(result.by_rank()) == {-1}
    tp = run_throughput(result, case.window)
    assert tp.throughput_samples_per_s == pytest.approx(baseline.throughput_samples_per_s, rel=1e-9)
    assert tp.window_samples == baseline.window_samples
    assert any("printed by ranks 0, 1, 2, 3; kept rank 0's" in n for n in result.notes)


# Sources whose one printing rank repeats a step number itself (DLE TF1 BERT, both releases: an
# AMP-skipped update keeps the counter): untagged repeats there are iterations, not other ranks'
# copies (horovodrun tags every rank's output, and only rank 0 prints these lines).
REPEATS_ARE_ITERATIONS = {"dle_tf1_bert", "dle_tf1_bert_current"}


@pytest.mark.parametrize(
    "case",
    [
        c
        for c in CASES
        if c.is_global and c.facts.world_size > 1 and c.name not in REPEATS_ARE_ITERATIONS
    ],
    ids=lambda c: c.name,
)
def test_global_lines_untagged_copies_in_one_file(case: Case, tmp_path: Path):
    """Without tags, a node's ranks' copies of a line are told apart by their step number."""
    baseline = run_throughput(case.parse(), case.window)
    merged = []
    for line in rank0_complete_lines(case.paths()[0]):
        line = strip_tag(line).replace("Rank : 0", "").replace("[RANK0]", "")
        merged += [line, line]
    out = tmp_path / "node0.log"
    out.write_text("\n".join(merged) + "\n")
    result = case.parse([out, *case.paths()[1:]])
    tp = run_throughput(result, case.window)
    assert tp.throughput_samples_per_s == pytest.approx(baseline.throughput_samples_per_s, rel=1e-9)
    assert any("printed by ranks 0, 1; kept rank 0's" in n for n in result.notes)


@pytest.mark.parametrize("case", [c for c in CASES if not c.is_global], ids=lambda c: c.name)
def test_per_rank_sources_separate_files_or_one_tagged_file(case: Case, tmp_path: Path):
    """The same ranks' lines give the same figure one file per rank (untagged) or all in one file
    (MPI-tagged, interleaved)."""
    result = case.parse()
    baseline = run_throughput(result, case.window)
    by_rank = claimed_lines(result)
    texts = {str(p): raw(p) for p in case.paths()}

    separate = []
    for rank in sorted(by_rank):
        separate.append(tmp_path / f"rank{rank}.log")
        separate[-1].write_text(
            "\n".join(strip_tag(texts[p][n - 1]) for p, n in by_rank[rank]) + "\n"
        )
    order = sorted(
        (n, rank, k) for rank, lines in by_rank.items() for k, (_, n) in enumerate(lines)
    )
    tagged = tmp_path / "tagged.log"
    tagged.write_text(
        "\n".join(
            f"[1,{rank}]<stdout>:" + strip_tag(texts[by_rank[rank][k][0]][by_rank[rank][k][1] - 1])
            for _, rank, k in order
        )
        + "\n"
    )
    for paths in (separate, [tagged]):
        again = case.parse(paths)
        assert tuple(sorted(again.by_rank())) == case.ranks
        tp = run_throughput(again, case.window)
        assert tp.throughput_samples_per_s == pytest.approx(
            baseline.throughput_samples_per_s, rel=1e-6
        )


def test_per_rank_source_missing_a_rank_is_an_error():
    case = BY_NAME["gluonnlp_bert"]
    with pytest.raises(ParseError, match=r"job has 4 rank\(s\).*missing: 2, 3"):
        case.parse(facts=RunFacts(32, 4, 1))


def test_untagged_duplicate_steps_in_a_rank_file_are_an_error(tmp_path: Path):
    case = BY_NAME["paddle_cv"]
    lines = raw(case.paths()[0])
    out = tmp_path / "workerlog.0"
    out.write_text("\n".join(lines + lines[6:8]) + "\n")  # batch 0 printed again
    with pytest.raises(
        ParseError, match=rf"{re.escape(str(out))}:{len(lines) + 1}: step 0 appears 2 times"
    ):
        case.parse([out, case.paths()[1]])


def test_torchrun_local_rank_prefix(tmp_path: Path):
    """`[default1]:` is a local rank: global rank = node's first rank + local rank."""
    case = BY_NAME["pytorch_examples"]
    lines = raw(case.paths()[0])
    seen: dict[str, int] = {}
    tagged = []
    for line in lines:
        key = line.split("\t")[0]
        local = seen.get(key, 0)
        seen[key] = local + 1
        tagged.append(f"[default{local}]:{line}" if line.startswith("Epoch") else line)
    node0, node1 = tmp_path / "node0.log", tmp_path / "node1.log"
    node0.write_text("\n".join(tagged) + "\n")
    node1.write_text("\n".join(tagged) + "\n")
    result = case.parse([node0, node1], RunFacts(128, 4, 2))
    assert sorted(result.by_rank()) == [0, 1, 2, 3]
    tp = run_throughput(result, case.window)
    assert tp.throughput_samples_per_s == pytest.approx(4 * 16 * 128 / (16 * 0.260))


LAUNCHER_LABELS = {
    "srun": "0: ",  # srun --label: the task id
    "srun_padded": " 7: ",  # right-aligned among ten tasks or more
    "host_rank": "[node01:0]: ",
    "host_rank_dotted": "[lrdn3321.leonardo.local:3]: ",
    "srun_then_torchrun": "0: [default3]: ",  # srun starting one torchrun per node
}


@pytest.mark.parametrize("label", LAUNCHER_LABELS.values(), ids=LAUNCHER_LABELS.keys())
def test_megatron_lines_behind_a_launcher_label_read_as_bare(label: str, tmp_path: Path):
    """srun's `N: ` and `[host:rank]: ` on every line (Megatron's progress lines and its argument
    dump) are stripped: the same records, figure and reported TFLOP/s as the unlabelled log. The
    label's number names no rank: Megatron's lines are job-wide, printed by the last rank (7 of
    8 here), which no label above names."""
    case = BY_NAME["megatron_current"]
    (path,) = case.paths()
    labelled = tmp_path / path.name
    labelled.write_text("".join(f"{label}{line}\n" for line in raw(path)))
    bare, read = case.parse(), case.parse([labelled])

    def rows(result: ParseResult) -> list[tuple]:
        return [(r.rank, r.step, r.steps, r.samples, r.duration_s) for r in result.records]

    assert rows(read) == rows(bare) and len(rows(bare)) == case.records
    figure = run_throughput(read, case.window).throughput_samples_per_s
    assert figure == run_throughput(bare, case.window).throughput_samples_per_s
    assert figure == pytest.approx(case.throughput, rel=1e-9)
    reported = read.reported["tflops_per_device"]
    assert sorted(reported.items()) == sorted(
        ((str(labelled), line), tflops)
        for (_, line), tflops in bare.reported["tflops_per_device"].items()
    )


@pytest.mark.parametrize(
    "label",
    ["0:", "0 : ", "x0: ", "[node01]: ", "[node01:0] ", "[node01:a]: ", "[1,0]: "],
)
def test_only_a_launcher_label_of_its_exact_shape_is_stripped(label: str, tmp_path: Path):
    """Anything else before Megatron's line stays: its lines are not Megatron's."""
    case = BY_NAME["megatron_current"]
    (path,) = case.paths()
    labelled = tmp_path / path.name
    labelled.write_text("".join(f"{label}{line.lstrip()}\n" for line in raw(path)))
    with pytest.raises(ParseError, match="no Megatron `iteration i/n` lines"):
        case.parse([labelled])


# ------------------------------------------------------------------------- truncation, bad lines


def first_rank_lines(case: Case) -> list[tuple[str, int]]:
    result = case.parse()
    return claimed_lines(result)[min(result.by_rank())]


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_last_line_cut_off_without_newline_is_skipped_with_a_note(case: Case, tmp_path: Path):
    path, n = first_rank_lines(case)[-1]
    lines = raw(path)
    out = tmp_path / Path(path).name
    out.write_text("\n".join(lines[: n - 1] + [lines[n - 1][: len(lines[n - 1]) * 2 // 3]]))
    paths = [out if str(p) == path else p for p in case.paths()]
    result = case.parse(paths)
    assert (str(out), n) not in {(r.path, r.line) for r in result.records}
    assert any(f"{out}:{n}: skipped the last line" in note for note in result.notes)


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_line_cut_off_mid_file_is_an_error_naming_file_and_line(case: Case, tmp_path: Path):
    path, n = first_rank_lines(case)[3]
    lines = raw(path)
    cut = re.search(case.cut, lines[n - 1])
    assert cut
    lines[n - 1] = lines[n - 1][: cut.end()]  # cut inside a number or field the parser needs
    out = tmp_path / Path(path).name
    out.write_text("\n".join(lines) + "\n")
    with pytest.raises(ParseError, match=re.escape(f"{out}:{n}: unreadable progress line")):
        case.parse([out if str(p) == path else p for p in case.paths()])


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_non_number_is_an_error_naming_file_and_line(case: Case, tmp_path: Path):
    path, n = first_rank_lines(case)[3]
    lines = raw(path)
    pattern, replacement = case.bad
    changed = re.sub(pattern, replacement, lines[n - 1], count=1)
    assert changed != lines[n - 1]
    lines[n - 1] = changed
    out = tmp_path / Path(path).name
    out.write_text("\n".join(lines) + "\n")
    with pytest.raises(ParseError) as err:
        case.parse([out if str(p) == path else p for p in case.paths()])
    assert f"{out}:{n}:" in str(err.value)
    assert (err.value.path, err.value.line) == (str(out), n)


def test_no_progress_lines_is_an_error(tmp_path: Path):
    empty = tmp_path / "rank0.log"
    empty.write_text("Traceback (most recent call last):\nRuntimeError: CUDA out of memory.\n")
    for parser in PARSERS.values():
        with pytest.raises(ParseError, match=f"{re.escape(str(empty))}: no .* lines in 1 log file"):
            parser([empty], RunFacts(8, 1, 1))


# ------------------------------------------------------------------------ source particularities

# Real lines: the OneFlow-GPT log in the docstring of Oneflow-Inc/DLPerf's
# OneFlow/LanguageModeling/GPT/extract_gpt_result.py (1n8g, tensor parallel 8, micro batch 32,
# log_interval 1; the title's first column `step`, util.py from ed0d22c on), its nvidia-smi
# report after the rows
ONEFLOW_GPT_EVERY_STEP = """\
num_nodes ....................................... 1
num_gpus_per_node ............................... 8
data_parallel_size .............................. 1
tensor_model_parallel_size ...................... 8
pipeline_model_parallel_size .................... 1
global_batch_size ............................... 32
micro_batch_size ................................ 32
num_accumulation_steps .......................... 1
num_layers ...................................... 16
hidden_size ..................................... 2304
num_attention_heads ............................. 16
seq_length ...................................... 2048
log_interval .................................... 1
Training...
| step     | micro_batches   | samples         | throughput | latency    | loss       |
| -------- | --------------- | --------------- | ---------- | ---------- | ---------- |
| 1        | 1               | 32              | 3.65895    | 8.74569    | 11.27187   |
| 2        | 2               | 64              | 5.92391    | 5.40183    | 22.54614   |
| 3        | 3               | 96              | 33.08657   | 0.96716    | 33.82825   |
| 4        | 4               | 128             | 32.91274   | 0.97227    | 45.10602   |
| 5        | 5               | 160             | 33.05942   | 0.96795    | 56.36795   |
| 6        | 6               | 192             | 32.97452   | 0.97045    | 67.64371   |
| 7        | 7               | 224             | 32.75634   | 0.97691    | 78.92993   |
| 8        | 8               | 256             | 33.13264   | 0.96581    | 90.20315   |
| 9        | 9               | 288             | 33.01570   | 0.96924    | 101.47802  |
utilization.gpu [%], memory.used [MiB]
100 %, 13858 MiB
100 %, 13994 MiB
"""
EVERY_STEP_RATES = (33.08657, 32.91274, 33.05942, 32.97452, 32.75634, 33.13264, 33.01570)


def test_oneflow_gpt_every_step_and_the_step_title(tmp_path: Path):
    log = tmp_path / "node0.log"
    log.write_text(ONEFLOW_GPT_EVERY_STEP)
    result = PARSERS["oneflow_gpt"]([log], RunFacts(32, 8, 1, 2048))
    assert [(r.step, r.steps, r.samples) for r in result.records] == [
        (i, 1, 32) for i in range(1, 10)
    ]
    tp = run_throughput(result, Window(2, 7))  # steps 3..9: past the two compiling steps
    assert tp.throughput_samples_per_s == pytest.approx(7 / sum(1 / t for t in EVERY_STEP_RATES))
    # tensor parallel 8: one data-parallel rank, so 32 samples a step, not 32 x 8 devices
    assert "global batch (samples per step) = 32 but the run facts say 256" in str(result.notes)


def test_oneflow_gpt_normal_format_reads_as_the_table(tmp_path: Path):
    """`--metric-print-format normal` (util.py's step_print, as written there: no public log of
    it) gives the same records as the table."""
    rows = re.findall(
        r"^\| (\d+) +\| (\d+) +\| (\d+) +\| (\S+) +\| (\S+) +\| (\S+) +\|$",
        ONEFLOW_GPT_EVERY_STEP,
        re.M,
    )
    normal = "".join(
        f"step={s},micro_batches={m},samples={n},throughput={t},latency={lat},loss={loss},\n"
        for s, m, n, t, lat, loss in rows
    )
    table, plain = tmp_path / "table.log", tmp_path / "normal.log"
    table.write_text(ONEFLOW_GPT_EVERY_STEP)
    plain.write_text(ONEFLOW_GPT_EVERY_STEP.split("Training...")[0] + normal)
    facts = RunFacts(32, 8, 1, 2048)
    read = [PARSERS["oneflow_gpt"]([path], facts).records for path in (table, plain)]
    assert [(r.step, r.samples, r.rate) for r in read[0]] == [
        (r.step, r.samples, r.rate) for r in read[1]
    ]


def test_oneflow_gpt_resumed_run_states_its_own_batch(tmp_path: Path):
    """util.py counts steps from the checkpoint's iteration but samples from 0: a run resumed at
    step 1005 printed `samples 160` at step 1010 (read once as a global batch of 0)."""
    log = tmp_path / "node0.log"
    log.write_text(
        "".join(
            f"step={step},micro_batches={step - 1005},samples={32 * (step - 1005)},"
            f"throughput=33.0,latency=0.97,loss=7.0,\n"
            for step in (1010, 1020, 1030)
        )
    )
    result = PARSERS["oneflow_gpt"]([log], RunFacts(32, 1, 1, 2048))
    assert [r.samples for r in result.records] == [160, 320, 320]
    assert not any("global batch" in note for note in result.notes), result.notes


def test_oneflow_gpt_samples_that_do_not_advance_are_named(tmp_path: Path):
    log = tmp_path / "node0.log"
    log.write_text(ONEFLOW_GPT_EVERY_STEP.replace("| 96  ", "| 64  "))
    with pytest.raises(ParseError, match="samples 64 do not advance") as err:
        PARSERS["oneflow_gpt"]([log], RunFacts(32, 8, 1, 2048))
    assert err.value.line == 19


def test_mean_of_printed_rates_is_biased_high_when_step_times_vary(tmp_path: Path):
    """DLPerf's `extract_*_logs.py` averaged printed rates; with step times alternating 0.1 s and
    0.5 s the arithmetic mean of rates overstates the throughput by 80%."""
    lines = ["batch_size_per_device = 32", "gpu_num_per_node = 1", "num_nodes = 1"]
    t = 1600000000.0
    rates = []
    for it in range(1, 31):
        d = 0.1 if it % 2 else 0.5
        t += d
        rates.append(32 / d)
        lines.append(
            f"train: epoch 0, iter {it}, loss: 6.9, top_1: 0.0, top_k: 0.0, "
            f"samples/s: {32 / d:.3f} {t:.4f}"
        )
    log = tmp_path / "oneflow.log"
    log.write_text("\n".join(lines) + "\n")
    tp = run_throughput(PARSERS["oneflow_cnn"]([log], RunFacts(32, 1, 1)), Window(10, 20))
    assert tp.throughput_samples_per_s == pytest.approx(20 * 32 / (10 * 0.1 + 10 * 0.5))  # 106.67
    mean_of_rates = sum(rates[10:30]) / 20  # (320 + 64) / 2 = 192
    assert mean_of_rates == pytest.approx(192.0)
    assert mean_of_rates / tp.throughput_samples_per_s == pytest.approx(1.8)

    case = BY_NAME["gluoncv_rn50"]  # the same bias on a rates-only fixture
    printed = [2048.0, 2560.0, 2048.0, 4096.0, 2560.0]
    assert sum(printed) / 5 == pytest.approx(2662.4)
    assert run_throughput(case.parse(), case.window).throughput_samples_per_s == pytest.approx(
        102400 / 41
    )


def test_global_rate_is_never_multiplied_by_the_ranks():
    """gluon-cv prints the job-wide rate: the figure is its harmonic mean whatever the layout."""
    case = BY_NAME["gluoncv_rn50"]
    for facts in (RunFacts(128, 8, 1), RunFacts(128, 16, 2), RunFacts(128, 1, 1)):
        tp = run_throughput(case.parse(facts=facts), case.window)
        assert tp.throughput_samples_per_s == pytest.approx(102400 / 41)  # 2497.56, not 8x
    mx = BY_NAME["dle_mxnet_rn50"]  # both ranks print: kept once, not doubled
    assert run_throughput(mx.parse(), mx.window).throughput_samples_per_s == pytest.approx(
        19200 / 24.3
    )


def test_oneflow_header_of_another_run_shape_is_a_parse_error():
    """A log whose header states another batch or layout than its cell is not filed under it:
    a ParseError at the header line (was: the log's value won, with a note)."""
    case = BY_NAME["oneflow_cnn"]
    log = str(case.paths()[0])
    with pytest.raises(ParseError) as err:
        case.parse(facts=RunFacts(64, 2, 1))
    assert (err.value.path, err.value.line) == (log, 4)
    assert "batch_size_per_device = 32 but the cell's batch size per device 64" in str(err.value)
    with pytest.raises(ParseError) as err:
        case.parse(facts=RunFacts(32, 4, 1))
    assert (err.value.path, err.value.line) == (log, 6)
    assert "gpu_num_per_node = 2 but the cell's devices per node 4" in str(err.value)
    with pytest.raises(ParseError) as err:
        case.parse(facts=RunFacts(32, 4, 2))
    assert "num_nodes = 1 but the cell's number of nodes 2" in str(err.value)


def test_counter_restart_at_a_new_epoch_is_noted(tmp_path: Path):
    """OneFlow cnns' iter restarts each epoch: the first line of an epoch covers its iterations."""
    lines = ["batch_size_per_device = 8"]
    t = 1600000000.0
    for epoch, it in [(0, 2), (0, 4), (0, 6), (1, 2), (1, 4), (1, 6)]:
        t += 1.0
        lines.append(
            f"train: epoch {epoch}, iter {it}, loss: 6.9, top_1: 0.0, top_k: 0.0, "
            f"samples/s: 16.000 {t}"
        )
    log = tmp_path / "cnn.log"
    log.write_text("\n".join(lines) + "\n")
    result = PARSERS["oneflow_cnn"]([log], RunFacts(8, 1, 1))
    assert [r.steps for r in result.records] == [2, 2, 2, 2, 2, 2]
    assert any(f"{log}:5: the step counter restarted" in n for n in result.notes)


def test_oneflow_bert_steps_are_zero_based():
    records = BY_NAME["oneflow_bert"].parse().records
    assert [(r.step, r.steps) for r in records[:3]] == [(0, 1), (1, 1), (2, 1)]
    assert records[-1].step == 24


def test_dle_tf1_bert_intervals_and_noise():
    records = BY_NAME["dle_tf1_bert"].parse().records
    assert [(r.step, r.steps) for r in records[:4]] == [(1, 1), (10, 9), (20, 10), (30, 10)]
    assert all(r.samples == r.steps * 32 * 8 for r in records)


def test_dle_tf1_bert_current_counts_a_repeated_counter_as_one_iteration():
    """AMP-skipped updates leave the global step, so `Iteration: 1` repeats: each line is one
    iteration run; the final step-() lines (throughput_train, total_loss) are not records."""
    records = BY_NAME["dle_tf1_bert_current"].parse().records
    assert [(r.step, r.steps) for r in records[:6]] == [(1, 1)] * 4 + [(2, 1), (3, 1)]
    assert records[-1].step == 27 and sum(r.steps for r in records) == 30
    assert all(r.samples == 64 * 8 for r in records)


def test_dle_tf1_bert_current_with_a_larger_display_interval(tmp_path: Path):
    """display_loss_steps 10 (extra_args): a line covers the counter's advance (1, 9, 10), and a
    repeat of the previous counter one iteration."""
    log = tmp_path / "node0.log"
    stamps = ["10:00:00.000000", "10:00:00.300000", "10:00:02.100000", "10:00:04.100000"]
    log.write_text(
        "".join(
            f"DLL 2023-05-10 {t} - Iteration: {i}  throughput_train : 1.000 sequences/s "
            "mlm_loss : 9.0000  \n"
            for t, i in zip(stamps, [1, 1, 10, 20], strict=True)
        )
    )
    result = PARSERS["dle_tf1_bert_current"]([log], RunFacts(32, 1, 1))
    assert [(r.step, r.steps) for r in result.records] == [(1, 1), (1, 1), (10, 9), (20, 10)]
    tp = run_throughput(result, Window(2, 19))
    assert tp.throughput_samples_per_s == pytest.approx(19 * 32 / 3.8)


def test_dle_tf1_bert_current_refuses_a_log_of_a_restarted_run(tmp_path: Path):
    """Review: a job requeued into the same log (iterations 1..30, then 1..130 after a 300 s gap)
    read as one run: the window spanned the gap, 157.5 samples/s instead of 2048."""
    log = tmp_path / "node0.log"
    from datetime import datetime, timedelta

    start, counters = datetime(2023, 5, 10, 10), [*range(1, 31), *range(1, 131)]
    log.write_text(
        "".join(
            f"DLL {start + timedelta(seconds=0.25 * j + (300 if j >= 30 else 0))} - "
            f"Iteration: {i}  throughput_train : 2048.000 sequences/s mlm_loss : 9.0000  \n"
            for j, i in enumerate(counters)
        )
    )
    with pytest.raises(ParseError, match="counter 1 goes back from 30: a restarted run"):
        PARSERS["dle_tf1_bert_current"]([log], RunFacts(64, 8, 1))


def test_dle_pytorch_bert_keeps_the_sources_own_figure_as_a_note():
    notes = BY_NAME["dle_pytorch_bert"].parse().notes
    assert any("training_sequences_per_second (whole run) = 1234.5" in n for n in notes)


def test_dle_mxnet_reads_fit_py_s_batch_indices_as_the_adapter_runs_it(tmp_path: Path):
    """Review: DLE's fit.py (e470c21) prints `Batch [a-b]` with the 0-based indices of the
    interval's first and last batch: with --disp-batches 1, as the adapter runs it, [0-0], [1-1]...
    was an "empty batch interval" (every ngc_mxnet v1 run a parse_error)."""
    from dlperf.parse.upstream.mxnet import parse_dle_mxnet_rn50

    log = tmp_path / "rank0.log"
    lines = [
        f"[1,0]<stderr>:2020-09-10 15:02:{10 + i // 4:02d},{250 * (i % 4):03d}:INFO: "
        f"Epoch[0] Batch [{i}-{i}]\tSpeed: 384.0 samples/sec\tLR: 0.256\t"
        for i in range(40)
    ]  # one iteration every 0.25 s
    log.write_text("\n".join(lines) + "\n")
    result = parse_dle_mxnet_rn50([log], RunFacts(96, 1, 1))
    tp = run_throughput(result, Window(10, 20))
    assert (tp.window_first_step, tp.window_last_step) == (11, 30)
    assert tp.throughput_samples_per_s == pytest.approx(96 / 0.25)


def test_dle_mxnet_without_asctime_falls_back_to_printed_rates(tmp_path: Path):
    case = BY_NAME["dle_mxnet_rn50"]
    bare = tmp_path / "bare.log"
    bare.write_text(
        "\n".join(re.sub(r"^\S+ \S+:INFO: ", "", strip_tag(line)) for line in raw(case.paths()[0]))
        + "\n"
    )
    result = case.parse([bare])
    assert result.method is Method.PRINTED_RATES
    assert any("no timestamp prefix" in n for n in result.notes)
    # printed 960.00, 936.59, 960.00, 914.29 for intervals of 4, 4.1, 4, 4.2 s (and 480.00 / 8 s)
    tp = run_throughput(result, case.window)
    assert tp.throughput_samples_per_s == pytest.approx(19200 / 24.3, rel=1e-4)


def test_paddle_cv_without_asctime_uses_elapse(tmp_path: Path):
    case = BY_NAME["paddle_cv"]
    out = []
    for i, path in enumerate(case.paths()):
        out.append(tmp_path / f"workerlog.{i}")
        out[-1].write_text(
            "\n".join(re.sub(r"^\S+ \S+-INFO: ", "", line) for line in raw(path)) + "\n"
        )
    result = case.parse(out)
    assert result.method is Method.STEP_TIMES
    # elapse 0.2800 (rank 0) and 0.3000 (rank 1) per batch: excludes what the wall clock saw
    assert run_throughput(result, case.window).throughput_samples_per_s == pytest.approx(1920 / 4.5)


def test_some_lines_stamped_others_not_is_an_error(tmp_path: Path):
    case = BY_NAME["paddle_cv"]
    lines = raw(case.paths()[0])
    lines[10] = re.sub(r"^\S+ \S+-INFO: ", "", lines[10])
    out = tmp_path / "workerlog.0"
    out.write_text("\n".join(lines) + "\n")
    with pytest.raises(ParseError, match=f"{re.escape(str(out))}:11: some progress lines carry"):
        case.parse([out, case.paths()[1]])


def test_paddle_nlp_tokens_batch_and_trainers_come_from_the_log():
    case = BY_NAME["paddle_nlp_bert"]
    result = case.parse(facts=RunFacts(64, 16, 2, 128))
    notes = " ".join(result.notes)
    assert "speed / 2 trainer(s) * 1024 samples per step" in notes
    # first line: 0.2 steps/s incl. 2 trainers -> 0.1 iterations/s * 1024 samples
    assert result.records[0].rate == pytest.approx(0.2 / 2 * 1024)
    assert run_throughput(result, case.window).throughput_samples_per_s == pytest.approx(
        case.throughput
    )


def test_tf2_bert_absl_year_rolls_over(tmp_path: Path):
    stamps = [
        "1231 23:59:57.000000",
        "1231 23:59:58.000000",
        "1231 23:59:59.500000",
        "0101 00:00:01.000000",
        "0101 00:00:02.250000",
    ]
    log = tmp_path / "bert.log"
    log.write_text(
        "\n".join(
            f"I{s} 140225321383744 model_training_utils.py:444] Train Step: {i + 1}/5  / loss = 7.0"
            for i, s in enumerate(stamps)
        )
        + "\n"
    )
    result = PARSERS["tf2_bert"]([log], RunFacts(8, 1, 1))
    tp = run_throughput(result, Window(1, 4))
    assert tp.window_time_s == pytest.approx(5.25)  # 23:59:57 -> 00:00:02.25 next year
    assert tp.step_time_ms == pytest.approx([1000, 1500, 1500, 1250])


def test_tf2_bert_needs_absl_stamps(tmp_path: Path):
    log = tmp_path / "bert.log"
    log.write_text("Train Step: 5/60  / loss = 7.5\n")
    with pytest.raises(ParseError, match=f"{re.escape(str(log))}:1: .*no absl timestamp"):
        PARSERS["tf2_bert"]([log], RunFacts(8, 1, 1))


def test_mindspore_sink_of_several_steps(tmp_path: Path):
    log = tmp_path / "log"
    lines = []
    for e, ms in enumerate([9000.0, 1000.0, 1100.0, 1000.0], 1):
        lines += [
            f"epoch: {e} step: 10, loss is 6.9",
            f"epoch time: {ms:.3f} ms, per step time: {ms / 10:.3f} ms",
        ]
    log.write_text("\n".join(lines) + "\n")
    result = PARSERS["mindspore"]([log], RunFacts(16, 1, 1))
    assert [(r.step, r.steps) for r in result.records] == [(1, 10), (2, 10), (3, 10), (4, 10)]
    tp = run_throughput(result, Window(10, 30))
    assert tp.throughput_samples_per_s == pytest.approx(30 * 16 / 3.1)


def test_a_multi_node_mindspore_log_states_its_node_s_devices(tmp_path: Path):
    """Review: the adapter passes --device_num with a node's devices (8), the parser wanted the
    job's (16): every 2n8g and 4n8g MindSpore ResNet-50 run was a parse_error."""
    lines = ["Namespace(batch_size=64, dataset_sink_mode=True, device_num=8)"]
    for e in range(1, 41):
        lines += [
            f"epoch: {e} step: 1, loss is 6.9",
            "epoch time: 200.000 ms, per step time: 200.000 ms",
        ]
    logs = []
    for rank in range(16):
        logs.append(tmp_path / f"log{rank}.txt")
        logs[-1].write_text("\n".join(lines) + "\n")
    tp = run_throughput(PARSERS["mindspore"](logs, RunFacts(64, 16, 2)), Window(10, 20))
    assert tp.throughput_samples_per_s == pytest.approx(64 * 16 / 0.2)
    logs[0].write_text(logs[0].read_text().replace("device_num=8", "device_num=4"))
    with pytest.raises(ParseError, match="device_num = 4"):
        PARSERS["mindspore"](logs, RunFacts(64, 16, 2))


def test_mindspore_benchmark_sink_of_several_steps(tmp_path: Path):
    """print_per_steps 10: a line covers round(Epoch time / per_step_time) = 10 steps, k counts
    sinks; the printed (one rank's) fps is not used."""
    log = tmp_path / "log"
    lines = [
        f"epoch: [{k}/4] step: [10/5004], loss is 6.9 Epoch time: {ms:5.3f} ms, "
        f"per_step_time: {ms / 10:.2f} ms, fps: 1 img/sec."
        for k, ms in enumerate([9000.0, 1000.0, 1100.0, 1000.0], 1)
    ]
    log.write_text("\n".join(lines) + "\n")
    result = PARSERS["mindspore_benchmark"]([log], RunFacts(16, 1, 1))
    assert [(r.step, r.steps) for r in result.records] == [(1, 10), (2, 10), (3, 10), (4, 10)]
    tp = run_throughput(result, Window(10, 30))
    assert tp.throughput_samples_per_s == pytest.approx(30 * 16 / 3.1)


def test_mindspore_bert_current_sinks_of_several_steps_and_both_time_monitor_formats(
    tmp_path: Path,
):
    """data_sink_steps 10: a TimeMonitor line covers round(epoch time / per step time) = 10 steps;
    the step is LossCallBack's global step before it. MindSpore 1.x's TimeMonitor printed `epoch
    time:` without the mode: read the same."""
    log = tmp_path / "log"
    lines = []
    for k, ms in enumerate([9000.0, 1000.0, 1100.0, 1000.0], 1):
        lines += [
            f"epoch: 0, current epoch percent: 0.001, step: {10 * k}, outputs are (Tensor(...))",
            f"{'Train ' if k % 2 else ''}epoch time: {ms:5.3f} ms, per step time: {ms / 10:5.3f} ms",
        ]
    log.write_text("\n".join(lines) + "\n")
    result = PARSERS["mindspore_bert_current"]([log], RunFacts(16, 1, 1))
    assert [(r.step, r.steps) for r in result.records] == [(10, 10), (20, 10), (30, 10), (40, 10)]
    tp = run_throughput(result, Window(10, 30))
    assert tp.throughput_samples_per_s == pytest.approx(30 * 16 / 3.1)


def test_megatron_samples_follow_consumed_samples_and_its_global_batch(tmp_path: Path):
    """Batch-size ramp-up: consumed samples advance 320, 640, 640 while ms/iteration holds."""
    log = tmp_path / "gpt.log"
    consumed = [320, 640, 1280, 1920]
    log.write_text(
        "\n".join(
            f" iteration {10 * (k + 1):8d}/{40:8d} | consumed samples: {c:12d} | elapsed time per "
            f"iteration (ms): 100.0 | global batch size: {32 if k == 0 else 64:5d} | lm loss: 1.0E+01 |"
            for k, c in enumerate(consumed)
        )
        + "\n"
    )
    result = PARSERS["megatron"]([log], RunFacts(8, 8, 1))
    assert [r.samples for r in result.records] == [320, 320, 640, 640]
    assert any("global batch size = 32 but the run facts say 64" in n for n in result.notes)
    tp = run_throughput(result, Window(10, 30))
    assert tp.window_samples == 1600
    assert tp.throughput_samples_per_s == pytest.approx(1600 / 3.0)
    assert tp.step_time_ms == pytest.approx([100.0, 100.0, 100.0])  # latency per iteration


def test_hugectr_and_wdl_latency_per_iteration():
    tp = run_throughput(BY_NAME["hugectr"].parse(), BY_NAME["hugectr"].window)
    assert tp.step_time_ms[0] == pytest.approx(0.213347 * 1000 / 100)
    wdl = run_throughput(BY_NAME["oneflow_wdl"].parse(), BY_NAME["oneflow_wdl"].window)
    assert wdl.step_time_ms[:3] == pytest.approx([29.0, 32.0, 29.0])


def test_run_facts_validate():
    with pytest.raises(ValueError, match="multiple of nodes"):
        RunFacts(32, 12, 5)
    with pytest.raises(ValueError, match="positive"):
        RunFacts(0, 1, 1)
    assert RunFacts(32, 16, 2).gpus_per_node == 8


def test_dle_pytorch_bert_current_adds_skipped_steps_to_the_counter():
    """DLE master prints dynamic_optimizer_step, which stands still while the GradScaler skips
    steps (0, 0, 0, 1, ...): with skipped_steps added back the iterations run 1..30, one each."""
    result = BY_NAME["dle_pytorch_bert_current"].parse()
    assert [r.step for r in result.records] == list(range(1, 31))
    assert {r.steps for r in result.records} == {1}
    assert any("training_sequences_per_second (whole run) = 6395.2" in n for n in result.notes)


@pytest.mark.parametrize(
    ("old", "current"),
    [
        ("dle_pytorch_bert", "dle_pytorch_bert_current"),
        ("dle_tf1_rn50", "dle_tf1_rn50_benchmark"),
        ("megatron", "megatron_current"),
        ("paddle_cv", "paddleclas"),
        ("paddle_nlp_bert", "paddlenlp_bert"),
    ],
)
def test_dlperf_v1_parsers_do_not_read_the_current_lines(old: str, current: str):
    """The current releases print other fields (no step_loss; total_ips, not imgs_per_sec; a
    stamp before Megatron's `iteration`): the DLPerf v1.0 parser refuses their lines instead of
    reading them wrong."""
    with pytest.raises(ParseError):
        PARSERS[old](BY_NAME[current].paths(), BY_NAME[current].facts)


def test_megatron_current_first_iteration_line_is_not_counted_twice():
    """core_v0.19.0 logs the run's first iteration and does not reset its interval timer then:
    iterations 2..10 last 10 * 2295.0 ms (line 10's average over 1..10) less line 1's 9000.0 ms.
    Read as DLPerf v1.0's Megatron would (9 * 2295.0 ms) they would take 48% longer."""
    result = BY_NAME["megatron_current"].parse()
    first, second = result.records[:2]
    assert (first.step, first.steps, first.samples) == (1, 1, 64)
    assert (second.step, second.steps, second.samples) == (10, 9, 576)
    assert second.duration_s == pytest.approx(10 * 2.295 - 9.0)
    tp = run_throughput(result, Window(1, 19))  # iterations 2..20: lines 10 and 20
    assert tp.throughput_samples_per_s == pytest.approx(19 * 64 / (13.95 + 10 * 1.52), rel=1e-9)


def test_megatron_current_first_iteration_line_alone(tmp_path: Path):
    """A run stopped before its second line: the first-iteration line is a record of its own."""
    log = tmp_path / "gpt.log"
    line = next(
        row for row in raw(BY_NAME["megatron_current"].paths()[0]) if "iteration        1/" in row
    )
    log.write_text(line + "\n")
    result = PARSERS["megatron_current"]([log], RunFacts(8, 8, 1, 2048))
    assert [(r.step, r.steps, r.samples, r.duration_s) for r in result.records] == [(1, 1, 64, 9.0)]


def test_tf2_orbit_without_absl_stamps_uses_the_printed_steps_per_sec(tmp_path: Path):
    """Only the bare stdout copies: a record lasts 100 steps / steps/sec as printed (one decimal:
    11.4, 11.5, 11.4 in the window), a coarser figure than the stamps give."""
    case = BY_NAME["tf2_orbit"]
    bare = tmp_path / "stdout.log"
    bare.write_text(
        "\n".join(line for line in raw(case.paths()[0]) if not line.startswith("I0410")) + "\n"
    )
    result = case.parse([bare])
    assert result.method is Method.STEP_TIMES
    tp = run_throughput(result, case.window)
    assert tp.throughput_samples_per_s == pytest.approx(
        300 * 2048 / (100 / 11.4 + 100 / 11.5 + 100 / 11.4), rel=1e-9
    )
    dropped = [n for n in case.parse().notes if "dropped 5 unstamped copies" in n]
    assert dropped


def test_tf2_orbit_prints_each_line_twice_and_the_row_limit_counts_each_once(tmp_path: Path):
    """Review: with steps_per_loop 1, both copies of orbit's lines counted against the rows a
    window can reach: "log ends after 62 iterations; the window needs 120", a valid log blamed."""
    from dlperf.parse.upstream.rows import rows_for

    log = tmp_path / "rank0.log"
    lines = []
    for step in range(1, 201):  # one step of 64 images every 0.25 s
        stamp = f"I0410 13:{step // 240:02d}:{step / 4 % 60:09.6f} 140111 controller.py:515] "
        line = f"train | step: {step:6d} | steps/sec:    4.0 | output: {{'loss': 1.0}}"
        lines += [stamp + line, line]
    log.write_text("\n".join(lines) + "\n")
    with rows_for(120, 1):
        result = PARSERS["tf2_orbit"]([log], RunFacts(64, 1, 1))
    tp = run_throughput(result, Window(20, 100))
    assert tp.throughput_samples_per_s == pytest.approx(64 / 0.25)


def test_paddlenlp_bert_without_stamps_uses_avg_batch_cost_with_a_note(tmp_path: Path):
    """Without the logger's prefix the records are timed by avg_batch_cost (0.45 / 0.47 s a step
    here, taken before the host waits for the loss): a higher figure than the stamps' one."""
    case = BY_NAME["paddlenlp_bert"]
    paths = []
    for path in case.paths():
        out = tmp_path / path.name
        out.write_text("\n".join(line.split(" - ", 1)[1] for line in raw(path)) + "\n")
        paths.append(out)
    result = case.parse(paths)
    assert result.method is Method.STEP_TIMES
    assert any("avg_batch_cost" in note and "overstate" in note for note in result.notes)
    tp = run_throughput(result, case.window)
    assert tp.throughput_samples_per_s == pytest.approx(2 * 15 * 32 / (15 * 0.47), rel=1e-9)


def test_paddlenlp_bert_avg_samples_of_another_batch_is_a_parse_error(tmp_path: Path):
    """avg_samples above the cell's batch (or never the batch) is another run's log: a
    ParseError at the line; a smaller mean (a last, partial batch) is noted."""
    case = BY_NAME["paddlenlp_bert"]
    with pytest.raises(ParseError) as err:
        case.parse(facts=RunFacts(16, 2, 1, 128))
    assert (err.value.path, err.value.line) == (str(case.paths()[0]), 1)
    assert "avg_samples = 32 but the cell's batch size per device 16" in str(err.value)
    with pytest.raises(ParseError, match="avg_samples = 32 but the cell's batch size per dev"):
        case.parse(facts=RunFacts(64, 2, 1, 128))
    paths = []
    for path in case.paths():
        text = path.read_text().replace("avg_samples: 32.00000", "avg_samples: 16.00000", 1)
        (tmp_path / path.name).write_text(text)
        paths.append(tmp_path / path.name)
    result = case.parse(paths)
    assert any("avg_samples 16 differs from the run's batch 32" in n for n in result.notes)


def test_paddleclas_reads_only_train_iteration_lines():
    """The epoch's `[Train][Epoch 1/1][Avg]` summary line is not a progress line; iteration ids
    are 0-based, so iteration i is the (i + 1)-th."""
    case = BY_NAME["paddleclas"]
    result = case.parse()
    rank0 = result.by_rank()[0]
    assert [r.step for r in rank0] == list(range(20))
    assert rank0[0].steps == 1 and rank0[0].duration_s == pytest.approx(3.2)
    assert all(r.line <= 20 for r in rank0)


def test_paddlenlp_bert_colour_codes_around_the_prefix(tmp_path: Path):
    """paddlenlp's logger is a colorlog ColoredFormatter (`%(log_color)s[...] [...]%(reset)s - `):
    whether its codes reach a redirected log was not verified, so they are accepted."""
    case = BY_NAME["paddlenlp_bert"]
    paths = []
    for path in case.paths():
        out = tmp_path / path.name
        lines = [f"\x1b[32m{a}\x1b[0m - {b}" for a, b in (x.split(" - ", 1) for x in raw(path))]
        out.write_text("\n".join(lines) + "\n")
        paths.append(out)
    result = case.parse(paths)
    assert result.method is Method.TIMESTAMPS
    tp = run_throughput(result, case.window)
    assert tp.throughput_samples_per_s == pytest.approx(case.throughput, rel=1e-6)


def test_hugectr_current_global_batch_is_the_logged_training_batchsize():
    """`Training batchsize: 32768` (2 x 8 x 2048) is the global batch; run facts of 2 x 8 x 1024
    are another run's: a ParseError at that line."""
    case = BY_NAME["hugectr_current"]
    with pytest.raises(ParseError, match="Training batchsize = 32768 but the cell's global"):
        case.parse(facts=RunFacts(1024, 16, 2))
    result = case.parse(facts=RunFacts(2048, 16, 2))
    assert {r.samples for r in result.records} == {32768}
    tp = run_throughput(result, case.window)
    assert tp.throughput_samples_per_s == pytest.approx(16 * 32768 / 0.16, rel=1e-9)


def test_dle_mxnet_rn50_current_counts_iterations_from_the_0_based_index():
    """`Iteration: 0` is the first batch done: records are iterations 1..20, one each; the
    epoch's `Epoch: 0  train.loss ... train.ips` and the `Summary:` lines are not records."""
    result = BY_NAME["dle_mxnet_rn50_current"].parse()
    assert [(r.step, r.steps) for r in result.records] == [(k, 1) for k in range(1, 21)]
    assert {r.samples for r in result.records} == {1024}


# ---------------------------------------------- Megatron-LM: real logs beyond the fixtures
# Genuine Megatron-LM log excerpts from public issues, docs and READMEs
# (tests/fixtures/logs/megatron_real, each file's comment names its source; the list is in
# docs/upstream-releases.md), read by both Megatron parsers. Every expected figure is worked out
# by hand from the excerpt's own numbers.

REAL = FIX / "megatron_real"


@dataclass(frozen=True)
class RealLog:
    file: str
    facts: RunFacts
    window: Window
    first: tuple[int, int, float]  # the first record's (iteration, iterations covered, samples)
    records: int
    throughput: float  # samples/s over the window, by hand
    tflops: float | None = None  # Megatron's own TFLOP/s/GPU over the window (time-weighted)


REAL_LOGS = [
    # Megatron-LM core_r0.5.0 (bare lines), every 10 iterations from iteration 10, global batch
    # 16: the first line covers iterations 1..10 (consumed samples 160), not one; window =
    # iterations 11..90 = lines 20..90 at 388.3 385.1 392.6 384.9 385.6 384.4 385.1 385.6 ms
    RealLog(
        "hwang2006_core_r0.5.0.log",
        RunFacts(4, 4, 1, 1024),
        Window(10, 80),
        (10, 10, 160),
        10,
        80 * 16 / (10 * (388.3 + 385.1 + 392.6 + 384.9 + 385.6 + 384.4 + 385.1 + 385.6) / 1000),
    ),
    # main of 2024-09 (`[YYYY-MM-DD HH:MM:SS]` stamps), the same run shape: iterations 11..40 =
    # lines 20..40 at 457.6 464.2 437.8 ms; the checkpoint save at 50 is not a record
    RealLog(
        "hwang2006_main_2024-09.log",
        RunFacts(4, 4, 1, 1024),
        Window(10, 30),
        (10, 10, 160),
        5,
        30 * 16 / (10 * (457.6 + 464.2 + 437.8) / 1000),
    ),
    # NVIDIA/Megatron-LM#756, every iteration, the excerpt from iteration 10 (one iteration, 128
    # samples, not ten); window = iterations 11..12; TFLOP/s/GPU 130.1 and 128.1 weighted by time
    RealLog(
        "megatron_lm_issue756_2024-03-30.log",
        RunFacts(8, 16, 2),
        Window(1, 2),
        (10, 1, 128),
        3,
        2 * 128 / ((10036.9 + 10198.4) / 1000),
        (130.1 * 10.0369 + 128.1 * 10.1984) / (10.0369 + 10.1984),
    ),
    # the same issue's second post, from iteration 71; window = 72..73 (238.7 and 224.0 TFLOP/s)
    RealLog(
        "megatron_lm_issue756_2024-04-06.log",
        RunFacts(8, 16, 2),
        Window(1, 2),
        (71, 1, 128),
        3,
        2 * 128 / ((5470.7 + 5829.9) / 1000),
        (238.7 * 5.4707 + 224.0 * 5.8299) / (5.4707 + 5.8299),
    ),
    # epfLLM/Megatron-LLM (2023, bare), every iteration from 122, global batch 1024: 123..125
    RealLog(
        "megatron_llm_issue11_2023.log",
        RunFacts(1024, 1, 1),
        Window(1, 3),
        (122, 1, 1024),
        4,
        3 * 1024 / ((87871.6 + 89474.8 + 89075.2) / 1000),
    ),
    # single lines: the only line, at iteration i, averages iterations 1..i. NVIDIA/nccl#743
    # (2022): iteration 10 (all 10 skipped by the loss scaler) at 356.2 ms, 40 samples
    RealLog(
        "nccl_issue743_2022-10-31.log",
        RunFacts(4, 1, 1),
        Window(0, 10),
        (10, 10, 40),
        1,
        40 / (10 * 0.3562),
    ),
    # FlagAI-Open/OpenSeek README (2025, FlagScale, torchrun's `[default0]:`): 271607.0 ms
    RealLog(
        "openseek_readme_2025-05-27.log",
        RunFacts(1024, 1, 1),
        Window(0, 1),
        (1, 1, 1024),
        1,
        1024 / 271.607,
        40.4,
    ),
    # NVIDIA-BioNeMo/bionemo-recipes#1357 (2025-12, Megatron Bridge): 7037.3 ms, 128 samples
    RealLog(
        "bionemo_recipes_pr1357_2025-12-05.log",
        RunFacts(128, 1, 1),
        Window(0, 1),
        (1, 1, 128),
        1,
        128 / 7.0373,
    ),
]


@pytest.mark.parametrize("parser", ["megatron", "megatron_current"])
@pytest.mark.parametrize("log", REAL_LOGS, ids=[log.file for log in REAL_LOGS])
def test_megatron_parsers_read_real_logs(parser: str, log: RealLog):
    from dlperf.measure.stats import window_records

    result = PARSERS[parser]([REAL / log.file], log.facts)
    first = result.records[0]
    assert (first.step, first.steps, first.samples) == log.first
    assert len(result.records) == log.records
    assert {r.rank for r in result.records} == {-1}
    tp = run_throughput(result, log.window)
    assert tp.throughput_samples_per_s == pytest.approx(log.throughput, rel=1e-9)
    window, _ = window_records(result.records, log.window)
    reported = result.reported_over("tflops_per_device", window)
    if log.tflops is None:
        assert reported is None and not result.reported
    else:
        assert reported == pytest.approx(log.tflops, rel=1e-9)


def test_megatron_current_reads_a_2024_log_without_a_first_iteration_line():
    """core_v0.6.0 to core_v0.15.x stamp seconds and print no first-iteration line: the line at
    iteration 10 covers 1..10 and line 20 its own 10 iterations at its own 457.6 ms (read as
    core_v0.16's, line 10 would be one iteration and line 20 would last 11 x 457.6 - 995.3 ms)."""
    result = PARSERS["megatron_current"]([REAL / "hwang2006_main_2024-09.log"], RunFacts(4, 4, 1))
    assert [(r.step, r.steps) for r in result.records] == [(k, 10) for k in (10, 20, 30, 40, 50)]
    assert result.records[1].duration_s == pytest.approx(10 * 0.4576)
    assert any("no first-iteration line" in n for n in result.notes)


def test_megatron_keeps_its_reported_tflops_beside_dlperfs_figure():
    """Megatron's `throughput per GPU (TFLOP/s/GPU)` stays out of the records (the throughput and
    the step times are the same with the field removed) and is kept per line, named in a note."""
    log = REAL / "megatron_lm_issue756_2024-03-30.log"
    result = PARSERS["megatron"]([log], RunFacts(8, 16, 2))
    kept = {(str(log), 6): 137.5, (str(log), 7): 130.1, (str(log), 8): 128.1}
    assert result.reported == {"tflops_per_device": kept}
    assert any("kept beside dlperf's figure" in n for n in result.notes)
    assert result.reported_over("tflops_per_device", result.records[1:]) == pytest.approx(
        (130.1 * 10.0369 + 128.1 * 10.1984) / (10.0369 + 10.1984), rel=1e-9
    )
    current_log = FIX / "megatron_current" / "1n8g_gpt_b8_fp16_1.log"
    current = PARSERS["megatron_current"]([current_log], RunFacts(8, 8, 1, 2048))
    assert len(current.reported["tflops_per_device"]) == 12  # core_v0.19.0's lines too


def test_megatron_reported_tflops_without_a_number_is_noted_not_kept(tmp_path: Path):
    stripped = tmp_path / "no_tflops.log"
    lines = raw(REAL / "megatron_lm_issue756_2024-03-30.log")
    stripped.write_text(
        "\n".join(re.sub(r"\(TFLOP/s/GPU\): \S+", "(TFLOP/s/GPU): n/a", x) for x in lines) + "\n"
    )
    result = PARSERS["megatron"]([stripped], RunFacts(8, 16, 2))
    tp = run_throughput(result, Window(1, 2))
    assert tp.throughput_samples_per_s == pytest.approx(2 * 128 / 20.2353, rel=1e-9)
    assert result.reported == {}
    assert result.reported_over("tflops_per_device", result.records) is None
    assert any("without a number" in n for n in result.notes)


def test_megatron_refuses_core_v016_lines_at_their_file_and_line():
    """DLPerf v1.0's parser claims a microsecond-stamped line (core_v0.16.0 on) and refuses it,
    naming file:line and the parser that reads it."""
    log = FIX / "megatron_current" / "1n8g_gpt_b8_fp16_1.log"
    with pytest.raises(ParseError, match=r"1n8g_gpt_b8_fp16_1\.log:5: .*megatron_current"):
        PARSERS["megatron"]([log], RunFacts(8, 8, 1, 2048))


@pytest.mark.parametrize("parser", ["megatron", "megatron_current"])
def test_megatron_log_of_two_versions_fails_at_the_first_line_of_the_second(
    parser: str, tmp_path: Path
):
    """Bare lines (core_r0.5.0) then stamped ones (2024-09 main) in one log: one run cannot change
    Megatron-LM version, and core_v0.16's first-iteration rule could not hold for both."""
    both = tmp_path / "both.log"
    bare = [x for x in raw(REAL / "hwang2006_core_r0.5.0.log") if x.startswith(" iteration")]
    stamped = [x for x in raw(REAL / "hwang2006_main_2024-09.log") if x.startswith(" [2024")]
    both.write_text("\n".join(bare[:2] + stamped[2:]) + "\n")
    with pytest.raises(ParseError, match=r"both\.log:3: .*stamp .* after lines with no stamp"):
        PARSERS[parser]([both], RunFacts(4, 4, 1))


def test_megatron_unreadable_stamp_fails_at_file_and_line(tmp_path: Path):
    """A doc's placeholder `[xxxx-xx-xx xx:xx:xx] iteration ...` (as a MindSpeed-LLM
    walkthrough shows one) is claimed and refused, not skipped."""
    log = tmp_path / "placeholder.log"
    line = next(x for x in raw(REAL / "hwang2006_main_2024-09.log") if "iteration       20/" in x)
    log.write_text(line.replace("[2024-09-14 19:44:24]", "[xxxx-xx-xx xx:xx:xx]") + "\n")
    with pytest.raises(ParseError, match=r"placeholder\.log:1: .*YYYY-MM-DD HH:MM:SS"):
        PARSERS["megatron"]([log], RunFacts(4, 4, 1))


@pytest.mark.parametrize("parser", ["megatron", "megatron_current"])
def test_megatron_parsers_do_not_claim_nemo2_progress_lines(parser: str):
    """NeMo 2's `Training epoch 0, iteration i/n | ... | train_step_timing in s: ...` is another
    source's line (bionemo-recipes#740): not read as Megatron-LM's."""
    with pytest.raises(ParseError, match="no Megatron `iteration i/n` lines"):
        PARSERS[parser]([REAL / "nemo2_bionemo_recipes_pr740.log"], RunFacts(1, 1, 1))


# ------------------------------------------- a log of another batch size or device count
# (source, the line that states it): the batch per device (or a global/node batch) and the
# devices/nodes where the log prints them. Such a log under another cell gave an ok figure scaled
# by the ratio (or the log's own figure filed under the wrong cell): now a ParseError there.
STATES_BATCH = [
    ("oneflow_cnn", 4),
    ("oneflow_bert", 1),
    ("oneflow_wdl", 1),
    ("oneflow_wdl_current", 5),
    ("oneflow_cnn_current", 38),
    ("oneflow_gpt", 33),  # micro_batch_size
    ("dle_pytorch_rn50", 1),
    ("dle_pytorch_rn50_current", 4),
    ("dle_pytorch_bert", 1),
    ("dle_pytorch_bert_current", 13),
    ("dle_tf1_rn50", 1),
    ("dle_tf1_rn50_benchmark", 13),
    ("dle_tf1_bert", 1),
    ("dle_tf1_bert_current", 8),
    ("dle_mxnet_rn50", 1),
    ("dle_mxnet_rn50_current", 1),
    ("gluoncv_rn50", 1),
    ("gluonnlp_bert", 1),
    ("paddle_cv", 2),
    ("paddle_nlp_bert", 2),
    ("paddlenlp_bert", 1),
    ("mindspore", 1),
    ("hugectr", 1),
    ("hugectr_current", 3),
]
STATES_DEVICES = [
    ("oneflow_cnn", 6),
    ("oneflow_bert", 2),
    ("oneflow_wdl", 1),  # the global batch: per device x devices
    ("oneflow_wdl_current", 5),
    ("oneflow_cnn_current", 24),
    ("libai", 4),
    ("oneflow_gpt", 39),  # num_gpus_per_node
    ("dle_mxnet_rn50_current", 1),
    ("paddle_cv", 2),
    ("mindspore", 1),
    ("hugectr", 1),
    ("hugectr_current", 3),
    ("megatron", 1),
]


@pytest.mark.parametrize("name,line", STATES_BATCH)
@pytest.mark.parametrize("scale", [2, 0.5])
def test_a_log_of_another_batch_size_is_a_parse_error(name: str, line: int, scale: float):
    if name == "dle_mxnet_rn50" and scale == 0.5:
        pytest.skip("DLE MXNet v1's batch_size is taken per device or global: 48 x 2 = 96")
    case = BY_NAME[name]
    facts = dataclasses.replace(
        case.facts, batch_size_per_device=int(case.facts.batch_size_per_device * scale)
    )
    with pytest.raises(ParseError) as err:
        case.parse(facts=facts)
    assert (err.value.path, err.value.line) == (str(case.paths()[0]), line)
    assert "the log says" in str(err.value) and "a log of another run shape" in str(err.value)


@pytest.mark.parametrize("name,line", STATES_DEVICES)
def test_a_log_of_another_device_count_is_a_parse_error(name: str, line: int):
    case = BY_NAME[name]
    facts = dataclasses.replace(case.facts, world_size=case.facts.world_size * 2)
    with pytest.raises(ParseError) as err:
        case.parse(facts=facts)
    assert (err.value.path, err.value.line) == (str(case.paths()[0]), line)
    assert "the log says" in str(err.value)


def test_paddle_nlp_bert_trainers_num_is_the_node_count():
    case = BY_NAME["paddle_nlp_bert"]
    with pytest.raises(ParseError, match=r"trainers_num \(nodes\) = 2 but the cell's number of"):
        case.parse(facts=RunFacts(64, 8, 1, 128))


# ------------------------------- a repeated, missing or out-of-order progress line (one rank)


def _mutated(case: Case, tmp_path: Path, edit) -> list[Path]:
    """The case's logs with `edit(lines) -> lines` applied (1-based line numbers stay in view)."""
    out = []
    for path in case.paths():
        lines = path.read_text().splitlines(keepends=True)
        target = tmp_path / path.name
        target.write_text("".join(edit(lines) if path == case.paths()[0] else lines))
        out.append(target)
    return out


@pytest.mark.parametrize(
    "name,edit,line,message",
    [
        # every `Iter: N` line doubled: was an ok figure 84% low
        (
            "hugectr",
            lambda ls: [x for x in ls for _ in range(2 if "Iter:" in x else 1)],
            9,
            "progress counter 100 repeats the previous line's counter",
        ),
        # `Batch [80-99]` deleted (both ranks' copies): the window still said 21-100, -17%
        (
            "dle_mxnet_rn50",
            lambda ls: ls[:10] + ls[12:],
            11,
            "progress counter 120 advances 40 from the previous line's 80 but covers 20",
        ),
        # rank 1's `[step 10]` line twice: -32%
        (
            "gluonnlp_bert",
            lambda ls: ls[:5] + [ls[4]] + ls[5:],
            6,
            "progress counter 10 repeats the previous line's counter",
        ),
        # rank 1's `[step 10]` moved after `[step 20]` (10 could start a new epoch: the gap after
        # it is what gives it away)
        (
            "gluonnlp_bert",
            lambda ls: ls[:4] + ls[5:7] + [ls[4]] + ls[7:],
            9,
            "progress counter 30 advances 20 from the previous line's 10",
        ),
    ],
)
def test_a_repeated_missing_or_swapped_progress_line_is_a_parse_error(
    tmp_path: Path, name: str, edit, line: int, message: str
):
    case = BY_NAME[name]
    assert run_throughput(case.parse(), case.window).throughput_samples_per_s == pytest.approx(
        case.throughput
    )
    with pytest.raises(ParseError) as err:
        case.parse(_mutated(case, tmp_path, edit))
    assert (err.value.path, err.value.line) == (str(tmp_path / case.paths()[0].name), line)
    assert message in str(err.value)


def test_a_progress_line_missing_between_regular_ones_is_a_parse_error(tmp_path: Path):
    """gluon-cv prints every log_interval batches: a counter advancing by two intervals means a
    line is missing (its interval's rate would be lost)."""
    case = BY_NAME["gluoncv_rn50"]
    lines = case.paths()[0].read_text().splitlines(keepends=True)
    at = next(i for i, x in enumerate(lines) if "Batch[60]\tSpeed" in x)
    with pytest.raises(ParseError) as err:
        case.parse(_mutated(case, tmp_path, lambda ls: ls[:at] + ls[at + 1 :]))
    assert err.value.line == at + 3  # Batch[80]'s Speed line, one line up
    assert "progress counter 80 advances 40 from the previous line's 40" in str(err.value)
    assert "a progress line is missing" in str(err.value)


def test_tf2_orbit_garbled_absl_timestamp_is_a_parse_error(tmp_path: Path):
    """`13:01:08.800000` read as `13:01:nan`: the line's absl prefix does not read, so it was
    skipped with its copy and the window ran over three times the steps; now a ParseError."""
    case = BY_NAME["tf2_orbit"]
    edit = lambda ls: [x.replace("13:01:08.800000", "13:01:nan") for x in ls]  # noqa: E731
    with pytest.raises(ParseError) as err:
        case.parse(_mutated(case, tmp_path, edit))
    assert (err.value.path, err.value.line) == (str(tmp_path / case.paths()[0].name), 18)
    assert "the absl prefix's timestamp is not" in str(err.value)
