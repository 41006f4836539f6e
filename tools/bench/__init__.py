"""Benchmarks: they print figures (throughput, DynamoDB requests per operation); they assert nothing."""
