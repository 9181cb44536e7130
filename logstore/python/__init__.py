"""deltaguard LogStores: conditional-write and DynamoDB commit protocols (JVM jar + Python)."""
