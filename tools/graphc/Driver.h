// The graphc compiler driver: command line, phases, fit report, outputs.
#pragma once

namespace graphc {

/// Exit codes: 0 success, 1 bad input (unreadable or unsupported model, bad flag),
/// 3 the plan does not fit --budget, 4 the toolchain failed to build the binary.
int runGraphcDriver(int argc, char **argv);

} // namespace graphc
