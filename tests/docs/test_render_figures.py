#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The figure renderer's own checks can fail: scripts/render-figures.py run on a copy of real measurement files.

Each case builds a small repository in a temporary folder (the spec and the bench files it names, copied from
this repository) and a document with marker blocks, then runs the script as CI does.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "scripts", "render-figures.py")
FP16 = "docs/bench/h200-2026-11-29-issue32/table-fp16/r3_bench_fp16.json"
ANCHOR = "docs/bench/h200-2026-11-29-issue32/table-fp16/r3_anchor.json"
OTHER_CALL = "docs/bench/h200-2026-11-29-issue32/table/r3_anchor.json"
H100 = "docs/bench/h100-2026-11-26-tf32/final-round2/r2_bench_fp16.json"
GEMM = "docs/bench/h200-2026-11-29-issue32b/call1-gemm-ncu/gemm_bench.json"
GOLDEN = "docs/bench/h200-2026-11-29-issue32c/call2-gpu-suite/contract_with_second_export.log"
ZEN4 = "docs/bench/zen4-2vcpu-2026-11-23-cpu-vs-onnxruntime.txt"
XEON = "docs/bench/h200-host-xeon-2026-11-23-cpu-vs-onnxruntime.txt"
PROFILE = "docs/bench/h200-2026-11-26-block/call3_profile_{plan}_fp16_graph_b256.csv"

COLUMNS = [
    {"head": "cuda", "file": "ours", "where": {"backend": "cuda"}, "field": "device_resident_median_ms"},
    {"head": "PyTorch", "file": "anchor", "where": {"backend": "pytorch", "best_mode": True}, "field": "device_resident_median_ms"},
    {"head": "ratio", "ratio": ["PyTorch", "cuda"]},
]


def table(ours=FP16, anchor=ANCHOR, **extra):
    t = {"keys": ["precision", "batch"], "columns": COLUMNS,
         "groups": [{"rows": {"precision": "fp16", "batch": [1, 256]}, "files": {"ours": ours, "anchor": anchor}}]}
    t.update(extra)
    return t


