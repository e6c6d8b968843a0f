#!/usr/bin/env python3
"""The golden comparison's promises (promises.py) can fail: each check is shown to catch the change it is for,
and an output whose only difference is an optional fusion compares equal to the unfused one.

Works on the recordings in cases/ alone (no mnv2 binary, no CPU dependence):
  python3 test_promises.py
"""
import copy
import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import promises  # noqa: E402
import run_golden  # noqa: E402

CASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases")


def recording(case, name):
    with open(os.path.join(CASES, case + ".json")) as f:
        return json.load(f)[name]


def cpu_run():
    """The cpu backend's run of `profile --batch 2 --input-size 192x160` as recorded (no depthwise fused)."""
    return recording("profile_cpu_batch2", "profile2.json")["runs"][0]


def fuse(run, k):
    """The run as the cpu backend reports it where steps k and k + 1 (an expansion and its depthwise) run as one
    oneDNN primitive: one step, its variant with the depthwise post-op, its bytes by step_bytes, the layers,
    totals and timeline renumbered. What a CPU whose oneDNN fuses that block would write."""
    run = copy.deepcopy(run)
    topo = promises.Topology(run["layers"])
    a, b = run["steps"][k], run["steps"][k + 1]
    assert topo.may_merge(a["layers"], b["layers"]), "fixture: not a mergeable pair"
    dw = topo.conv(b["layers"][0])
    impl, post = a["variant"].split(" -> ")[0].split(" ", 2)[1:], b["variant"].split(" -> ")[0].split(" ")[2:]
    merged = dict(a, layers=a["layers"] + b["layers"])
    merged["name"] = topo.group_name(merged["layers"])
    merged["variant"] = (f"onednn {impl[0]} {impl[1]} +dw{dw['kh']}x{dw['kw']}/s{dw['sh']} {' '.join(post)} -> "
                         f"{a['variant'].split(' -> ')[1]}")
    merged["macs"] = topo.step_macs(merged["layers"])
    merged["bytes"] = topo.step_bytes(merged["layers"])
    steps = run["steps"][:k] + [merged] + run["steps"][k + 2:]
    for n, s in enumerate(steps):
        s["step"] = n
    run["steps"] = steps
    for layer in run["layers"]:
        n = next(n for n, s in enumerate(steps) if layer["index"] in s["layers"])
        layer["step"] = n
        layer["fused_group"] = steps[n]["name"] if len(steps[n]["layers"]) > 1 else ""
    for field, key in (("per_kind", "kind"), ("per_block", "block_name")):
        for g in run[field]:
            if g["name"] == topo.by_index[merged["layers"][0]][key]:
                g["steps"] -= 1
    run["timeline"]["steps"] = run["timeline"]["steps"][:-1]
    return run


