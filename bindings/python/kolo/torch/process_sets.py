"""Process sets, as horovod/common/process_sets.py: Python objects naming kolo's sets by id.
kolo keeps the table of sets (docs/process_sets.md); a ProcessSet gets its id from hvd.init()
or hvd.add_process_set(), and asks kolo for its size and this rank's place in it."""
import weakref

from kolo.torch import _C

# The sets given an id since init(). shutdown() takes their ids back: a new run of kolo numbers
# its sets from 1 again, and a set kept across a reset (an elastic job's) would otherwise name
# another set of ranks without an error.
_with_ids = weakref.WeakSet()


class ProcessSet:
    """A set of ranks that runs collectives of its own. Build it from a list of ranks, then pass
    it to hvd.init(process_sets=[...]) or hvd.add_process_set(); process_set_id is set then."""
    process_set_id = None
    ranks = None
    mpi_comm = None

    def __init__(self, ranks_or_comm):
        try:
            ranks = sorted(ranks_or_comm)
        except TypeError:
            raise NotImplementedError(
                'kolo.torch: a ProcessSet is built from a list of ranks; MPI communicators '
                '(mpi4py) are not supported') from None
        if any(not isinstance(r, int) for r in ranks):
            raise ValueError('ProcessSet should be initialized with a list of process ranks')
        self.ranks = ranks

    def _invalidate(self):
        self.process_set_id = None

    def size(self):
        """The number of ranks in the set; None before the set has an id."""
        return None if self.process_set_id is None else _C.process_set_size(self.process_set_id)

    def rank(self):
        """This rank's index within the set (-1 outside it); None before the set has an id.
        Operations still name ranks (a broadcast's root) by their global rank."""
        return None if self.process_set_id is None else _C.process_set_rank(self.process_set_id)

    def included(self):
        """Whether this rank belongs to the set; None before the set has ranks."""
        return None if self.ranks is None else _C.rank() in self.ranks

    def __str__(self):
        return f'ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks}, mpi_comm=None)'

    __repr__ = __str__


global_process_set = ProcessSet([])
global_process_set.process_set_id = 0


def _as_process_sets(sets):
    return [s if isinstance(s, ProcessSet) else ProcessSet(s) for s in sets]


def _assign_ids(sets):
    """After init: gives each set its id from kolo's table; a second object for the same ranks
    stays without one, as in Horovod."""
    ids_by_ranks = {tuple(ranks): set_id for set_id, ranks in _C.process_sets().items()}
    seen = {0}
    for s in sets:
        s.process_set_id = ids_by_ranks.get(tuple(s.ranks))
        if s.process_set_id in seen:
            s._invalidate()
        else:
            seen.add(s.process_set_id)
            _with_ids.add(s)
    global_process_set.ranks = list(range(_C.size()))


def _forget_ids():
    """At shutdown: every set but the global one is without an id until init() or
    add_process_set() gives it one again."""
    for s in list(_with_ids):
        s._invalidate()
    _with_ids.clear()


def set_id(process_set):
    """The id kolo knows `process_set` by."""
    if not isinstance(process_set, ProcessSet):
        raise ValueError(f'process_set must be a ProcessSet, not {type(process_set).__name__}')
    if process_set.process_set_id is None:
        raise ValueError(f'{process_set} has no id: pass it to hvd.init(process_sets=...) or '
                         'hvd.add_process_set() first (or it was removed, or kolo was shut down since)')
    return process_set.process_set_id


def add_process_set(process_set):
    """Adds a set while kolo runs (KOLO_DYNAMIC_PROCESS_SETS=1); collective: every rank calls it,
    in the same order. Takes a ProcessSet or a list of ranks; returns the ProcessSet."""
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    if process_set.ranks in _C.process_sets().values():
        # Horovod's error; every rank sees the same table, so every rank raises it.
        raise ValueError(f'Attempted to add a duplicate process set: {process_set}')
    process_set.process_set_id = _C.add_process_set(process_set.ranks)
    _with_ids.add(process_set)
    return process_set


def remove_process_set(process_set):
    """Removes a set added by add_process_set (collective, like it). Returns whether it was
    removed: False for the global set and for a set without an id."""
    if process_set.process_set_id in (None, 0):
        return False
    _C.remove_process_set(process_set.process_set_id)
    process_set._invalidate()
    return True
