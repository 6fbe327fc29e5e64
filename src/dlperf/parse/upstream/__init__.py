"""Parsers of the upstream benchmark sources' logs (what DLPerf drove), one per source.

An upstream adapter binds each of its models (and each release's) to one of these functions
(`UpstreamAdapter.parsers`, `Release.parsers`); dlperf.adapters.upstream_parsers() lists those
in use by name.

Every parser is `parse_<source>(logs: list[Path], facts: RunFacts) -> ParseResult`: `logs` are the
run's task logs (one per rank, or one per node for per-node launchers), `facts` the run's batch
size and layout (see RunFacts). Lines may carry Horovod/MPI (`[1,3]<stdout>:`), torchrun
(`[default3]:`), absl and Python logging prefixes; unrelated lines are skipped; a progress line that
cannot be read raises ParseError naming file:line (a last line cut off without a newline is skipped
with a note). Each result records its Method and notes on what a record covers.

Per source, the method and what one record covers (J: job-wide, rank -1; R: one rank's own):
- oneflow_cnn, oneflow_bert, oneflow_wdl: timestamps (time.time() ends the line); J, one interval
- oneflow_cnn_current: printed rates (each rank's own samples/s); R, the iterations since the
  previous line
- oneflow_wdl_current: step times (`latency(ms)` x iterations); J (rank 0 prints), the iterations
  since the previous line
- oneflow_face: printed rates (the job's samples/s since the previous line); J, the iterations
  since the previous line
- oneflow_gpt: printed rates (the job's samples/s since the previous row, its samples the advance
  of the `samples` column); J, the steps since the previous row (table or normal format)
- libai: step times (the advance of the running mean s/iter x the timed iterations); J (rank 0
  prints), the iterations since the previous line
- dle_pytorch_rn50, dle_pytorch_bert, dle_tf1_rn50, dle_tf1_bert: timestamps (dllogger); J, the
  iterations since the previous line
- dle_pytorch_bert_current: as dle_pytorch_bert; the iterations run are the printed counter plus
  skipped_steps
- dle_tf1_rn50_benchmark: as dle_tf1_rn50; `--mode=training_benchmark`'s `total_ips` lines, the
  counter from 0 after the hook's warm-up
- dle_tf1_bert_current: as dle_tf1_bert; a line repeating the previous counter (an AMP-skipped
  update) covers one iteration
- dle_mxnet_rn50: timestamps (asctime prefix), else printed rates; J, `Batch [a-b]` = b - a iters
- dle_mxnet_rn50_current: timestamps (dllogger `Epoch: e Iteration: i`, i 0-based); J
- gluoncv_rn50: printed job-wide rates (asctime stamps if every line has one); J, log_interval
- gluonnlp_bert: step times (latency x steps); R, log_interval steps
- insightface_partial_fc: timestamps (asctime after the `rank-id:r:` prefix); J (rank 0 logs),
  the updates since the previous line
- paddle_cv: timestamps (asctime prefix), else step times (elapse); R, the printed batch(es)
- paddle_nlp_bert: printed rates (steps/s / trainers x global batch); J, skip_steps steps
- paddleclas: step times (batch_cost, the mean since the previous line); R, the iterations since
  the previous line
- paddleclas_v24: step times (batch_cost, a running mean since iteration 5: each line's total
  less the previous line's); R, rank 0 only (PaddleClas v2.4 as the paddleclas wheel ships it)
- paddlenlp_bert: timestamps (the logger's asctime prefix), else step times (avg_batch_cost); R,
  logging_steps steps
- tf2_rn50: step times (TimeHistory seconds); J, `between steps a and b`
- tf2_bert: timestamps (absl prefix, year-less); J, steps_per_loop steps
- tf2_orbit: timestamps (absl prefix), else printed steps/sec; J, steps_per_loop steps (release
  current's ResNet-50 and BERT: orbit's Controller line)
- pytorch_examples: step times (`Time` of the batch); R, one printed batch (both releases)
- mindspore: step times (`epoch time`); R, one sink (one step with DLPerf's sink_size=1)
- mindspore_benchmark: step times (`Epoch time` of a sink); R, one sink of print_per_steps steps
- mindspore_bert_current: step times (TimeMonitor's `Train epoch time` of a sink); R, one sink of
  data_sink_steps steps
- hugectr: step times (`Time(n iters)`); J, n iterations
- hugectr_current: as hugectr, the `[HCTR][..][INFO][RK0][main]: ` logger's line
- megatron: step times (ms per iteration x iterations); J, log_interval iterations; lines bare or
  after core_v0.6.0-v0.15's `[YYYY-MM-DD HH:MM:SS]` stamp; a printed TFLOP/s/GPU is kept beside
- megatron_current: as megatron, and core_v0.16+'s microsecond stamp, where the line after the
  first iteration's covers the iterations since it, timed by its average times all of them less
  the first iteration's
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from dlperf.parse.records import ParseResult
from dlperf.parse.upstream.dllogger import (
    parse_dle_mxnet_rn50_current,
    parse_dle_pytorch_bert,
    parse_dle_pytorch_bert_current,
    parse_dle_pytorch_rn50,
    parse_dle_tf1_bert,
    parse_dle_tf1_bert_current,
    parse_dle_tf1_rn50,
    parse_dle_tf1_rn50_benchmark,
)
from dlperf.parse.upstream.hugectr import parse_hugectr, parse_hugectr_current
from dlperf.parse.upstream.megatron import parse_megatron, parse_megatron_current
from dlperf.parse.upstream.mindspore import (
    parse_mindspore,
    parse_mindspore_benchmark,
    parse_mindspore_bert_current,
)
from dlperf.parse.upstream.mxnet import (
    parse_dle_mxnet_rn50,
    parse_gluoncv_rn50,
    parse_gluonnlp_bert,
    parse_insightface_partial_fc,
)
from dlperf.parse.upstream.oneflow import (
    parse_libai,
    parse_oneflow_bert,
    parse_oneflow_cnn,
    parse_oneflow_cnn_current,
    parse_oneflow_face,
    parse_oneflow_wdl,
    parse_oneflow_wdl_current,
)
from dlperf.parse.upstream.oneflow_gpt import parse_oneflow_gpt
from dlperf.parse.upstream.paddle import (
    parse_paddle_cv,
    parse_paddle_nlp_bert,
    parse_paddleclas,
    parse_paddleclas_v24,
    parse_paddlenlp_bert,
)
from dlperf.parse.upstream.pytorch_examples import parse_pytorch_examples
from dlperf.parse.upstream.ranks import RunFacts
from dlperf.parse.upstream.tensorflow import parse_tf2_bert, parse_tf2_orbit, parse_tf2_rn50

Parser = Callable[[list[Path], RunFacts], ParseResult]

__all__ = [
    "Parser",
    "RunFacts",
    "parse_dle_mxnet_rn50",
    "parse_dle_mxnet_rn50_current",
    "parse_dle_pytorch_bert",
    "parse_dle_pytorch_bert_current",
    "parse_dle_pytorch_rn50",
    "parse_dle_tf1_bert",
    "parse_dle_tf1_bert_current",
    "parse_dle_tf1_rn50",
    "parse_dle_tf1_rn50_benchmark",
    "parse_gluoncv_rn50",
    "parse_gluonnlp_bert",
    "parse_hugectr",
    "parse_hugectr_current",
    "parse_insightface_partial_fc",
    "parse_libai",
    "parse_megatron",
    "parse_megatron_current",
    "parse_mindspore",
    "parse_mindspore_benchmark",
    "parse_mindspore_bert_current",
    "parse_oneflow_bert",
    "parse_oneflow_cnn",
    "parse_oneflow_cnn_current",
    "parse_oneflow_face",
    "parse_oneflow_gpt",
    "parse_oneflow_wdl",
    "parse_oneflow_wdl_current",
    "parse_paddle_cv",
    "parse_paddle_nlp_bert",
    "parse_paddleclas",
    "parse_paddleclas_v24",
    "parse_paddlenlp_bert",
    "parse_pytorch_examples",
    "parse_tf2_bert",
    "parse_tf2_orbit",
    "parse_tf2_rn50",
]
