#!/bin/bash
# The GPU configurations of docs/perf.md, kolo and PyTorch alternately in the same call, as JSON
# lines in $OUT (default gpu_benchmark.jsonl) and a table of kolo/PyTorch ratios:
#
#   bench/gpu_models/run.sh [BUILD_DIR] [ROUNDS]
#
# ResNet-50 at 224×224, batch 64 and 128, fp32 and fp16 (AMP); ResNet50V2 and ResNet152V2 at
# 128×128, batch 256 (the seeds' configuration), fp32 and fp16. Each configuration runs
# ROUNDS times (default 1) per framework; the table shows the medians.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-build}"
rounds="${2:-1}"
out="${OUT:-gpu_benchmark.jsonl}"
bench="$build/bench/gpu_models/kolo-gpu-benchmark"
python="${PYTHON:-python3}"
: > "$out"
configs=(
  "resnet50 64 224" "resnet50 128 224"
  "resnet50v2 256 128" "resnet152v2 256 128"
)
for config in "${configs[@]}"; do
  read -r model batch size <<< "$config"
  for precision in fp32 fp16; do
    for ((r = 0; r < rounds; r++)); do
      args=(--model "$model" --batch "$batch" --size "$size" --precision "$precision")
      "$bench" "${args[@]}" >> "$out" || echo "{\"framework\": \"kolo\", \"model\": \"$model\", \"batch\": $batch, \"precision\": \"$precision\", \"failed\": true}" >> "$out"
      "$python" "$here/bench_pytorch_gpu.py" "${args[@]}" >> "$out" || echo "{\"framework\": \"pytorch\", \"model\": \"$model\", \"batch\": $batch, \"precision\": \"$precision\", \"failed\": true}" >> "$out"
    done
  done
done
"$python" - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in rows:
    if "images_per_s" in r:
        by.setdefault((r["model"], r["batch"], r["precision"], r["framework"]), []).append(r)
print("| model | batch | precision | kolo img/s | PyTorch img/s | kolo/PyTorch | kolo peak MiB | PyTorch peak MiB | failed runs |")
print("|---|---|---|---|---|---|---|---|---|")
verdicts = []
for (model, batch, precision) in sorted({(r["model"], r["batch"], r["precision"]) for r in rows}):
    k = by.get((model, batch, precision, "kolo"), [])
    p = by.get((model, batch, precision, "pytorch"), [])
    failed = {f: sum(1 for r in rows if r.get("failed") and (r["model"], r["batch"], r["precision"], r["framework"])
                     == (model, batch, precision, f)) for f in ("kolo", "pytorch")}
    note = "; ".join(f"{f}: {n} failed run(s)" for f, n in failed.items() if n)
    if not k or not p:
        print(f"| {model} | {batch} | {precision} | {'failed' if not k else ''} | {'failed' if not p else ''} | | | | {note} |")
        verdicts.append(f"{model} b{batch} {precision}: no ratio ({note})  target >= 0.9: FAIL")
        continue
    ki = statistics.median(r["images_per_s"] for r in k)
    pi = statistics.median(r["images_per_s"] for r in p)
    km = max(r["peak_allocated_mb"] for r in k)
    pm = max(r["peak_allocated_mb"] for r in p)
    print(f"| {model} | {batch} | {precision} | {ki:.0f} | {pi:.0f} | {ki / pi:.2f} | {km:.0f} | {pm:.0f} | {note} |")
    verdicts.append(f"{model} b{batch} {precision}: kolo / PyTorch = {ki / pi:.2f}  target >= 0.9: "
                    f"{'PASS' if ki / pi >= 0.9 else 'FAIL'}" + (f" ({note})" if note else ""))
print("\n".join(verdicts))
PY
