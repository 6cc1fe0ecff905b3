#!/usr/bin/env python3
"""Writes a MiniMalloc problem CSV (id,lower,upper,size) with N buffers over STEPS steps, for
the HTML picture tests: mostly short-lived buffers of mixed sizes, one long-lived buffer in 500,
and one id that tries to end the page's <script> element and throw (the page must escape it).
Deterministic: the same arguments always give the same file."""
import random
import sys

n, steps = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(4)
print("id,lower,upper,size")
for i in range(n):
    if i % 500 == 0:
        lower, upper = 0, steps
    else:
        lower = rng.randrange(steps)
        upper = min(steps, lower + 1 + int(rng.expovariate(1 / 12)))
    name = "</script><script>throw'injected'</script><!--" if i == 7 else "buf%d" % i
    print("%s,%d,%d,%d" % (name, lower, upper, rng.choice([256, 1024, 4096, 65536, 300000])))
