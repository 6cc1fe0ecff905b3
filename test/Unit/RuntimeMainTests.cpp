// End-to-end tests of train_main.cpp through runtime-smoke-train, a hand-written linear
// classifier (RuntimeSmokeProgram.cpp) linked with the real main(). They pin the command-line
// contract: output lines, exit codes, one-line errors before step 1, weight files, seeding and
// shuffling.
#include "graphc/runtime/npy.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace graphc::rt;

namespace {

struct Result {
  int code = -1;
  std::string out, err;
  std::vector<std::string> lines() const {
    std::vector<std::string> v;
    std::istringstream s(out);
    for (std::string l; std::getline(s, l);)
      v.push_back(l);
    return v;
  }
};

class RuntimeMain : public testing::Test {
protected:
  void SetUp() override {
    std::string templ = testing::TempDir() + "graphc_main_XXXXXX";
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    dir_ = templ;
    // 10 samples of 4 features (2 full batches of 4 per epoch, 2 samples dropped); the label is
    // the index of the largest of the first three features, so the model can learn it.
    for (int i = 0; i < 10; ++i) {
      float row[4] = {static_cast<float>((i * 7) % 5) * 0.25f, static_cast<float>((i * 3) % 4) * 0.5f,
                      static_cast<float>(i % 3) * 0.75f, 1.0f};
      int64_t best = 0;
      for (int j = 1; j < 3; ++j)
        if (row[j] > row[best])
          best = j;
      x_.insert(x_.end(), row, row + 4);
      y_.push_back(best);
    }
    writeF32("x.npy", {10, 4}, x_);
    writeI64("y.npy", {10}, y_);
  }
  void TearDown() override {
    if (!HasFailure())
      std::system(("rm -rf '" + dir_ + "'").c_str());
  }

  std::string path(const std::string &leaf) const { return dir_ + "/" + leaf; }
  void writeF32(const std::string &leaf, const std::vector<int64_t> &shape,
                const std::vector<float> &v) {
    std::string error;
    ASSERT_TRUE(writeNpyF32(path(leaf), shape, v.data(), error)) << error;
  }
  void writeI64(const std::string &leaf, const std::vector<int64_t> &shape,
                const std::vector<int64_t> &v) {
    std::string error;
    ASSERT_TRUE(writeNpyI64(path(leaf), shape, v.data(), error)) << error;
  }
  template <typename T>
  void writeRaw(const std::string &leaf, NpyDType dtype, const std::vector<int64_t> &shape,
                const std::vector<T> &v) {
    std::string error;
    ASSERT_TRUE(writeNpy(path(leaf), dtype, shape, v.data(), error)) << error;
  }

  Result run(const std::string &args) const {
    const std::string outFile = path("stdout.txt"), errFile = path("stderr.txt");
    const std::string cmd = std::string("cd '") + dir_ + "' && '" GRAPHC_SMOKE_TRAIN "' " + args +
                            " >'" + outFile + "' 2>'" + errFile + "'";
    const int status = std::system(cmd.c_str());
    Result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    auto slurp = [](const std::string &p) {
      std::ifstream f(p);
      std::stringstream s;
      s << f.rdbuf();
      return s.str();
    };
    r.out = slurp(outFile);
    r.err = slurp(errFile);
    return r;
  }

  static double lossOf(const std::string &line) {
    const size_t pos = line.rfind(" loss ");
    return pos == std::string::npos ? NAN : std::strtod(line.c_str() + pos + 6, nullptr);
  }

  std::string dir_;
  std::vector<float> x_;
  std::vector<int64_t> y_;
};

TEST_F(RuntimeMain, HelpAndDescribe) {
  Result r = run("--help --bogus");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("usage:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--init-weights"), std::string::npos);

  r = run("--describe");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("fc/weight"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[2,3,2,2]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("arena 896 bytes"), std::string::npos) << r.out;
}

