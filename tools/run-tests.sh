#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs every test with
# CTest. Extra arguments go to ctest (e.g. -R allreduce, -j2).
#   KOLO_TOOL_TEST_TIMEOUT   seconds a test may take where it has no limit of its own (default 300)
set -euo pipefail
# shellcheck source=tools/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# No targets: the tests need everything built.
# shellcheck disable=SC2119
kolo_prepare
kolo_log "running the tests"
status=0
ctest --test-dir "$KOLO_TOOL_BUILD_DIR" --output-on-failure --no-tests=error "$@" || status=$?
kolo_log "tests done ($(kolo_elapsed)), ctest exit status $status"
exit "$status"
