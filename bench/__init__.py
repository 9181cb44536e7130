"""deltaguard benchmarks (`make bench`): JSON results plus a markdown table in bench/results/."""