class Promises(unittest.TestCase):
    def setUp(self):
        self.run = cpu_run()
        self.topo = promises.Topology(self.run["layers"])
        # The first mergeable pair of base steps: block2's expansion and depthwise.
        base = self.topo.base_groups()
        self.k = next(k for k in range(len(base) - 1) if self.topo.may_merge(base[k], base[k + 1]))

    def canon(self, run, threads=2):
        return promises.canon_report_run(run, threads, "run")

    def assertBroken(self, run, words, threads=2):
        with self.assertRaises(promises.PromiseError) as e:
            self.canon(run, threads)
        self.assertIn(words, str(e.exception))

    def test_recording_keeps_the_promises(self):
        self.canon(self.run)

    def test_an_optional_fusion_compares_equal(self):
        fused = fuse(self.run, self.k)
        self.assertEqual(len(fused["steps"]), len(self.run["steps"]) - 1)
        self.assertIsNone(run_golden.compare(self.canon(fused), self.canon(self.run)))
        self.assertIsNone(run_golden.compare(self.canon(self.run), self.canon(fused)))

    def test_splitting_a_mandatory_fusion_fails(self):
        run = copy.deepcopy(self.run)
        s = run["steps"][0]  # Conv2d 0 + ReLU6 1
        first, second = dict(s, layers=[0], name="Conv2d 0"), dict(s, layers=[1], name="ReLU6 1")
        first["macs"], first["bytes"] = self.topo.step_macs([0]), self.topo.step_bytes([0])
        second["macs"], second["bytes"] = self.topo.step_macs([1]), self.topo.step_bytes([1])
        run["steps"] = [first, second] + run["steps"][1:]
        self.assertBroken(run, "splits a mandatory fusion")

    def test_a_fusion_the_rule_does_not_allow_fails(self):
        run = copy.deepcopy(self.run)
        # block1's projection with block2's expansion: two convolutions the rule never fuses.
        k = next(k for k, s in enumerate(run["steps"]) if s["layers"][0] == 4)
        merged = dict(run["steps"][k], layers=run["steps"][k]["layers"] + run["steps"][k + 1]["layers"])
        run["steps"] = run["steps"][:k] + [merged] + run["steps"][k + 2:]
        self.assertBroken(run, "not a group the fusion rule allows")

    def test_steps_must_cover_the_layers(self):
        run = copy.deepcopy(self.run)
        del run["steps"][5]
        self.assertBroken(run, "do not cover")

    def test_step_figures_come_from_the_layer_table(self):
        for field in ("bytes", "macs"):
            run = copy.deepcopy(self.run)
            run["steps"][3][field] += 4
            self.assertBroken(run, "its layers make")
        fused = fuse(self.run, self.k)
        fused["steps"][self.k]["bytes"] = sum(s["bytes"] for s in self.run["steps"][self.k:self.k + 2])
        self.assertBroken(fused, "its layers make")  # a fused step moves less than its two halves

    def test_a_layer_names_its_own_step(self):
        run = copy.deepcopy(self.run)
        run["layers"][6]["fused_group"] = "Conv2d 5"
        self.assertBroken(run, "layer 6 says")
        fused = fuse(self.run, self.k)
        fused["layers"][fused["steps"][self.k]["layers"][-1]]["fused_group"] = self.run["steps"][self.k + 1]["name"]
        self.assertBroken(fused, "the steps put it in")

    def test_totals_follow_the_steps(self):
        run = copy.deepcopy(self.run)
        run["per_kind"][0]["steps"] -= 1
        self.assertBroken(run, "per_kind")
        run = copy.deepcopy(self.run)
        run["per_block"][2]["fused_layers"] += 1
        self.assertBroken(run, "per_block")
        run = copy.deepcopy(self.run)
        run["timeline"]["steps"].pop()
        self.assertBroken(run, "timeline spans")

    def test_memory_within_bounds(self):
        lo_hi = self.topo.memory_bounds(2)
        for key, value in (("weight_bytes", lo_hi["weight_bytes"][0] - 4),
                           ("weight_bytes", lo_hi["weight_bytes"][1] + 4),
                           ("activation_bytes", lo_hi["activation_bytes"][1] + 4),
                           ("activation_bytes", lo_hi["activation_bytes"][0] - 4),
                           ("workspace_bytes", lo_hi["workspace_bytes"][1] + 4),
                           ("tensors", lo_hi["tensors"][1] + 1)):
            run = copy.deepcopy(self.run)
            run["memory"][key] = value
            run["memory"]["total_bytes"] = sum(run["memory"][k] for k in
                                               ("weight_bytes", "activation_bytes", "workspace_bytes"))
            self.assertBroken(run, f"memory.{key}")
        run = copy.deepcopy(self.run)
        run["memory"]["total_bytes"] += 1
        self.assertBroken(run, "total_bytes")
        # Twice the model's weights (a copy kept by mistake) is over the bound.
        self.assertLess(lo_hi["weight_bytes"][1], 2 * lo_hi["weight_bytes"][0])

    def test_variants_compare_by_their_stable_part(self):
        v = "onednn jit_1x1:avx512_core +bias +sum (in place over block2.project) -> nChw16c"
        self.assertEqual(promises.stable_variant(v), "onednn +bias +sum")
        self.assertEqual(promises.stable_variant("onednn gemm:jit +bias +sum (residual copied first) -> acdb"),
                         "onednn +bias +sum")
        self.assertEqual(promises.split_variant("onednn jit_1x1:avx2 +bias +clip[0,6] +dw3x3/s2 +bias +clip[0,6] -> "
                                                "nChw8c", "+dw3x3/s2"),
                         ("onednn +bias +clip[0,6]", "onednn +bias +clip[0,6]"))
        run = copy.deepcopy(self.run)
        run["steps"][3]["variant"] = run["steps"][3]["variant"].replace("+clip[0,6]", "+clip[0,4]")
        self.assertIsNotNone(run_golden.compare(self.canon(run), self.canon(self.run)))
        fused = fuse(self.run, self.k)
        fused["steps"][self.k]["variant"] = fused["steps"][self.k]["variant"].replace("+dw3x3", "+dw5x5")
        self.assertBroken(fused, "its depthwise layer is +dw3x3")
        fused["steps"][self.k]["variant"] = fused["steps"][self.k]["variant"].replace("+dw5x5/s2 ", "").replace(
            "+dw5x5/s1 ", "")
        self.assertBroken(fused, "names no +dwKxK/sS post-op")
        fused = fuse(self.run, self.k)
        fused["steps"][self.k]["variant"] = re.sub(r"(\+dw\S+) \+bias", r"\1", fused["steps"][self.k]["variant"])
        self.assertIsNotNone(run_golden.compare(self.canon(fused), self.canon(self.run)))

    def test_worker_spans(self):
        compare_run = recording("compare", "compare.json")["runs"][0]  # cpu-ref: one span per worker per step
        self.assertEqual(self.canon(compare_run, threads=2)["timeline"]["threads"], promises.THREADS)
        self.assertBroken(copy.deepcopy(compare_run), "not one worker", threads=1)
        run = copy.deepcopy(compare_run)
        run["timeline"]["threads"] = [s for s in run["timeline"]["threads"] if s["step"] != 7]
        self.assertBroken(run, "have no worker span")

    def test_diffs_only_where_materialised(self):
        runs = recording("compare", "compare.json")["runs"]
        cpu = copy.deepcopy(runs[1])
        self.canon(cpu)
        cpu["layers"][5]["diff"] = cpu["layers"][6]["diff"]  # block2.expand runs inside its step: no output
        self.assertBroken(cpu, "layer 5: a value")
        cpu = copy.deepcopy(runs[1])
        cpu["diff"]["compared"][5] = True
        self.assertBroken(cpu, "layer 5: a value")

    def test_the_text_table_keeps_the_promises(self):
        lines = recording("profile_cpu_batch2", "stdout")
        topo_for = lambda b, h, w, fusing: promises.Topology(cpu_run()["layers"], fusing)  # noqa: E731
        promises.canon_profile_stdout(lines, topo_for, 2)
        broken = [l.replace("(fused into Conv2d 5 + ReLU6 6)", "(fused into Conv2d 5)") for l in lines]
        with self.assertRaises(promises.PromiseError):
            promises.canon_profile_stdout(broken, topo_for, 2)
        broken = [l.replace(" in 111 buffers", " in 999 buffers") for l in lines]
        with self.assertRaises(promises.PromiseError):
            promises.canon_profile_stdout(broken, topo_for, 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
