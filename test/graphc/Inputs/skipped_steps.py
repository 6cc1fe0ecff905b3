"""Reads a training binary's 'step t/T loss L' lines (every step on the same batch) and prints
how many leading steps repeated step 1's loss exactly (updates skipped), and whether the loss
changed at all."""
import re
import sys

losses = [m.group(1) for m in re.finditer(r"^step \d+/\d+ loss (\S+)$", open(sys.argv[1]).read(), re.M)]
if not losses:
    sys.exit("no 'step t/T loss L' lines in " + sys.argv[1])
same = next((i for i, l in enumerate(losses) if l != losses[0]), len(losses))
# Step t's loss is computed before step t's update: if step s + 1 is the first with a new
# loss, steps 1..s - 1 were skipped and step s updated.
print("skipped steps before the first update: %d; updated within %d steps: %s"
      % (max(same - 1, 0), len(losses), "yes" if same < len(losses) else "no"))
