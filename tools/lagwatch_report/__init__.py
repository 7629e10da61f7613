"""lagwatch-report: the lags of many runs, programs and machines, grouped by cause.

The command `lagwatch-report` (tools/lagwatch-report) runs cli.main().
The package, in the order a record travels through it:

- reader: opens the inputs (JSON Lines, gzip'd or not, journal exports
  and journal files), reads them one bounded line at a time and hands
  each record to the grouping;
- grouping: the causes (one per fingerprint) and what is kept of each, in
  memory that grows with the number of causes, not of records;
- symbolizer: names the frames that had no name in the field, offline,
  from debug files (eu-addr2line);
- naming: what every output shares: a cause's name, its merged stacks,
  durations and times as text;
- lags: for speedscope and chrome, a grouping that also keeps each lag's
  call tree, stacks and sampling interval and the frames' file:line (memory
  that grows with the lags: the size of those outputs, which show each);
- one module per output format: text, folded, speedscope, chrome, html_page.

Python 3.11 or later, its standard library only; checked with
`mypy --strict` (tests/report/check-types.py).
"""
