// The cpu backend: the topology on oneDNN primitives. Convolutions carry their clip and residual add, or an
// expansion its depthwise convolution, as post-ops (the grouping is onednn_plan.h's); activations stay in the
// ISA's blocked layout (nChw16c on AVX-512, nChw8c on AVX/AVX2, see blocked_activation_tag()); reorders happen
// only at the network's edges (and where a kept layer output is asked for); the primitives, the weights in the
// layouts oneDNN wants and every buffer are made once, at prepare time. oneDNN picks its kernels from CPUID.
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_common.h"
#include "backends/cpu/onednn_plan.h"
#include "backends/layer_checks.h"
#include "mnv2/cpu_info.h"
#include "mnv2/error.h"

namespace mnv2 {
namespace {

using Desc = dnnl::memory::desc;
using Dims = dnnl::memory::dims;
using Tag = dnnl::memory::format_tag;
using DType = dnnl::memory::data_type;

constexpr const char* kBackendName = "cpu";
constexpr int kInputBuffer = -1;  // Value::buffer of the caller's input tensor
constexpr int kNoBuffer = -2;     // Value::buffer of a layer fused away (never materialised)

// 64-byte aligned, zero-filled host memory that oneDNN may use for any layout.
class HostBuffer {
 public:
  HostBuffer() = default;
  explicit HostBuffer(size_t bytes) : bytes_(bytes) {
    const size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (!p) throw std::bad_alloc();
    std::memset(p, 0, rounded);
    data_.reset(p);
  }
  void* data() const { return data_.get(); }
  size_t bytes() const { return bytes_; }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> data_;
  size_t bytes_ = 0;
};

Dims dims_of(const Shape& s) { return {s.n, s.c, s.h, s.w}; }

// A Linear layer's output is 2-D ({batch, features}); convolutions, pools and adds read it as {n, c, 1, 1}.
Desc as_4d(const Desc& md) {
  if (md.data.ndims != 2) return md;
  return md.reshape({md.data.dims[0], md.data.dims[1], 1, 1});
}

// An {n, c, 1, 1} activation whose memory is exactly the row-major {n, c} matrix (NCHW, NHWC, or channel
// blocks with no padding), as that matrix; nullopt otherwise.
std::optional<Desc> as_rows(const Desc& md) {
  const Dims d = md.dims();
  if (d.size() != 4 || d[2] != 1 || d[3] != 1 || md.get_size() != static_cast<size_t>(d[0] * d[1]) * sizeof(float))
    return std::nullopt;
  for (Tag tag : {Tag::nchw, Tag::nhwc, Tag::nChw16c, Tag::nChw8c})
    if (md == Desc(d, DType::f32, tag)) return Desc({d[0], d[1]}, DType::f32, Tag::nc);
  return std::nullopt;
}

// The NCHW (or, 2-D, NC) float32 layout of the same dimensions: what callers see.
Desc plain_of(const Desc& md) {
  const Dims dims = md.dims();
  return Desc(dims, DType::f32, dims.size() == 2 ? Tag::nc : Tag::nchw);
}

// True where the layout pads channels up to its block (24 channels in nChw16c): the padding must stay zero,
// so such a buffer is shared only between values of exactly this layout.
bool has_padding(const Desc& md) {
  for (int i = 0; i < md.data.ndims; ++i)
    if (md.data.padded_dims[i] != md.data.dims[i]) return true;
  return false;
}

// A readable name of an activation layout, for step variants: "nChw16c", "nchw", ...; "blocked" otherwise.
std::string layout_name(const Desc& md) {
  const Dims dims = md.dims();
  const std::pair<Tag, const char*> known[] = {{Tag::nchw, "nchw"},       {Tag::nhwc, "nhwc"},
                                               {Tag::nChw16c, "nChw16c"}, {Tag::nChw8c, "nChw8c"},
                                               {Tag::nChw4c, "nChw4c"},   {Tag::nc, "nc"}};
  for (const auto& [tag, name] : known) {
    const bool two_d = tag == Tag::nc;
    if (dims.size() == (two_d ? 2u : 4u) && md == Desc(dims, DType::f32, tag)) return name;
  }
  return "blocked";
}

// The convolutions' activation layout: channels in blocks of the ISA's vector width, 16 floats on AVX-512 and
// 8 on AVX/AVX2 (SSE4.1 kernels block by 8 too), from the ISA oneDNN dispatched to by CPUID. format_tag::any
// lets oneDNN 2.6 choose instead, and on AVX-512 CPUs with BF16 it chose its brgemm kernels in NHWC, which
// measured slower here (docs/PERFORMANCE.md, "CPU backend: oneDNN": batch 8 34 ms against 45 ms); `any`
// remains the choice where a convolution has no kernel for the blocked layout but the reference one.
Tag blocked_activation_tag() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx512_mic:
    case dnnl::cpu_isa::avx512_mic_4ops:
    case dnnl::cpu_isa::avx512_core:
    case dnnl::cpu_isa::avx512_core_vnni:
    case dnnl::cpu_isa::avx512_core_bf16:
    case dnnl::cpu_isa::avx512_core_amx:
      return Tag::nChw16c;
    case dnnl::cpu_isa::sse41:
    case dnnl::cpu_isa::avx:
    case dnnl::cpu_isa::avx2:
    case dnnl::cpu_isa::avx2_vnni:
      return Tag::nChw8c;
    case dnnl::cpu_isa::all:
      break;
  }
  return Tag::any;
}

