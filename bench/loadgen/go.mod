module uhlp.dev/bench/loadgen

go 1.21
