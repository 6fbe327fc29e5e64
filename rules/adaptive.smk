# Adaptive repeats (dlperf.measure.repeats): after its `repeats` runs, each cell gets one more run at a
# time while a decision (a checkpoint that reads its runs so far) says its median is not known
# well enough, up to adaptive_repeats.max. A suite without adaptive_repeats has none of these jobs.
# Helpers: rules/common_searches.smk.


checkpoint repeat_decision:
    input:
        unpack(decision_inputs),
        code=CAMPAIGN.code_inputs("repeat_decision"),
    output:
        REPEAT_DECISION_PATTERN,
    log:
        REPEAT_DECISION_LOG_PATTERN,
    wildcard_constraints:
        runs=r"[1-9][0-9]*",
    conda:
        "../envs/dlperf.yaml"
    params:
        settings=adaptive_params,
    script:
        "../workflow/scripts/repeat_decision.py"


rule adaptive_runs:
    input:
        unpack(decided_runs),
        code=CAMPAIGN.code_inputs("adaptive_runs"),
    output:
        ADAPTIVE_RUNS_PATTERN,
    log:
        ADAPTIVE_RUNS_LOG_PATTERN,
    conda:
        "../envs/dlperf.yaml"
    script:
        "../workflow/scripts/adaptive_runs.py"