std::string clip_text(const Layer& l) {
  auto number = [](float v) {
    if (v == std::numeric_limits<float>::infinity()) return std::string("inf");
    std::string t = std::to_string(v);
    t.erase(t.find_last_not_of('0') + 1);
    if (!t.empty() && t.back() == '.') t.pop_back();
    return t;
  };
  return "clip[" + number(l.clip_min) + "," + number(l.clip_max) + "]";
}

// Where a materialised layer's output (or the network input) lives, in which layout.
struct Value {
  Desc md;
  int buffer = kNoBuffer;
};

// An activation buffer as planned: sized for the largest value it holds.
struct BufferPlan {
  size_t bytes = 0;
  std::optional<Desc> padded;  // set: holds only values of this (channel-padded) layout
  bool free = false;
};

// A memory argument of a step, before the buffers exist.
struct PlannedArg {
  int arg = 0;  // DNNL_ARG_*
  Desc md;
  int buffer = kInputBuffer;
};

// A reorder run inside a step before its primitive: the input into the layout the primitive reads, or the
// residual into the destination its sum post-op adds to.
struct PreReorder {
  PlannedArg from, to;
  bool scratch = false;  // `to` is a buffer of this step alone (a reordered input), free again after it
  dnnl::reorder primitive;
  dnnl::memory src, dst;
};

struct Step {
  ExecStep exec;
  std::string label;  // the first layer, for error messages
  int output_layer = 0;
  dnnl::primitive primitive;
  std::vector<PlannedArg> planned;             // activation arguments (become memory objects over buffers)
  std::unordered_map<int, dnnl::memory> args;  // every argument, once the buffers exist
  Desc scratchpad;                             // what the primitive needs of the shared scratchpad
  std::vector<PreReorder> pre;
  std::optional<dnnl::reorder> keep;  // to the caller's NCHW layout, made on the first kept run
  dnnl::memory keep_src, keep_dst;
};

class OnednnPreparedNet final : public PreparedNet {
 public:
  OnednnPreparedNet(const Model& model, const PrepareConfig& config, int threads)
      : config_(config),
        threads_(threads),
        engine_(dnnl::engine::kind::cpu, 0),
        stream_(engine_),
        activation_tag_(blocked_activation_tag()) {
    cpu::ScopedOmpThreads team(threads_);  // kernels are generated and split for this many threads
    build(model);
  }

  const PrepareConfig& config() const override { return config_; }
  std::string description() const override { return "CPU, fp32: " + cpu_kernel_summary(threads_); }
  const std::vector<ExecStep>& steps() const override { return exec_steps_; }
  const std::vector<Tensor>& layer_outputs() const override { return layer_outputs_; }

  MemoryReport memory() const override {
    MemoryReport m;
    m.weight_bytes = weight_bytes_;
    m.tensors = weight_tensors_;
    for (const HostBuffer& b : buffers_) {
      m.activation_bytes += static_cast<int64_t>(b.bytes());
      ++m.tensors;
    }
    for (const Tensor& t : layer_outputs_) {
      m.activation_bytes += static_cast<int64_t>(t.data.size() * sizeof(float));
      m.tensors += t.data.empty() ? 0 : 1;
    }
    m.workspace_bytes = static_cast<int64_t>(scratchpad_.bytes());
    m.tensors += scratchpad_.bytes() > 0 ? 1 : 0;
    return m;
  }

