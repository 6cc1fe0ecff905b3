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

  /// Runs the smoke binary with `args`, and `env` ("NAME=VALUE ...") in its environment.
  Result run(const std::string &args, const std::string &env = "") const {
    const std::string outFile = path("stdout.txt"), errFile = path("stderr.txt");
    const std::string cmd = std::string("cd '") + dir_ + "' && env " + env +
                            " '" GRAPHC_SMOKE_TRAIN "' " + args + " >'" + outFile + "' 2>'" +
                            errFile + "'";
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

  /// A plain epoch line without its timing: "epoch 1/2 loss L accuracy A".
  static std::string untimed(const std::string &line) { return line.substr(0, line.find(" - ")); }

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
  EXPECT_NEAR(lossOf(untimed(e[0])), (lossOf(s[0]) + lossOf(s[1])) / 2, 1e-7);
  EXPECT_NEAR(lossOf(untimed(e[1])), (lossOf(s[2]) + lossOf(s[3])) / 2, 1e-7);
  // The smoke program exposes its logits as the Prediction: the line has the accuracy, then
  // the time and throughput.
  EXPECT_NE(e[0].find(" accuracy "), std::string::npos) << e[0];
  EXPECT_NE(e[0].find(" samples/s"), std::string::npos) << e[0];
  // The default is one epoch.
  const auto one = run("--data x.npy --labels y.npy").lines();
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(untimed(one[0]), "epoch 1/1" + untimed(e[0]).substr(9));
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
      {"--data x.npy --labels y.npy --last-batch=keep", "error: --last-batch expects 'drop' or 'pad', got 'keep'\n"},
      {"--data x.npy --labels y.npy --validation-split 1", "error: --validation-split expects a fraction between 0 and 1 (exclusive), got '1'\n"},
      {"--data x.npy --labels y.npy --validation-split 0.2 --validation-data x.npy --validation-labels y.npy", "error: --validation-split and --validation-data/--validation-labels are mutually exclusive\n"},
      {"--data x.npy --labels y.npy --validation-data x.npy", "error: --validation-data needs --validation-labels\n"},
      {"--data x.npy --labels y.npy --resume", "error: --resume needs --checkpoint DIR\n"},
      {"--data x.npy --labels y.npy --checkpoint c --checkpoint-every 0", "error: --checkpoint-every expects a positive integer, got '0'\n"},
      {"--data x.npy --labels y.npy --keep 2", "error: --keep needs --checkpoint DIR\n"},
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
  writeRaw("x_i16.npy", NpyDType::I16, {10, 4}, std::vector<int16_t>(40, 0));
  writeI64("y_class3.npy", {10}, {0, 1, 2, 0, 1, 2, 3, 0, 0, 0});
  writeF32("y_f32.npy", {10}, std::vector<float>(10, 0.0f));
  writeI64("y9.npy", {9}, std::vector<int64_t>(9, 0));
  writeF32("x3.npy", {3, 4}, std::vector<float>(12, 0.0f));
  writeI64("y3.npy", {3}, std::vector<int64_t>(3, 0));
  writeI64("yneg.npy", {10}, {0, 1, 2, 0, -1, 0, 0, 0, 0, 0});
  struct Case {
    std::string args, message;
  } cases[] = {
      {"--data x5.npy --labels y.npy",
       "error: --data x5.npy: expected shape [*,4] float32, got [10,5] float32\n"},
      {"--data x3d.npy --labels y.npy",
       "error: --data x3d.npy: expected shape [*,4] float32, got [10,4,1] float32\n"},
      {"--data x_i16.npy --labels y.npy",
       "error: --data x_i16.npy: expected shape [*,4] float32, got [10,4] int16\n"},
      {"--data x.npy --labels y_f32.npy", "error: --labels y_f32.npy: expected shape [*] or [*,1] "
                                          "int64 (or int32/uint8), got [10] float32\n"},
      {"--data x.npy --labels y9.npy",
       "error: --labels y9.npy: 9 samples, but --data x.npy has 10\n"},
      {"--data x3.npy --labels y3.npy",
       "error: --data x3.npy: 3 samples, fewer than the batch size 4\n"},
      {"--data x.npy --labels yneg.npy",
       "error: --labels yneg.npy: label -1 at index 4 is negative (a label to ignore, as PyTorch's "
       "ignore_index? compile with graphc --ignore-index=-1)\n"},
      // The program's Prediction has 3 classes per sample.
      {"--data x.npy --labels y_class3.npy",
       "error: --labels y_class3.npy: label 3 at index 6 is out of range: expected 0 <= label < 3 "
       "(the model predicts 3 classes)\n"},
      {"--data x.npy --labels y.npy --validation-data x.npy --validation-labels y_class3.npy",
       "error: --validation-labels y_class3.npy: label 3 at index 6 is out of range: expected 0 <= "
       "label < 3 (the model predicts 3 classes)\n"},
      {"--data x.npy --labels y.npy --validation-data x5.npy --validation-labels y.npy",
       "error: --validation-data x5.npy: expected shape [*,4] float32, got [10,5] float32\n"},
      {"--data x.npy --labels y.npy --validation-data x.npy --validation-labels y9.npy",
       "error: --validation-labels y9.npy: 9 samples, but --validation-data x.npy has 10\n"},
      {"--data x.npy --labels y.npy --validation-split 0.7",
       "error: --data x.npy: 3 training samples after --validation-split, fewer than the batch "
       "size 4 (or use --last-batch=pad)\n"},
      {"--data x.npy --labels y.npy --validation-split 0.15",
       "error: --validation-split: 1 validation samples, fewer than the batch size 4 (or use "
       "--last-batch=pad)\n"},
      {"--data x.npy --labels y.npy --validation-split 0.05",
       "error: --validation-split 0.05 of 10 samples leaves no validation sample\n"},
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

TEST_F(RuntimeMain, IntegerAndHalfDataAreConvertedPerBatch) {
  // Integer-valued samples: the same run from float32, float16, int64, int32 and uint8 files.
  std::vector<float> xf;
  for (float v : x_)
    xf.push_back(std::round(v * 4.0f));
  writeF32("xf.npy", {10, 4}, xf);
  writeRaw("xi64.npy", NpyDType::I64, {10, 4}, std::vector<int64_t>(xf.begin(), xf.end()));
  writeRaw("xi32.npy", NpyDType::I32, {10, 4}, std::vector<int32_t>(xf.begin(), xf.end()));
  writeRaw("xu8.npy", NpyDType::U8, {10, 4}, std::vector<uint8_t>(xf.begin(), xf.end()));
  std::vector<uint16_t> half;
  for (float v : xf) { // small integers are exact in float16: sign 0, exponent, mantissa
    uint16_t h = 0;
    if (v != 0.0f) {
      int e = static_cast<int>(std::floor(std::log2(v)));
      h = static_cast<uint16_t>(((e + 15) << 10) | static_cast<int>((v / std::ldexp(1.0f, e) - 1.0f) * 1024));
    }
    half.push_back(h);
  }
  writeRaw("xf16.npy", NpyDType::F16, {10, 4}, half);
  const Result base = run("--data xf.npy --labels y.npy --steps 3");
  ASSERT_EQ(base.code, 0) << base.err;
  for (const char *file : {"xi64.npy", "xi32.npy", "xu8.npy", "xf16.npy"}) {
    const Result r = run(std::string("--data ") + file + " --labels y.npy --steps 3");
    EXPECT_EQ(r.code, 0) << file << r.err;
    EXPECT_EQ(r.out, base.out) << file;
  }
}

TEST_F(RuntimeMain, PaddedLastBatchRepeatsTheFirstSamples) {
  // 10 samples, batch 4, --last-batch=pad: three steps per epoch, the third on samples
  // 8, 9, 0, 1. The same as dropping on a 12-sample file that spells it out.
  std::vector<float> x12 = x_;
  x12.insert(x12.end(), x_.begin(), x_.begin() + 8);
  std::vector<int64_t> y12 = y_;
  y12.insert(y12.end(), y_.begin(), y_.begin() + 2);
  writeF32("x12.npy", {12, 4}, x12);
  writeI64("y12.npy", {12}, y12);
  const Result pad = run("--data x.npy --labels y.npy --steps 6 --last-batch=pad");
  const Result spelled = run("--data x12.npy --labels y12.npy --steps 6");
  ASSERT_EQ(pad.code, 0) << pad.err;
  EXPECT_EQ(pad.out, spelled.out);
  const Result epochs = run("--data x.npy --labels y.npy --epochs 2 --last-batch=pad");
  ASSERT_EQ(epochs.lines().size(), 2u) << epochs.out;
  EXPECT_NEAR(lossOf(untimed(epochs.lines()[1])),
              (lossOf(pad.lines()[3]) + lossOf(pad.lines()[4]) + lossOf(pad.lines()[5])) / 3,
              1e-7);
  // Fewer samples than a batch train with pad (each batch repeats them).
  writeF32("x3.npy", {3, 4}, std::vector<float>(x_.begin(), x_.begin() + 12));
  writeI64("y3.npy", {3}, std::vector<int64_t>(y_.begin(), y_.begin() + 3));
  EXPECT_EQ(run("--data x3.npy --labels y3.npy --steps 2 --last-batch=pad").code, 0);
}

TEST_F(RuntimeMain, ValidationLeavesTrainingUnchanged) {
  // Evaluation runs the training step on a snapshot and restores it: the training losses are
  // bit-identical with and without it, shuffled or not.
  for (const std::string extra : {"", " --shuffle --seed 5"}) {
    const Result plain = run("--data x.npy --labels y.npy --steps 7" + extra);
    const Result withVal = run("--data x.npy --labels y.npy --steps 7 --validation-data x.npy "
                               "--validation-labels y.npy" + extra);
    ASSERT_EQ(withVal.code, 0) << withVal.err;
    std::vector<std::string> steps;
    int validations = 0;
    for (const std::string &l : withVal.lines()) {
      if (l.rfind("validation after step ", 0) == 0)
        ++validations;
      else
        steps.push_back(l);
    }
    EXPECT_EQ(steps, plain.lines()) << extra;
    EXPECT_EQ(validations, 3) << withVal.out; // after steps 2, 4 and 6 (two steps per epoch)
  }
}

TEST_F(RuntimeMain, ValidationLossIsTheLossOfTheTrainedWeights) {
  // val_loss after epoch 1 (two steps) is the forward loss of the weights after step 2 on the
  // validation batch: the first step loss of a run that starts from those weights.
  std::vector<float> xv(x_.begin() + 8 * 4 - 16, x_.begin() + 8 * 4); // samples 4..7
  std::vector<int64_t> yv(y_.begin() + 4, y_.begin() + 8);
  writeF32("xv.npy", {4, 4}, xv);
  writeI64("yv.npy", {4}, yv);
  const Result withVal = run("--data x.npy --labels y.npy --epochs 1 --validation-data xv.npy "
                             "--validation-labels yv.npy --save-weights w");
  ASSERT_EQ(withVal.code, 0) << withVal.err;
  const Result direct = run("--data xv.npy --labels yv.npy --steps 1 --init-weights w");
  ASSERT_EQ(direct.code, 0) << direct.err;
  const std::string line = withVal.lines().at(0);
  const size_t pos = line.find(" val_loss ");
  ASSERT_NE(pos, std::string::npos) << line;
  EXPECT_EQ(std::strtod(line.c_str() + pos + 10, nullptr), lossOf(direct.lines().at(0))) << line;
  EXPECT_NE(line.find(" val_accuracy "), std::string::npos) << line;

  // --validation-split holds out the last samples: the same as a separate file with them.
  writeF32("x8.npy", {8, 4}, std::vector<float>(x_.begin(), x_.begin() + 32));
  writeI64("y8.npy", {8}, std::vector<int64_t>(y_.begin(), y_.begin() + 8));
  writeF32("xlast.npy", {2, 4}, std::vector<float>(x_.begin() + 32, x_.end()));
  writeI64("ylast.npy", {2}, std::vector<int64_t>(y_.begin() + 8, y_.end()));
  const Result split = run("--data x.npy --labels y.npy --epochs 2 --validation-split 0.2 "
                           "--last-batch=pad");
  const Result separate = run("--data x8.npy --labels y8.npy --epochs 2 --validation-data "
                              "xlast.npy --validation-labels ylast.npy --last-batch=pad");
  ASSERT_EQ(split.code, 0) << split.err;
  ASSERT_EQ(split.lines().size(), 2u);
  for (size_t i = 0; i < 2; ++i)
    EXPECT_EQ(untimed(split.lines()[i]), untimed(separate.lines()[i]));
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
  EXPECT_EQ(r.err, "error: loss became non-finite at step 2: sample 5 of --data xnan.npy holds "
                   "NaN or Inf\n");

  r = run("--data xnan.npy --labels y.npy --epochs 3");
  EXPECT_EQ(r.code, 4);
  lines = r.lines();
  ASSERT_EQ(lines.size(), 1u) << r.out;
  EXPECT_EQ(lines[0].rfind("epoch 1/3 loss ", 0), 0u);
  EXPECT_TRUE(std::isnan(lossOf(untimed(lines[0])))) << lines[0];
  EXPECT_EQ(r.err, "error: loss became non-finite at step 2: sample 5 of --data xnan.npy holds "
                   "NaN or Inf\n");
}

std::string slurpFile(const std::string &p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// GRAPHC_POISON_ARENA=1 sets every byte no persistent tensor holds to NaN before each step. A
// step that writes before it reads trains the same bits; one that reads a byte it did not write
// in that step (what stale or uninitialised device memory would give it) is caught.
TEST_F(RuntimeMain, PoisonedArenaChangesNoBitOfACorrectStep) {
  Result plain = run("--data x.npy --labels y.npy --steps 3 --save-weights plain");
  ASSERT_EQ(plain.code, 0) << plain.err;
  Result poisoned =
      run("--data x.npy --labels y.npy --steps 3 --save-weights poisoned", "GRAPHC_POISON_ARENA=1");
  ASSERT_EQ(poisoned.code, 0) << poisoned.err;
  EXPECT_EQ(poisoned.out, plain.out);
  for (const char *file : {"fc_weight.npy", "fc.bias.npy"}) {
    const std::string a = slurpFile(path(std::string("plain/") + file));
    EXPECT_FALSE(a.empty()) << file;
    EXPECT_EQ(slurpFile(path(std::string("poisoned/") + file)), a) << file;
  }
}

TEST_F(RuntimeMain, PoisonedArenaExposesAReadOfTheLastStepsScratch) {
  // SMOKE_READ_STALE_GRADIENT=1: the smoke step adds 0 x the bias gradient left by the step
  // before to its loss, before writing this step's. Fresh pages and old values hide that.
  Result hidden = run("--data x.npy --labels y.npy --steps 3", "SMOKE_READ_STALE_GRADIENT=1");
  EXPECT_EQ(hidden.code, 0) << hidden.err;
  Result caught = run("--data x.npy --labels y.npy --steps 3",
                      "SMOKE_READ_STALE_GRADIENT=1 GRAPHC_POISON_ARENA=1");
  EXPECT_EQ(caught.code, 4) << caught.out;
  EXPECT_EQ(caught.err.rfind("error: loss became non-finite at step 1", 0), 0u) << caught.err;

  Result bad = run("--data x.npy --labels y.npy --steps 1", "GRAPHC_POISON_ARENA=yes");
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err, "error: GRAPHC_POISON_ARENA=yes: expected 0 or 1\n");
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
