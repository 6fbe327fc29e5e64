"""The report stage: plots and the English and Chinese reports, rendered from one data model."""

from dlperf.report.build import build_report
from dlperf.report.model import ReportData
from dlperf.report.render import load_report_data, render_reports, render_text

__all__ = ["ReportData", "build_report", "load_report_data", "render_reports", "render_text"]
