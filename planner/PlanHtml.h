// A picture of a memory plan: one self-contained HTML page (inline CSS and JavaScript, a canvas,
// no network access, no external fonts or scripts) with the schedule's steps on the x axis and
// arena addresses on the y axis. Every buffer is a rectangle [first, last + 1) x
// [offset, offset + aligned size) coloured by its kind; horizontal lines mark the budget (when
// there is one), the lower bound and the arena top. Hovering a rectangle shows the buffer's
// name, ops, size, lifetime and offset; the wheel zooms, dragging pans, a double click resets.
//
// The plan is embedded as compact columnar JSON (one array per field, strings deduplicated
// into tables) so that pages with tens of thousands of buffers stay small and load fast; the
// page draws them in one canvas pass and hit-tests the mouse through per-step-column buckets
// sorted by offset. After the first draw the page sets `data-ready="1"` on <body>; a JavaScript
// error sets `data-error` instead (tests load the page in headless Chromium and check both).
#pragma once

#include "planner/PlanIO.h"
#include "planner/Planner.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace graphc::plan {

/// Writes the HTML picture of `plan`. `steps` (may be empty) names the op of each step: the
/// tooltip shows it for the buffer's first step and for the step under the mouse. `budget` adds
/// a labelled line; `lowerBound` is the plan's lower bound (lowerBound(plan.buffers,
/// plan.alignment)), shown as a line and in the summary with the gap of the arena above it.
/// `title` heads the page and names the browser tab.
void writePlanHtml(llvm::raw_ostream &os, const Plan &plan, const std::vector<Step> &steps,
                   std::optional<uint64_t> budget, uint64_t lowerBound, llvm::StringRef title);

/// Escapes `text` as the contents of a JSON string literal that is safe inside an HTML
/// <script> element: quotes, backslashes and control characters as JSON requires, and `<`, `>`,
/// `&`, U+2028 and U+2029 as \uXXXX (so no `</script>` or `<!--` can end or confuse the
/// script). Invalid UTF-8 is replaced by U+FFFD. Exposed for tests.
std::string escapeJsonForScript(llvm::StringRef text);

} // namespace graphc::plan