  Tensor run(const Tensor& input, const RunOptions& options) override {
    if (!(input.shape == input_shape_) || static_cast<int64_t>(input.data.size()) != input_shape_.numel())
      throw UsageError(std::string(kBackendName) + ": input shape " + input.shape.str() + " (" +
                       std::to_string(input.data.size()) + " values) does not match the prepared " +
                       input_shape_.str());
    cpu::ScopedOmpThreads team(threads_);
    // oneDNN never writes a source; the handle is not const only because the same type serves outputs.
    input_memory_.set_data_handle(const_cast<float*>(input.data.data()));
    if (options.keep_layer_outputs) allocate_kept_outputs();

    for (size_t i = 0; i < steps_.size(); ++i) {
      Step& step = steps_[i];
      const int index = static_cast<int>(i);
      if (options.observer) options.observer->step_begin(index, nullptr);
      execute(step);
      if (options.observer) options.observer->step_end(index, nullptr);
      if (options.keep_layer_outputs) keep_output(step);
    }

    Tensor logits(Shape{config_.batch, output_shape_.per_image(), 1, 1});
    guarded("the logits", [&] {
      logits_dst_.set_data_handle(logits.data.data());
      logits_reorder_.execute(stream_, logits_src_, logits_dst_);
      stream_.wait();
    });
    return logits;
  }

 private:
  template <typename Fn>
  static void guarded(const std::string& what, Fn&& fn) {
    try {
      fn();
    } catch (const dnnl::error& e) {
      throw Error(std::string(kBackendName) + ": " + what + ": oneDNN: " + e.what());
    }
  }

  void build(const Model& model) {
    const size_t n = model.layers.size();
    if (n == 0) throw Error(std::string(kBackendName) + ": the model has no layers");
    stats_ = analyse(model, config_.batch, config_.height, config_.width);
    if (stats_.size() != n)
      throw Error(std::string(kBackendName) + ": analyse() returned a shape for " + std::to_string(stats_.size()) +
                  " of " + std::to_string(n) + " layers");
    input_shape_ = Shape{config_.batch, model.input_channels, config_.height, config_.width};
    output_shape_ = stats_.back().output;
    for (size_t i = 0; i < n; ++i)
      for (int j : model.layers[i].inputs)
        if (j != kNetworkInput && (j < 0 || j >= static_cast<int>(i)))
          throw Error(std::string(kBackendName) + ": " + layer_label(model.layers[i]) + " reads layer " +
                      std::to_string(j) + ", which does not come before it");

    const std::vector<cpu::FusedGroup> groups =
        cpu::plan_groups(model, [&](const cpu::FusedGroup& candidate) { return depthwise_fuses(model, candidate); });
    // The last step that reads each layer's output; the logits are read after every step.
    last_reader_.assign(n, -1);
    for (size_t s = 0; s < groups.size(); ++s)
      for (int l : groups[s].layers)
        for (int j : model.layers[static_cast<size_t>(l)].inputs)
          if (j >= 0) last_reader_[static_cast<size_t>(j)] = static_cast<int>(s);
    last_reader_[n - 1] = std::numeric_limits<int>::max();

    input_value_ = Value{Desc(dims_of(input_shape_), DType::f32, Tag::nchw), kInputBuffer};
    values_.assign(n, Value{});
    steps_.resize(groups.size());
    for (size_t s = 0; s < groups.size(); ++s) {
      const cpu::FusedGroup& g = groups[s];
      const Layer& anchor = model.layers[static_cast<size_t>(g.anchor())];
      Step& step = steps_[s];
      step.label = layer_label(anchor);
      step.output_layer = g.output();
      step.exec.name = cpu::group_name(model, g);
      step.exec.layers = g.layers;
      try {
        plan_step(model, g, static_cast<int>(s), step);
      } catch (const dnnl::error& e) {
        throw Error(std::string(kBackendName) + ": " + step.label + ": oneDNN: " + e.what());
      }
    }
    allocate();
    exec_steps_.clear();
    for (const Step& s : steps_) exec_steps_.push_back(s.exec);
    layer_outputs_.assign(n, Tensor{});
  }

  const Value& value_of(int layer) const {
    return layer == kNetworkInput ? input_value_ : values_[static_cast<size_t>(layer)];
  }
  bool last_read_here(int layer, int step) const {
    return layer != kNetworkInput && last_reader_[static_cast<size_t>(layer)] == step;
  }

