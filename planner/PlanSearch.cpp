// planNearOptimal: the offset planner that aims at the liveness lower bound. It runs in two
// stages. First a cheap heuristic, best fit under several buffer orders (the "greedy by size"
// family of Pisarchyk & Lee, 2020, as in TFLite's and XLA's planners), keeping the lowest arena.
// When that misses the lower bound (or the requested capacity), an exact branch-and-bound search
// in the style of MiniMalloc (Moffitt, "MiniMalloc: A Lightweight Memory Allocator for
// Hardware-Accelerated Machine Learning", ASPLOS 2023) takes over:
//
//  * Canonical plans: buffers are placed one at a time, each at its lowest available offset
//    (the "skyline": 0 or the end of the highest already-placed buffer it meets in time), and in
//    non-decreasing (offset, preorder index) order. Every feasible plan can be pushed down into
//    such a canonical one, so searching only these is complete.
//  * Branching: on which unplaced buffer comes next, in order of skyline offset then a static
//    preorder (max section sum, area, width in three variations tried round robin with doubling
//    node limits, as MiniMalloc does).
//  * Pruning: (a) section bound: time is cut into sections (the maximal cliques of the interval
//    graph); in every section the floor (max of the current offset, the highest placed top and
//    the lowest skyline of its unplaced buffers) plus the sum of its unplaced sizes must fit the
//    capacity; (b) dominance: a buffer whose offset is at or above the top some other unplaced
//    buffer could reach is skipped, because that one could be slid under it first; (c) inference:
//    a section's floor is raised to the lowest skyline offset of its unplaced buffers, kept
//    incrementally with a count of the buffers at it.
//  * Dynamic decomposition: when the placed buffers cut the unplaced ones into groups that share
//    no section, each group is solved on its own (no backtracking across groups).
//  * Bottom stack: buffers that meet every other buffer in time (parameters, optimizer state)
//    are stacked at offset 0 before the search, which places only the rest (no plan is lost;
//    see planNearOptimal).
//
// The feasibility search answers "is there a plan of height <= C"; minimising wraps it in a
// binary search between the lower bound and the best known height. Each node costs
// O(n + k log k) (re-ordering the candidates, k of which moved) plus O(overlaps + section
// members) for the incremental updates; memory is O(n^2) in the worst case for the overlap
// lists, so the search is skipped above PlanOptions::maxSearchBuffers. All choices are made in a
// fixed order (ties broken by buffer index), so the result depends only on the input and the
// node budget; the wall-clock limit only matters when it cuts a search short.
#include "planner/Planner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <thread>
#include <utility>

namespace graphc::plan {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kUnplaced = std::numeric_limits<uint64_t>::max();

// The part of the problem the planners work on: buffers that occupy bytes at some step.
struct Item {
  uint64_t size;       // aligned size
  int64_t first, last; // inclusive live range
  size_t buffer;       // index into Plan::buffers
};

//===----------------------------------------------------------------------===//
// Stage 1: best fit under several orders.
//===----------------------------------------------------------------------===//

// The placed buffers as the sweep sees them, sorted by offset so that a new buffer's gaps come
// out of a single left-to-right pass without sorting its conflicts (the order among equal
// offsets changes no gap: the second of them starts below the top the first one set). Stored
// as columns: the sweep tests every placed buffer's live range against the new one's, and
// most of them miss it (a 16-micro-batch ResNet-50 step: about 1 in 6 of 14k buffers meets a
// new one in time), so the test runs over the ranges alone, as 32-bit ranks of the steps, in
// blocks that the compiler vectorises, and only the buffers that meet it are read further.
struct PlacedColumns {
  static constexpr size_t kBlock = 64;
  std::vector<uint64_t> offset, end;
  std::vector<int32_t> first, last; // ranks (TimeRanks)

  explicit PlacedColumns(size_t n) {
    offset.reserve(n);
    end.reserve(n);
    first.reserve(n);
    last.reserve(n);
  }

  // Inserts after every buffer of a lower or equal offset.
  void insert(uint64_t at, uint64_t top, int32_t from, int32_t to) {
    size_t pos = size_t(std::upper_bound(offset.begin(), offset.end(), at) - offset.begin());
    offset.insert(offset.begin() + pos, at);
    end.insert(end.begin() + pos, top);
    first.insert(first.begin() + pos, from);
    last.insert(last.begin() + pos, to);
  }

