// Unit tests for the HTML plan picture (planner/PlanHtml.h): the page carries every buffer
// name (escaped for the script element it sits in), the legend of kinds, the budget line only
// when a budget is given, and no way for a buffer name to end the script early. Whether the
// page actually draws is checked in headless Chromium by test/html.
#include "planner/PlanHtml.h"
#include "planner/Planner.h"

#include <gtest/gtest.h>

#include <string>

using namespace graphc::plan;

namespace {

Buffer buf(std::string name, std::string kind, uint64_t bytes, int64_t first, int64_t last,
           uint64_t offset, std::string op = "") {
  Buffer b;
  b.name = std::move(name);
  b.kind = std::move(kind);
  b.bytes = bytes;
  b.first = first;
  b.last = last;
  b.offset = offset;
  b.op = std::move(op);
  return b;
}

Plan samplePlan() {
  Plan p;
  p.alignment = 256;
  p.buffers = {
      buf("fc.weight", "parameter", 4096, 0, 9, 0, "graph.param"),
      buf("fc.weight.grad", "gradient", 4096, 6, 8, 4096, "graph.matmul"),
      buf("relu_out", "activation", 1000, 1, 5, 4096, "graph.relu"),
      buf("x", "input", 300, 0, 1, 5120),
      buf("tmp\"quote\\back", "temporary", 10, 2, 2, 5376),
  };
  p.arenaBytes = 8192;
  return p;
}

std::vector<Step> sampleSteps() {
  std::vector<Step> steps;
  const char *ops[] = {"graph.conv2d", "graph.relu", "graph.dense", "graph.loss",
                       "graph.loss_backward", "graph.relu_backward", "graph.matmul",
                       "graph.matmul", "graph.bias_grad", "graph.sgd_update"};
  for (int i = 0; i < 10; ++i)
    steps.push_back({i, ops[i], "loc" + std::to_string(i)});
  return steps;
}

std::string render(const Plan &plan, const std::vector<Step> &steps,
                   std::optional<uint64_t> budget, llvm::StringRef title = "test plan") {
  std::string out;
  llvm::raw_string_ostream os(out);
  writePlanHtml(os, plan, steps, budget, lowerBound(plan.buffers, plan.alignment), title);
  return out;
}

size_t count(const std::string &haystack, const std::string &needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + needle.size()))
    ++n;
  return n;
}

// The <script type="application/json"> element holding the data.
std::string dataScript(const std::string &html) {
  size_t begin = html.find("<script type=\"application/json\" id=\"plan-data\">");
  EXPECT_NE(begin, std::string::npos);
  size_t end = html.find("</script>", begin);
  EXPECT_NE(end, std::string::npos);
  return html.substr(begin, end - begin);
}

TEST(PlanHtml, SelfContainedPage) {
  std::string html = render(samplePlan(), sampleSteps(), std::nullopt);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<title>test plan</title>"), std::string::npos);
  EXPECT_NE(html.find("<canvas id=\"plot\">"), std::string::npos);
  EXPECT_NE(html.find("window.onerror"), std::string::npos);
  EXPECT_NE(html.find("data-ready"), std::string::npos);
  EXPECT_NE(html.find("document.title"), std::string::npos);
  // Nothing is fetched: no external scripts, stylesheets, fonts or URLs.
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  // Exactly three scripts: the error hook, the data, the drawing code.
  EXPECT_EQ(count(html, "<script"), 3u);
  EXPECT_EQ(count(html, "</script>"), 3u);
}

TEST(PlanHtml, EveryBufferNameEscaped) {
  Plan plan = samplePlan();
  std::string html = render(plan, sampleSteps(), std::nullopt);
  std::string data = dataScript(html);
  for (const Buffer &b : plan.buffers)
    EXPECT_NE(data.find("\"" + escapeJsonForScript(b.name) + "\""), std::string::npos) << b.name;
  EXPECT_NE(data.find("\"tmp\\\"quote\\\\back\""), std::string::npos);
  // Columnar arrays, in buffer order.
  EXPECT_NE(data.find("\"offset\":[0,4096,4096,5120,5376]"), std::string::npos);
  EXPECT_NE(data.find("\"first\":[0,6,1,0,2]"), std::string::npos);
  EXPECT_NE(data.find("\"last\":[9,8,5,1,2]"), std::string::npos);
  EXPECT_NE(data.find("\"bytes\":[4096,4096,1000,300,10]"), std::string::npos);
  EXPECT_NE(data.find("\"size\":[4096,4096,1024,512,256]"), std::string::npos);
  // Ops go through the string table.
  EXPECT_NE(data.find("\"graph.conv2d\""), std::string::npos);
  EXPECT_NE(data.find("\"graph.param\""), std::string::npos);
}

TEST(PlanHtml, Legend) {
  std::string html = render(samplePlan(), sampleSteps(), std::nullopt);
  size_t legend = html.find("id=\"legend\"");
  ASSERT_NE(legend, std::string::npos);
  for (const char *kind : {"parameter", "gradient", "optimizer_state", "activation", "temporary",
                           "workspace", "input"})
    EXPECT_NE(html.find(std::string("data-kind=\"") + kind + "\"", legend), std::string::npos)
        << kind;
  // Kinds without buffers are shown dimmed; bytes per kind are listed.
  EXPECT_NE(html.find("<span class=\"item empty\" data-kind=\"optimizer_state\">"),
            std::string::npos);
  EXPECT_NE(html.find("parameter <span class=\"n\">4.00 KiB / 1</span>"), std::string::npos);
  // The lower bound and the arena top are always keyed.
  EXPECT_NE(html.find("key-line lower"), std::string::npos);
  EXPECT_NE(html.find("key-line arena"), std::string::npos);
}

