"""What a kolo timeline (KOLO_TIMELINE, a Chrome-trace JSON array written by rank 0) says
about communication: how long allreduces were in flight, and how many bytes went through
the fusion buffer.

An ALLREDUCE event is the collective itself (after negotiation and the fusion copy-in),
one per tensor lane; the tensors of one fused group share the same interval, so intervals
are merged before they are summed. The time includes waiting inside MPI for slower ranks,
which is part of what communication costs a step.
"""
import json


def load_all_events(path):
    """Every event of a timeline. A timeline cut short (a killed run) lacks the closing
    bracket; what was written is still read."""
    with open(path) as f:
        text = f.read().strip()
    if not text.endswith("]"):
        text = text.rstrip(",\n") + "]"
    return json.loads(text)


def load_events(path):
    """The complete ("ph": "X") events."""
    return [e for e in load_all_events(path) if e.get("ph") == "X"]


def merged_seconds(intervals):
    """Total length of the union of (start, end) intervals, in seconds (trace times are µs)."""
    total, current = 0.0, None
    for start, end in sorted(intervals):
        if current is None or start > current[1]:
            if current is not None:
                total += current[1] - current[0]
            current = [start, end]
        else:
            current[1] = max(current[1], end)
    if current is not None:
        total += current[1] - current[0]
    return total / 1e6


def allreduce_seconds(events):
    return merged_seconds((e["ts"], e["ts"] + e["dur"]) for e in events if e["name"] == "ALLREDUCE")


def fused_bytes(events):
    """Bytes of all fused buffers (FUSED events carry the group's size)."""
    return sum(int(e.get("args", {}).get("bytes", 0)) for e in events if e["name"] == "FUSED")


def summarize(path, train_seconds, steps):
    """(fused bytes per step, allreduce seconds per step, share of the training time spent
    in allreduces)."""
    events = load_events(path)
    allreduce = allreduce_seconds(events)
    per_step = fused_bytes(events) / steps if steps else 0.0
    share = allreduce / train_seconds if train_seconds > 0 else 0.0
    return per_step, allreduce / steps if steps else 0.0, min(share, 1.0)
