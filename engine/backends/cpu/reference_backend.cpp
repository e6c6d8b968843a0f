// The cpu-ref backend, the float32 reference: runs the topology layer by layer with the plain kernels of
// cpu_ops.h. One step per topology layer, so its layer outputs are what every other backend (the oneDNN cpu
// backend included) is judged against.
#include <algorithm>
#include <limits>
#include <new>
#include <string>
#include <utility>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_common.h"
#include "backends/cpu/cpu_ops.h"
#include "backends/layer_checks.h"
#include "mnv2/cpu_info.h"
#include "mnv2/error.h"

namespace mnv2 {
namespace {

constexpr const char* kBackendName = "cpu-ref";

// One executable step: a topology layer with its own copy of the parameters and its buffer plan.
struct Step {
  LayerKind kind = LayerKind::Conv2d;
  std::vector<int> input_slots;  // activation slot per input, or -1 for the network input
  int output_slot = 0;
  int64_t output_floats = 0;  // whole batch
  cpu::ConvShape conv;
  cpu::ConvVariant variant = cpu::ConvVariant::im2col_gemm;
  std::vector<float> weight;
  std::vector<float> bias;  // empty: none
  float clip_lo = 0.0f, clip_hi = 0.0f;
  int64_t planes = 0, plane_size = 0;     // GlobalAveragePool
  int in_features = 0, out_features = 0;  // Linear
};

class ReferencePreparedNet final : public PreparedNet {
 public:
  ReferencePreparedNet(const Model& model, const PrepareConfig& config, int threads)
      : config_(config), threads_(threads) {
    build(model);
  }

  const PrepareConfig& config() const override { return config_; }
  std::string description() const override { return "CPU reference, fp32: " + reference_kernel_summary(threads_); }
  const std::vector<ExecStep>& steps() const override { return exec_steps_; }
  const std::vector<Tensor>& layer_outputs() const override { return layer_outputs_; }

  MemoryReport memory() const override {
    MemoryReport m;
    auto held = [&m](size_t floats) {
      m.tensors += floats > 0 ? 1 : 0;
      return static_cast<int64_t>(floats * sizeof(float));
    };
    for (const Step& s : steps_) m.weight_bytes += held(s.weight.size()) + held(s.bias.size());
    for (const std::vector<float>& slot : slots_) m.activation_bytes += held(slot.size());
    for (const Tensor& t : layer_outputs_) m.activation_bytes += held(t.data.size());
    m.workspace_bytes = held(workspace_.size());
    return m;
  }

  Tensor run(const Tensor& input, const RunOptions& options) override {
    if (!(input.shape == input_shape_) || static_cast<int64_t>(input.data.size()) != input_shape_.numel())
      throw UsageError(std::string(kBackendName) + ": input shape " + input.shape.str() + " (" +
                       std::to_string(input.data.size()) + " values) does not match the prepared " +
                       input_shape_.str());
    // The kernels split their work over threads_ OpenMP threads themselves; with threads_ == 1 that team is
    // an inactive parallel region, inside which oneDNN's sgemm would start a team of OpenMP's default size.
    cpu::ScopedOmpThreads team(threads_);
    if (options.keep_layer_outputs) allocate_kept_outputs();

    // Worker spans only for an observer that asks (the timeline's host clock): the kernels then note each
    // thread's part of its parallel regions; otherwise they skip it.
    const bool thread_spans = options.observer && options.observer->wants_thread_spans();
    for (size_t i = 0; i < steps_.size(); ++i) {
      const int step_index = static_cast<int>(i);
      if (options.observer) options.observer->step_begin(step_index, nullptr);
      if (thread_spans) {
        thread_log_.reset(threads_);
        {
          const cpu::ScopedThreadSpanLog active(&thread_log_);
          execute(steps_[i], input.data.data());
        }
        const auto& spans = thread_log_.spans();
        for (size_t t = 0; t < spans.size(); ++t)
          if (spans[t].begin_ns >= 0)
            options.observer->thread_span(step_index, static_cast<int>(t), spans[t].begin_ns, spans[t].end_ns);
      } else {
        execute(steps_[i], input.data.data());
      }
      if (options.observer) options.observer->step_end(step_index, nullptr);
      if (options.keep_layer_outputs) {
        const std::vector<float>& out = slots_[steps_[i].output_slot];
        std::copy_n(out.begin(), steps_[i].output_floats, layer_outputs_[i].data.begin());
      }
    }

    Tensor logits(Shape{config_.batch, output_shape_.per_image(), 1, 1});
    const std::vector<float>& last = slots_[steps_.back().output_slot];
    std::copy_n(last.begin(), logits.data.size(), logits.data.begin());
    return logits;
  }

