"""Job performance models: loss curves, quality curves, throughput and speedup."""
