"""What the CPU backends promise about their steps and memory, checked from an output alone.

oneDNN picks its kernels by the CPU's ISA, its cache sizes and the thread count: on one machine it fuses a
pointwise expansion with the depthwise convolution after it, on another it does not; its implementation names
carry the ISA ("jit_1x1:avx512_core", "jit:sse41") and its activations the ISA's block ("nChw16c", "nChw8c");
its weights are padded to that block and its scratchpad follows the kernels it chose. None of that is a
change of behaviour. What the program promises, and what this module checks, is:

- Steps: an ordered partition of the topology's layers into steps, each a group the fusion rule allows (below).
  Two outputs are compared through their *base* partition (every optional fusion split), which is the same
  on every machine; whether an optional fusion happened is checked for consistency, not against a recording.
- Variants: their stable part (the library and its post-ops: "onednn +bias +clip[0,6]"), not the
  implementation, the layout or where the residual was placed.
- Step figures: every step's MACs and bytes are what the layer table says for the layers it covers (the
  definition of mnv2/flops.h's step_bytes), whatever the partition.
- Memory: between bounds derived from the model's tensors (see memory_bounds).

The fusion rule (engine/backends/cpu/onednn_plan.h states it for the cpu backend): a Conv2d takes, as
post-ops, the clip right after it, then either the residual add right after that and a clip after the add, or
(a pointwise convolution) the depthwise convolution right after it and that one's clip; each only where it is
the sole reader of the layer before it. Clip and residual fusions always happen where the rule allows them
(they need nothing of the CPU); the depthwise fusion happens where oneDNN has a kernel for it, so either way
is valid. Every other layer is a step of its own.
"""
import re

NETWORK_INPUT = -1
BLOCK = 64
# Per-layer CSV columns that only a step's first layer carries (its timing and kernels).
STEP_COLUMNS = ("n", "p10_ns", "median_ns", "p90_ns", "p99_ns", "mean_ns", "std_ns", "min_ns", "max_ns", "share",
                "gflop_s", "gbytes_s", "event_median_ns", "timers_disagree", "kernels_per_iter", "kernel_names",
                "grid", "block_dim")
PARTITION = "<partition-dependent, checked>"
THREADS = "<one span per worker that ran a step, checked>"
BOUNDED = "<within derived bounds, checked>"


class PromiseError(AssertionError):
    pass


def pad(n, block):
    return (n + block - 1) // block * block


