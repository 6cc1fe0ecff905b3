# Compares the arenas of two plan JSON dumps, or (--mutate IN OUT) moves one buffer onto the
# offset of a neighbour live at the same step, for the verifier's negative check.
import json
import sys

if sys.argv[1] == "--mutate":
    plan = json.load(open(sys.argv[2]))
    buffers = plan["buffers"]
    for a in buffers:
        for b in buffers:
            if a is not b and a["offset"] != b["offset"] and 0 < a["bytes"] <= b["bytes"] and \
                    a["first"] <= b["last"] and b["first"] <= a["last"]:
                a["offset"] = b["offset"]
                json.dump(plan, open(sys.argv[3], "w"))
                sys.exit(0)
    sys.exit("no pair of simultaneously live buffers to collide")

reuse, separate = (json.load(open(p))["arena_bytes"] for p in sys.argv[1:3])
status = "ok" if reuse < separate else "NOT SMALLER"
print(f"reuse arena {reuse} < no-reuse arena {separate}: {status}")
sys.exit(0 if reuse < separate else 1)