class RenderFigures(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="render-figures-test-")
        for path in (FP16, ANCHOR, OTHER_CALL, H100, GEMM, GOLDEN, ZEN4, XEON, PROFILE.format(plan="none"),
                     PROFILE.format(plan="block")):
            os.makedirs(os.path.join(self.root, os.path.dirname(path)), exist_ok=True)
            shutil.copy(os.path.join(REPO, path), os.path.join(self.root, path))
        self.spec({"t": table()})
        self.doc("# doc\n\nbefore\n\n<!-- figures:t -->\n<!-- /figures -->\n\nafter\n")

    def tearDown(self):
        shutil.rmtree(self.root)

    def spec(self, tables):
        with open(os.path.join(self.root, "docs/bench/tables.json"), "w", encoding="utf-8") as f:
            json.dump({"tables": tables}, f)

    def doc(self, text):
        with open(os.path.join(self.root, "docs/D.md"), "w", encoding="utf-8") as f:
            f.write(text)

    def read(self):
        with open(os.path.join(self.root, "docs/D.md"), encoding="utf-8") as f:
            return f.read()

    def edit(self, path, old, new):
        """Change one measurement file of the copy: old must be in it."""
        full = os.path.join(self.root, path)
        with open(full, encoding="utf-8") as f:
            text = f.read()
        self.assertIn(old, text)
        with open(full, "w", encoding="utf-8") as f:
            f.write(text.replace(old, new, 1))

    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, "--root", self.root, *args, "docs/D.md"],
                              capture_output=True, text=True, timeout=60)

    def test_rendered_document_passes_and_a_changed_figure_fails(self):
        self.assertEqual(self.run_script().returncode, 0)
        rendered = self.read()
        # The block names its files, GPU, date and commit, and holds the files' figures.
        for want in ("NVIDIA H200", "2026-11-29", "commit e367d950c523", "r3_bench_fp16.json", "| fp16 | 1 | 0.191 |"):
            self.assertIn(want, rendered)
        self.assertTrue(rendered.startswith("# doc\n\nbefore\n") and rendered.endswith("\n\nafter\n"))
        ok = self.run_script("--check")
        self.assertEqual(ok.returncode, 0, ok.stdout + ok.stderr)
        self.doc(rendered.replace("| fp16 | 1 | 0.191 |", "| fp16 | 1 | 0.150 |"))
        bad = self.run_script("--check")
        self.assertEqual(bad.returncode, 1, bad.stdout + bad.stderr)
        self.assertIn("-| fp16 | 1 | 0.150 |", bad.stdout)
        self.assertIn("+| fp16 | 1 | 0.191 |", bad.stdout)
        self.assertIn("differ from their measurement files", bad.stderr)
        self.assertIn("0.150", self.read(), "--check must not write")
        self.assertEqual(self.run_script().returncode, 0)
        self.assertEqual(self.read(), rendered)

    def test_a_changed_measurement_file_fails_the_check(self):
        self.run_script()
        path = os.path.join(self.root, FP16)
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        data["results"][0]["device_resident_median_ms"] = 0.123
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f)
        self.assertEqual(self.run_script("--check").returncode, 1)

    def test_a_group_mixing_calls_is_refused(self):
        self.spec({"t": table(anchor=OTHER_CALL)})
        r = self.run_script("--check")
        self.assertEqual(r.returncode, 2)
        self.assertIn("mixes calls", r.stderr)
        # Split into labelled groups, one per call, the same files are accepted.
        t = table()
        t["groups"] = [
            {"label": "one call", "rows": {"precision": "fp16", "batch": [1]}, "files": {"ours": FP16, "anchor": ANCHOR}},
            {"label": "another", "rows": {"precision": "fp16", "batch": [1]},
             "files": {"ours": "docs/bench/h200-2026-11-29-issue32/table/r3_anchor.json", "anchor": OTHER_CALL}},
        ]
        t["columns"] = [COLUMNS[1]]
        self.spec({"t": t})
        self.assertEqual(self.run_script().returncode, 0, self.run_script().stderr)
        for g in t["groups"]:
            g.pop("label")
        self.spec({"t": t})
        r = self.run_script("--check")
        self.assertEqual(r.returncode, 2)
        self.assertIn("distinct label", r.stderr)

    def test_files_of_two_calls_kept_apart_by_name_are_refused_side_by_side(self):
        folder = "docs/bench/h200-2026-11-26-block"
        for name in ("call2_bench_fp16_none.json", "call3_bench_fp16_block.json", "call3_bench_fp16_none.json"):
            os.makedirs(os.path.join(self.root, folder), exist_ok=True)
            shutil.copy(os.path.join(REPO, folder, name), os.path.join(self.root, folder, name))
        cols = [{"head": "none", "file": "none", "where": {"backend": "cuda"}, "field": "device_resident_median_ms"},
                {"head": "block", "file": "block", "where": {"backend": "cuda"}, "field": "device_resident_median_ms"}]

        def spec(none):
            self.spec({"t": {"keys": ["precision", "batch"], "columns": cols, "groups": [
                {"rows": {"precision": "fp16", "batch": [1]},
                 "files": {"none": f"{folder}/{none}", "block": f"{folder}/call3_bench_fp16_block.json"}}]}})

        spec("call2_bench_fp16_none.json")
        r = self.run_script("--check")
        self.assertEqual(r.returncode, 2)
        self.assertIn("mixes calls", r.stderr)
        spec("call3_bench_fp16_none.json")
        self.assertEqual(self.run_script().returncode, 0)
        self.assertIn("h200-2026-11-26-block/call3*", self.read())

    def test_a_folder_named_after_another_gpu_is_refused(self):
        wrong = "docs/bench/h200-2026-11-26-tf32/r2_bench_fp16.json"
        os.makedirs(os.path.join(self.root, os.path.dirname(wrong)))
        shutil.copy(os.path.join(self.root, H100), os.path.join(self.root, wrong))
        cols = [COLUMNS[0]]
        self.spec({"t": {"keys": ["precision", "batch"], "columns": cols,
                         "groups": [{"rows": {"precision": "fp16", "batch": [1]}, "files": {"ours": wrong}}]}})
        r = self.run_script("--check")
        self.assertEqual(r.returncode, 2)
        self.assertIn("H100", r.stderr)
        self.spec({"t": {"keys": ["precision", "batch"], "columns": cols,
                         "groups": [{"rows": {"precision": "fp16", "batch": [1]}, "files": {"ours": H100}}]}})
        self.assertEqual(self.run_script().returncode, 0)

    def test_bad_markers_and_names_are_refused(self):
        for text, message in (
            ("<!-- figures:nope -->\n<!-- /figures -->\n", "names no table"),
            ("<!-- figures:t -->\nno end\n", "never closed"),
            ("<!-- /figures -->\n", "stray"),
        ):
            self.doc(text)
            r = self.run_script("--check")
            self.assertEqual(r.returncode, 2, text)
            self.assertIn(message, r.stderr)

    def test_a_gemm_bench_file_renders_its_batches(self):
        self.spec({"t": {"list": "batches", "keys": ["batch"], "columns": [
            {"head": "ours", "file": "g", "field": "weighted_network.ours_tflop_s", "format": ".2f"},
            {"head": "bar", "file": "g", "field": "bar_within_10pct_of_cublas", "format": "bool:held/missed"}],
            "groups": [{"rows": {"batch": [1, 64]}, "files": {"g": GEMM}}]}})
        self.assertEqual(self.run_script().returncode, 0)
        text = self.read()
        for want in ("NVIDIA H200, 2026-11-29", "| 1 | 1.71 | held |", "| 64 | 19.94 | held |", "no commit in the file"):
            self.assertIn(want, text)

    def test_a_row_the_file_lacks_is_refused(self):
        t = table()
        t["groups"][0]["rows"] = {"precision": "fp16", "batch": [3]}
        self.spec({"t": t})
        r = self.run_script("--check")
        self.assertEqual(r.returncode, 2)
        self.assertIn("0 results with precision=fp16, batch=3", r.stderr)

    def golden_table(self, **group):
        g = {"rows": {"input": ["cat", "torchvision_random"]},
             "files": {"log": {"path": GOLDEN, "format": "gpu-test-golden-log"}}, "device": "NVIDIA H200"}
        g.update(group)
        return {"keys": ["input"], "columns": [
            {"head": "cudnn fp32", "file": "log", "where": {"run": "cudnn fused fp32"}, "field": "rel_l2", "format": ".2e"},
            {"head": "top-5", "file": "log", "where": {"run": "cudnn fused fp32"}, "field": "top5_same",
             "format": "bool:same/differs"}], "groups": [g]}

    def test_a_gpu_test_log_renders_its_golden_lines_and_a_malformed_one_fails(self):
        self.spec({"t": self.golden_table()})
        r = self.run_script()
        self.assertEqual(r.returncode, 0, r.stderr)
        text = self.read()
        for want in ("| cat | 1.12e-06 | same |", "| torchvision_random | 3.38e-07 | same |",
                     "NVIDIA H200 (named in the spec: the file does not name its machine), 2026-11-29",
                     "contract_with_second_export.log", "no commit in the file"):
            self.assertIn(want, text)
        self.assertEqual(self.run_script("--check").returncode, 0)
        # A golden line the parser does not know is an error naming the file and line, not a skipped line.
        self.edit(GOLDEN, "golden hot_dog            rel L2 1.22e-06 (bound 1e-05)",
                  "golden hot_dog            rel L2 1.22e-06 bound 1e-05")
        r = self.run_script("--check")
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("contract_with_second_export.log:", r.stderr)
        self.assertIn("a golden line that does not parse", r.stderr)

    def test_a_log_without_golden_lines_or_with_a_bad_number_is_refused(self):
        with open(os.path.join(self.root, GOLDEN), "w", encoding="utf-8") as f:
            f.write("Running main() from gtest_main.cc\n[  PASSED  ] 1 test.\n")
        self.spec({"t": self.golden_table()})
        r = self.run_script("--check")
        self.assertEqual(r.returncode, 2)
        self.assertIn("no golden lines", r.stderr)
        with open(os.path.join(self.root, GOLDEN), "w", encoding="utf-8") as f:
            f.write("cudnn fused fp32 golden cat rel L2 1.1.2 (bound 1e-05)  top-5 1,2,3,4,5 (reference 1,2,3,4,5)\n")
        r = self.run_script("--check")
        self.assertEqual(r.returncode, 2)
        self.assertIn("'1.1.2' is not a number", r.stderr)

    def test_the_spec_names_a_machine_only_where_the_file_does_not(self):
        self.spec({"t": self.golden_table(device=None)})
        r = self.run_script("--check")
        self.assertEqual(r.returncode, 2)
        self.assertIn("no GPU named", r.stderr)
        # A log whose backend line names its GPU: the spec's device is refused, and not needed.
        self.edit(GOLDEN, "Running main() from ./googletest/src/gtest_main.cc\n",
                  "Running main() from ./googletest/src/gtest_main.cc\ncudnn backend: NVIDIA cuDNN 9.14.0 on NVIDIA H200\n")
        self.spec({"t": self.golden_table()})
        r = self.run_script("--check")
        self.assertEqual(r.returncode, 2)
        self.assertIn("names its machine (NVIDIA H200)", r.stderr)
        self.spec({"t": self.golden_table(device=None)})
        self.assertEqual(self.run_script().returncode, 0)
        self.assertIn("NVIDIA H200, 2026-11-29", self.read())
        # A spec device that contradicts the folder's GPU is refused as a file's would be.
        self.edit(GOLDEN, "on NVIDIA H200\n", "\n")
        self.spec({"t": self.golden_table(device="NVIDIA H100 80GB HBM3")})
        r = self.run_script("--check")
        self.assertEqual(r.returncode, 2)
        self.assertIn("named after the H200", r.stderr)

    def cpu_table(self):
        return {"keys": ["batch"], "columns": [
            {"head": "cpu", "file": "c", "where": {"implementation": "mnv2 cpu"}, "field": "median_ms", "format": "#.3g"},
            {"head": "ort", "file": "c", "where": {"implementation": "onnxruntime"}, "field": "median_ms", "format": "#.3g"},
            {"head": "cpu ÷ ort", "ratio": ["cpu", "ort"]}],
            "groups": [{"rows": {"batch": [1, 8]}, "files": {"c": {"path": ZEN4, "format": "cpu-vs-onnxruntime-table"}}}]}

    def test_the_cpu_comparison_table_renders_and_a_stray_line_fails(self):
        self.spec({"t": self.cpu_table()})
        r = self.run_script()
        self.assertEqual(r.returncode, 0, r.stderr)
        text = self.read()
        for want in ("AMD EPYC, 2 CPUs online, 2026-11-23 (one call, one file)", "commit 475f52d020b3",
                     "| 1 | 4.08 | 5.38 | 0.76× |", "| 8 | 32.4 | 41.1 | 0.79× |"):
            self.assertIn(want, text)
        self.edit(ZEN4, "    8  mnv2 cpu             32.411", "    8  mnv2 cpu             32,411")
        r = self.run_script("--check")
        self.assertEqual(r.returncode, 2)
        self.assertIn("zen4-2vcpu-2026-11-23-cpu-vs-onnxruntime.txt:11: not a line of", r.stderr)

    def test_a_cpu_comparison_table_without_its_machine_line_is_refused(self):
        self.edit(ZEN4, "# machine: AMD EPYC", "# host: AMD EPYC")
        self.spec({"t": self.cpu_table()})
        r = self.run_script("--check")
        self.assertEqual(r.returncode, 2)
        self.assertIn("no machine line", r.stderr)

    def rounds_table(self, reduce="median"):
        return {"keys": ["batch"], "columns": [
            {"head": "ort rounds", "file": "x", "where": {"implementation": "ort"}, "field": "median_ms",
             "reduce": "list", "format": "#.3g"},
            {"head": "cpu", "file": "x", "where": {"implementation": "cpu"}, "field": "median_ms", "reduce": reduce,
             "format": "#.3g"},
            {"head": "ort", "file": "x", "where": {"implementation": "ort"}, "field": "median_ms", "reduce": "median",
             "format": "#.3g"},
            {"head": "cpu ÷ ort", "ratio": ["cpu", "ort"]}],
            "groups": [{"rows": {"batch": [1, 8]}, "device": "the H200 machine's Xeon",
                        "files": {"x": {"path": XEON, "format": "cpu-vs-onnxruntime-rounds"}}}]}

    def test_rounds_reduce_to_their_median_and_list(self):
        self.spec({"t": self.rounds_table()})
        r = self.run_script()
        self.assertEqual(r.returncode, 0, r.stderr)
        text = self.read()
        # Medians of the three rounds, the ratio of the medians (27.365 / 37.236), each round in the file's order.
        self.assertIn("| 1 | 5.32 / 5.10 / 5.50 | 4.19 | 5.32 | 0.79× |", text)
        self.assertIn("| 8 | 37.2 / 37.2 / 38.4 | 27.4 | 37.2 | 0.73× |", text)
        self.assertIn("the H200 machine's Xeon (named in the spec", text)
        self.spec({"t": self.rounds_table(reduce="mean")})
        r = self.run_script("--check")
        self.assertEqual(r.returncode, 2)
        self.assertIn("is not median, sum or list", r.stderr)

    def test_a_malformed_rounds_file_and_an_unknown_format_are_refused(self):
        self.edit(XEON, "round 2 batch 8 cpu 27.365", "round 2 batch 8 cpu 27.365 ms")
        self.spec({"t": self.rounds_table()})
        r = self.run_script("--check")
        self.assertEqual(r.returncode, 2)
        self.assertIn("h200-host-xeon-2026-11-23-cpu-vs-onnxruntime.txt:11: not a 'round R batch B", r.stderr)
        self.edit(XEON, "round 2 batch 8 cpu 27.365 ms", "round 1 batch 8 cpu 27.365")
        r = self.run_script("--check")
        self.assertEqual(r.returncode, 2)
        self.assertIn(":11: round 1 batch 8 cpu again", r.stderr)
        t = self.rounds_table()
        t["groups"][0]["files"]["x"]["format"] = "csv"
        self.spec({"t": t})
        r = self.run_script("--check")
        self.assertEqual(r.returncode, 2)
        self.assertIn("format 'csv' is not one of", r.stderr)

    def profile_table(self):
        def col(head, alias):
            return {"head": head, "file": alias, "field": "median_ns", "reduce": "sum", "scale": 0.001, "format": ".1f"}
        files = {p: {"path": PROFILE.format(plan=p), "format": "mnv2-profile-csv"} for p in ("none", "block")}
        return {"keys": ["block"], "columns": [col("none", "none"), col("block", "block"),
                                               {"head": "block ÷ none", "ratio": ["block", "none"]}],
                "groups": [{"rows": [{"block": "block2"}, {"block": "head"}, {"block": "all", "match": {}}],
                            "files": files, "device": "NVIDIA H200"}]}

    def test_a_profile_csv_sums_a_blocks_steps(self):
        self.spec({"t": self.profile_table()})
        r = self.run_script()
        self.assertEqual(r.returncode, 0, r.stderr)
        text = self.read()
        # block2's steps, in µs (the fused layers' rows hold no time and are left out of the sum); "match": {} sums all.
        for want in ("| block2 | 929.6 | 790.8 | 0.85× |", "| head | 95.6 | 95.5 | 1.00× |",
                     "| all | 4902.3 | 5262.8 | 1.07× |", "one call, `docs/bench/h200-2026-11-26-block/call3*`"):
            self.assertIn(want, text)
        t = self.profile_table()
        t["groups"][0]["rows"] = [{"block": "block99"}]
        self.spec({"t": t})
        r = self.run_script("--check")
        self.assertEqual(r.returncode, 2)
        self.assertIn("no results with block=block99 to reduce", r.stderr)

    def test_a_malformed_profile_csv_is_refused(self):
        path = PROFILE.format(plan="none")
        self.spec({"t": self.profile_table()})
        self.edit(path, ",cupti_kernel,20,499120,499757,", ",cupti_kernel,20,499120,4997x57,")
        r = self.run_script("--check")
        self.assertEqual(r.returncode, 2)
        self.assertIn("call3_profile_none_fp16_graph_b256.csv:2: median_ns '4997x57' is not a number", r.stderr)
        self.edit(path, ",cupti_kernel,20,499120,4997x57,", ",cupti_kernel,20,499120,499757,extra,")
        r = self.run_script("--check")
        self.assertEqual(r.returncode, 2)
        self.assertIn("call3_profile_none_fp16_graph_b256.csv:2: ", r.stderr)
        self.assertIn("fields, the header has", r.stderr)
        with open(os.path.join(self.root, path), "w", encoding="utf-8") as f:
            f.write("layer,time_ns\nstem,1\n")
        r = self.run_script("--check")
        self.assertEqual(r.returncode, 2)
        self.assertIn("not an mnv2 profile CSV", r.stderr)

    def test_a_where_pattern_picks_a_layer_kind(self):
        t = self.profile_table()
        for col in t["columns"][:2]:
            col["where"] = {"layer_name": {"re": r"block\d+\.expand.*"}}
        t["groups"][0]["rows"] = [{"block": "block2"}]
        self.spec({"t": t})
        r = self.run_script()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(self.read(), r"\| block2 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+× \|")
        self.assertNotIn("| block2 | 929.6 |", self.read(), "the pattern must leave block2's other layers out")
        t["columns"][0]["where"] = {"layer_name": {"re": "block(2"}}
        self.spec({"t": t})
        r = self.run_script("--check")
        self.assertEqual(r.returncode, 2)
        self.assertIn("pattern 'block(2'", r.stderr)


if __name__ == "__main__":
    unittest.main()
