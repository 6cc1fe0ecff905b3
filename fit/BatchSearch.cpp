// The bisection split of the batch searches; see BatchSearch.h.
#include "fit/BatchSearch.h"

#include <cmath>
#include <limits>

double graphc::remat::bisectionSplit(double missSeconds, double hitSeconds) {
  if (!(missSeconds > 0) || !(hitSeconds > 0) || missSeconds == hitSeconds)
    return 0.5;
  if (missSeconds < hitSeconds) // the mirror image: probe nearer the side that fails
    return 1 - bisectionSplit(hitSeconds, missSeconds);
  double best = 0.5, bestCost = std::numeric_limits<double>::infinity();
  for (int percent = 5; percent <= 50; ++percent) {
    double p = percent / 100.0;
    double entropy = -(p * std::log2(p) + (1 - p) * std::log2(1 - p));
    double cost = (p * missSeconds + (1 - p) * hitSeconds) / entropy;
    if (cost < bestCost) {
      bestCost = cost;
      best = p;
    }
  }
  return best;
}
