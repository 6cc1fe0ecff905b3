// Where the batch searches (graphc --max-batch, the micro-batch and infeasible-error searches)
// split the range they bisect. Their trials are compiles whose cost depends on the answer: one
// that misses the budget runs every rematerialization sequence before it gives up, one that
// fits stops at its first fitting sequence. Free of MLIR.
#pragma once

namespace graphc::remat {

/// Where a bisection for the boundary of a monotone predicate probes its range, as a fraction p
/// of the range measured from the side that holds, when a probe that fails costs `missSeconds`
/// and one that holds `hitSeconds`: the p in [0.05, 0.95] that minimises the expected cost per
/// bit learned, (p miss + (1 - p) hit) / H(p), for a boundary uniform over the range (H is the
/// binary entropy). Any p finds the same boundary. Equal (or unknown: not positive) costs give
/// 1/2; dearer misses less than 1/2, dearer hits more. O(1): a scan over 46 values of p.
double bisectionSplit(double missSeconds, double hitSeconds);

} // namespace graphc::remat
