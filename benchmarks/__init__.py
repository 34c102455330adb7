"""Paper reproductions and throughput benchmarks (never run by the test suite)."""