 private:
  void build(const Model& model) {
    const size_t n = model.layers.size();
    if (n == 0) throw Error(std::string(kBackendName) + ": the model has no layers");
    const std::vector<LayerStats> stats = analyse(model, config_.batch, config_.height, config_.width);
    if (stats.size() != n)
      throw Error(std::string(kBackendName) + ": analyse() returned a shape for " + std::to_string(stats.size()) +
                  " of " + std::to_string(n) + " layers");
    input_shape_ = Shape{config_.batch, model.input_channels, config_.height, config_.width};
    output_shape_ = stats.back().output;

    steps_.resize(n);
    exec_steps_.resize(n);
    layer_outputs_.assign(n, Tensor{});
    output_shapes_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const Layer& layer = model.layers[i];
      Step& step = steps_[i];
      step.kind = layer.kind;
      step.output_floats = stats[i].output.numel();
      output_shapes_[i] = stats[i].output;
      std::vector<Shape> in_shapes;
      for (int j : layer.inputs) {
        if (j != kNetworkInput && (j < 0 || j >= static_cast<int>(i)))
          throw Error(std::string(kBackendName) + ": " + layer_label(layer) + " reads layer " + std::to_string(j) +
                      ", which does not come before it");
        in_shapes.push_back(j == kNetworkInput ? input_shape_ : stats[j].output);
      }
      configure(step, layer, in_shapes, stats[i].output);
      ExecStep& exec = exec_steps_[i];
      exec.name = std::string(to_string(layer.kind)) + " " + std::to_string(i);
      exec.layers = {static_cast<int>(i)};
    }
    plan_buffers(model);
    for (size_t i = 0; i < n; ++i) exec_steps_[i].variant = variant_name(steps_[i]);
  }

  // Fills the step's parameters, checking that the shapes analyse() derived are ones its kernel takes;
  // analyse() should already have refused anything else, but a kernel trusting a wrong shape writes out
  // of bounds.
  void configure(Step& step, const Layer& layer, const std::vector<Shape>& in, const Shape& out) {
    auto fail = [&](const std::string& why) {
      throw Error(std::string(kBackendName) + ": " + layer_label(layer) + ": " + why);
    };
    switch (layer.kind) {
      case LayerKind::Conv2d: {
        const ConvParams& c = layer.conv;
        cpu::ConvShape& s = step.conv;
        s.batch = config_.batch;
        s.in_channels = c.in_channels;
        s.in_h = static_cast<int>(in[0].h);
        s.in_w = static_cast<int>(in[0].w);
        s.out_channels = c.out_channels;
        s.out_h = cpu::conv_output_extent(s.in_h, c.pad_top, c.pad_bottom, c.kernel_h, c.stride_h, c.dilation_h);
        s.out_w = cpu::conv_output_extent(s.in_w, c.pad_left, c.pad_right, c.kernel_w, c.stride_w, c.dilation_w);
        s.kernel_h = c.kernel_h;
        s.kernel_w = c.kernel_w;
        s.stride_h = c.stride_h;
        s.stride_w = c.stride_w;
        s.pad_top = c.pad_top;
        s.pad_left = c.pad_left;
        s.dilation_h = c.dilation_h;
        s.dilation_w = c.dilation_w;
        s.groups = c.groups;
        if (in[0].c != c.in_channels)
          fail("input has " + std::to_string(in[0].c) + " channels, expected " + std::to_string(c.in_channels));
        if (!(out == Shape{config_.batch, c.out_channels, s.out_h, s.out_w}))
          fail("output shape " + out.str() + " does not follow from input " + in[0].str());
        step.variant = cpu::choose_conv_variant(s);
        // The kernels take int sizes: a map's pixels and the depth of its GEMM must fit.
        if (static_cast<int64_t>(s.out_h) * s.out_w > std::numeric_limits<int>::max() ||
            cpu::conv_workspace_floats(s, step.variant) / std::max<int64_t>(1, int64_t{s.out_h} * s.out_w) >
                std::numeric_limits<int>::max())
          fail("the " + out.str() + " output is too large for 32-bit sizes");
        step.weight = layer.weight;
        step.bias = layer.bias;
        break;
      }
      case LayerKind::ReLU6:
      case LayerKind::ReLU:
        if (!(out == in[0])) fail("output shape " + out.str() + " differs from input " + in[0].str());
        step.clip_lo = layer.clip_min;
        step.clip_hi = layer.clip_max;
        break;
      case LayerKind::ResidualAdd:
        if (!(in[0] == in[1]) || !(out == in[0]))
          fail("adds " + in[0].str() + " and " + in[1].str() + " into " + out.str());
        break;
      case LayerKind::GlobalAveragePool:
        if (!(out == Shape{in[0].n, in[0].c, 1, 1})) fail("pools " + in[0].str() + " into " + out.str());
        step.planes = in[0].n * in[0].c;
        step.plane_size = in[0].h * in[0].w;
        break;
      case LayerKind::Linear:
        if (in[0].per_image() != layer.in_features)
          fail("input " + in[0].str() + " does not hold " + std::to_string(layer.in_features) + " features");
        if (!(out == Shape{config_.batch, layer.out_features, 1, 1}))
          fail("output shape " + out.str() + " is not " + std::to_string(layer.out_features) + " features");
        step.in_features = layer.in_features;
        step.out_features = layer.out_features;
        step.weight = layer.weight;
        step.bias = layer.bias;
        break;
    }
  }

