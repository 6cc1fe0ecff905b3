"""Compares two --log-json files of training runs: every step's loss and every epoch's
validation loss, within a relative tolerance. Prints what it compared and PASS or FAIL."""
import json
import sys


def read(path):
    steps, validation = [], []
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if record.get("event") == "step":
                steps.append(float(record["loss"]))
            elif record.get("event") == "epoch" and "val_loss" in record:
                validation.append(float(record["val_loss"]))
    return steps, validation


def main():
    tested, reference, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
    (ts, tv), (rs, rv) = read(tested), read(reference)
    if len(ts) != len(rs) or len(tv) != len(rv) or not rs or not rv:
        print("FAIL: %d step and %d validation losses against %d and %d"
              % (len(ts), len(tv), len(rs), len(rv)))
        sys.exit(1)
    worst = 0.0
    for a, b in zip(ts + tv, rs + rv):
        worst = max(worst, abs(a - b) / max(abs(b), 1e-30))
    print("compared %d step losses and %d validation losses; worst relative error %.3g"
          % (len(rs), len(rv), worst))
    print("PASS" if worst <= tol else "FAIL")
    sys.exit(0 if worst <= tol else 1)


if __name__ == "__main__":
    main()
