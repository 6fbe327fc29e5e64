"""NVIDIA DeepLearningExamples (dllogger) sources: PyTorch RN50/BERT, TF1 RN50/BERT.

All of them print `DLL {YYYY-MM-DD HH:MM:SS.ffffff} - {step} {key} : {value}  ...` and speak for the
whole job, so one table drives them: each line is timed by its dllogger timestamp (microseconds,
written when the step's line is logged) and covers the iterations its counter advanced since the
previous line. Their printed rates are not used: TF1 BERT's is an average since the previous print,
DLE PyTorch's total_ips is a per-iteration rate, and timestamps give the wall time directly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from dlperf.parse.records import Method, ParseResult
from dlperf.parse.upstream.lines import NUM, Line, Unreadable, stamp_of
from dlperf.parse.upstream.ranks import RunFacts, global_result
from dlperf.parse.upstream.rows import Row, collect, match
from dlperf.parse.upstream.stated import Stated, checker, stated

DLL = re.compile(r"^DLL (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?) - ?(.*)$")
FIELD = re.compile(r"(\S+) : (\S+)")


@dataclass(frozen=True)
class DllSource:
    what: str  # names the lines in messages
    claim: re.Pattern[str]  # the progress line's prefix (after the timestamp)
    step: re.Pattern[str]  # the step part: groups `epoch` (optional) and `counter`
    needed: str  # a field every progress line carries as a number
    family: tuple[str, ...]  # field names (or prefixes) of a progress line; others: other records
    rank_field: str | None = None  # a field naming the rank that printed (TF1 BERT with Horovod)
    skipped_field: str | None = None  # steps the printed counter left out (skipped AMP steps)
    repeat_is_iteration: bool = False  # a line repeating the previous counter ran one iteration
    zero_based: bool = False  # the counter is the 0-based index of the line's last iteration
    stated: tuple[Stated, ...] = ()  # the run shape its PARAMETER/argument lines print
    reported: str | None = None  # the line's own throughput field, kept in ParseResult.reported


# the batch and world size dllogger's PARAMETER lines print (`batch_size : 256`), or argparse's
# Namespace (`train_batch_size=64`) inside one
_PARAM_BATCH = stated(r"(?<![\w.])batch_size : (\d+)(?!\S)", "batch_size", "per_device")
_PARAM_WORLD = stated(r"(?<![\w.])world_size : (\d+)(?!\S)", "world_size", "world")
_BERT_BATCH = stated(r"(?<![\w.])train_batch_size=(\d+)\b", "train_batch_size", "per_device")


def _claim(step_prefix: str) -> re.Pattern[str]:
    return re.compile(r"^DLL \d{4}-\d\d-\d\d \S+ - ?" + step_prefix)


SOURCES = {
    "dle_pytorch_rn50": DllSource(
        "DLE PyTorch RN50 `Epoch: e Iteration: i`",
        _claim(r"Epoch: \d+ Iteration:"),
        re.compile(r"Epoch: (?P<epoch>\d+) Iteration: (?P<counter>\d+)(?=\s|$)"),
        "train.total_ips",
        ("train.",),
        stated=(_PARAM_BATCH, _PARAM_WORLD),
    ),
    "dle_pytorch_bert": DllSource(
        "DLE PyTorch BERT `Training Epoch: e Training Iteration: i`",
        _claim(r"Training Epoch: \d+ Training Iteration:"),
        re.compile(r"Training Epoch: (?P<epoch>\d+) Training Iteration: (?P<counter>\d+)(?=\s|$)"),
        "step_loss",
        ("average_loss", "step_loss", "learning_rate"),
        stated=(_BERT_BATCH,),
    ),
    # DLE master's run_pretraining.py (a0781f8): the counter is `dynamic_optimizer_step`, optimizer
    # steps minus those the GradScaler skipped (inf/nan), so it stands still while AMP finds its
    # loss scale; `skipped_steps` (the skips so far) added back gives the iterations run.
    "dle_pytorch_bert_current": DllSource(
        "DLE PyTorch BERT `Training Epoch: e Training Iteration: i  average_loss`",
        _claim(r"Training Epoch: \d+ Training Iteration:"),
        re.compile(r"Training Epoch: (?P<epoch>\d+) Training Iteration: (?P<counter>\d+)(?=\s|$)"),
        "average_loss",
        ("average_loss", "learning_rate", "skipped_steps"),
        skipped_field="skipped_steps",
        stated=(_BERT_BATCH,),
    ),
    # DLE master's MXNet RN50 (fit.py, last changed 810bcf3): rank 0 logs `dllogger.log((epoch,
    # i), {'train.loss', 'train.ips', 'train.lr'})` every disp_batches, i the 0-based index of the
    # batch just done (enumerate), through log_utils.format_step: `Epoch: e Iteration: i`.
    "dle_mxnet_rn50_current": DllSource(
        "DLE MXNet RN50 `Epoch: e Iteration: i  train.ips`",
        _claim(r"Epoch: \d+ Iteration:"),
        re.compile(r"Epoch: (?P<epoch>\d+) Iteration: (?P<counter>\d+)(?=\s|$)"),
        "train.ips",
        ("train.",),
        zero_based=True,
        stated=(stated(r"(?<![\w.])batch_size : (\d+)(?!\S)", "batch_size", "global"),),
    ),
    "dle_tf1_rn50": DllSource(
        "DLE TF1 RN50 `(epoch, step) imgs_per_sec`",
        _claim(r"\(\d"),
        re.compile(r"\((?:(?P<epoch>\d+),\s*)?(?:\d+,\s*)*(?P<counter>\d+),?\)(?=\s|$)"),
        "imgs_per_sec",
        ("imgs_per_sec", "cross_entropy", "l2_loss", "total_loss", "learning_rate"),
        stated=(_PARAM_BATCH,),
    ),
    # The last TF1 ConvNets (9de48bc) in `--mode=training_benchmark`: BenchmarkLoggingHook prints
    # `(0, current_step) total_ips : {ips}`, the hook's own 0-based step count after its warm-up.
    "dle_tf1_rn50_benchmark": DllSource(
        "DLE TF1 RN50 benchmark `(0, step) total_ips`",
        _claim(r"\(\d"),
        re.compile(r"\((?:(?P<epoch>\d+),\s*)?(?:\d+,\s*)*(?P<counter>\d+),?\)(?=\s|$)"),
        "total_ips",
        ("total_ips",),
        stated=(_PARAM_BATCH,),
        reported="total_ips",
    ),
    "dle_tf1_bert": DllSource(
        "DLE TF1 BERT `Iteration: i  throughput_train`",
        _claim(r"Iteration: \d"),
        re.compile(r"Iteration: (?P<counter>\d+)(?=\s|$)"),
        "throughput_train",
        ("throughput_train", "mlm_loss", "nsp_loss", "total_loss", "avg_loss_step", "Rank"),
        rank_field="Rank",
        # with --use_fp16 (DLE fed7ba9 optimization.py: `new_global_step = tf.cond(
        # all_are_finite, global_step + 1, global_step)`, loss scale from 2**32) the hook prints
        # `Iteration: 1` again after every skipped update: each repeat is one more iteration
        repeat_is_iteration=True,
        stated=(
            stated(r"(?<![\w.])train_batch_size : (\d+)(?!\S)", "train_batch_size", "per_device"),
        ),
    ),
    # DLE master's TF1 BERT (run_pretraining.py last changed 71aab7b, June 2022; TF1 retired at
    # 9de48bc): rank 0's _LogSessionRunHook logs `Iteration: {global step + 1}` at 1 and every
    # display_loss_steps (the adapter: 1), without a Rank field. With AMP the graph keeps the
    # global step where the loss scaler skipped the update (optimization.py: `tf.cond(
    # all_are_finite, global_step + 1, global_step)`), so while the scale settles from 2**32 the
    # counter repeats: each repeat is one more iteration run.
    "dle_tf1_bert_current": DllSource(
        "DLE TF1 BERT `Iteration: i  throughput_train`",
        _claim(r"Iteration: \d"),
        re.compile(r"Iteration: (?P<counter>\d+)(?=\s|$)"),
        "throughput_train",
        (
            "throughput_train",
            "mlm_loss",
            "nsp_loss",
            "total_loss",
            "avg_loss_step",
            "learning_rate",
            "loss_scaler",
        ),
        repeat_is_iteration=True,
        # run_pretraining.py's `tf.compat.v1.logging.info("  Batch size = %d", train_batch_size)`
        stated=(stated(r"^Batch size = (\d+)$", "Batch size", "per_device"),),
    ),
}


def _number(fields: dict[str, str], key: str) -> float:
    value = fields[key]
    if not re.fullmatch(NUM, value):
        raise Unreadable(f"{key} is not a number: {value!r}")
    return float(value)


def _reader(source: DllSource):
    previous: dict[tuple[int, int | None], int] = {}  # the last counter of each file/tag stream

    def read(line: Line) -> Row | None:
        m = match(DLL, line, "`DLL <timestamp> - <step> <key> : <value> ...`")
        rest = m[2]
        step = source.step.match(rest)
        if not step:
            raise Unreadable(f"expected {source.what}")
        fields = dict(FIELD.findall(rest[step.end() :]))
        if source.needed not in fields:
            if fields and not any(k.startswith(source.family) for k in fields):
                return None  # another record at the same step (validation, summary)
            raise Unreadable(f"no `{source.needed} : <number>`")
        needed = _number(fields, source.needed)
        rank = (
            int(_number(fields, source.rank_field))
            if source.rank_field and source.rank_field in fields
            else None
        )
        epoch = int(step["epoch"]) if step.groupdict().get("epoch") else None
        counter = int(step["counter"]) + int(source.zero_based)
        if source.skipped_field:
            counter += int(_number(fields, source.skipped_field))
        if source.repeat_is_iteration:
            stream = (line.file_index, line.tag_rank)
            last = previous.get(stream)
            if last is not None and counter < last:  # a global step: no epoch starts it again
                raise Unreadable(f"counter {counter} goes back from {last}: a restarted run")
            previous[stream] = counter
            steps = counter - last if last is not None and counter > last else 1
            row = Row(
                line,
                counter,
                counter=counter,
                steps=steps,
                key=(line.file_index, line.lineno),  # one rank prints; repeats are not ranks
                rank=rank,
                time_s=stamp_of(m[1]),
                repeats=True,
            )
        else:
            row = Row(
                line,
                counter,
                counter=counter,
                key=(epoch, counter),
                rank=rank,
                time_s=stamp_of(m[1]),
            )
        if source.reported:
            row.reported[source.reported] = (
                needed if source.reported == source.needed else _number(fields, source.reported)
            )
        return row

    return read


def _parse(
    name: str, logs: list[Path], facts: RunFacts, other=None, notes: list[str] | None = None
) -> ParseResult:
    source = SOURCES[name]
    notes = notes if notes is not None else []
    rows = collect(logs, source.claim, _reader(source), notes, checker(facts, source.stated, other))
    notes.insert(
        0, "timed by dllogger timestamps; a record covers the iterations since the previous line"
    )
    return global_result(logs, rows, facts, Method.TIMESTAMPS, notes, source.what)


def parse_dle_mxnet_rn50_current(logs: list[Path], facts: RunFacts) -> ParseResult:
    """Release current of DLE MXNet RN50 (729963d): rank 0's dllogger line `DLL <datetime> -
    Epoch: e Iteration: i train.loss : l train.ips : r images/s train.lr : x` every disp_batches
    (i 0-based: i + 1 iterations done); the epoch's own `Epoch: e train.loss ... train.ips` line
    and the `Summary:` line are not progress lines.

    Method: timestamps (dllogger `Epoch: e Iteration: i`, i 0-based); job-wide (rank -1), the
    iterations since the previous line."""
    return _parse("dle_mxnet_rn50_current", logs, facts)


def parse_dle_pytorch_rn50(logs: list[Path], facts: RunFacts) -> ParseResult:
    """One line per iteration; the first iterations are slow (skip them with the window).

    Method: timestamps (dllogger); job-wide (rank -1), the iterations since the previous line."""
    return _parse("dle_pytorch_rn50", logs, facts)


FINAL_BERT = re.compile(rf"^DLL \S+ \S+ - .*training_sequences_per_second : ({NUM})")


def _parse_bert(name: str, logs: list[Path], facts: RunFacts) -> ParseResult:
    """_parse, with the run's final training_sequences_per_second kept as a note."""
    notes: list[str] = []

    def final(line: Line) -> None:
        if m := FINAL_BERT.match(line.text):
            notes.append(
                f"the source's own training_sequences_per_second (whole run) = {float(m[1])}"
            )

    return _parse(name, logs, facts, final, notes)


def parse_dle_pytorch_bert(logs: list[Path], facts: RunFacts) -> ParseResult:
    """Training Iteration counts optimizer steps (with accumulation: the accumulated batch).

    The final `training_sequences_per_second` (the source's own figure over the whole run,
    warm-up included) is kept as a note, not used.

    Method: timestamps (dllogger); job-wide (rank -1), the iterations since the previous line.
    """
    return _parse_bert("dle_pytorch_bert", logs, facts)


def parse_dle_pytorch_bert_current(logs: list[Path], facts: RunFacts) -> ParseResult:
    """DLE master's BERT: `average_loss`, `learning_rate`, `skipped_steps` every log_freq steps;
    the iterations run are the printed counter plus skipped_steps. The final step prints only
    `final_loss` (not a progress line); the run's `training_sequences_per_second` is kept as a note.

    Method: timestamps (dllogger), as parse_dle_pytorch_bert; job-wide (rank -1), the iterations
    since the previous line (the iterations run are the printed counter plus skipped_steps).
    """
    return _parse_bert("dle_pytorch_bert_current", logs, facts)


def parse_dle_tf1_rn50(logs: list[Path], facts: RunFacts) -> ParseResult:
    """The training hook hides the first 20 steps: the counter starts above 20.

    Method: timestamps (dllogger); job-wide (rank -1), the iterations since the previous line."""
    return _parse("dle_tf1_rn50", logs, facts)


def parse_dle_tf1_rn50_benchmark(logs: list[Path], facts: RunFacts) -> ParseResult:
    """`--mode=training_benchmark`: one `total_ips` line per display_every steps, counted from 0
    after the hook's warm-up (the adapter sets it to 0). Only Horovod rank 0 logs. The printed
    `total_ips` (the hook's global batch over that step's seconds) is kept in
    ParseResult.reported, never used.

    Method: timestamps (dllogger), as parse_dle_tf1_rn50; job-wide (rank -1), the iterations since
    the previous line (`--mode=training_benchmark`'s `total_ips` lines, the counter from 0 after the
    hook's warm-up)."""
    return _parse("dle_tf1_rn50_benchmark", logs, facts)


def parse_dle_tf1_bert_current(logs: list[Path], facts: RunFacts) -> ParseResult:
    """DLE master's TF1 BERT with display_loss_steps 1: a line per iteration from rank 0. A line
    covers the counter's advance since the previous line, and one iteration where it repeats the
    previous counter (an AMP step whose update the loss scaler skipped: the global step stays).
    The run's final `throughput_train` and `total_loss` (step `()`, no `Iteration:`) are not
    progress lines.

    Method: timestamps (dllogger), as parse_dle_tf1_bert; job-wide (rank -1), the iterations since
    the previous line (a line repeating the previous counter, an AMP-skipped update, covers one
    iteration)."""
    return _parse("dle_tf1_bert_current", logs, facts)


def parse_dle_tf1_bert(logs: list[Path], facts: RunFacts) -> ParseResult:
    """Printed at iteration 1 and every display_every (10) iterations after: a line covers the
    iterations since the previous one (1, 9, 10, 10, ...), and one iteration where it repeats the
    previous counter (AMP: an update the loss scaler skipped leaves the global step, so the first
    lines repeat `Iteration: 1` while the scale settles). `Skipping time record` lines are noise.
    With Horovod only rank 0 prints; copies from other ranks (a `Rank : r` field) are dropped.

    Method: timestamps (dllogger); job-wide (rank -1), the iterations since the previous line.
    """
    return _parse("dle_tf1_bert", logs, facts)
