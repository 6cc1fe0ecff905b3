// The offset planner core and its independent verifier. The planners (lowerBound, planBestFit,
// planNoReuse) decide where every buffer lives in the arena; verifyPlan re-checks a finished
// plan with a different algorithm (a sweep over steps with an ordered map of live byte ranges,
// instead of the planner's pairwise interval tests), so that a bug in one is unlikely to be
// mirrored in the other. Nothing here depends on MLIR or LLVM.
#include "planner/Planner.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <sstream>
#include <utility>

namespace graphc::plan {
namespace {

// An alignment of 0 is meaningless; the planners treat it as 1 (the verifier reports it).
uint64_t effectiveAlignment(uint64_t alignment) { return alignment == 0 ? 1 : alignment; }

std::string describe(const Buffer &b) {
  std::ostringstream os;
  os << '"' << b.name << "\" [" << b.offset << ", " << b.offset + b.bytes << ") live " << b.first
     << ".." << b.last;
  return os.str();
}

} // namespace

uint64_t lowerBound(const std::vector<Buffer> &buffers, uint64_t alignment) {
  alignment = effectiveAlignment(alignment);
  // Sweep over range endpoints: +size at `first`, -size at `last + 1`. Sorting puts releases
  // before acquisitions at the same step, because a buffer whose last step is s - 1 is not live
  // at s. O(n log n) for the sort, O(n) for the sweep.
  // ((step, 0 = release / 1 = acquire), aligned size)
  std::vector<std::pair<std::pair<int64_t, int>, uint64_t>> ev;
  ev.reserve(2 * buffers.size());
  for (const Buffer &b : buffers) {
    if (b.last < b.first || b.host)
      continue; // empty live range: never live, takes no space; host memory is not the arena's
    uint64_t size = alignTo(b.bytes, alignment);
    ev.push_back({{b.first, 1}, size});
    ev.push_back({{b.last + 1, 0}, size});
  }
  std::sort(ev.begin(), ev.end());
  uint64_t live = 0, peak = 0;
  for (const auto &[key, size] : ev) {
    if (key.second == 0) {
      live -= size;
    } else {
      live += size;
      peak = std::max(peak, live);
    }
  }
  return peak;
}

void planBestFit(Plan &plan) {
  const uint64_t alignment = effectiveAlignment(plan.alignment);
  std::vector<Buffer> &bufs = plan.buffers;
  const size_t n = bufs.size();
  std::vector<uint64_t> size(n);
  for (size_t i = 0; i < n; ++i)
    size[i] = alignTo(bufs[i].bytes, alignment);

  // TFLite's ArenaPlanner order: largest aligned size first; ties go to the buffer that becomes
  // live earlier, then by name (and input position) so that the result is deterministic.
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (size[a] != size[b])
      return size[a] > size[b];
    if (bufs[a].first != bufs[b].first)
      return bufs[a].first < bufs[b].first;
    if (bufs[a].name != bufs[b].name)
      return bufs[a].name < bufs[b].name;
    return a < b;
  });

  // Greedy best fit (TFLite SimpleMemoryArena / "greedy by size" of Pisarchyk & Lee, 2020):
  // for each buffer, the already placed buffers that are live at some common step, sorted by
  // offset, leave gaps between them; take the smallest gap that holds the buffer, else go on
  // top of the highest of them. O(n^2 log n) worst case: O(n) placed buffers per step, sorted.
  std::vector<size_t> placed;
  placed.reserve(n);
  std::vector<size_t> conflicts;
  uint64_t arena = 0;
  for (size_t i : order) {
    Buffer &b = bufs[i];
    if (size[i] == 0 || b.last < b.first) {
      // Occupies no bytes at any step: any offset is valid, 0 is the simplest.
      b.offset = 0;
      continue;
    }
    conflicts.clear();
    for (size_t j : placed)
      if (bufs[j].first <= b.last && b.first <= bufs[j].last)
        conflicts.push_back(j);
    std::sort(conflicts.begin(), conflicts.end(), [&](size_t x, size_t y) {
      return bufs[x].offset != bufs[y].offset ? bufs[x].offset < bufs[y].offset : x < y;
    });
    uint64_t top = 0; // end of the highest conflicting byte seen so far
    uint64_t bestOffset = 0;
    uint64_t bestGap = UINT64_MAX;
    bool found = false;
    for (size_t j : conflicts) {
      uint64_t start = bufs[j].offset;
      if (start > top) {
        uint64_t gap = start - top;
        if (gap >= size[i] && gap < bestGap) {
          bestGap = gap;
          bestOffset = top;
          found = true;
        }
      }
      top = std::max(top, start + size[j]);
    }
    b.offset = found ? bestOffset : top;
    arena = std::max(arena, b.offset + size[i]);
    placed.push_back(i);
  }
  plan.arenaBytes = arena;
}

void planNoReuse(Plan &plan) {
  const uint64_t alignment = effectiveAlignment(plan.alignment);
  uint64_t next = 0;
  for (Buffer &b : plan.buffers) {
    b.offset = next;
    next += alignTo(b.bytes, alignment);
  }
  plan.arenaBytes = next;
}