  // meets[k] = 1 when placed buffer `base + k` (k < count <= kBlock) is live at some step of
  // [from, to]. Branch-free, so that it vectorises.
  void meeting(size_t base, size_t count, int32_t from, int32_t to, uint8_t *meets) const {
    const int32_t *f = first.data() + base, *l = last.data() + base;
    for (size_t k = 0; k < count; ++k)
      meets[k] = uint8_t((f[k] <= to) & (l[k] >= from));
  }
};

// Order-preserving 32-bit ranks of the items' live-range endpoints (the overlap test needs
// only their order). O(n log n).
struct TimeRanks {
  std::vector<int32_t> first, last;
  explicit TimeRanks(const std::vector<Item> &items) {
    std::vector<int64_t> steps;
    steps.reserve(2 * items.size());
    for (const Item &it : items) {
      steps.push_back(it.first);
      steps.push_back(it.last);
    }
    std::sort(steps.begin(), steps.end());
    steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
    auto rank = [&](int64_t step) {
      return int32_t(std::lower_bound(steps.begin(), steps.end(), step) - steps.begin());
    };
    for (const Item &it : items) {
      first.push_back(rank(it.first));
      last.push_back(rank(it.last));
    }
  }
};

// Best fit in the given order: each buffer goes into the smallest gap between the placed
// buffers that meet it in time, else on top of them (same rule as planBestFit). O(n) per buffer
// for the sweep and the sorted insert, O(n^2) in all. Returns the height.
uint64_t bestFitInOrder(const std::vector<Item> &items, const TimeRanks &ranks,
                        const std::vector<uint32_t> &order, std::vector<uint64_t> &offsets) {
  PlacedColumns placed(items.size());
  offsets.assign(items.size(), 0);
  uint64_t height = 0;
  uint8_t meets[PlacedColumns::kBlock];
  for (uint32_t i : order) {
    const Item &it = items[i];
    uint64_t top = 0, bestOffset = 0, bestGap = kUnplaced;
    bool found = false;
    const size_t count = placed.offset.size();
    for (size_t base = 0; base < count; base += PlacedColumns::kBlock) {
      size_t block = std::min(PlacedColumns::kBlock, count - base);
      placed.meeting(base, block, ranks.first[i], ranks.last[i], meets);
      std::fill(meets + block, meets + PlacedColumns::kBlock, uint8_t(0));
      for (size_t word = 0; word < PlacedColumns::kBlock; word += 8) {
        uint64_t flags; // 8 of the 0/1 bytes: skip 8 buffers that all miss at once
        std::memcpy(&flags, meets + word, 8);
        for (; flags; flags &= flags - 1) {
          size_t k = word + size_t(__builtin_ctzll(flags)) / 8;
          uint64_t offset = placed.offset[base + k];
          if (offset > top) {
            uint64_t gap = offset - top;
            if (gap >= it.size && gap < bestGap) {
              bestGap = gap;
              bestOffset = top;
              found = true;
            }
          }
          top = std::max(top, placed.end[base + k]);
        }
      }
    }
    uint64_t offset = found ? bestOffset : top;
    offsets[i] = offset;
    height = std::max(height, offset + it.size);
    placed.insert(offset, offset + it.size, ranks.first[i], ranks.last[i]);
  }
  return height;
}

// Max over each item's live steps of the total size live at that step ("conflict" weight:
// buffers in the most crowded times go first). O(n log n) sweep plus O(n log n) queries on a
// sparse table of step totals.
std::vector<uint64_t> crowdedness(const std::vector<Item> &items) {
  std::vector<int64_t> steps;
  for (const Item &it : items) {
    steps.push_back(it.first);
    steps.push_back(it.last + 1);
  }
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  auto index = [&](int64_t s) {
    return size_t(std::lower_bound(steps.begin(), steps.end(), s) - steps.begin());
  };
  std::vector<int64_t> delta(steps.size() + 1, 0);
  for (const Item &it : items) {
    delta[index(it.first)] += int64_t(it.size);
    delta[index(it.last + 1)] -= int64_t(it.size);
  }
  // live[k] = bytes live over [steps[k], steps[k+1]); sparse table for range maxima.
  size_t m = steps.size();
  std::vector<std::vector<uint64_t>> table(1, std::vector<uint64_t>(m, 0));
  int64_t run = 0;
  for (size_t k = 0; k < m; ++k) {
    run += delta[k];
    table[0][k] = uint64_t(run);
  }
  for (size_t w = 1; (size_t(1) << w) <= m; ++w) {
    table.emplace_back(m, 0);
    for (size_t k = 0; k + (size_t(1) << w) <= m; ++k)
      table[w][k] = std::max(table[w - 1][k], table[w - 1][k + (size_t(1) << (w - 1))]);
  }
  std::vector<uint64_t> out(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    size_t lo = index(items[i].first), hi = index(items[i].last + 1); // [lo, hi)
    size_t w = 0;
    while ((size_t(2) << w) <= hi - lo)
      ++w;
    out[i] = std::max(table[w][lo], table[w][hi - (size_t(1) << w)]);
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Stage 2: MiniMalloc-style search over canonical plans.
//===----------------------------------------------------------------------===//

enum class Outcome { Found, Infeasible, Aborted };

class SkylineSearch {
public:
  explicit SkylineSearch(const std::vector<Item> &items) : items(items) { sweep(); }

  // Looks for a plan of height <= capacity. On Found, `offsets` holds it. Stops (Aborted) at
  // `deadline` or after `nodeBudget` nodes; `nodesUsed` is increased by the nodes visited.
  Outcome solve(uint64_t capacity, Clock::time_point deadline, uint64_t nodeBudget,
                std::vector<uint64_t> &offsets, uint64_t &nodesUsed) {
    cap = capacity;
    this->deadline = deadline;
    // Round robin over the preorders with a node limit that doubles each round: one of them
    // often finishes fast where another wanders (MiniMalloc's default portfolio).
    uint64_t limit = std::max<uint64_t>(items.size(), 16);
    for (;;) {
      limit *= 2;
      for (int h = 0; h < kPreorders; ++h) {
        heuristic = h;
        reset();
        uint64_t budget = std::min(limit, nodeBudget);
        nodesLeft = budget;
        timedOut = false;
        Outcome r = Outcome::Found;
        for (const Part &part : initialParts) {
          r = subSolve(part);
          if (r != Outcome::Found)
            break;
        }
        nodesUsed += budget - nodesLeft;
        nodeBudget -= budget - nodesLeft;
        if (r == Outcome::Found) {
          offsets = sol;
          return r;
        }
        if (r == Outcome::Infeasible || timedOut || nodeBudget == 0)
          return r;
      }
    }
  }

private:
  // A group of unplaced buffers and the half-open range of sections they live in.
  struct Part {
    std::vector<uint32_t> items;
    uint32_t lo, hi;
  };
  // A candidate: its skyline offset, its index in the current preorder, and the buffer there
  // (pre[pre], kept here to spare every node that lookup for every candidate).
  struct Cand {
    uint64_t offset;
    uint32_t pre, item;
    bool operator<(const Cand &o) const {
      return offset != o.offset ? offset < o.offset : pre < o.pre;
    }
  };
  static constexpr int kPreorders = 3;

  const std::vector<Item> &items;
  // Static structure (sweep()).
  std::vector<uint32_t> secLo, secHi;          // item -> its sections [secLo, secHi)
  std::vector<std::vector<uint32_t>> members;  // section -> items live in it
  std::vector<std::vector<uint32_t>> overlaps; // item -> items it meets in time
  std::vector<uint64_t> initialTotal;          // section -> sum of sizes
  std::vector<uint32_t> initialCuts;           // boundary s|s+1 -> items spanning it
  std::vector<Part> initialParts;
  // Search state.
  uint64_t cap = 0;
  Clock::time_point deadline;
  uint64_t nodesLeft = 0, nodeCount = 0;
  bool timedOut = false;
  int heuristic = 0;
  std::vector<uint64_t> off, sol, minOff; // offset (kUnplaced), solution, skyline offset
  // Per section: top of the placed buffers, sum of the unplaced sizes, and the lowest skyline
  // offset of the unplaced buffers (kUnplaced if none) with the number of them at it.
  std::vector<uint64_t> floor, total, low;
  std::vector<uint32_t> lowCount, cuts;
  // Undo logs: (item, old minOff), (section, old floor), (section, old low, old count).
  std::vector<std::pair<uint32_t, uint64_t>> minTrail, floorTrail;
  struct LowChange {
    uint32_t section, count;
    uint64_t low;
  };
  std::vector<LowChange> lowTrail;

  // Sections are the maximal cliques of the interval graph: a sweep over range endpoints (ends
  // before starts at the same step) emits the live set whenever an end follows a start. Each
  // buffer then spans a contiguous range of sections, and two buffers meet in time iff their
  // ranges intersect. O(n log n + sum of section sizes + overlaps).
  void sweep() {
    size_t n = items.size();
    std::vector<std::pair<std::pair<int64_t, int>, uint32_t>> ev; // ((step, 0 end/1 start), i)
    for (uint32_t i = 0; i < n; ++i) {
      ev.push_back({{items[i].first, 1}, i});
      ev.push_back({{items[i].last + 1, 0}, i});
    }
    std::sort(ev.begin(), ev.end());
    secLo.assign(n, 0);
    secHi.assign(n, 0);
    uint32_t sections = 0;
    bool rising = false;
    for (const auto &[key, i] : ev) {
      if (key.second == 1) {
        secLo[i] = sections;
        rising = true;
      } else {
        if (rising) {
          ++sections;
          rising = false;
        }
        secHi[i] = sections;
      }
    }
    members.assign(sections, {});
    initialTotal.assign(sections, 0);
    for (uint32_t i = 0; i < n; ++i)
      for (uint32_t s = secLo[i]; s < secHi[i]; ++s) {
        members[s].push_back(i);
        initialTotal[s] += items[i].size;
      }
    overlaps.assign(n, {});
    for (uint32_t i = 0; i < n; ++i)
      for (uint32_t j = i + 1; j < n; ++j)
        if (secLo[i] < secHi[j] && secLo[j] < secHi[i]) {
          overlaps[i].push_back(j);
          overlaps[j].push_back(i);
        }
    initialCuts.assign(sections > 0 ? sections - 1 : 0, 0);
    for (uint32_t i = 0; i < n; ++i)
      for (uint32_t s = secLo[i]; s + 1 < secHi[i]; ++s)
        ++initialCuts[s];
    // Connected components: split the section line where no buffer crosses.
    uint32_t start = 0;
    for (uint32_t s = 0; s < sections; ++s)
      if (s + 1 == sections || initialCuts[s] == 0) {
        initialParts.push_back({{}, start, s + 1});
        start = s + 1;
      }
    for (uint32_t i = 0; i < n; ++i) {
      auto it = std::upper_bound(initialParts.begin(), initialParts.end(), secLo[i],
                                 [](uint32_t s, const Part &p) { return s < p.hi; });
      it->items.push_back(i);
    }
  }

  void reset() {
    size_t n = items.size();
    off.assign(n, kUnplaced);
    sol.assign(n, 0);
    minOff.assign(n, 0);
    floor.assign(members.size(), 0);
    total = initialTotal;
    low.assign(members.size(), 0);
    lowCount.assign(members.size(), 0);
    for (size_t s = 0; s < members.size(); ++s)
      lowCount[s] = uint32_t(members[s].size());
    cuts = initialCuts;
    minTrail.clear();
    floorTrail.clear();
    lowTrail.clear();
  }

  // Static preorder of a group, recomputed for every (sub)problem from the current section
  // sums, like MiniMalloc's: T = largest unplaced sum over the buffer's sections, A = area,
  // W = width (steps). Orders TAW, WAT, TWA; all descending, ties by item index.
  std::vector<uint32_t> preorder(const Part &part) const {
    struct Key {
      uint64_t t, a, w;
      uint32_t i;
    };
    std::vector<Key> keys;
    keys.reserve(part.items.size());
    for (uint32_t i : part.items) {
      uint64_t t = 0;
      for (uint32_t s = secLo[i]; s < secHi[i]; ++s)
        t = std::max(t, total[s]);
      uint64_t w = uint64_t(items[i].last - items[i].first + 1);
      keys.push_back({t, items[i].size * w, w, i});
    }
    auto cmp = [h = heuristic](const Key &x, const Key &y) {
      const uint64_t *kx[3], *ky[3];
      if (h == 0) { // T A W
        kx[0] = &x.t, kx[1] = &x.a, kx[2] = &x.w, ky[0] = &y.t, ky[1] = &y.a, ky[2] = &y.w;
      } else if (h == 1) { // W A T
        kx[0] = &x.w, kx[1] = &x.a, kx[2] = &x.t, ky[0] = &y.w, ky[1] = &y.a, ky[2] = &y.t;
      } else { // T W A
        kx[0] = &x.t, kx[1] = &x.w, kx[2] = &x.a, ky[0] = &y.t, ky[1] = &y.w, ky[2] = &y.a;
      }
      for (int k = 0; k < 3; ++k)
        if (*kx[k] != *ky[k])
          return *kx[k] > *ky[k];
      return x.i < y.i;
    };
    std::sort(keys.begin(), keys.end(), cmp);
    std::vector<uint32_t> pre;
    pre.reserve(keys.size());
    for (const Key &k : keys)
      pre.push_back(k.i);
    return pre;
  }

  Outcome subSolve(const Part &part) {
    std::vector<uint32_t> pre = preorder(part);
    std::vector<Cand> cands(pre.size());
    for (uint32_t p = 0; p < pre.size(); ++p)
      cands[p] = {0, p, pre[p]};
    return search(part, pre, cands, 0, 0);
  }

  // Inference (c): keeps low[s], the lowest skyline offset among section s's unplaced
  // buffers, when item j (already updated or removed) held it. Counting the holders means the
  // section is rescanned, O(members), only when the last of them goes.
  void dropLowHolder(uint32_t s, uint64_t old) {
    if (low[s] != old)
      return;
    lowTrail.push_back({s, lowCount[s], low[s]});
    if (--lowCount[s] > 0)
      return;
    uint64_t m = kUnplaced;
    uint32_t count = 0;
    for (uint32_t j : members[s]) {
      if (off[j] != kUnplaced)
        continue;
      if (minOff[j] < m) {
        m = minOff[j];
        count = 1;
      } else if (minOff[j] == m) {
        ++count;
      }
    }
    low[s] = m;
    lowCount[s] = count;
  }

  // Places item i at offset o: lifts the floors of its sections to its top and takes its size
  // out of their sums, then raises the skyline of the unplaced buffers it meets (keeping the
  // sections' lowest skyline, see dropLowHolder). O(overlaps of i x their sections).
  void place(uint32_t i, uint64_t o) {
    off[i] = o;
    uint64_t top = o + items[i].size;
    for (uint32_t s = secLo[i]; s < secHi[i]; ++s) {
      floorTrail.push_back({s, floor[s]});
      floor[s] = top;
      total[s] -= items[i].size;
      dropLowHolder(s, minOff[i]);
    }
    for (uint32_t j : overlaps[i]) {
      if (off[j] != kUnplaced || minOff[j] >= top)
        continue;
      uint64_t old = minOff[j];
      minTrail.push_back({j, old});
      minOff[j] = top;
      for (uint32_t s = secLo[j]; s < secHi[j]; ++s)
        dropLowHolder(s, old);
    }
  }

  void unplace(uint32_t i, size_t minMark, size_t floorMark, size_t lowMark) {
    while (lowTrail.size() > lowMark) {
      const LowChange &c = lowTrail.back();
      low[c.section] = c.low;
      lowCount[c.section] = c.count;
      lowTrail.pop_back();
    }
    while (floorTrail.size() > floorMark) {
      floor[floorTrail.back().first] = floorTrail.back().second;
      floorTrail.pop_back();
    }
    for (uint32_t s = secLo[i]; s < secHi[i]; ++s)
      total[s] += items[i].size;
    while (minTrail.size() > minMark) {
      minOff[minTrail.back().first] = minTrail.back().second;
      minTrail.pop_back();
    }
    off[i] = kUnplaced;
  }

  // Section bound (a): the unplaced buffers of a section are live together, so they stack
  // above its floor: the placed top, `o` (canonical order: later buffers do not go lower) and,
  // by inference (c), the lowest skyline offset among them. floor + unplaced sum must fit the
  // capacity.
  bool fits(uint32_t s, uint64_t o) const {
    uint64_t f = std::max(o, floor[s]);
    if (total[s] != 0)
      f = std::max(f, low[s]);
    return f + total[s] <= cap;
  }

  // The bound after placing item i at o. Its `o` term for every section of the group was
  // checked before placing (search's maxTotal), so only the sections whose floor, sum or
  // lowest skyline changed need a look: i's own and those in the low trail since `lowMark`.
  // O(sections of i + low changes).
  bool check(uint32_t i, uint64_t o, size_t lowMark) const {
    for (uint32_t s = secLo[i]; s < secHi[i]; ++s)
      if (!fits(s, o))
        return false;
    for (size_t k = lowMark; k < lowTrail.size(); ++k)
      if (!fits(lowTrail[k].section, o))
        return false;
    return true;
  }

  bool outOfTime() {
    if (nodesLeft == 0)
      return true;
    --nodesLeft;
    if ((++nodeCount & 255) == 0 && Clock::now() > deadline)
      timedOut = true;
    return timedOut;
  }

  // Depth-first search over canonical placements of the group's unplaced buffers; `prev` is
  // the parent's candidate list (re-ordered here by current skyline offset), (minOffset, minPre)
  // the last placement, which every next one must not precede.
  Outcome search(const Part &part, const std::vector<uint32_t> &pre, const std::vector<Cand> &prev,
                 uint64_t minOffset, uint32_t minPre) {
    if (outOfTime())
      return Outcome::Aborted;
    // `prev` is sorted by (offset, preorder), and the last placement moved only a few skyline
    // offsets: the unmoved candidates stay in order, so sorting the moved ones and merging the
    // two lists gives the same order as sorting all of them, in O(n + k log k) for k moved
    // instead of O(n log n) per node (on ResNet-18's 8 micro-batches, 2263 buffers, the sort was
    // 40% of a capacity search).
    std::vector<Cand> cands, moved;
    cands.reserve(prev.size());
    for (const Cand &c : prev) {
      const uint32_t i = c.item;
      if (off[i] != kUnplaced)
        continue;
      if (minOff[i] == c.offset)
        cands.push_back(c);
      else
        moved.push_back({minOff[i], c.pre, i});
    }
    if (cands.empty() && moved.empty()) {
      for (uint32_t i : part.items)
        sol[i] = off[i];
      return Outcome::Found;
    }
    if (!moved.empty()) {
      std::sort(moved.begin(), moved.end());
      std::vector<Cand> merged(cands.size() + moved.size());
      std::merge(cands.begin(), cands.end(), moved.begin(), moved.end(), merged.begin());
      cands = std::move(merged);
    }
    uint64_t minTop = kUnplaced, maxTotal = 0;
    for (const Cand &c : cands)
      minTop = std::min(minTop, c.offset + items[c.item].size);
    for (uint32_t s = part.lo; s < part.hi; ++s)
      maxTotal = std::max(maxTotal, total[s]);
    for (const Cand &c : cands) {
      // Dominance (b): candidates are sorted by offset, so from here on every one would leave
      // room below it for the buffer that reaches minTop.
      if (c.offset >= minTop)
        break;
      // Section bound (a), `o` term: after placing at c.offset, every later buffer of the
      // fullest section sits at or above it (for the candidate's own sections, its top plus
      // the rest gives the same sum). Candidates only go up from here.
      if (c.offset + maxTotal > cap)
        break;
      // Canonical order: placements never go back in (offset, preorder).
      if (c.offset < minOffset || (c.offset == minOffset && c.pre < minPre))
        continue;
      uint32_t i = c.item;
      if (c.offset + items[i].size > cap)
        continue;
      size_t minMark = minTrail.size(), floorMark = floorTrail.size(), lowMark = lowTrail.size();
      place(i, c.offset);
      Outcome r = Outcome::Infeasible;
      if (check(i, c.offset, lowMark))
        r = decompose(part, pre, cands, c, i);
      unplace(i, minMark, floorMark, lowMark);
      if (r != Outcome::Infeasible)
        return r;
    }
    return Outcome::Infeasible;
  }

  // Dynamic decomposition: placing i may leave no unplaced buffer across some section
  // boundaries inside its range; then the groups on either side are independent and are
  // solved one after the other. O(group size) to split.
  Outcome decompose(const Part &part, const std::vector<uint32_t> &pre,
                    const std::vector<Cand> &cands, const Cand &c, uint32_t i) {
    sol[i] = off[i];
    std::vector<uint32_t> cutpoints;
    for (uint32_t s = secLo[i]; s + 1 < secHi[i]; ++s)
      if (--cuts[s] == 0)
        cutpoints.push_back(s + 1);
    Outcome r = Outcome::Found;
    if (cutpoints.empty()) {
      r = search(part, pre, cands, c.offset, c.pre);
    } else {
      cutpoints.insert(cutpoints.begin(), part.lo);
      cutpoints.push_back(part.hi);
      for (size_t k = 1; k < cutpoints.size() && r == Outcome::Found; ++k) {
        Part sub{{}, cutpoints[k - 1], cutpoints[k]};
        for (uint32_t j : part.items)
          if (off[j] == kUnplaced && secLo[j] < sub.hi && sub.lo < secHi[j])
            sub.items.push_back(j);
        if (!sub.items.empty())
          r = subSolve(sub);
      }
    }
    for (uint32_t s = secLo[i]; s + 1 < secHi[i]; ++s)
      ++cuts[s];
    return r;
  }
};

} // namespace

PlanStats planNearOptimal(Plan &plan, const PlanOptions &options) {
  auto start = Clock::now();
  PlanStats stats;
  const uint64_t alignment = plan.alignment == 0 ? 1 : plan.alignment;
  stats.lowerBound = lowerBound(plan.buffers, alignment);

  // Buffers that occupy no bytes at any step go to offset 0 and take no further part.
  std::vector<Item> items;
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    Buffer &buf = plan.buffers[b];
    uint64_t size = alignTo(buf.bytes, alignment);
    if (size == 0 || buf.last < buf.first) {
      buf.offset = 0;
      continue;
    }
    items.push_back({size, buf.first, buf.last, b});
  }
  const size_t n = items.size();
  std::vector<uint64_t> best(n, 0);
  uint64_t bestHeight = 0;
  auto finish = [&]() {
    for (size_t i = 0; i < n; ++i)
      plan.buffers[items[i].buffer].offset = best[i];
    plan.arenaBytes = bestHeight;
    stats.height = bestHeight;
    stats.fits = options.capacity == 0 || bestHeight <= options.capacity;
    stats.optimal = stats.optimal || bestHeight == stats.lowerBound;
    stats.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return stats;
  };

  // Stage 1: best fit under each order, ties between orders going to the earlier one. Every
  // order ends with the buffer index, so it is total and the result deterministic.
  if (n > 0) {
    std::vector<uint64_t> crowd = crowdedness(items);
    auto dur = [&](uint32_t i) { return uint64_t(items[i].last - items[i].first + 1); };
    struct Order {
      const char *name;
      std::function<bool(uint32_t, uint32_t)> less;
    };
    // "size" reproduces planBestFit's order (size, first step, name), so that plans which
    // already hit the lower bound do not change.
    const Order orders[] = {
        {"size",
         [&](uint32_t a, uint32_t b) {
           const Item &x = items[a], &y = items[b];
           if (x.size != y.size)
             return x.size > y.size;
           if (x.first != y.first)
             return x.first < y.first;
           const std::string &nx = plan.buffers[x.buffer].name, &ny = plan.buffers[y.buffer].name;
           if (nx != ny)
             return nx < ny;
           return a < b;
         }},
        {"duration",
         [&](uint32_t a, uint32_t b) {
           if (dur(a) != dur(b))
             return dur(a) > dur(b);
           if (items[a].size != items[b].size)
             return items[a].size > items[b].size;
           return a < b;
         }},
        {"area",
         [&](uint32_t a, uint32_t b) {
           // size * duration may exceed 64 bits for huge inputs; compare in 128 bits.
           unsigned __int128 x = (unsigned __int128)items[a].size * dur(a);
           unsigned __int128 y = (unsigned __int128)items[b].size * dur(b);
           if (x != y)
             return x > y;
           return a < b;
         }},
        {"first",
         [&](uint32_t a, uint32_t b) {
           if (items[a].first != items[b].first)
             return items[a].first < items[b].first;
           if (dur(a) != dur(b))
             return dur(a) > dur(b);
           if (items[a].size != items[b].size)
             return items[a].size > items[b].size;
           return a < b;
         }},
        {"conflict",
         [&](uint32_t a, uint32_t b) {
           if (crowd[a] != crowd[b])
             return crowd[a] > crowd[b];
           if (items[a].size != items[b].size)
             return items[a].size > items[b].size;
           if (dur(a) != dur(b))
             return dur(a) > dur(b);
           return a < b;
         }},
    };
    const TimeRanks ranks(items);
    constexpr size_t kOrders = std::size(orders);
    uint64_t heights[kOrders] = {};
    std::vector<uint64_t> offsets[kOrders];
    auto place = [&](size_t k) {
      std::vector<uint32_t> order(n);
      for (uint32_t i = 0; i < n; ++i)
        order[i] = i;
      std::sort(order.begin(), order.end(), orders[k].less);
      heights[k] = bestFitInOrder(items, ranks, order, offsets[k]);
    };
    // The first order alone: when it reaches the lower bound no other can beat it (the common
    // case without a budget). Otherwise the others, which are independent, run on their own
    // threads on large problems (each is O(n^2): 90 ms on 14k buffers), and the result is
    // the sequential one: the first order of the lowest height.
    place(0);
    size_t ran = 1;
    if (heights[0] != stats.lowerBound) {
      unsigned threads = std::min<unsigned>(kOrders - 1, std::thread::hardware_concurrency());
      if (n >= options.parallelOrdersFrom && threads > 1) {
        std::atomic<size_t> next{1};
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < threads; ++t)
          pool.emplace_back([&] {
            for (size_t k = next++; k < kOrders; k = next++)
              place(k);
          });
        for (std::thread &thread : pool)
          thread.join();
        ran = kOrders;
      } else {
        for (; ran < kOrders && *std::min_element(heights, heights + ran) != stats.lowerBound;
             ++ran)
          place(ran);
      }
    }
    size_t winner = size_t(std::min_element(heights, heights + ran) - heights);
    bestHeight = heights[winner];
    best = std::move(offsets[winner]);
    stats.heuristic = orders[winner].name;
  }
  stats.heuristicHeight = bestHeight;

