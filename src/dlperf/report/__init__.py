"""The report stage: plots and the English and Chinese reports, rendered from one data model
(build_report in dlperf.report.build, render_reports in dlperf.report.render). Nothing is imported
here: the workflow reads baselines through dlperf.report.load when it starts, and must not pay
for matplotlib on every dry run."""
