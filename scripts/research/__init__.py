"""The research studies' library, beside the scripts that run them (not part of the installed package): `ledger`
(every recorded run, append-only and hash-chained, and each table's rule), `stats` (seed-level tests and
intervals), `method_comparison` (one method against another over seeds), `markdown` (the tables' cells and the
sections of docs/results.md they replace), and `cycle` (warm start, train, evaluate, record, resume: the cycle every
study runs). A script run as `python scripts/<name>.py` imports it as `research`; the tests find it through
pytest's `pythonpath`."""