TEST(PlanHtml, UnknownKindsGetLegendEntries) {
  Plan plan = samplePlan();
  plan.buffers.push_back(buf("odd", "scratch<pad>", 256, 0, 0, 7680));
  plan.buffers.push_back(buf("plain", "", 256, 3, 3, 7680));
  std::string html = render(plan, {}, std::nullopt);
  EXPECT_NE(html.find("data-kind=\"scratch&lt;pad&gt;\""), std::string::npos);
  EXPECT_NE(html.find("(no kind)"), std::string::npos);
  EXPECT_EQ(html.find("scratch<pad>"), std::string::npos);
  EXPECT_NE(dataScript(html).find("\"kind\":[0,1,3,6,4,7,8]"), std::string::npos);
}

TEST(PlanHtml, BudgetLineOnlyWithBudget) {
  std::string without = render(samplePlan(), sampleSteps(), std::nullopt);
  EXPECT_EQ(without.find("key-line budget"), std::string::npos);
  EXPECT_NE(without.find("\"budget\":null"), std::string::npos);
  EXPECT_EQ(without.find("budget <b>"), std::string::npos);

  std::string with = render(samplePlan(), sampleSteps(), uint64_t(10240));
  EXPECT_NE(with.find("key-line budget"), std::string::npos);
  EXPECT_NE(with.find("\"budget\":10240"), std::string::npos);
  EXPECT_NE(with.find("budget <b>10.00 KiB</b> (fits)"), std::string::npos);

  std::string tight = render(samplePlan(), sampleSteps(), uint64_t(4096));
  EXPECT_NE(tight.find("budget <b>4.00 KiB</b> (does not fit)"), std::string::npos);
}

TEST(PlanHtml, Summary) {
  Plan plan = samplePlan(); // lower bound: step 6 holds 4096 + 4096 + 0 = 8192
  std::string html = render(plan, sampleSteps(), std::nullopt);
  EXPECT_NE(html.find("arena <b>8.00 KiB</b> &middot; lower bound <b>"), std::string::npos);
  EXPECT_NE(html.find("<b>5</b> buffers &middot; <b>10</b> steps"), std::string::npos);

  std::string out;
  llvm::raw_string_ostream os(out);
  writePlanHtml(os, plan, {}, std::nullopt, 6144, "t");
  EXPECT_NE(out.find("gap <b>33.33%</b>"), std::string::npos);
  // Without steps, the step count comes from the live ranges (0..9).
  EXPECT_NE(out.find("<b>10</b> steps"), std::string::npos);
}

TEST(PlanHtml, ScriptInjectionIsEscaped) {
  Plan plan = samplePlan();
  plan.buffers[2].name = "</script><script>alert(1)</script><!--";
  plan.buffers[2].op = "</SCRIPT>";
  std::vector<Step> steps = sampleSteps();
  steps[3].loc = "</script>";
  std::string html = render(plan, steps, std::nullopt, "</script><b>title</b> & co");
  // Only the page's own three scripts end.
  EXPECT_EQ(count(html, "</script>"), 3u);
  EXPECT_EQ(html.find("</SCRIPT>"), std::string::npos);
  EXPECT_EQ(html.find("<!--"), std::string::npos);
  EXPECT_EQ(html.find("alert(1)</"), std::string::npos);
  std::string data = dataScript(html);
  EXPECT_NE(data.find("\\u003c/script\\u003e\\u003cscript\\u003ealert(1)\\u003c/script\\u003e"
                      "\\u003c!--"),
            std::string::npos);
  EXPECT_NE(data.find("\\u003c/SCRIPT\\u003e"), std::string::npos);
  // The title is HTML-escaped in <title> and the heading, JSON-escaped in the data.
  EXPECT_NE(html.find("<title>&lt;/script&gt;&lt;b&gt;title&lt;/b&gt; &amp; co</title>"),
            std::string::npos);
  EXPECT_NE(html.find("<h1>&lt;/script&gt;&lt;b&gt;title&lt;/b&gt; &amp; co</h1>"),
            std::string::npos);
  EXPECT_NE(data.find("\"title\":\"\\u003c/script\\u003e\\u003cb\\u003etitle\\u003c/b\\u003e "
                      "\\u0026 co\""),
            std::string::npos);
}

TEST(PlanHtml, EscapeJsonForScript) {
  EXPECT_EQ(escapeJsonForScript("plain.name_1"), "plain.name_1");
  EXPECT_EQ(escapeJsonForScript("a\"b\\c"), "a\\\"b\\\\c");
  EXPECT_EQ(escapeJsonForScript("<>&"), "\\u003c\\u003e\\u0026");
  EXPECT_EQ(escapeJsonForScript("\n\t\x01\x7f"), "\\n\\t\\u0001\\u007f");
  EXPECT_EQ(escapeJsonForScript("\xe2\x80\xa8|\xe2\x80\xa9"), "\\u2028|\\u2029");
  EXPECT_EQ(escapeJsonForScript("caf\xc3\xa9"), "caf\xc3\xa9"); // UTF-8 passes through
  EXPECT_EQ(escapeJsonForScript("bad\xff"), "bad\xef\xbf\xbd"); // invalid UTF-8: U+FFFD
}

TEST(PlanHtml, EmptyPlan) {
  Plan plan;
  std::string html = render(plan, {}, std::nullopt);
  EXPECT_NE(html.find("<b>0</b> buffers &middot; <b>0</b> steps"), std::string::npos);
  EXPECT_NE(html.find("\"name\":[]"), std::string::npos);
}

} // namespace
