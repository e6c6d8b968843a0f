// Structural checks every backend makes before it runs a layer: input counts, positive sizes, parameter
// counts that match the attributes. Backends add their own restrictions after these.
#pragma once

#include <optional>
#include <string>

#include "mnv2/model.h"

namespace mnv2 {

// nullopt if the layer is well formed, otherwise what is wrong with it.
std::optional<std::string> malformed_reason(const Layer& layer);

// "layer 7 'block2.dw' (Conv2d)", for error messages.
std::string layer_label(const Layer& layer);

// A number as messages and variant strings show it (printf's %g: "6", "0.5", "inf").
std::string format_number(double x);

}  // namespace mnv2
