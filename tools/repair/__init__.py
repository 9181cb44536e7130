"""``deltaguard repair``: fix the damage the audit finds, committed through the table's own
commit protocol (docs/guides/repair.md).

Modules, one job each: :mod:`.damage` (which live files are missing or broken),
:mod:`.raw_adds` (those files' ``add`` actions exactly as the log holds them),
:mod:`.remove_commit` (the one repair commit and whether deltaguard may write the table),
:mod:`.stranded` (DynamoDB temp commits to put back), :mod:`.committer` (the table's commit
protocol as a store), :mod:`.catch_up` (the commits that won a version the repair wanted),
:mod:`.run` (plan, re-read, commit, retry; exit codes), :mod:`.modes` and :mod:`.options`
(the command's own choices and options).
"""