TEST_F(RuntimeMain, StepsModeLines) {
  const Result r = run("--data x.npy --labels y.npy --steps 5");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const auto lines = r.lines();
  ASSERT_EQ(lines.size(), 5u) << r.out;
  // Zero initial weights: the first loss is log(3) rounded to float, printed with %.9g.
  EXPECT_EQ(lines[0], "step 1/5 loss 1.09861231");
  for (int t = 1; t <= 5; ++t) {
    char prefix[32];
    std::snprintf(prefix, sizeof(prefix), "step %d/5 loss ", t);
    EXPECT_EQ(lines[t - 1].rfind(prefix, 0), 0u) << lines[t - 1];
  }
  EXPECT_LT(lossOf(lines[4]), lossOf(lines[0])); // it learns
}

TEST_F(RuntimeMain, EpochsModeAveragesStepLosses) {
  const Result steps = run("--data x.npy --labels y.npy --steps 4");
  const Result epochs = run("--data x.npy --labels y.npy --epochs 2");
  ASSERT_EQ(steps.code, 0) << steps.err;
  ASSERT_EQ(epochs.code, 0) << epochs.err;
  const auto s = steps.lines(), e = epochs.lines();
  ASSERT_EQ(s.size(), 4u);
  ASSERT_EQ(e.size(), 2u) << epochs.out;
  EXPECT_EQ(e[0].rfind("epoch 1/2 loss ", 0), 0u) << e[0];
  EXPECT_EQ(e[1].rfind("epoch 2/2 loss ", 0), 0u) << e[1];
  // 10 samples, batch 4: two steps per epoch; epoch E is the mean of its steps.
  EXPECT_NEAR(lossOf(e[0]), (lossOf(s[0]) + lossOf(s[1])) / 2, 1e-7);
  EXPECT_NEAR(lossOf(e[1]), (lossOf(s[2]) + lossOf(s[3])) / 2, 1e-7);
  // The default is one epoch.
  EXPECT_EQ(run("--data x.npy --labels y.npy").lines(), std::vector<std::string>{e[0].substr(0, 6) + "1/1" + e[0].substr(9)});
}

TEST_F(RuntimeMain, UsageErrorsExit2WithOneLine) {
  struct Case { std::string args, message; } cases[] = {
      {"--labels y.npy", "error: --data is required (see --help)\n"},
      {"--data x.npy", "error: --labels is required (see --help)\n"},
      {"--data x.npy --labels y.npy --bogus", "error: unknown option '--bogus' (see --help)\n"},
      {"--data x.npy --labels y.npy --steps 0", "error: --steps expects a positive integer, got '0'\n"},
      {"--data x.npy --labels y.npy --epochs x", "error: --epochs expects a positive integer, got 'x'\n"},
      {"--data x.npy --labels y.npy --steps 2 --epochs 2", "error: --epochs and --steps are mutually exclusive\n"},
      {"--data x.npy --labels y.npy --seed", "error: --seed needs a value\n"},
      {"--data nothere.npy --labels y.npy", "error: --data nothere.npy: No such file or directory\n"},
  };
  for (const Case &c : cases) {
    const Result r = run(c.args);
    EXPECT_EQ(r.code, 2) << c.args;
    EXPECT_EQ(r.err, c.message) << c.args;
    EXPECT_EQ(r.out, "") << c.args;
  }
}