  // An activation buffer for a value of layout `md`: a free one that fits (a channel-padded layout only
  // takes a buffer that held exactly that layout), else a new one.
  int take_buffer(const Desc& md) {
    const size_t bytes = md.get_size();
    const bool padded = has_padding(md);
    int best = -1;
    for (int b = 0; b < static_cast<int>(plans_.size()); ++b) {
      const BufferPlan& p = plans_[static_cast<size_t>(b)];
      if (!p.free || p.padded.has_value() != padded || (padded && !(*p.padded == md))) continue;
      // Best fit: the smallest that holds it, else the largest, grown.
      if (best < 0) {
        best = b;
        continue;
      }
      const BufferPlan& q = plans_[static_cast<size_t>(best)];
      const bool fits = p.bytes >= bytes, best_fits = q.bytes >= bytes;
      if ((fits && (!best_fits || p.bytes < q.bytes)) || (!fits && !best_fits && p.bytes > q.bytes)) best = b;
    }
    if (best < 0) {
      plans_.push_back(BufferPlan{bytes, padded ? std::optional(md) : std::nullopt, false});
      return static_cast<int>(plans_.size()) - 1;
    }
    BufferPlan& p = plans_[static_cast<size_t>(best)];
    p.bytes = std::max(p.bytes, bytes);
    p.free = false;
    return best;
  }

  // After step `s`: the buffers of values it read last (layers before the group) are free for the steps after.
  void release_inputs(const Model& model, const cpu::FusedGroup& g, int s, int kept_buffer) {
    for (int l : g.layers)
      for (int j : model.layers[static_cast<size_t>(l)].inputs) {
        if (j < g.anchor() && last_read_here(j, s)) {
          const int b = values_[static_cast<size_t>(j)].buffer;
          if (b >= 0 && b != kept_buffer) plans_[static_cast<size_t>(b)].free = true;
        }
      }
  }

  // The user layout of a convolution's weights: [out, in / groups, kh, kw], grouped where groups > 1.
  static Desc conv_weights_md(const ConvParams& c) {
    if (c.groups == 1) return Desc({c.out_channels, c.in_channels, c.kernel_h, c.kernel_w}, DType::f32, Tag::oihw);
    return Desc({c.groups, c.out_channels / c.groups, c.in_channels / c.groups, c.kernel_h, c.kernel_w}, DType::f32,
                Tag::goihw);
  }

