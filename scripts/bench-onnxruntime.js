// ONNX Runtime's CPU execution provider on one model and batch, timed the way `mnv2 bench` times a host
// backend: warm-up runs, then timed runs of session.run() on a uniform random input in [-1, 1] (wall time
// per call, the input tensor made once). Prints one JSON line. Driven by bench-cpu-vs-onnxruntime.sh.
//
// usage: node bench-onnxruntime.js MODEL BATCH WARMUP ITERS INTRA_THREADS INTER_THREADS
// onnxruntime-node is found through NODE_PATH (the script installs it into a cache folder).
'use strict';

const ort = require('onnxruntime-node');

function percentile(sorted, p) {
  // Linear interpolation between closest ranks (type 7), like the engine's stats.
  const h = (sorted.length - 1) * p;
  const lo = Math.floor(h);
  const hi = Math.min(sorted.length - 1, lo + 1);
  return sorted[lo] + (h - lo) * (sorted[hi] - sorted[lo]);
}

async function main() {
  const [model, batchText, warmupText, itersText, intraText, interText] = process.argv.slice(2);
  if (!interText) {
    console.error('usage: node bench-onnxruntime.js MODEL BATCH WARMUP ITERS INTRA_THREADS INTER_THREADS');
    process.exit(2);
  }
  const batch = Number(batchText), warmup = Number(warmupText), iters = Number(itersText);
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    intraOpNumThreads: Number(intraText),
    interOpNumThreads: Number(interText),
  });
  const name = session.inputNames[0];
  const meta = session.inputMetadata ? session.inputMetadata[0] : null;
  const dims = meta && meta.shape ? meta.shape.map((d, i) => (typeof d === 'number' ? d : i === 0 ? batch : NaN))
                                  : [batch, 3, 224, 224];
  if (dims.some((d) => !Number.isFinite(d))) throw new Error('input shape ' + JSON.stringify(meta.shape));
  dims[0] = batch;
  const count = dims.reduce((a, b) => a * b, 1);
  const data = new Float32Array(count);
  let state = 1;  // a small LCG: the figures must not depend on the values, only never be all zeros
  for (let i = 0; i < count; ++i) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    data[i] = (state / 4294967296) * 2 - 1;
  }
  const feeds = {[name]: new ort.Tensor('float32', data, dims)};

  for (let i = 0; i < warmup; ++i) await session.run(feeds);
  const ms = [];
  for (let i = 0; i < iters; ++i) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const sorted = ms.slice().sort((a, b) => a - b);
  const mean = ms.reduce((a, b) => a + b, 0) / ms.length;
  let version = 'unknown';
  try {
    version = require('onnxruntime-node/package.json').version;
  } catch (e) {
  }
  console.log(JSON.stringify({
    impl: 'onnxruntime',
    version,
    batch,
    iters,
    median_ms: percentile(sorted, 0.5),
    p90_ms: percentile(sorted, 0.9),
    min_ms: sorted[0],
    mean_ms: mean,
  }));
}

main().catch((e) => {
  console.error('onnxruntime: ' + (e && e.message ? e.message : e));
  process.exit(1);
});
