"""pytest setup for kolo.torch's tests, run by every rank of an mpirun job (CMakeLists.txt).

Every rank collects and runs the same tests in the same order, so their collectives meet; a
test may skip only on conditions every rank shares (the job's size), never on its rank. kolo
starts once for the whole session: it cannot start again after shutdown (MPI is finalised).
Rank 0 reports as pytest does; the other ranks print only their failures.
"""
import os
import sys

# Defaults for a run by hand; CTest sets them too. Dynamic process sets for
# test_process_sets.py; a short stall bound so that ranks left waiting by a test that failed
# elsewhere end instead of hanging.
os.environ.setdefault('KOLO_DYNAMIC_PROCESS_SETS', '1')
os.environ.setdefault('KOLO_STALL_CHECK_TIME_SECONDS', '5')
os.environ.setdefault('KOLO_STALL_SHUTDOWN_TIME_SECONDS', '20')

import pytest  # noqa: E402

import kolo.torch as hvd  # noqa: E402


class _FailuresOnly:
    """The reporter of ranks other than 0: a line per failure, with pytest's explanation."""

    def __init__(self, rank):
        self.rank = rank

    def pytest_runtest_logreport(self, report):
        if report.failed:
            sys.stderr.write(f'[rank {self.rank}] FAILED {report.nodeid} ({report.when})\n'
                             f'{report.longreprtext}\n')


@pytest.hookimpl(trylast=True)  # after pytest has registered its terminal reporter
def pytest_configure(config):
    hvd.init()
    if hvd.rank() > 0:
        reporter = config.pluginmanager.getplugin('terminalreporter')
        if reporter is not None:
            config.pluginmanager.unregister(reporter)
        config.pluginmanager.register(_FailuresOnly(hvd.rank()), 'kolo_failures_only')


def pytest_unconfigure(config):
    hvd.shutdown()