  // The primitive of a group's convolution: the anchor Conv2d with the group's clip, sum and clip, or its
  // depthwise convolution and that one's clip, as post-ops. Activations in the blocked layout where the ISA
  // has one (the network input stays NCHW: the stem reads it as it is) unless only oneDNN's reference
  // implementation would take it, else in the layout oneDNN prefers; `dst` (not null) fixes the destination
  // layout instead. `post` gets the post-ops described for the step's variant.
  dnnl::convolution_forward::primitive_desc conv_primitive(const Model& model, const cpu::FusedGroup& g,
                                                           const Desc& src_md, bool network_input, const Desc* dst,
                                                           std::string* post) const {
    const Layer& layer = model.layers[static_cast<size_t>(g.anchor())];
    const ConvParams& c = layer.conv;
    const Dims dst_dims = dims_of(stats_[static_cast<size_t>(g.output())].output);
    const Desc bias_md = layer.bias.empty() ? Desc() : Desc({c.out_channels}, DType::f32, Tag::x);
    dnnl::post_ops ops;
    *post = "";
    auto clip = [&](int l) {
      const Layer& clip = model.layers[static_cast<size_t>(l)];
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, clip.clip_min, clip.clip_max);
      *post += " +" + clip_text(clip);
    };
    if (g.clip >= 0) clip(g.clip);
    if (g.add >= 0) {
      ops.append_sum(1.0f);
      *post += " +sum";
    }
    if (g.clip_after_add >= 0) clip(g.clip_after_add);
    if (g.depthwise >= 0) {
      const ConvParams& dw = model.layers[static_cast<size_t>(g.depthwise)].conv;
      ops.append_dw(DType::f32, DType::f32, DType::f32, dw.kernel_h, dw.stride_h, dw.pad_top, 0, {});
      *post += " +dw" + std::to_string(dw.kernel_h) + "x" + std::to_string(dw.kernel_w) + "/s" +
               std::to_string(dw.stride_h) +
               (model.layers[static_cast<size_t>(g.depthwise)].bias.empty() ? "" : " +bias");
      if (g.depthwise_clip >= 0) clip(g.depthwise_clip);
    }
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    attr.set_post_ops(ops);
    auto make = [&](const Desc& src, const Desc& out) {
      const Desc conv_dst = g.depthwise >= 0
                                ? Desc(dims_of(stats_[static_cast<size_t>(g.anchor())].output), DType::f32,
                                       out.data.format_kind == dnnl_format_kind_any ? Tag::any : activation_tag_)
                                : out;
      dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src,
                                        Desc(conv_weights_md(c).dims(), DType::f32, Tag::any), bias_md, conv_dst,
                                        {c.stride_h, c.stride_w}, {c.dilation_h - 1, c.dilation_w - 1},
                                        {c.pad_top, c.pad_left}, {c.pad_bottom, c.pad_right});
      dnnl::convolution_forward::primitive_desc pd(d, attr, engine_);
      if (pd.dst_desc().dims() != dst_dims)  // a fused depthwise output of another size: not this network's
        throw dnnl::error(dnnl_unimplemented, "the fused depthwise output does not match the layer's");
      return pd;
    };
    const Desc any_src(src_md.dims(), DType::f32, Tag::any);
    if (dst) return make(any_src, *dst);
    if (activation_tag_ != Tag::any) {
      try {
        auto blocked = make(network_input ? any_src : src_md, Desc(dst_dims, DType::f32, activation_tag_));
        if (std::string(blocked.impl_info_str()).rfind("ref", 0) != 0) return blocked;
      } catch (const dnnl::error&) {
        if (g.depthwise >= 0) throw;
      }
    }
    return make(any_src, Desc(dst_dims, DType::f32, Tag::any));
  }

  // Whether a group with a depthwise convolution has a fused JIT kernel (not oneDNN's generic fallback, which
  // runs the two convolutions one after the other and would only hide the depthwise layer's output).
  bool depthwise_fuses(const Model& model, const cpu::FusedGroup& candidate) const {
    if (activation_tag_ == Tag::any) return false;
    const int input = model.layers[static_cast<size_t>(candidate.anchor())].inputs.at(0);
    const Dims src_dims =
        input == kNetworkInput ? dims_of(input_shape_) : dims_of(stats_[static_cast<size_t>(input)].output);
    const Desc src =
        input == kNetworkInput ? Desc(src_dims, DType::f32, Tag::nchw) : Desc(src_dims, DType::f32, activation_tag_);
    try {
      std::string post;
      const auto pd = conv_primitive(model, candidate, src, input == kNetworkInput, nullptr, &post);
      const std::string impl = pd.impl_info_str();
      return impl.rfind("ref", 0) != 0;
    } catch (const dnnl::error&) {
      return false;
    }
  }

  void plan_step(const Model& model, const cpu::FusedGroup& g, int s, Step& step) {
    const Layer& layer = model.layers[static_cast<size_t>(g.anchor())];
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    int out_buffer = -1;
    Desc out_md;
    std::string variant;

    switch (layer.kind) {
      case LayerKind::Conv2d: {
        const Value& in = value_of(layer.inputs.at(0));
        const Desc src_md = as_4d(in.md);
        std::string post;
        auto pd = conv_primitive(model, g, src_md, in.buffer == kInputBuffer, nullptr, &post);
        // The sum post-op adds to what the destination holds: the residual, in its own buffer where this is
        // its last reader (so the convolution writes in place over it), else copied there first.
        std::optional<Value> residual;
        if (g.add >= 0) {
          residual = value_of(g.residual);
          if (residual->buffer != kInputBuffer && !(as_4d(residual->md) == pd.dst_desc())) {
            try {  // write in the residual's layout, if a kernel takes it
              const Desc layout = as_4d(residual->md);
              pd = conv_primitive(model, g, src_md, in.buffer == kInputBuffer, &layout, &post);
            } catch (const dnnl::error&) {
            }
          }
        }
        out_md = pd.dst_desc();
        if (!(pd.src_desc() == src_md)) {
          // Only at an edge in practice: the network input in NCHW where the kernel wants blocks.
          PreReorder r;
          r.from = PlannedArg{DNNL_ARG_FROM, src_md, in.buffer};
          r.to = PlannedArg{DNNL_ARG_TO, pd.src_desc(), take_buffer(pd.src_desc())};
          r.scratch = true;
          step.pre.push_back(std::move(r));
          variant += " (input " + layout_name(src_md) + "->" + layout_name(pd.src_desc()) + ")";
          step.planned.push_back(PlannedArg{DNNL_ARG_SRC, pd.src_desc(), step.pre.back().to.buffer});
        } else {
          step.planned.push_back(PlannedArg{DNNL_ARG_SRC, src_md, in.buffer});
        }
        if (residual) {
          // Not in place where the convolution reads the residual itself (x + conv(x)).
          if (last_read_here(g.residual, s) && residual->buffer >= 0 && residual->buffer != in.buffer &&
              as_4d(residual->md) == out_md) {
            out_buffer = residual->buffer;
            post += " (in place over " + model.layers[static_cast<size_t>(g.residual)].name + ")";
          } else {
            out_buffer = take_buffer(out_md);
            PreReorder r;
            r.from = PlannedArg{DNNL_ARG_FROM, as_4d(residual->md), residual->buffer};
            r.to = PlannedArg{DNNL_ARG_TO, out_md, out_buffer};
            step.pre.push_back(std::move(r));
            post += " (residual copied first)";
          }
        } else {
          out_buffer = take_buffer(out_md);
        }
        const ConvParams& c = layer.conv;
        step.args[DNNL_ARG_WEIGHTS] = constant(conv_weights_md(c), pd.weights_desc(), layer.weight);
        if (!layer.bias.empty())
          step.args[DNNL_ARG_BIAS] = constant(Desc({c.out_channels}, DType::f32, Tag::x), pd.bias_desc(), layer.bias);
        if (g.depthwise >= 0) {
          // The depthwise convolution's weights and bias, as the fused kernel reads them (no bias: zeros).
          const Layer& dw = model.layers[static_cast<size_t>(g.depthwise)];
          const int dw_arg = DNNL_ARG_ATTR_POST_OP_DW;
          step.args[dw_arg | DNNL_ARG_WEIGHTS] = constant(
              conv_weights_md(dw.conv), pd.query_md(dnnl::query::exec_arg_md, dw_arg | DNNL_ARG_WEIGHTS), dw.weight);
          const std::vector<float> zeros(static_cast<size_t>(dw.conv.out_channels), 0.0f);
          step.args[dw_arg | DNNL_ARG_BIAS] = constant(Desc({dw.conv.out_channels}, DType::f32, Tag::x),
                                                       pd.query_md(dnnl::query::exec_arg_md, dw_arg | DNNL_ARG_BIAS),
                                                       dw.bias.empty() ? zeros : dw.bias);
        }
        step.primitive = dnnl::convolution_forward(pd);
        step.scratchpad = pd.scratchpad_desc();
        variant = std::string(pd.impl_info_str()) + (layer.bias.empty() ? "" : " +bias") + post + variant;
        break;
      }
      case LayerKind::ReLU6:
      case LayerKind::ReLU: {
        const int src = layer.inputs.at(0);
        const Value& in = value_of(src);
        dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::eltwise_clip, in.md,
                                      layer.clip_min, layer.clip_max);
        dnnl::eltwise_forward::primitive_desc pd(d, attr, engine_);
        out_md = pd.dst_desc();
        const bool in_place = last_read_here(src, s) && in.buffer != kInputBuffer && in.md == out_md;
        out_buffer = in_place ? in.buffer : take_buffer(out_md);
        step.planned.push_back(PlannedArg{DNNL_ARG_SRC, in.md, in.buffer});
        step.primitive = dnnl::eltwise_forward(pd);
        step.scratchpad = pd.scratchpad_desc();
        variant = std::string(pd.impl_info_str()) + " " + clip_text(layer) + (in_place ? " in place" : "");
        break;
      }
      case LayerKind::ResidualAdd: {
        int a = layer.inputs.at(0), b = layer.inputs.at(1);
        // The operand it may overwrite goes first: oneDNN runs a binary op in place over its first source.
        auto overwritable = [&](int l) { return a != b && last_read_here(l, s) && value_of(l).buffer >= 0; };
        if (!overwritable(a) && overwritable(b)) std::swap(a, b);
        const Value& va = value_of(a);
        const Value& vb = value_of(b);
        const Desc dst = va.buffer != kInputBuffer ? as_4d(va.md) : Desc(as_4d(va.md).dims(), DType::f32, Tag::any);
        dnnl::binary::desc d(dnnl::algorithm::binary_add, as_4d(va.md), as_4d(vb.md), dst);
        dnnl::binary::primitive_desc pd(d, attr, engine_);
        out_md = pd.dst_desc();
        const bool in_place = overwritable(a) && as_4d(va.md) == out_md;
        out_buffer = in_place ? va.buffer : take_buffer(out_md);
        step.planned.push_back(PlannedArg{DNNL_ARG_SRC_0, as_4d(va.md), va.buffer});
        step.planned.push_back(PlannedArg{DNNL_ARG_SRC_1, as_4d(vb.md), vb.buffer});
        step.primitive = dnnl::binary(pd);
        step.scratchpad = pd.scratchpad_desc();
        variant = std::string(pd.impl_info_str()) + " add" + (in_place ? " in place" : "");
        break;
      }
      case LayerKind::GlobalAveragePool: {
        const Value& in = value_of(layer.inputs.at(0));
        const Desc src = as_4d(in.md);
        const Dims sd = src.dims();
        const Desc dst({sd[0], sd[1], 1, 1}, DType::f32, Tag::any);
        dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::pooling_avg_exclude_padding,
                                      src, dst, {1, 1}, {sd[2], sd[3]}, {0, 0}, {0, 0});
        dnnl::pooling_forward::primitive_desc pd(d, attr, engine_);
        out_md = pd.dst_desc();
        out_buffer = take_buffer(out_md);
        step.planned.push_back(PlannedArg{DNNL_ARG_SRC, src, in.buffer});
        step.primitive = dnnl::pooling_forward(pd);
        step.scratchpad = pd.scratchpad_desc();
        variant = std::string(pd.impl_info_str()) + " avg " + std::to_string(sd[2]) + "x" + std::to_string(sd[3]);
        break;
      }
      case LayerKind::Linear: {
        // A pooled {n, c, 1, 1} input is read as the {n, c} matrix it is in memory: oneDNN then takes its
        // brgemm inner product instead of the gemm-based one (batch 1: 194 against 227 us; batch 8: 276
        // against 492 us, this machine).
        Value in = value_of(layer.inputs.at(0));
        if (std::optional<Desc> rows = as_rows(in.md)) in.md = *rows;
        const Dims sd = in.md.dims();
        // The weight rows are NCHW-flattened images: as 4-D weights they read any layout of the input.
        const Dims wei_dims =
            sd.size() == 2 ? Dims{layer.out_features, sd[1]} : Dims{layer.out_features, sd[1], sd[2], sd[3]};
        const Desc user_wei(wei_dims, DType::f32, sd.size() == 2 ? Tag::oi : Tag::oihw);
        const Desc bias_md = layer.bias.empty() ? Desc() : Desc({layer.out_features}, DType::f32, Tag::x);
        dnnl::inner_product_forward::desc d(dnnl::prop_kind::forward_inference, in.md,
                                            Desc(wei_dims, DType::f32, Tag::any), bias_md,
                                            Desc({sd[0], layer.out_features}, DType::f32, Tag::any));
        dnnl::inner_product_forward::primitive_desc pd(d, attr, engine_);
        out_md = pd.dst_desc();
        out_buffer = take_buffer(out_md);
        step.planned.push_back(PlannedArg{DNNL_ARG_SRC, in.md, in.buffer});
        step.args[DNNL_ARG_WEIGHTS] = constant(user_wei, pd.weights_desc(), layer.weight);
        if (!layer.bias.empty()) step.args[DNNL_ARG_BIAS] = constant(bias_md, pd.bias_desc(), layer.bias);
        step.primitive = dnnl::inner_product_forward(pd);
        step.scratchpad = pd.scratchpad_desc();
        variant = std::string(pd.impl_info_str()) + (layer.bias.empty() ? "" : " +bias");
        break;
      }
    }
    step.planned.push_back(PlannedArg{DNNL_ARG_DST, out_md, out_buffer});
    values_[static_cast<size_t>(g.output())] = Value{out_md, out_buffer};
    release_inputs(model, g, s, out_buffer);
    for (const PreReorder& r : step.pre)
      if (r.scratch) plans_[static_cast<size_t>(r.to.buffer)].free = true;
    step.exec.variant = "onednn " + variant + " -> " + layout_name(out_md);
  }

  // Weights or bias in the layout the primitive wants, copied from the model (the net outlives it).
  dnnl::memory constant(const Desc& user_md, const Desc& wanted, const std::vector<float>& data) {
    dnnl::memory user(user_md, engine_, const_cast<float*>(data.data()));  // read only
    dnnl::memory held(wanted, engine_);
    dnnl::reorder(user, held).execute(stream_, user, held);
    stream_.wait();
    weight_bytes_ += static_cast<int64_t>(wanted.get_size());
    ++weight_tensors_;
    return held;
  }

  void allocate() {
    size_t scratch = 0;
    for (const Step& s : steps_) scratch = std::max(scratch, s.scratchpad.get_size());
    // Everything is zero-filled as it is allocated, so an allocation the machine cannot back would not fail
    // cleanly but get the process killed: check first. The caller's input batch and the logits count too.
    int64_t need = static_cast<int64_t>(scratch) + (input_shape_.numel() + output_shape_.numel()) * 4;
    for (const BufferPlan& p : plans_) need += static_cast<int64_t>(p.bytes);
    const char* what = "the input, activations and workspace";
    cpu::check_host_memory(kBackendName, config_.batch, config_.height, config_.width, need, what);
    try {
      buffers_.clear();
      for (const BufferPlan& p : plans_) buffers_.emplace_back(p.bytes);
      scratchpad_ = HostBuffer(scratch);
    } catch (const std::bad_alloc&) {
      throw Error(cpu::out_of_host_memory(kBackendName, config_.batch, config_.height, config_.width, need, what,
                                          "the allocation failed"));
    }

    input_memory_ = dnnl::memory(input_value_.md, engine_, DNNL_MEMORY_NONE);
    auto bind = [&](const PlannedArg& a) {
      return a.buffer == kInputBuffer ? input_memory_ : dnnl::memory(a.md, engine_, buffers_[a.buffer].data());
    };
    for (Step& step : steps_) {
      for (const PlannedArg& a : step.planned) step.args[a.arg] = bind(a);
      if (step.scratchpad.get_size() > 0)
        step.args[DNNL_ARG_SCRATCHPAD] = dnnl::memory(step.scratchpad, engine_, scratchpad_.data());
      for (PreReorder& r : step.pre) {
        r.src = bind(r.from);
        r.dst = bind(r.to);
        r.primitive = dnnl::reorder(r.src, r.dst);
      }
    }
    const Value& last = values_.back();
    logits_src_ = bind(PlannedArg{DNNL_ARG_FROM, last.md, last.buffer});
    logits_dst_ = dnnl::memory(plain_of(last.md), engine_, DNNL_MEMORY_NONE);
    logits_reorder_ = dnnl::reorder(logits_src_, logits_dst_);
  }

  void execute(Step& step) {
    guarded(step.label, [&] {
      for (PreReorder& r : step.pre) r.primitive.execute(stream_, r.src, r.dst);
      step.primitive.execute(stream_, step.args);
      stream_.wait();
    });
  }

  void allocate_kept_outputs() {
    for (const Step& step : steps_) {
      Tensor& t = layer_outputs_[static_cast<size_t>(step.output_layer)];
      const Shape& shape = stats_[static_cast<size_t>(step.output_layer)].output;
      if (t.shape != shape || t.empty()) t = Tensor(shape);
    }
  }

  // Converts the step's output into the caller's NCHW float32 copy (only for runs that keep outputs).
  void keep_output(Step& step) {
    guarded(step.label + " (kept output)", [&] {
      if (!step.keep) {
        step.keep_src = step.args.at(DNNL_ARG_DST);
        step.keep_dst = dnnl::memory(plain_of(step.keep_src.get_desc()), engine_, DNNL_MEMORY_NONE);
        step.keep = dnnl::reorder(step.keep_src, step.keep_dst);
      }
      step.keep_dst.set_data_handle(layer_outputs_[static_cast<size_t>(step.output_layer)].data.data());
      step.keep->execute(stream_, step.keep_src, step.keep_dst);
      stream_.wait();
    });
  }

  PrepareConfig config_;
  int threads_ = 1;
  dnnl::engine engine_;
  dnnl::stream stream_;
  Tag activation_tag_ = Tag::any;  // the convolutions' activation layout (blocked_activation_tag())
  Shape input_shape_;
  Shape output_shape_;  // of the last layer
  std::vector<LayerStats> stats_;
  std::vector<int> last_reader_;  // per layer: the last step reading its output
  Value input_value_;
  std::vector<Value> values_;  // per layer; only the materialised ones (a step's last layer) are set
  std::vector<BufferPlan> plans_;
  std::vector<Step> steps_;
  std::vector<ExecStep> exec_steps_;
  std::vector<HostBuffer> buffers_;  // activations, reused as planned
  HostBuffer scratchpad_;            // oneDNN's scratchpad, shared by every primitive
  dnnl::memory input_memory_;        // over the caller's input tensor, set per run
  dnnl::memory logits_src_, logits_dst_;
  dnnl::reorder logits_reorder_;
  int64_t weight_bytes_ = 0;
  int weight_tensors_ = 0;
  std::vector<Tensor> layer_outputs_;  // empty until a run keeps them; fused-away layers stay empty
};

class OnednnBackend final : public Backend {
 public:
  OnednnBackend() : threads_(cpu::thread_count()) {}

  std::string name() const override { return kBackendName; }
  std::string description() const override { return "CPU, fp32: " + cpu_kernel_summary(threads_); }
  Availability availability() const override { return {true, ""}; }

  // oneDNN has a kernel (JIT or its reference) for every well-formed layer; what it cannot make shows as an
  // error naming the layer at prepare time.
  std::optional<std::string> unsupported_reason(const Layer& layer) const override { return malformed_reason(layer); }

  std::unique_ptr<PreparedNet> prepare(const Model& model, const PrepareConfig& config) const override {
    cpu::check_prepare(*this, model, config);
    PrepareConfig resolved = config;
    resolved.cpu_threads = config.cpu_threads > 0 ? config.cpu_threads : threads_;
    return std::make_unique<OnednnPreparedNet>(model, resolved, resolved.cpu_threads);
  }

 private:
  int threads_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<OnednnBackend>(); }

}  // namespace mnv2