size_t growIntoFreeBytes(Plan &plan, const std::vector<Growable> &growables) {
  const uint64_t alignment = effectiveAlignment(plan.alignment);
  size_t grown = 0;
  std::vector<std::pair<uint64_t, uint64_t>> used; // [begin, end) of the others, by begin
  for (const Growable &g : growables) {
    Buffer &b = plan.buffers[g.buffer];
    if (b.host)
      continue;
    used.clear();
    for (size_t i = 0; i < plan.buffers.size(); ++i) {
      const Buffer &other = plan.buffers[i];
      if (i != g.buffer && !other.host && other.bytes && other.first <= b.last &&
          b.first <= other.last)
        used.push_back({other.offset, other.offset + alignTo(other.bytes, alignment)});
    }
    std::sort(used.begin(), used.end());
    // The gaps between the merged used ranges; the first largest one wins.
    uint64_t gapBegin = 0, gapBytes = 0, cursor = 0;
    auto consider = [&](uint64_t end) {
      if (end > cursor && end - cursor > gapBytes) {
        gapBegin = cursor;
        gapBytes = end - cursor;
      }
    };
    for (auto [begin, end] : used) {
      consider(begin);
      cursor = std::max(cursor, end);
    }
    consider(plan.arenaBytes);
    uint64_t target = std::min(gapBytes, g.maxBytes);
    if (target == 0)
      continue;
    uint64_t power = uint64_t{1} << (63 - __builtin_clzll(target));
    if (power <= alignTo(b.bytes, alignment) || power % alignment != 0)
      continue;
    b.offset = gapBegin;
    b.bytes = power;
    ++grown;
  }
  return grown;
}

std::string verifyPlan(const Plan &plan) {
  std::ostringstream os;
  if (plan.alignment == 0)
    return "plan: alignment is 0";

  // Per-buffer checks first, in input order: O(n).
  for (const Buffer &b : plan.buffers) {
    if (b.first > b.last) {
      os << "plan: buffer " << describe(b) << " has an empty live range";
      return os.str();
    }
    if (b.first < 0) {
      os << "plan: buffer " << describe(b) << " starts at negative step " << b.first;
      return os.str();
    }
    if (b.offset % plan.alignment != 0) {
      os << "plan: buffer " << describe(b) << " offset " << b.offset
         << " is not a multiple of the alignment " << plan.alignment;
      return os.str();
    }
    // offset + bytes may not fit in 64 bits; compare without forming it.
    if (!b.host && (b.bytes > plan.arenaBytes || b.offset > plan.arenaBytes - b.bytes)) {
      os << "plan: buffer " << describe(b) << " ends past the arena of " << plan.arenaBytes
         << " bytes";
      return os.str();
    }
    if (b.host && (b.offset < plan.arenaBytes || b.bytes > plan.hostArenaBytes ||
                   b.offset - plan.arenaBytes > plan.hostArenaBytes - b.bytes)) {
      os << "plan: host buffer " << describe(b) << " lies outside the host arena ["
         << plan.arenaBytes << ", " << plan.arenaBytes + plan.hostArenaBytes << ")";
      return os.str();
    }
  }

  // Overlaps: sweep buffers in order of first step. `active` holds the byte ranges of buffers
  // inserted so far that are still live, keyed by offset; `expiry` is a min-heap on last step
  // that removes them. Any two buffers whose live ranges intersect are both live at the later
  // one's first step, so checking each new range against the active set finds every conflict.
  // The active ranges are pairwise disjoint (we stop at the first overlap), so a new range
  // overlaps one of them iff it overlaps its predecessor or successor by offset. O(n log n).
  // Zero-byte buffers occupy nothing and are skipped.
  std::vector<size_t> order;
  order.reserve(plan.buffers.size());
  for (size_t i = 0; i < plan.buffers.size(); ++i)
    if (plan.buffers[i].bytes != 0)
      order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return plan.buffers[a].first != plan.buffers[b].first
               ? plan.buffers[a].first < plan.buffers[b].first
               : a < b;
  });
  std::map<uint64_t, size_t> active; // offset -> buffer index
  using Expiry = std::pair<int64_t, size_t>;
  std::priority_queue<Expiry, std::vector<Expiry>, std::greater<Expiry>> expiry;
  auto overlap = [&](const Buffer &older, const Buffer &newer) {
    std::ostringstream msg;
    msg << "plan: buffers " << describe(older) << " and " << describe(newer) << " overlap at step "
        << newer.first;
    return msg.str();
  };
  for (size_t i : order) {
    const Buffer &b = plan.buffers[i];
    while (!expiry.empty() && expiry.top().first < b.first) {
      active.erase(plan.buffers[expiry.top().second].offset);
      expiry.pop();
    }
    auto next = active.lower_bound(b.offset); // first active range starting at or after b
    if (next != active.end() && next->first < b.offset + b.bytes)
      return overlap(plan.buffers[next->second], b);
    if (next != active.begin()) {
      const Buffer &prev = plan.buffers[std::prev(next)->second];
      if (prev.offset + prev.bytes > b.offset)
        return overlap(prev, b);
    }
    active.emplace(b.offset, i);
    expiry.push({b.last, i});
  }
  return "";
}

} // namespace graphc::plan