  // Stage 2: the search, unless the heuristic is already good enough.
  const uint64_t cap = options.capacity;
  if (cap != 0 && cap < stats.lowerBound)
    stats.infeasible = true;
  bool done = options.heuristicOnly || n == 0 || bestHeight == stats.lowerBound ||
              (cap != 0 && (bestHeight <= cap || stats.infeasible)) || n > options.maxSearchBuffers;
  if (done)
    return finish();

  stats.searched = true;
  // Buffers that meet every other buffer in time (a training step's parameters and optimizer
  // state) go to the bottom, stacked in index order, and only the rest is searched, against
  // the capacity less their sizes. That loses no plan: in any plan every other buffer lies
  // wholly below or wholly above such a buffer, so moving it to offset 0 and what lay below it
  // up by its size keeps the plan valid at the same height. It also keeps the search's undo
  // trails small: a buffer live in every section, raised at each placement below it, logs a
  // change per section each time (ResNet-50's training step: 1349 buffers, a 1 GiB trail and
  // 2 s for one dive, without it).
  int64_t minLast = std::numeric_limits<int64_t>::max(),
          maxFirst = std::numeric_limits<int64_t>::min();
  for (const Item &it : items) {
    minLast = std::min(minLast, it.last);
    maxFirst = std::max(maxFirst, it.first);
  }
  std::vector<Item> searched;                  // the buffers the search places
  std::vector<uint32_t> itemOf;                // searched index -> items index
  std::vector<uint64_t> stacked(n, kUnplaced); // offsets of the bottom stack
  uint64_t base = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (items[i].first <= minLast && items[i].last >= maxFirst) {
      stacked[i] = base;
      base += items[i].size;
    } else {
      searched.push_back(items[i]);
      itemOf.push_back(i);
    }
  }
  SkylineSearch search(searched);
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(options.timeLimitSeconds));
  uint64_t nodeBudget =
      options.nodeLimit == 0 ? std::numeric_limits<uint64_t>::max() : options.nodeLimit;
  auto run = [&](uint64_t target, Clock::time_point until, uint64_t nodes) {
    std::vector<uint64_t> partial;
    uint64_t used = 0;
    // target >= the lower bound >= base: the stacked buffers are live together at some step
    // (pairwise overlapping intervals share a point).
    Outcome r = search.solve(target - base, until, std::min(nodes, nodeBudget), partial, used);
    stats.nodes += used;
    nodeBudget -= std::min(nodeBudget, used);
    if (r == Outcome::Found) {
      std::vector<uint64_t> offsets = stacked;
      for (size_t k = 0; k < partial.size(); ++k)
        offsets[itemOf[k]] = base + partial[k];
      uint64_t h = 0;
      for (size_t i = 0; i < n; ++i)
        h = std::max(h, offsets[i] + items[i].size);
      if (h < bestHeight) {
        bestHeight = h;
        best = std::move(offsets);
      }
    }
    return r;
  };

  if (cap != 0) {
    Outcome r = run(cap, deadline, nodeBudget);
    stats.infeasible = r == Outcome::Infeasible;
    return finish();
  }

  // Minimise: binary search on the height in [lo, hi], hi the best height found (feasible),
  // lo the lowest height not yet ruled out. The lower bound is tried first (often tight), and
  // each probe may use half of the time left, and of the nodes left under a node limit, so
  // that a hard probe cannot starve the others.
  // A probe cut short only moves lo for the search, not the proof (`proven`). (Splitting the
  // time evenly over the log2(hi - lo) probes instead did worse on MiniMalloc's D.)
  uint64_t lo = stats.lowerBound, proven = stats.lowerBound;
  bool firstProbe = true;
  while (lo < bestHeight && nodeBudget > 0) {
    auto now = Clock::now();
    if (now >= deadline)
      break;
    uint64_t target = firstProbe ? lo : lo + (bestHeight - 1 - lo) / 2;
    firstProbe = false;
    uint64_t nodes = options.nodeLimit == 0 ? nodeBudget : std::max<uint64_t>(nodeBudget / 2, 1);
    Outcome r = run(target, now + (deadline - now) / 2, nodes);
    if (r == Outcome::Infeasible) {
      proven = std::max(proven, target + 1); // no plan of height <= target exists
      lo = target + 1;
    } else if (r == Outcome::Aborted) {
      lo = target + 1;
    }
  }
  stats.optimal = proven >= bestHeight;
  return finish();
}

} // namespace graphc::plan
