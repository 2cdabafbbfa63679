"""A scaling experiment's results: speedup and efficiency from the measured rows, the
CSV, the printed table and the plots.

A series is one placement with one link setting (local; netns at 10gbit; ...). Its
smallest rank count is its baseline: speedup = throughput / the baseline's throughput,
efficiency = speedup / (ranks / baseline ranks). The ideal epoch time is the baseline's,
scaled by the images per epoch and divided by the rank ratio.
"""
import csv
from dataclasses import asdict, dataclass, fields


@dataclass
class Row:
    placement: str
    links: str               # link shaping: "-" (none), or e.g. "1gbit"
    ranks: int
    nodes: int
    model: str
    batch: int               # per rank
    threads: int             # per rank
    images: int              # per epoch, all ranks
    epoch_s: float           # training time of one epoch (median over the timed epochs)
    images_per_s: float
    fused_bytes_per_step: float
    comm_share: float        # allreduce time / training time, rank 0's timeline
    runs: int                # how many runs the median was taken over
    load: float              # the machine's 1-minute load average after the median run
    speedup: float = 0.0
    efficiency: float = 0.0
    ideal_epoch_s: float = 0.0

    def series(self):
        return (self.placement, self.links)


def add_speedup(rows):
    for key in dict.fromkeys(r.series() for r in rows):
        members = [r for r in rows if r.series() == key]
        base = min(members, key=lambda r: r.ranks)
        for r in members:
            r.speedup = r.images_per_s / base.images_per_s
            r.efficiency = r.speedup / (r.ranks / base.ranks)
            r.ideal_epoch_s = base.epoch_s * (r.images / base.images) * (base.ranks / r.ranks)


def write_csv(rows, path):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=[f.name for f in fields(Row)])
        writer.writeheader()
        for r in rows:
            writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in asdict(r).items()})


def table(rows):
    """Markdown, one line per run."""
    head = ("| placement | links | ranks | nodes | model | batch/rank | epoch time | images/s | speedup | "
            "efficiency | fused bytes/step | comm share |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        lines.append(f"| {r.placement} | {r.links} | {r.ranks} | {r.nodes} | {r.model} | {r.batch} | "
                     f"{r.epoch_s:.2f} s | {r.images_per_s:,.0f} | {r.speedup:.2f} | {r.efficiency:.0%} | "
                     f"{r.fused_bytes_per_step:,.0f} | {r.comm_share:.1%} |")
    return "\n".join(lines)


def plot(rows, path, title, cores):
    import matplotlib
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    """Three panels: epoch time, speedup, efficiency against ranks, one line per series.
    `cores`: the machine's, which bound the speedup when every rank runs on it."""
    fig, (ax_time, ax_speed, ax_eff) = plt.subplots(1, 3, figsize=(13, 4))
    ranks = sorted({r.ranks for r in rows})
    for i, key in enumerate(dict.fromkeys(r.series() for r in rows)):
        members = sorted((r for r in rows if r.series() == key), key=lambda r: r.ranks)
        x = [r.ranks for r in members]
        label = key[0] if key[1] == "-" else f"{key[0]}, {key[1]} links"
        color = f"C{i}"
        ax_time.plot(x, [r.epoch_s for r in members], "o-", color=color, label=label)
        ax_time.plot(x, [r.ideal_epoch_s for r in members], ":", color=color, alpha=0.7)
        ax_speed.plot(x, [r.speedup for r in members], "o-", color=color, label=label)
        ax_eff.plot(x, [100 * r.efficiency for r in members], "o-", color=color, label=label)
    base = ranks[0]
    ax_speed.plot(ranks, [n / base for n in ranks], "k:", label="ideal")
    # All placements share this machine's cores: more ranks than cores x threads cannot add speed.
    limit = max(1, cores // rows[0].threads)
    if ranks[-1] > limit:
        ax_speed.plot(ranks, [min(n, limit) / min(base, limit) for n in ranks], "--", color="grey",
                      label=f"{cores} cores' limit")
        ax_speed.legend(fontsize=8)
    ax_eff.axhline(100, color="k", linestyle=":", label="ideal")
    for ax, ylabel, heading in ((ax_time, "epoch time (s)", "Epoch time (dotted: ideal)"),
                                (ax_speed, "speedup", "Speedup"), (ax_eff, "efficiency (%)", "Efficiency")):
        ax.set_title(heading, fontsize=10)
        ax.set_xscale("log", base=2)
        ax.set_xticks(ranks)
        ax.set_xticklabels([str(n) for n in ranks])
        ax.set_xlabel("ranks")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
    ax_time.set_ylim(bottom=0)
    ax_speed.set_ylim(bottom=0)
    ax_eff.set_ylim(0, 110)
    ax_time.legend(fontsize=8)
    ax_eff.legend(fontsize=8, loc="lower left")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
