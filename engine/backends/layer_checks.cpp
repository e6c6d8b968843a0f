// Structural layer checks shared by the backends (see layer_checks.h).
#include "backends/layer_checks.h"

#include <cstdint>
#include <cstdio>
#include <vector>

namespace mnv2 {

namespace {

std::optional<std::string> check_input_count(const Layer& layer, size_t expected) {
  if (layer.inputs.size() == expected) return std::nullopt;
  return std::string(to_string(layer.kind)) + " takes " + std::to_string(expected) + " input(s), this one has " +
         std::to_string(layer.inputs.size());
}

std::optional<std::string> check_parameters(const std::vector<float>& weight, int64_t expected_weight,
                                            const std::vector<float>& bias, int64_t expected_bias) {
  if (static_cast<int64_t>(weight.size()) != expected_weight)
    return "weight holds " + std::to_string(weight.size()) + " values, expected " + std::to_string(expected_weight);
  if (!bias.empty() && static_cast<int64_t>(bias.size()) != expected_bias)
    return "bias holds " + std::to_string(bias.size()) + " values, expected " + std::to_string(expected_bias);
  return std::nullopt;
}

std::optional<std::string> conv_malformed_reason(const Layer& layer) {
  const ConvParams& c = layer.conv;
  if (auto r = check_input_count(layer, 1)) return r;
  if (c.in_channels < 1 || c.out_channels < 1) return std::string("channel counts must be positive");
  if (c.groups < 1 || c.in_channels % c.groups != 0 || c.out_channels % c.groups != 0)
    return "groups " + std::to_string(c.groups) + " must divide in_channels " + std::to_string(c.in_channels) +
           " and out_channels " + std::to_string(c.out_channels);
  if (c.kernel_h < 1 || c.kernel_w < 1 || c.stride_h < 1 || c.stride_w < 1 || c.dilation_h < 1 || c.dilation_w < 1)
    return std::string("kernel, stride and dilation must be positive");
  if (c.pad_top < 0 || c.pad_left < 0 || c.pad_bottom < 0 || c.pad_right < 0)
    return std::string("negative padding is not supported");
  const int64_t weight = static_cast<int64_t>(c.out_channels) * (c.in_channels / c.groups) * c.kernel_h * c.kernel_w;
  return check_parameters(layer.weight, weight, layer.bias, c.out_channels);
}

}  // namespace

std::optional<std::string> malformed_reason(const Layer& layer) {
  switch (layer.kind) {
    case LayerKind::Conv2d:
      return conv_malformed_reason(layer);
    case LayerKind::ReLU6:
    case LayerKind::ReLU:
    case LayerKind::GlobalAveragePool:
      return check_input_count(layer, 1);
    case LayerKind::ResidualAdd:
      return check_input_count(layer, 2);
    case LayerKind::Linear:
      if (auto r = check_input_count(layer, 1)) return r;
      if (layer.in_features < 1 || layer.out_features < 1) return std::string("feature counts must be positive");
      return check_parameters(layer.weight, static_cast<int64_t>(layer.out_features) * layer.in_features, layer.bias,
                              layer.out_features);
  }
  return "unknown layer kind " + std::to_string(static_cast<int>(layer.kind));
}

std::string format_number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

std::string layer_label(const Layer& layer) {
  std::string label = "layer " + std::to_string(layer.index);
  if (!layer.name.empty()) label += " '" + layer.name + "'";
  return label + " (" + to_string(layer.kind) + ")";
}

}  // namespace mnv2
