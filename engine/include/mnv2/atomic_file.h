// Writing files so that a reader never sees a half-written one: write a temporary beside it, then rename.
#pragma once

#include <string>
#include <string_view>

namespace mnv2 {

// Throws Error naming the path on any failure; the temporary is removed and an existing file is untouched.
void write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace mnv2
