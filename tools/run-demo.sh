#!/usr/bin/env bash
# The README's demo command: installs what is missing, builds, and runs the main job.
# Arguments are passed to the job.
set -euo pipefail
# shellcheck source=tools/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# The main job and the targets it needs: 2 ranks train the MNIST conv net on Fashion-MNIST
# (examples/mnist; Debian's dataset-fashion-mnist is one of the packages).
# kolorun (launcher/) builds the mpirun command itself: root, oversubscription, binding.
MAIN_TARGETS=(mnist kolorun)
main_job() {
  "$KOLO_TOOL_BUILD_DIR/launcher/kolorun" -np 2 "$KOLO_TOOL_BUILD_DIR/examples/mnist/mnist" "$@"
}

kolo_prepare "${MAIN_TARGETS[@]}"
kolo_log "running the demo: 2 ranks train on Fashion-MNIST"
main_job "$@"
kolo_log "demo done ($(kolo_elapsed))"