  // Activations live in slots reused once every reader of the value has run; an elementwise layer
  // writes over its input when it is that input's last reader. Everything is sized here, once.
  void plan_buffers(const Model& model) {
    const int n = static_cast<int>(steps_.size());
    std::vector<int> last_use(n);
    for (int i = 0; i < n; ++i) last_use[i] = i;
    last_use[n - 1] = n;  // the logits outlive the loop
    for (int i = 0; i < n; ++i)
      for (int j : model.layers[i].inputs)
        if (j >= 0) last_use[j] = std::max(last_use[j], i);

    std::vector<int64_t> capacity;  // floats per slot
    std::vector<int> free_slots;
    std::vector<int> slot_of(n, -1);
    for (int i = 0; i < n; ++i) {
      Step& step = steps_[i];
      const Layer& layer = model.layers[i];
      const int64_t need = step.output_floats;
      int chosen = -1;
      const bool elementwise =
          layer.kind == LayerKind::ReLU6 || layer.kind == LayerKind::ReLU || layer.kind == LayerKind::ResidualAdd;
      if (elementwise) {
        for (int j : layer.inputs)
          if (j >= 0 && last_use[j] == i && steps_[j].output_floats == need) {
            chosen = slot_of[j];
            break;
          }
      }
      if (chosen < 0 && !free_slots.empty()) {
        // Best fit: the smallest free slot that holds the output, else the largest one, grown.
        auto best = free_slots.end();
        for (auto it = free_slots.begin(); it != free_slots.end(); ++it) {
          const bool fits = capacity[*it] >= need;
          if (best == free_slots.end()) {
            best = it;
            continue;
          }
          const bool best_fits = capacity[*best] >= need;
          if ((fits && (!best_fits || capacity[*it] < capacity[*best])) ||
              (!fits && !best_fits && capacity[*it] > capacity[*best]))
            best = it;
        }
        chosen = *best;
        free_slots.erase(best);
        capacity[chosen] = std::max(capacity[chosen], need);
      }
      if (chosen < 0) {
        chosen = static_cast<int>(capacity.size());
        capacity.push_back(need);
      }
      slot_of[i] = chosen;
      step.output_slot = chosen;
      step.input_slots.clear();
      for (int j : layer.inputs) step.input_slots.push_back(j >= 0 ? slot_of[j] : -1);

      auto release = [&](int slot) {
        if (slot != chosen && std::find(free_slots.begin(), free_slots.end(), slot) == free_slots.end())
          free_slots.push_back(slot);
      };
      for (int j : layer.inputs)
        if (j >= 0 && last_use[j] == i) release(slot_of[j]);
      if (last_use[i] == i) free_slots.push_back(chosen);  // nobody reads it: free at once
    }

    int64_t workspace = 0;
    for (const Step& step : steps_)
      if (step.kind == LayerKind::Conv2d)
        workspace = std::max(workspace, cpu::conv_workspace_floats(step.conv, step.variant));

    // The buffers are zero-filled as they are allocated, so an allocation the machine cannot back would
    // not fail cleanly but get the process killed: check first. The caller's input batch is counted too.
    int64_t floats = workspace + input_shape_.numel() + output_shape_.numel();
    for (int64_t c : capacity) floats += c;
    const int64_t need = floats * static_cast<int64_t>(sizeof(float));
    const char* what = "the input, activations and workspace";
    cpu::check_host_memory(kBackendName, config_.batch, config_.height, config_.width, need, what);
    try {
      slots_.resize(capacity.size());
      for (size_t s = 0; s < capacity.size(); ++s) slots_[s].assign(static_cast<size_t>(capacity[s]), 0.0f);
      workspace_.assign(static_cast<size_t>(workspace), 0.0f);
    } catch (const std::bad_alloc&) {
      throw Error(cpu::out_of_host_memory(kBackendName, config_.batch, config_.height, config_.width, need, what,
                                          "the allocation failed"));
    }
  }

