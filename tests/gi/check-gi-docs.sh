#!/bin/sh
# check-gi-docs.sh DOCS_DIR: the API reference gi-docgen built (TAP): the
# pages a Python or JavaScript developer looks for are there and say what
# the introspection data says (an abstract monitor, setters that throw).
set -u
docs=$1
n=0
check() {
  n=$((n + 1))
  if [ -f "$docs/$1" ] && grep -q "$2" "$docs/$1"; then
    echo "ok $n - $1 has \"$2\""
  else
    echo "not ok $n - $1 has \"$2\""
  fi
}
check index.html 'LagWatch'
check class.Monitor.html 'abstract class LagWatch.Monitor'
check ctor.Monitor.new.html 'lagwatch_monitor_new'
check method.Config.try_set_signal.html 'GError'
check method.Monitor.try_set_threshold_ms.html 'GError'
check enum.ReportKind.html 'LAGWATCH_REPORT_KIND_HANG'
check method.Report.get_source_callback.html 'lagwatch_report_get_source_callback'
check lagwatch.devhelp2 'LagWatch'
echo "1..$n"
exit 0
