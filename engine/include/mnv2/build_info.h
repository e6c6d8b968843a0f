// The build's identity as reports and `mnv2 info` state it. MNV2_VERSION, the release, is a compile definition of
// each program; the commit is not (it changes with every commit and would recompile every file): it is here.
#pragma once

namespace mnv2 {

// `git rev-parse --short=12 HEAD` when the build was configured, or "unknown" outside a git checkout.
const char* build_commit();

}  // namespace mnv2
