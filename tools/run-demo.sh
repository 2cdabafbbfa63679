#!/usr/bin/env bash
# The README's demo command: installs what is missing, builds, and runs the main job.
# Arguments are passed to the job.
set -euo pipefail
# shellcheck source=tools/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# The main job and the targets it needs. Until the training example exists it is the
# 2-rank allreduce demo; switching to the Fashion-MNIST training is a change of these two.
MAIN_TARGETS=(allreduce_demo)
main_job() {
  kolo_mpirun -np 2 "$KOLO_BUILD_DIR/examples/allreduce_demo" "$@"
}

kolo_prepare "${MAIN_TARGETS[@]}"
kolo_log "running the demo: 2 ranks"
main_job "$@"
kolo_log "demo done ($(kolo_elapsed))"
