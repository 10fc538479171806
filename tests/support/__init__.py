"""Helpers shared by the tests and the benchmarks (bench/ imports from here, never the other way
round)."""
