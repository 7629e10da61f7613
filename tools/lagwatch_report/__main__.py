"""python3 -m lagwatch_report: the same as the command lagwatch-report."""

from .cli import run

run()