TEST_F(RuntimeMain, InputMismatchesAreReportedBeforeStep1) {
  writeF32("x5.npy", {10, 5}, std::vector<float>(50, 0.0f));
  writeF32("x3d.npy", {10, 4, 1}, std::vector<float>(40, 0.0f));
  writeI64("x_i64.npy", {10, 4}, std::vector<int64_t>(40, 0));
  writeF32("y_f32.npy", {10}, std::vector<float>(10, 0.0f));
  writeI64("y9.npy", {9}, std::vector<int64_t>(9, 0));
  writeF32("x3.npy", {3, 4}, std::vector<float>(12, 0.0f));
  writeI64("y3.npy", {3}, std::vector<int64_t>(3, 0));
  writeI64("yneg.npy", {10}, {0, 1, 2, 0, -1, 0, 0, 0, 0, 0});
  struct Case { std::string args, message; } cases[] = {
      {"--data x5.npy --labels y.npy", "error: --data x5.npy: expected shape [*,4] float32, got [10,5] float32\n"},
      {"--data x3d.npy --labels y.npy", "error: --data x3d.npy: expected shape [*,4] float32, got [10,4,1] float32\n"},
      {"--data x_i64.npy --labels y.npy", "error: --data x_i64.npy: expected shape [*,4] float32, got [10,4] int64\n"},
      {"--data x.npy --labels y_f32.npy", "error: --labels y_f32.npy: expected shape [*] or [*,1] int64 (or int32/uint8), got [10] float32\n"},
      {"--data x.npy --labels y9.npy", "error: --labels y9.npy: 9 samples, but --data x.npy has 10\n"},
      {"--data x3.npy --labels y3.npy", "error: --data x3.npy: 3 samples, fewer than the batch size 4\n"},
      {"--data x.npy --labels yneg.npy", "error: --labels yneg.npy: label -1 at index 4 is negative\n"},
  };
  for (const Case &c : cases) {
    const Result r = run(c.args + " --steps 1");
    EXPECT_EQ(r.code, 2) << c.args;
    EXPECT_EQ(r.err, c.message) << c.args;
    EXPECT_EQ(r.out, "") << c.args; // nothing ran
  }
}

TEST_F(RuntimeMain, ConvertedInputsGiveTheSameRun) {
  std::vector<double> xd(x_.begin(), x_.end());
  std::vector<int32_t> y32(y_.begin(), y_.end());
  std::vector<uint8_t> y8(y_.begin(), y_.end());
  writeRaw("x64.npy", NpyDType::F64, {10, 4}, xd);
  writeRaw("y32.npy", NpyDType::I32, {10, 1}, y32);
  writeRaw("y8.npy", NpyDType::U8, {10}, y8);
  const Result base = run("--data x.npy --labels y.npy --steps 3");
  ASSERT_EQ(base.code, 0) << base.err;
  EXPECT_EQ(run("--data x64.npy --labels y32.npy --steps 3").out, base.out);
  EXPECT_EQ(run("--data=x.npy --labels=y8.npy --steps=3").out, base.out);
}

TEST_F(RuntimeMain, NonFiniteLossExits4AfterPrintingTheLine) {
  std::vector<float> x = x_;
  x[5 * 4 + 1] = NAN; // sample 5 is in the second batch
  writeF32("xnan.npy", {10, 4}, x);
  Result r = run("--data xnan.npy --labels y.npy --steps 3");
  EXPECT_EQ(r.code, 4);
  auto lines = r.lines();
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_EQ(lines[1].rfind("step 2/3 loss ", 0), 0u);
  EXPECT_TRUE(std::isnan(lossOf(lines[1]))) << lines[1];
  EXPECT_EQ(r.err, "error: loss became non-finite at step 2\n");

  r = run("--data xnan.npy --labels y.npy --epochs 3");
  EXPECT_EQ(r.code, 4);
  lines = r.lines();
  ASSERT_EQ(lines.size(), 1u) << r.out;
  EXPECT_EQ(lines[0].rfind("epoch 1/3 loss ", 0), 0u);
  EXPECT_EQ(r.err, "error: loss became non-finite at step 2\n");
}

