// Error types shared by the engine, the CLI and the app. The CLI maps them to exit codes:
// Error -> 1 (runtime: bad file, bad model, GPU failure), UsageError -> 2 (bad arguments).
#pragma once

#include <stdexcept>
#include <string>

namespace mnv2 {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A command-line or API argument that is out of range or malformed.
class UsageError : public Error {
 public:
  using Error::Error;
};

}  // namespace mnv2
