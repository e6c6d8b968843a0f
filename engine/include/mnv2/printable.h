// Text that came from a file, a name or a label, made safe to print on a terminal: one helper every command and
// the engine's messages use, so no file can move the cursor, clear the screen or forge a line of output.
#pragma once

#include <string>
#include <string_view>

namespace mnv2 {

// `text` with every control character escaped and valid UTF-8 kept: "\n", "\r" and "\t" as those two-character
// escapes, any other C0 control and DEL as "\xNN" (ESC is "\x1b"), a C1 control (U+0080..U+009F,
// which some terminals obey) as "\u0080".."\u009f", and a byte that is not part of valid UTF-8 as "\xNN".
// Text without any of these comes back unchanged (a backslash too: the output is for reading, not parsing back).
std::string printable(std::string_view text);

}  // namespace mnv2
