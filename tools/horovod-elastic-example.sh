#!/usr/bin/env bash
# Horovod's own elastic PyTorch example on kolo.torch, with only its import changed: the
# one of examples/elastic/pytorch/ that needs no download and no GPU,
# pytorch_synthetic_benchmark_elastic.py. kolo does not carry Horovod's code, so this takes
# a Horovod checkout (git clone https://github.com/horovod/horovod) and a built kolo:
#
#   tools/horovod-elastic-example.sh HOROVOD_DIR [BUILD_DIR]
#
# Runs it as an elastic job of two workers ("localhost" and "127.0.0.1"), SIGKILLs the
# worker on 127.0.0.1 (a child of the kolorun started here, found by its pid) once the
# benchmark runs, and checks that the job re-formed with the other and finished (exit 0).
set -euo pipefail
horovod="${1:?usage: tools/horovod-elastic-example.sh HOROVOD_DIR [BUILD_DIR]}"
build="$(realpath "${2:-$(dirname "${BASH_SOURCE[0]}")/../build}")"
example="$horovod/examples/elastic/pytorch/pytorch_synthetic_benchmark_elastic.py"
[[ -f "$example" ]] || { echo "no $example" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
sed 's/^import horovod.torch as hvd$/import kolo.torch as hvd/' "$example" >"$work/example.py"
[[ "$(diff "$example" "$work/example.py" | grep -c '^[<>]')" == 2 ]] || { echo "the import line was not found" >&2; exit 2; }

PYTHONPATH="$build/python" OMP_NUM_THREADS=1 "$build/launcher/kolorun" --min-np 1 --max-np 2 -np 2 \
  -H localhost:1,127.0.0.1:1 /usr/bin/python3 "$work/example.py" --no-cuda --model resnet18 --batch-size 4 \
  --num-warmup-batches 1 --num-batches-per-iter 2 --num-iters 8 >"$work/out" 2>&1 &
kolorun=$!
for _ in $(seq 600); do grep -q 'Iter #1' "$work/out" && break; sleep 0.2; done
victim=""
for pid in $(pgrep -P "$kolorun"); do
  tr '\0' '\n' <"/proc/$pid/environ" | grep -qx 'KOLO_HOSTNAME=127.0.0.1' && victim=$pid
done
[[ -n "$victim" ]] && kill -KILL "$victim"
status=0
wait "$kolorun" || status=$?
cat "$work/out"
if [[ -n "$victim" && $status == 0 ]] && grep -q 'round 2: 1 workers (the job re-formed)' "$work/out" &&
   grep -q 'Total img/sec on 1 CPU' "$work/out"; then
  echo "PASSED: Horovod's pytorch_synthetic_benchmark_elastic.py went on after a worker was killed"
else
  echo "FAILED (kolorun exit $status, killed pid ${victim:-none})"
  exit 1
fi