bool exists(const std::string &p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

TEST_F(RuntimeMain, SaveAndInitWeightsResumeTraining) {
  const Result full = run("--data x.npy --labels y.npy --steps 3");
  ASSERT_EQ(full.code, 0) << full.err;
  const Result first = run("--data x.npy --labels y.npy --steps 2 --save-weights out/a/b");
  ASSERT_EQ(first.code, 0) << first.err;
  for (const char *leaf : {"fc_weight.npy", "fc.bias.npy", "glorot:2d.npy", "conv_w.npy"})
    EXPECT_TRUE(exists(path(std::string("out/a/b/") + leaf))) << leaf;
  NpyArray w;
  std::string error;
  ASSERT_TRUE(readNpy(path("out/a/b/fc_weight.npy"), w, error)) << error;
  EXPECT_EQ(w.shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(w.dtype, NpyDType::F32);

  // Step 1 of the resumed run sees the same weights and batch as step 3 of the full run.
  const Result resumed = run("--data x.npy --labels y.npy --steps 1 --init-weights out/a/b");
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  ASSERT_EQ(full.lines().size(), 3u);
  EXPECT_EQ(resumed.lines(), std::vector<std::string>{"step 1/1" + full.lines()[2].substr(8)});

  // A parameter file of the wrong shape is refused before training.
  writeF32("out/a/b/fc_weight.npy", {4, 3}, std::vector<float>(12, 0.0f));
  const Result bad = run("--data x.npy --labels y.npy --steps 1 --init-weights out/a/b");
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err, "error: --init-weights out/a/b/fc_weight.npy: expected shape [3,4] float32, "
                     "got [4,3] float32\n");
  EXPECT_EQ(bad.out, "");
  const Result missing = run("--data x.npy --labels y.npy --steps 1 --init-weights nowhere");
  EXPECT_EQ(missing.code, 2);
  EXPECT_EQ(missing.err, "error: --init-weights nowhere/fc_weight.npy: No such file or directory\n");
}

TEST_F(RuntimeMain, GlorotInitialisationFollowsTheSeed) {
  auto weights = [&](const std::string &seedArgs, const std::string &sub, const char *leaf) {
    const Result r = run("--data x.npy --labels y.npy --steps 1 --save-weights " + sub + " " + seedArgs);
    EXPECT_EQ(r.code, 0) << r.err;
    NpyArray a;
    std::string error;
    EXPECT_TRUE(readNpy(path(sub + "/" + leaf), a, error)) << error;
    std::vector<float> v;
    npyToF32(a, v);
    return v;
  };
  const auto a = weights("--seed 1", "s1", "conv_w.npy");
  const auto b = weights("--seed 1", "s1b", "conv_w.npy");
  const auto c = weights("--seed 2", "s2", "conv_w.npy");
  const auto d = weights("", "s0", "glorot:2d.npy");
  ASSERT_EQ(a.size(), 24u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // OIHW [2,3,2,2]: fan_in = 3*2*2 = 12, fan_out = 2*2*2 = 8; [5,2]: fan_in 2, fan_out 5.
  const double limit4 = std::sqrt(6.0 / 20.0), limit2 = std::sqrt(6.0 / 7.0);
  double maxAbs = 0;
  for (float v : a) {
    EXPECT_LE(std::fabs(v), limit4);
    maxAbs = std::max(maxAbs, std::fabs(static_cast<double>(v)));
  }
  EXPECT_GT(maxAbs, limit4 / 4); // not all zero
  ASSERT_EQ(d.size(), 10u);
  for (float v : d)
    EXPECT_LE(std::fabs(v), limit2);
}

TEST_F(RuntimeMain, ShuffleIsSeededAndChangesTheOrder) {
  const std::string args = "--data x.npy --labels y.npy --steps 6";
  const Result plain = run(args);
  const Result s1 = run(args + " --shuffle --seed 3");
  const Result s1again = run(args + " --shuffle --seed 3");
  const Result s2 = run(args + " --shuffle --seed 4");
  ASSERT_EQ(s1.code, 0) << s1.err;
  EXPECT_EQ(s1.out, s1again.out);
  EXPECT_NE(s1.out, plain.out);
  EXPECT_NE(s1.out, s2.out);
  EXPECT_EQ(s1.lines()[0], "step 1/6 loss 1.09861231"); // still log(3) from zero weights
}

} // namespace
