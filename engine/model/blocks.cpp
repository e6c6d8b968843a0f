// Groups the flat layer list into stem / bottleneck blocks / head and gives layers structural names
// ("block3.dw"), so reports and charts speak MobileNetV2's vocabulary whatever the file called its nodes.
#include <set>
#include <string>
#include <vector>

#include "mnv2/model.h"

namespace mnv2 {

namespace {

bool is_activation(const Layer& l) { return l.kind == LayerKind::ReLU6 || l.kind == LayerKind::ReLU; }

const char* activation_suffix(const Layer& l) { return l.kind == LayerKind::ReLU6 ? "relu6" : "relu"; }

// Names must stay unique even for odd topologies (two depthwise convs in one block, say), because
// reports and diffs key on them.
class NameSet {
 public:
  std::string take(const std::string& wanted) {
    std::string name = wanted;
    for (int k = 2; used_.count(name); ++k) name = wanted + "_" + std::to_string(k);
    used_.insert(name);
    return name;
  }

 private:
  std::set<std::string> used_;
};

}  // namespace

void assign_blocks_and_names(Model& model) {
  std::vector<Layer>& layers = model.layers;
  const int n = static_cast<int>(layers.size());

  // Which layers feed an activation: a convolution that does not is a linear projection, which is what
  // closes a bottleneck.
  std::vector<bool> feeds_activation(layers.size(), false);
  for (const Layer& l : layers) {
    if (!is_activation(l)) continue;
    for (int src : l.inputs)
      if (src >= 0 && src < n) feeds_activation[static_cast<size_t>(src)] = true;
  }

  // Pass 1: block numbers. -1 marks "not yet placed".
  std::vector<int> block(layers.size(), -1);
  int first_conv = -1;
  for (int i = 0; i < n; ++i)
    if (layers[static_cast<size_t>(i)].kind == LayerKind::Conv2d) {
      first_conv = i;
      break;
    }

  int num_blocks = 0;
  int next = 0;
  if (first_conv >= 0) {
    // Stem: anything before the first convolution, the convolution and its activation.
    for (; next <= first_conv; ++next) block[static_cast<size_t>(next)] = 0;
    if (next < n && is_activation(layers[static_cast<size_t>(next)]) &&
        !layers[static_cast<size_t>(next)].inputs.empty() && layers[static_cast<size_t>(next)].inputs[0] == first_conv)
      block[static_cast<size_t>(next++)] = 0;

    int start = next;
    for (int i = next; i < n; ++i) {
      const Layer& l = layers[static_cast<size_t>(i)];
      if (l.kind != LayerKind::Conv2d || feeds_activation[static_cast<size_t>(i)]) continue;
      int end = i;
      if (i + 1 < n) {
        const Layer& after = layers[static_cast<size_t>(i) + 1];
        if (after.kind == LayerKind::ResidualAdd &&
            (after.inputs.size() == 2 && (after.inputs[0] == i || after.inputs[1] == i)))
          end = i + 1;
      }
      ++num_blocks;
      for (int k = start; k <= end; ++k) block[static_cast<size_t>(k)] = num_blocks;
      start = end + 1;
      i = end;
    }
    next = start;
  }
  for (int i = next; i < n; ++i) block[static_cast<size_t>(i)] = num_blocks + 1;
  for (int i = 0; i < n; ++i)
    if (block[static_cast<size_t>(i)] < 0) block[static_cast<size_t>(i)] = num_blocks + 1;

  // Pass 2: names.
  NameSet names;
  int last_linear = -1;
  for (int i = 0; i < n; ++i)
    if (layers[static_cast<size_t>(i)].kind == LayerKind::Linear) last_linear = i;

  for (int b = 0; b <= num_blocks + 1; ++b) {
    std::vector<int> members;
    for (int i = 0; i < n; ++i)
      if (block[static_cast<size_t>(i)] == b) members.push_back(i);
    if (members.empty()) continue;

    const bool is_stem = b == 0;
    const bool is_head = b == num_blocks + 1;
    const std::string prefix = is_stem ? "stem" : is_head ? "head" : "block" + std::to_string(b);
    int last_conv = -1;
    for (int i : members)
      if (layers[static_cast<size_t>(i)].kind == LayerKind::Conv2d) last_conv = i;
    bool seen_expand = false;

    for (int i : members) {
      Layer& l = layers[static_cast<size_t>(i)];
      l.block = b;
      l.block_name = is_stem ? "stem" : is_head ? "head" : "block" + std::to_string(b);
      std::string role;
      switch (l.kind) {
        case LayerKind::Conv2d:
          if (is_stem || is_head) {
            role = "conv";
          } else if (i == last_conv) {
            role = "project";
          } else if (l.conv.depthwise()) {
            role = "dw";
          } else if (!seen_expand) {
            role = "expand";
            seen_expand = true;
          } else {
            role = "conv";
          }
          l.name = names.take(prefix + "." + role);
          break;
        case LayerKind::ReLU6:
        case LayerKind::ReLU: {
          // Inside a block the activation is named after the convolution it follows (expand_relu6);
          // stem and head have one convolution each, so the short form reads better there.
          const int src = l.inputs.empty() ? -1 : l.inputs[0];
          const bool named_src = src >= 0 && src < i && block[static_cast<size_t>(src)] == b;
          if (!is_stem && !is_head && named_src) {
            l.name = names.take(layers[static_cast<size_t>(src)].name + "_" + activation_suffix(l));
          } else {
            l.name = names.take(prefix + "." + activation_suffix(l));
          }
          break;
        }
        case LayerKind::ResidualAdd:
          l.name = names.take(prefix + ".add");
          break;
        case LayerKind::GlobalAveragePool:
          l.name = names.take(prefix + ".pool");
          break;
        case LayerKind::Linear:
          l.name = names.take(i == last_linear ? std::string("classifier") : prefix + ".linear");
          break;
      }
    }
  }
  model.num_blocks = num_blocks;
}

}  // namespace mnv2
