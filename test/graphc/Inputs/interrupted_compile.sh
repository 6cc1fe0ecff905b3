#!/bin/bash
# Interrupts graphc while its C++ compiler runs, then prints what is left behind.
# Usage: interrupted_compile.sh GRAPHC MODEL WORKDIR SIGNAL
# The compiler is a stand-in (GRAPHC_CXX) that writes half a binary to its -o path, says it
# started, then waits until it is terminated (noting that it was). graphc's temporary directory
# goes to WORKDIR/tmp (TMPDIR), the binary to WORKDIR/out/train.
set -u
set -m # job control: the background graphc gets SIGINT (a non-interactive shell's would ignore it)
graphc=$1 model=$2 work=$3 signal=$4
rm -rf "$work" && mkdir -p "$work/tmp" "$work/out"
cat > "$work/slow-cxx" <<SCRIPT
#!/bin/bash
while [ \$# -gt 0 ]; do [ "\$1" = -o ] && out=\$2; shift; done
echo partial > "\$out"
trap 'kill \$sleeper; echo terminated > "$work/compiler-terminated"; exit 143' TERM
sleep 60 & sleeper=\$!
touch "$work/compiler-started"
wait \$sleeper
SCRIPT
chmod +x "$work/slow-cxx"
TMPDIR="$work/tmp" GRAPHC_CXX="$work/slow-cxx" "$graphc" "$model" -o "$work/out/train" --quiet &
pid=$!
for _ in $(seq 600); do [ -e "$work/compiler-started" ] && break; sleep 0.1; done
kill -"$signal" "$pid"
wait "$pid"
echo "graphc exit $?"
[ -e "$work/compiler-terminated" ] && echo "compiler terminated"
echo "left in out/: [$(ls -A "$work/out")]"
echo "left in tmp/: [$(ls -A "$work/tmp")]"
