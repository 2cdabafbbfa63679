"""A scaling experiment's results: speedup and efficiency from the measured rows, the
CSV, the printed table and the plots.

A series is one placement with one link setting (local; netns at 10gbit; ...). Its
smallest rank count is its baseline: speedup = throughput / the baseline's throughput,
efficiency = speedup / (ranks / baseline ranks). The ideal epoch time is the time the
epoch's images take at the baseline's throughput, divided by the rank ratio.
"""
import csv
import statistics
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
    allreduce_ms_per_step: float  # time allreduces were in flight, per step (rank 0's timeline)
    comm_share: float        # that time / training time
    runs: int                # how many runs the median was taken over
    load: float              # the machine's 1-minute load average after the median run
    speedup: float = 0.0
    efficiency: float = 0.0
    ideal_epoch_s: float = 0.0
    # kolo-sim's rows only: the p10-p90 of its runs' efficiency (0: a measured row, none).
    efficiency_p10: float = 0.0
    efficiency_p90: float = 0.0

    def series(self):
        return (self.placement, self.links)


def baseline_throughput(rows, base):
    """The baseline's images/s. A baseline on one host sends nothing over the links, so
    every series of its placement measured the same configuration: their median is used,
    which takes some of the machine's noise out of all the series' speedups."""
    if base.nodes > 1:
        return base.images_per_s
    same = [r.images_per_s for r in rows if (r.placement, r.ranks, r.nodes) == (base.placement, base.ranks, 1)]
    return statistics.median(same)


def add_speedup(rows):
    for key in dict.fromkeys(r.series() for r in rows):
        members = [r for r in rows if r.series() == key]
        base = min(members, key=lambda r: r.ranks)
        throughput = baseline_throughput(rows, base)
        for r in members:
            r.speedup = r.images_per_s / throughput
            r.efficiency = r.speedup / (r.ranks / base.ranks)
            r.ideal_epoch_s = r.images / throughput * (base.ranks / r.ranks)


def read_csv(path):
    """Rows of an earlier scaling.csv (speedups are computed again)."""
    types = {f.name: f.type for f in fields(Row)}
    with open(path) as f:
        return [Row(**{k: types[k](v) if types[k] in (int, float) else v for k, v in r.items() if k in types})
                for r in csv.DictReader(f)]


def write_csv(rows, path):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=[f.name for f in fields(Row)])
        writer.writeheader()
        for r in rows:
            writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in asdict(r).items()})


def table(rows):
    """Markdown, one line per run."""
    head = ("| placement | links | ranks | nodes | model | batch/rank | epoch time | images/s | speedup | "
            "efficiency | fused bytes/step | allreduce/step | comm share |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        lines.append(f"| {r.placement} | {r.links} | {r.ranks} | {r.nodes} | {r.model} | {r.batch} | "
                     f"{r.epoch_s:.2f} s | {r.images_per_s:,.0f} | {r.speedup:.2f} | {r.efficiency:.0%} | "
                     f"{r.fused_bytes_per_step:,.0f} | {r.allreduce_ms_per_step:.2f} ms | {r.comm_share:.1%} |")
    return "\n".join(lines)


def plot(rows, path, title, cores):
    """Four panels against ranks, one line per series: epoch time (dotted: ideal), speedup,
    efficiency, and the allreduce time per step (where slower links show first).
    `cores`: this machine's, which bound the speedup when every rank runs on it."""
    import matplotlib
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    fig, ((ax_time, ax_speed), (ax_eff, ax_comm)) = plt.subplots(2, 2, figsize=(11, 7.5))
    ranks = sorted({r.ranks for r in rows})
    for i, key in enumerate(dict.fromkeys(r.series() for r in rows)):
        members = sorted((r for r in rows if r.series() == key), key=lambda r: r.ranks)
        x = [r.ranks for r in members]
        style = dict(color=f"C{i}", label=key[0] if key[1] == "-" else f"{key[0]}, {key[1]} links")
        ax_time.plot(x, [r.epoch_s for r in members], "o-", **style)
        ax_time.plot(x, [r.ideal_epoch_s for r in members], ":", color=style["color"], alpha=0.7)
        ax_speed.plot(x, [r.speedup for r in members], "o-", **style)
        ax_eff.plot(x, [100 * r.efficiency for r in members], "o-", **style)
        if all(r.efficiency_p90 > 0 for r in members):  # kolo-sim's band
            ax_eff.fill_between(x, [100 * r.efficiency_p10 for r in members], [100 * r.efficiency_p90 for r in members],
                                color=style["color"], alpha=0.2, linewidth=0)
            ax_speed.fill_between(x, [r.efficiency_p10 * r.ranks / members[0].ranks for r in members],
                                  [r.efficiency_p90 * r.ranks / members[0].ranks for r in members],
                                  color=style["color"], alpha=0.2, linewidth=0)
        ax_comm.plot(x, [max(r.allreduce_ms_per_step, 1e-3) for r in members], "o-", **style)
    base = ranks[0]
    ax_speed.plot(ranks, [n / base for n in ranks], "k:", label="ideal")
    # All placements share this machine's cores: more ranks than cores x threads cannot add speed.
    limit = max(1, cores // rows[0].threads)
    simulated = all(r.placement.startswith("sim:") for r in rows)  # kolo-sim's rows: another cluster's cores
    if ranks[-1] > limit and not simulated:
        ax_speed.plot(ranks, [min(n, limit) / min(base, limit) for n in ranks], "--", color="grey",
                      label=f"{cores} cores' limit")
    ax_eff.axhline(100, color="k", linestyle=":", label="ideal")
    panels = ((ax_time, "epoch time (s)", "Epoch time (dotted: ideal)"), (ax_speed, "speedup", "Speedup"),
              (ax_eff, "efficiency (%)", "Efficiency"),
              (ax_comm, "ms per step (log scale)", "Allreduce time per step"))
    for ax, ylabel, heading in panels:
        ax.set_title(heading, fontsize=10)
        ax.set_xscale("log", base=2)
        ax.set_xticks(ranks)
        ax.set_xticklabels([str(n) for n in ranks])
        ax.set_xlabel("ranks")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    ax_time.set_ylim(bottom=0)
    ax_speed.set_ylim(bottom=0)
    ax_eff.set_ylim(0, max(110, 10 + max(100 * r.efficiency for r in rows)))
    ax_comm.set_yscale("log")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=72)
    plt.close(fig)
    # A few flat colours: a 64-colour palette keeps the file a third of the size, same look.
    from PIL import Image
    with Image.open(path) as image:
        image.convert("RGB").quantize(colors=64).save(path, optimize=True)