class Topology:
    """The layer table of one model at one batch and input size (the JSON of `mnv2 topology --format json`
    or a report's `layers`)."""

    def __init__(self, layers, fusing=True):
        """`fusing`: the backend follows the fusion rule (cpu); else every layer is a step (cpu-ref)."""
        self.fusing = fusing
        self.layers = layers
        self.by_index = {l["index"]: l for l in layers}
        self.readers = {}
        for l in layers:
            for i in l["inputs"]:
                self.readers.setdefault(i, []).append(l["index"])

    def kind(self, i):
        return self.by_index[i]["kind"]

    def conv(self, i):
        c = self.by_index[i].get("conv")
        if not c:
            return None
        keys = ("in", "out", "kh", "kw", "sh", "sw", "pt", "pl", "pb", "pr", "dh", "dw", "groups")
        return dict(zip(keys, c))

    def sole_reader(self, before, after):
        """`after` reads `before`'s output and nothing else does."""
        return self.readers.get(before, []) == [after] and self.by_index[after]["inputs"][0] == before

    def is_clip(self, i):
        return self.kind(i) in ("ReLU6", "Clip")

    def is_depthwise(self, i):
        c = self.conv(i)
        return c is not None and c["groups"] > 1 and c["groups"] == c["in"] == c["out"]

    def is_pointwise(self, i):
        c = self.conv(i)
        return c is not None and c["groups"] == 1 and c["kh"] == 1 and c["kw"] == 1

    def group_name(self, group):
        return " + ".join(f"{self.kind(i)} {i}" for i in group)

    # ---- the fusion rule -------------------------------------------------------------------------------
    def base_groups(self):
        """The partition with every mandatory fusion (clip, residual add) and no optional one."""
        groups, i, n = [], 0, len(self.layers)
        while i < n:
            g = [i]
            if self.fusing and self.kind(i) == "Conv2d":
                j = i
                if j + 1 < n and self.is_clip(j + 1) and self.sole_reader(j, j + 1):
                    j += 1
                    g.append(j)
                if (j + 1 < n and self.kind(j + 1) == "ResidualAdd" and self.sole_reader(j, j + 1)):
                    j += 1
                    g.append(j)
                    if j + 1 < n and self.is_clip(j + 1) and self.sole_reader(j, j + 1):
                        g.append(j + 1)
            groups.append(g)
            i = g[-1] + 1
        return groups

    def may_merge(self, first, second):
        """Whether base groups `first` and `second` (consecutive) may run as one step: a pointwise convolution
        (and its clip) with the depthwise convolution (and its clip) that alone reads it."""
        if not self.fusing or not self.is_pointwise(first[0]) or not self.is_depthwise(second[0]):
            return False
        if any(self.kind(i) == "ResidualAdd" for i in first):
            return False
        return self.sole_reader(first[-1], second[0]) and len(second) <= 2 and all(
            self.is_clip(i) for i in second[1:])

    def split(self, partition):
        """Checks that `partition` (lists of layer indices, in execution order) is a valid instance of the
        rule and returns its base partition; raises PromiseError naming the first step that is not."""
        flat = [i for g in partition for i in g]
        if flat != list(range(len(self.layers))):
            raise PromiseError(f"the steps do not cover the {len(self.layers)} layers once each, in order: "
                               f"{[g for g in partition][:8]}...")
        base = self.base_groups()
        start = {g[0]: k for k, g in enumerate(base)}
        out = []
        for g in partition:
            if g[0] not in start:
                raise PromiseError(f"step {self.group_name(g)} splits a mandatory fusion ({self._base_of(g[0])})")
            k = start[g[0]]
            if g == base[k]:
                out.append(g)
            elif k + 1 < len(base) and g == base[k] + base[k + 1] and self.may_merge(base[k], base[k + 1]):
                out += [base[k], base[k + 1]]
            elif len(g) < len(base[k]) and g == base[k][:len(g)]:
                raise PromiseError(f"step {self.group_name(g)} splits a mandatory fusion ({self.group_name(base[k])})")
            else:
                raise PromiseError(f"step {self.group_name(g)} is not a group the fusion rule allows "
                                   f"(base group here: {self.group_name(base[k])})")
        return out

    def _base_of(self, i):
        return next(self.group_name(g) for g in self.base_groups() if i in g)

    def always_materialised(self):
        """Layers whose output every valid partition materialises (the last layer of every step of the
        coarsest one): the layers whose outputs two runs on any machines can both be compared on."""
        base = self.base_groups()
        ends, k = set(), 0
        while k < len(base):
            if k + 1 < len(base) and self.may_merge(base[k], base[k + 1]):
                ends.add(base[k + 1][-1])
                k += 2
            else:
                ends.add(base[k][-1])
                k += 1
        return ends

    # ---- figures a step must report --------------------------------------------------------------------
    def step_macs(self, group):
        return sum(self.by_index[i]["macs"] for i in group)

    def step_bytes(self, group):
        """mnv2/flops.h's step_bytes for float32: the layers' weights, each input from outside the step once,
        the last layer's output."""
        inside, seen, total = set(group), set(), 0
        for i in group:
            l = self.by_index[i]
            weights = 4 * l["params"]
            read = l["bytes"] - l["activation_bytes"] - weights
            for j in l["inputs"]:
                if j == NETWORK_INPUT:
                    continue
                if j in inside or j in seen:
                    read -= self.by_index[j]["activation_bytes"]
            seen.update(j for j in l["inputs"] if j != NETWORK_INPUT and j not in inside)
            total += read + weights + (l["activation_bytes"] if i == group[-1] else 0)
        return total

    # ---- memory ----------------------------------------------------------------------------------------
    def memory_bounds(self, threads):
        """Bounds on what the cpu backend may hold for this model, derived from its tensors. BLOCK is the
        widest channel block oneDNN's float32 kernels pad a dimension to (nChw16c / OIhw16i16o / Goihw16g
        for convolutions, 64-wide N blocks for brgemm's inner product; every dimension here takes the widest):
        - weights: at least the model's parameters in float32; at most those with every channel dimension
          padded to BLOCK;
        - activations: at least the network input and the largest output every valid partition
          materialises; at most the input and every layer's output padded to BLOCK channels (no buffer reused);
        - workspace: at most, per thread, the largest im2col matrix of a non-depthwise convolution of the whole
          batch (gemm-based kernels), plus twice the largest activation (reorders, a fused depthwise's rows);
        - buffers: the model's weight tensors plus the input or more; at most one more per layer, the input
          and a scratchpad."""
        weights = [0, 0]
        act_max = act_min = input_bytes = largest = im2col = 0
        weight_tensors = 0
        always = self.always_materialised()
        for l in self.layers:
            shape = l["output_shape"]
            spatial = 1
            for d in shape[2:]:
                spatial *= d
            largest = max(largest, l["activation_bytes"])
            if l["index"] in always:
                act_min = max(act_min, l["activation_bytes"])
            act_max += 4 * shape[0] * pad(shape[1], BLOCK) * spatial
            if NETWORK_INPUT in l["inputs"]:
                input_bytes = l["bytes"] - l["activation_bytes"] - 4 * l["params"]
            conv = self.conv(l["index"])
            if conv:
                g, k = conv["groups"], conv["kh"] * conv["kw"]
                out, inp = conv["out"], conv["in"] // g
                if g > 1:
                    padded = pad(g, BLOCK) * (out // g) * inp * k
                else:
                    padded = pad(out, BLOCK) * pad(inp, BLOCK) * k
                    im2col = max(im2col, 4 * shape[0] * inp * k * spatial)
            elif l["kind"] == "Linear":
                out = shape[1]
                src = self.by_index[l["inputs"][0]]
                inp = src["activation_bytes"] // (4 * shape[0])  # in_features
                padded = pad(out, BLOCK) * pad(inp, BLOCK)
            else:
                continue
            has_bias = l["params"] > out * inp * (k if conv else 1)
            weight_tensors += 2 if has_bias else 1
            weights[0] += 4 * l["params"]
            weights[1] += 4 * (padded + (pad(out, BLOCK) if has_bias else 0))
        return {
            "weight_bytes": tuple(weights),
            "activation_bytes": (input_bytes + act_min, input_bytes + act_max),
            "workspace_bytes": (0, threads * im2col + 2 * largest),
            "tensors": (weight_tensors + 1, weight_tensors + len(self.layers) + 2),
        }


def check_thread_spans(spans, steps, threads, where):
    """A host backend's per-worker spans (the timeline's `threads`): which workers took part in a step follows
    the thread count and the scheduler, so the promise is that every step has at least one span, each from a
    worker below the thread count, at most one per worker."""
    seen = set()
    for s in spans:
        key = (s["step"], s["thread"])
        if not 0 <= s["step"] < steps or not 0 <= s["thread"] < threads or key in seen:
            raise PromiseError(f"{where}: timeline span {s} is not one worker (< {threads}) of one step (< {steps}) "
                               "once")
        seen.add(key)
    missing = sorted(set(range(steps)) - {s for s, _ in seen})
    if missing:
        raise PromiseError(f"{where}: timeline steps {missing[:8]} have no worker span")
    return THREADS


def check_memory(topo, memory, threads, where):
    """Checks a memory object ({weight_bytes, activation_bytes, workspace_bytes, total_bytes, tensors, ...})
    against the bounds; returns it with those fields replaced by BOUNDED."""
    bounds = topo.memory_bounds(threads)
    for key, (lo, hi) in bounds.items():
        v = memory.get(key)
        if not isinstance(v, int) or not lo <= v <= hi:
            raise PromiseError(f"{where}.{key} = {v!r} is outside [{lo}, {hi}] (bounds from the model's tensors)")
    total = memory["weight_bytes"] + memory["activation_bytes"] + memory["workspace_bytes"]
    if memory.get("total_bytes") != total:
        raise PromiseError(f"{where}.total_bytes = {memory.get('total_bytes')!r} is not weights + activations + "
                           f"workspace = {total}")
    out = dict(memory)
    for key in list(bounds) + ["total_bytes"]:
        out[key] = BOUNDED
    return out


# ---- variants ------------------------------------------------------------------------------------------
DW_TOKEN = re.compile(r"^\+dw\d+x\d+/s\d+$")


def stable_variant(variant):
    """The part of a variant string every machine gives: for oneDNN, the library and its post-ops (not the
    implementation and ISA, the layout after '->', or a parenthesised note on where the residual went); the
    reference backend's variants are its own and stable as they are."""
    if not variant.startswith("onednn "):
        return variant
    body = re.sub(r"\s*\([^)]*\)", "", variant.split(" -> ")[0])
    words = body.split()
    return " ".join(words[:1] + words[2:])


def split_variant(variant, token):
    """A fused expand+depthwise variant as the stable variants of its two base steps; `token` is the depthwise
    post-op the step's depthwise layer makes ('+dw3x3/s2')."""
    words = stable_variant(variant).split()
    for k, w in enumerate(words):
        if DW_TOKEN.match(w):
            if w != token:
                raise PromiseError(f"variant {variant!r} names {w}, its depthwise layer is {token}")
            return " ".join(words[:k]), " ".join(words[:1] + words[k + 1:])
    raise PromiseError(f"variant {variant!r} of a fused expansion + depthwise step names no +dwKxK/sS post-op")


# ---- outputs, made comparable ---------------------------------------------------------------------------
def index_of_step(partition):
    return {i: k for k, g in enumerate(partition) for i in g}


def base_variants(topo, partition, variants):
    """The stable variant of every base step, from the variants of `partition`'s (validated) steps."""
    base = topo.base_groups()
    out = []
    for g, v in zip(partition, variants):
        if g in base:
            out.append(stable_variant(v))
        else:
            dw = topo.conv(g[next(k for k, i in enumerate(g) if topo.is_depthwise(i))])
            out += list(split_variant(v, f"+dw{dw['kh']}x{dw['kw']}/s{dw['sh']}"))
    return out


class Canon:
    """One output's partition, checked, and what it maps to on the base partition."""

    def __init__(self, topo, partition, where):
        self.topo = topo
        self.where = where
        try:
            self.base = topo.split(partition)
        except PromiseError as e:
            raise PromiseError(f"{where}: {e}")
        self.partition = partition
        self.step_of = index_of_step(partition)
        self.base_step_of = index_of_step(self.base)
        self.ends = {g[-1] for g in partition}
        self.base_ends = {g[-1] for g in self.base}
        self.always = topo.always_materialised()
        self.anchors = {g[0] for g in partition}
        self.base_anchors = {g[0] for g in self.base}

    def fail(self, what):
        raise PromiseError(f"{self.where}: {what}")

    def group_label(self, group):
        return self.topo.group_name(group) if len(group) > 1 else ""

    def materialised_label(self, i, value, absent):
        """A per-layer value that exists only where the layer's output is materialised: checked against this
        partition, then kept where every partition materialises the layer, `absent` where none does."""
        if (value != absent) != (i in self.ends):
            self.fail(f"layer {i}: {'a value' if value != absent else 'no value'} where the steps "
                      f"{'do not materialise' if value != absent else 'materialise'} its output")
        if i in self.always:
            return value
        return absent if i not in self.base_ends else PARTITION

    def groups_by(self, key):
        """{name: [steps, fused_layers]} of mnv2's per-kind / per-block totals over this partition and the base."""
        def totals(partition):
            t = {}
            for g in partition:
                first = self.topo.by_index[g[0]]
                t.setdefault(key(first), [0, 0])[0] += 1
                for i in g[1:]:
                    if key(self.topo.by_index[i]) != key(first):
                        t.setdefault(key(self.topo.by_index[i]), [0, 0])[1] += 1
            return t
        return totals(self.partition), totals(self.base)


def canon_report_run(run, threads, where):
    """A run of a mnv2.report JSON: steps, layers, per-kind and per-block totals, the timeline and the memory
    as promised (see the module's doc), on the base partition."""
    topo = Topology(run["layers"], fusing=run["metadata"]["backend"] == "cpu")
    steps = run["steps"]
    c = Canon(topo, [s["layers"] for s in steps], where)
    run = dict(run)
    variants = []
    for k, s in enumerate(steps):
        g = s["layers"]
        if s["step"] != k or s["name"] != topo.group_name(g):
            c.fail(f"step {k} is numbered {s['step']} and named {s['name']!r}, not {topo.group_name(g)!r}")
        if s["macs"] != topo.step_macs(g) or s["bytes"] != topo.step_bytes(g):
            c.fail(f"step {k} ({s['name']}) reports {s['macs']} MACs and {s['bytes']} bytes; its layers make "
                   f"{topo.step_macs(g)} and {topo.step_bytes(g)}")
        variants.append(s["variant"])
    stable = base_variants(topo, c.partition, variants)
    new_steps = []
    for k, g in enumerate(c.base):
        src = steps[c.step_of[g[0]]]
        s = dict(src)
        s.update(step=k, name=topo.group_name(g), layers=g, variant=stable[k], macs=topo.step_macs(g),
                 bytes=topo.step_bytes(g))
        if src["layers"] != g:  # half of a fused step: its other figures are the fused step's
            for key in ("time", "event_time", "timers_disagree", "kernel_names", "kernels_per_iteration", "grid",
                        "block", "gflop_s", "gbytes_s", "share"):
                if key in s:
                    s[key] = PARTITION
        new_steps.append(s)
    run["steps"] = new_steps
    layers = []
    for l in run["layers"]:
        i = l["index"]
        l = dict(l)
        if l.get("step") != c.step_of[i] or l.get("fused_group") != c.group_label(c.partition[c.step_of[i]]):
            c.fail(f"layer {i} says step {l.get('step')} / {l.get('fused_group')!r}; the steps put it in "
                   f"{c.step_of[i]} / {c.group_label(c.partition[c.step_of[i]])!r}")
        l["step"] = c.base_step_of[i]
        l["fused_group"] = c.group_label(c.base[c.base_step_of[i]])
        if isinstance(run.get("diff"), dict) and c.materialised_label(i, "diff" in l, False) is not True:
            l.pop("diff", None)
        layers.append(l)
    run["layers"] = layers
    for field, key in (("per_kind", lambda l: l["kind"]), ("per_block", lambda l: l["block_name"])):
        if field not in run:
            continue
        have, base = c.groups_by(key)
        rows = []
        for g in run[field]:
            want = have.get(g["name"], [0, 0])
            if [g["steps"], g["fused_layers"]] != want:
                c.fail(f"{field} {g['name']}: {g['steps']} steps, {g['fused_layers']} fused layers; the steps make "
                       f"{want[0]}, {want[1]}")
            g = dict(g)
            g["steps"], g["fused_layers"] = base.get(g["name"], [0, 0])
            rows.append(g)
        run[field] = rows
    if "timeline" in run and isinstance(run["timeline"], dict) and "steps" in run["timeline"]:
        tl = dict(run["timeline"])
        ids = [s["step"] for s in tl["steps"]]
        if ids != list(range(len(c.partition))):
            c.fail(f"timeline spans {ids[:6]}... are not the {len(c.partition)} steps")
        proto = tl["steps"][0] if tl["steps"] else {}
        tl["steps"] = [dict(proto, step=k) for k in range(len(c.base))]
        if tl.get("threads"):
            tl["threads"] = check_thread_spans(tl["threads"], len(c.partition), threads, where)
        run["timeline"] = tl
    if isinstance(run.get("diff"), dict) and "compared" in run["diff"]:
        d = dict(run["diff"])
        d["compared"] = [c.materialised_label(i, flag, False) for i, flag in enumerate(d["compared"])]
        run["diff"] = d
    if run["metadata"]["backend"] == "cpu" and "memory" in run:
        run["memory"] = check_memory(topo, run["memory"], threads, where + ".memory")
    return run


def partition_from_anchors(n, anchors):
    """Steps as runs of layers, each starting at an anchor (a layer a step is timed under)."""
    starts = sorted(anchors)
    if not starts or starts[0] != 0:
        raise PromiseError("layer 0 is not the first layer of a step")
    return [list(range(a, b)) for a, b in zip(starts, starts[1:] + [n])]


def canon_summary(lines, canon, fusing, threads_bounds):
    """The per-backend lines after a table: 'in N buffers' within the bounds (the cpu backend), 'N layer
    spans' the number of steps (then the base partition's)."""
    out = []
    for line in lines:
        m = re.search(r" in (\d+) buffers$", line)
        if m and fusing:
            lo, hi = threads_bounds["tensors"]
            if not lo <= int(m.group(1)) <= hi:
                raise PromiseError(f"{line!r}: {m.group(1)} buffers is outside [{lo}, {hi}]")
            line = line[:m.start(1)] + BOUNDED + line[m.end(1):]
        m = re.search(r", (\d+) layer spans ", line)
        if m and canon:
            if int(m.group(1)) != len(canon.partition):
                raise PromiseError(f"{line!r}: {m.group(1)} spans for {len(canon.partition)} steps")
            line = line[:m.start(1)] + str(len(canon.base)) + line[m.end(1):]
        out.append(line)
    return out


def canon_profile_stdout(lines, topo_for, threads):
    """`mnv2 profile`'s text: the layer table ('idx name kind output ... variant', a fused layer '- (fused into
    STEP)') and the backend's summary."""
    head = next((k for k, l in enumerate(lines) if l.startswith("idx name kind output")), None)
    if head is None:
        return lines
    m = next(filter(None, (re.search(r"; batch (\d+); (\d+)x(\d+);", l) for l in lines[:head])))
    backend_line = next(k for k in range(head + 1, len(lines)) if re.match(r"^[\w-]+: ", lines[k]))
    backend = lines[backend_line].split(":")[0]
    topo = topo_for(int(m.group(1)), int(m.group(2)), int(m.group(3)), backend == "cpu")
    rows = lines[head + 1:backend_line]
    if len(rows) != len(topo.layers):
        raise PromiseError(f"the table has {len(rows)} rows for {len(topo.layers)} layers")
    anchors, variants, named = [], {}, {}
    for i, row in enumerate(rows):
        f = re.match(r"^(\d+) (\S+) (\S+) (\S+) (.*)$", row)
        if not f or int(f.group(1)) != i:
            raise PromiseError(f"table row {i}: {row!r}")
        rest = f.group(5)
        fused = re.match(r"^- \(fused into (.*)\)$", rest)
        if fused:
            named[i] = fused.group(1)
        else:
            anchors.append(i)
            variants[i] = re.sub(r"^(?:\S+ ){5}", "", rest)
    c = Canon(topo, partition_from_anchors(len(rows), anchors), f"{backend} table")
    for i, name in named.items():
        if name != topo.group_name(c.partition[c.step_of[i]]):
            c.fail(f"layer {i} says it is fused into {name!r}, its step is {topo.group_name(c.partition[c.step_of[i]])!r}")
    stable = base_variants(topo, c.partition, [variants[g[0]] for g in c.partition])
    out = lines[:head + 1]
    for i, row in enumerate(rows):
        f = row.split(" ", 4)
        if i in c.base_anchors:
            out.append(" ".join(f[:4]) + " # # #% # # " + stable[c.base_step_of[i]])
        else:
            out.append(" ".join(f[:4]) + " - (fused into " + topo.group_name(c.base[c.base_step_of[i]]) + ")")
    bounds = topo.memory_bounds(threads) if backend == "cpu" else None
    return out + canon_summary(lines[backend_line:], c, backend == "cpu", bounds)


def canon_compare_stdout(lines, topo_for, threads):
    """`mnv2 compare`'s text: per layer each backend's time ('#', or '(fused)' where the layer runs inside
    another's step) and each compared backend's rel L2 and max abs ('#', or '-' where its output is not
    materialised), then each backend's summary."""
    head = next((k for k, l in enumerate(lines) if l.startswith("idx name kind ") and l.endswith("max_abs")), None)
    if head is None:
        return lines
    m = next(filter(None, (re.search(r"; batch (\d+); (\d+)x(\d+);", l) for l in lines[:head])))
    batch, h, w = int(m.group(1)), int(m.group(2)), int(m.group(3))
    backends = [c[:-3] for c in lines[head].split()[3:] if c.endswith("_us")]
    n = len(topo_for(batch, h, w, False).layers)
    rows = [l.split() for l in lines[head + 1:head + 1 + n]]
    canons = {}
    for b, name in enumerate(backends):
        topo = topo_for(batch, h, w, name == "cpu")
        anchors = [i for i, r in enumerate(rows) if r[3 + b] != "(fused)"]
        canons[name] = Canon(topo, partition_from_anchors(n, anchors), f"{name} column")
    out = lines[:head + 1]
    for i, r in enumerate(rows):
        cells = r[:3]
        for name in backends:
            cells.append("#" if i in canons[name].base_anchors else "(fused)")
        diffs = r[3 + len(backends):]
        for b, name in enumerate(backends[1:]):
            pair = diffs[2 * b:2 * b + 2]
            label = canons[name].materialised_label(i, pair != ["-", "-"], False)
            cells += ["#", "#"] if label is True else ["-", "-"] if label is False else [label]
        out.append(" ".join(cells))
    tail = lines[head + 1 + n:]
    # Each backend's summary starts with 'NAME: <cpu>'.
    result, current = [], None
    for line in tail:
        b = re.match(r"^([\w-]+): ", line)
        if b and b.group(1) in canons:
            current = b.group(1)
        if current:
            topo = topo_for(batch, h, w, current == "cpu")
            line = canon_summary([line], canons[current], current == "cpu", topo.memory_bounds(threads))[0]
        result.append(line)
    return out + result


def canon_layer_csv(rows, topo_for, threads):
    """Per-layer CSV rows (profile, compare): step, fused_group, variant and the diff columns as promised."""
    if not rows or "fused_group" not in rows[0] or "layer_index" not in rows[0]:
        return rows
    h = {name: k for k, name in enumerate(rows[0])}
    out = [rows[0]]
    by_backend = {}
    for r in rows[1:]:
        by_backend.setdefault(r[h["backend"]], []).append(r)
    for backend, rs in by_backend.items():
        hh, ww = map(int, rs[0][h["input_hw"]].split("x"))
        topo = topo_for(int(rs[0][h["batch"]]), hh, ww, backend == "cpu")
        steps = {}
        for r in rs:
            steps.setdefault(int(r[h["step"]]), []).append(int(r[h["layer_index"]]))
        partition = [steps[k] for k in sorted(steps)]
        c = Canon(topo, partition, f"CSV rows of {backend}")
        stable = base_variants(topo, c.partition, [rs[g[0]][h["variant"]] for g in c.partition])
        for r in rs:
            i = int(r[h["layer_index"]])
            if r[h["fused_group"]] != c.group_label(c.partition[c.step_of[i]]) or any(
                    rs[j][h["variant"]] != rs[i][h["variant"]] for j in c.partition[c.step_of[i]]):
                c.fail(f"row of layer {i}: fused_group {r[h['fused_group']]!r} or variant differs from its step's")
            r = list(r)
            r[h["step"]] = str(c.base_step_of[i])
            r[h["fused_group"]] = c.group_label(c.base[c.base_step_of[i]])
            r[h["variant"]] = stable[c.base_step_of[i]]
            if c.partition[c.step_of[i]] != c.base[c.base_step_of[i]]:  # half of a fused step, one side only
                for k in STEP_COLUMNS:
                    if k in h and (r[h[k]] or i in c.base_anchors):
                        r[h[k]] = PARTITION
            if "rel_l2_err" in h and r[h["diff_reference"]]:
                cols = [h[k] for k in ("max_abs_err", "rel_l2_err", "cosine")]
                label = c.materialised_label(i, any(r[k] for k in cols), False)
                if label is not True:
                    for k in cols:
                        r[k] = "" if label is False else PARTITION
            out.append(r)
    return out


def canon_bench(value, rows, topo_for, threads):
    """The bench JSON's and CSV's memory of the cpu backend, within the bounds."""
    if isinstance(value, dict) and value.get("schema", "").startswith("mnv2.bench"):
        value = dict(value)
        results = []
        for k, r in enumerate(value["results"]):
            r = dict(r)
            if r["backend"] == "cpu":
                topo = topo_for(r["batch"], r["height"], r["width"], True)
                r["memory"] = check_memory(topo, r["memory"], threads, f"results[{k}].memory")
                r["memory_bytes"] = BOUNDED
            results.append(r)
        value["results"] = results
        return value
    if rows and "memory_bytes" in rows[0] and "backend" in rows[0]:
        h = {name: k for k, name in enumerate(rows[0])}
        out = [rows[0]]
        for r in rows[1:]:
            r = list(r)
            if r[h["backend"]] == "cpu":
                topo = topo_for(int(r[h["batch"]]), int(r[h["height"]]), int(r[h["width"]]), True)
                b = topo.memory_bounds(threads)
                lo = sum(b[k][0] for k in ("weight_bytes", "activation_bytes", "workspace_bytes"))
                hi = sum(b[k][1] for k in ("weight_bytes", "activation_bytes", "workspace_bytes"))
                if not lo <= int(r[h["memory_bytes"]]) <= hi:
                    raise PromiseError(f"bench CSV: cpu memory_bytes {r[h['memory_bytes']]} outside [{lo}, {hi}]")
                r[h["memory_bytes"]] = BOUNDED
            out.append(r)
        return out
    return value if value is not None else rows


def canon_trace(value, threads, where):
    """A Perfetto trace: the worker tracks of a host backend (one per thread that ran any step, one span per
    step a worker took part in) follow the thread count and the scheduler. Checked like the report's
    per-worker spans, then left out; the other tracks are renumbered in their order, so that a run with one
    worker lines up with one with two."""
    events = value["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "thread_name"}
    workers = {tid for tid, name in names.items() if re.fullmatch(r"worker \d+", name)}
    if not workers:
        return value
    steps = sorted({e["args"]["step"] for e in events if e.get("cat") == "layer"})
    spans = [dict(step=steps.index(e["args"]["step"]), thread=sorted(workers).index(e["tid"]))
             for e in events if e.get("tid") in workers and e.get("ph") == "X"]
    if any(e.get("cat") != "thread" for e in events if e.get("tid") in workers and e.get("ph") == "X"):
        raise PromiseError(f"{where}: a worker track holds something other than worker spans")
    check_thread_spans(spans, len(steps), threads, where)
    kept = [e for e in events if e.get("tid") not in workers]
    order = []
    for e in kept:
        if "tid" in e and e["tid"] not in order:
            order.append(e["tid"])
    renumber = {tid: k + 1 for k, tid in enumerate(order)}
    out = []
    for e in kept:
        e = dict(e)
        if "tid" in e:
            if e.get("name") == "thread_sort_index" and e["args"].get("sort_index") == e["tid"]:
                e["args"] = dict(e["args"], sort_index=renumber[e["tid"]])
            e["tid"] = renumber[e["tid"]]
        out.append(e)
    out.append({"workers": THREADS})
    return dict(value, traceEvents=out)
