#!/bin/bash
# A stand-in for mpirun (through KOLO_MPIRUN) that never starts any rank, to test
# kolorun --start-timeout. It writes its pid to $SLOW_MPIRUN_PID_FILE, then sleeps; with
# SLOW_MPIRUN_IGNORE_TERM=1 it also ignores SIGTERM, so only SIGKILL ends it.
echo $$ > "$SLOW_MPIRUN_PID_FILE"
if [ "$SLOW_MPIRUN_IGNORE_TERM" = 1 ]; then trap '' TERM; fi
sleep 60
exec mpirun "$@"
