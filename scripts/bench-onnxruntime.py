#!/usr/bin/env python3
"""ONNX Runtime's CPU execution provider on one model and batch, timed as `mnv2 bench` times a host backend
(warm-up runs, then timed session.run() calls on a uniform random input in [-1, 1], wall time per call);
prints the median in ms. The Python twin of bench-onnxruntime.js, for machines with the onnxruntime wheel
and no node (the GPU machine). Usage:

    python3 scripts/bench-onnxruntime.py MODEL BATCH WARMUP ITERS INTRA_THREADS
"""
import sys
import time

import numpy as np
import onnxruntime as ort


def main():
    model, batch, warmup, iters, threads = sys.argv[1], *map(int, sys.argv[2:6])
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    shape = [batch] + [d if isinstance(d, int) else 224 for d in inp.shape[1:]]
    x = np.random.default_rng(0).uniform(-1, 1, shape).astype(np.float32)
    for _ in range(warmup):
        sess.run(None, {inp.name: x})
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        sess.run(None, {inp.name: x})
        times.append((time.perf_counter() - t0) * 1e3)
    print(f"{np.median(times):.3f}")


if __name__ == "__main__":
    main()
