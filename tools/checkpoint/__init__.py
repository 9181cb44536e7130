"""``deltaguard checkpoint``: writes a Delta checkpoint of a table version without Spark
(docs/guides/checkpoint.md)."""