  static std::string variant_name(const Step& step) {
    const bool in_place = !step.input_slots.empty() && step.input_slots[0] == step.output_slot;
    const bool second_in_place = step.input_slots.size() > 1 && step.input_slots[1] == step.output_slot;
    switch (step.kind) {
      case LayerKind::Conv2d:
        return cpu::to_string(step.variant);
      case LayerKind::ReLU6:
      case LayerKind::ReLU:
        return in_place ? "clip-in-place" : "clip";
      case LayerKind::ResidualAdd:
        return in_place || second_in_place ? "add-in-place" : "add";
      case LayerKind::GlobalAveragePool:
        return "plane-mean";
      case LayerKind::Linear:
        return "gemm";
    }
    return "?";
  }

  const float* input_of(const Step& step, size_t k, const float* network_input) const {
    const int slot = step.input_slots[k];
    return slot < 0 ? network_input : slots_[slot].data();
  }

  void execute(const Step& step, const float* network_input) {
    float* out = slots_[step.output_slot].data();
    const float* in = input_of(step, 0, network_input);
    const float* bias = step.bias.empty() ? nullptr : step.bias.data();
    switch (step.kind) {
      case LayerKind::Conv2d:
        cpu::conv2d(step.conv, step.variant, in, step.weight.data(), bias, out, workspace_.data(), threads_);
        break;
      case LayerKind::ReLU6:
      case LayerKind::ReLU:
        cpu::clip(in, out, step.output_floats, step.clip_lo, step.clip_hi, threads_);
        break;
      case LayerKind::ResidualAdd:
        cpu::add(in, input_of(step, 1, network_input), out, step.output_floats, threads_);
        break;
      case LayerKind::GlobalAveragePool:
        cpu::global_average_pool(in, out, step.planes, step.plane_size, threads_);
        break;
      case LayerKind::Linear:
        cpu::linear(in, step.weight.data(), bias, out, config_.batch, step.in_features, step.out_features, threads_);
        break;
    }
  }

  void allocate_kept_outputs() {
    for (size_t i = 0; i < steps_.size(); ++i)
      if (layer_outputs_[i].shape != output_shapes_[i] || layer_outputs_[i].empty())
        layer_outputs_[i] = Tensor(output_shapes_[i]);
  }

  PrepareConfig config_;
  int threads_ = 1;
  cpu::ThreadSpanLog thread_log_;  // the workers' parts of the current step, when an observer wants them
  Shape input_shape_;
  Shape output_shape_;  // of the last layer
  std::vector<Step> steps_;
  std::vector<ExecStep> exec_steps_;
  std::vector<Shape> output_shapes_;
  std::vector<std::vector<float>> slots_;  // activations, reused as planned
  std::vector<float> workspace_;           // im2col columns or the depthwise zero row, shared by all steps
  std::vector<Tensor> layer_outputs_;      // empty until a run keeps them
};

class ReferenceBackend final : public Backend {
 public:
  ReferenceBackend() : threads_(cpu::thread_count()) {}

  std::string name() const override { return kBackendName; }
  std::string description() const override { return "CPU reference, fp32: " + reference_kernel_summary(threads_); }
  Availability availability() const override { return {true, ""}; }

  // The reference runs every well-formed layer: any kernel, stride, pads, dilation, groups and clip bounds.
  std::optional<std::string> unsupported_reason(const Layer& layer) const override { return malformed_reason(layer); }

  std::unique_ptr<PreparedNet> prepare(const Model& model, const PrepareConfig& config) const override {
    cpu::check_prepare(*this, model, config);
    PrepareConfig resolved = config;
    resolved.cpu_threads = config.cpu_threads > 0 ? config.cpu_threads : threads_;
    return std::make_unique<ReferencePreparedNet>(model, resolved, resolved.cpu_threads);
  }

 private:
  int threads_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_reference_backend() { return std::make_unique<ReferenceBackend>(); }

}  // namespace mnv2
