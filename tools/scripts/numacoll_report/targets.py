"""The targets of the collectives beyond the broadcast over separate launches
(launches_mpi_coll.csv, make bench step 2b): every size <= 1.0x the best native."""
import statistics
from collections import defaultdict

from .common import human, load

GOAL = 1.0


def ratios(rows):
    """(collective, mpi, np) -> {bytes: [default / best native of the same launch]}"""
    runs = defaultdict(dict)  # (coll, mpi, np, bytes, launch) -> {alg: med}
    for r in rows:
        if r["launch"] is not None:
            runs[(r["coll"], r["mpi"], r["procs"], r["bytes"], r["launch"])][r["alg"]] = r["med"]
    per = defaultdict(lambda: defaultdict(list))
    for (coll, mpi, np_, b, _), a in sorted(runs.items()):
        nat = [a[k] for k in ("native", "native-sm") if k in a and a[k] > 0]
        if "default" in a and nat:
            per[(coll, mpi, np_)][b].append(a["default"] / min(nat))
    return per


def coll_launch_targets(path):
    """Markdown: per collective, MPI and np, how many sizes met the target in every launch
    and in the median over the launches, and the sizes that missed in the median."""
    per = ratios(load(path))
    if not per:
        return []
    n = max(len(v) for sizes in per.values() for v in sizes.values())
    md = ["### Targets of the other collectives over %d separate launches "
          "(launches_mpi_coll.csv)" % n, "",
          "Each collective ran in its own mpirun per launch (native, Open MPI's coll/sm and "
          "numacoll's default interleaved), so the launches sample the VM's regimes. Ratio: "
          "numacoll's default / the best native of the same launch; target <= %.1fx at "
          "every size. \"every launch\": sizes where each launch met it; \"median\": sizes "
          "whose median ratio met it; each miss in the median as size, median ratio / the "
          "worst launch's ratio." % GOAL, "",
          "| collective | MPI | np | sizes | met in every launch | met in the median "
          "| misses in the median |", "|---|---|---|---|---|---|---|"]
    for (coll, mpi, np_), sizes in sorted(per.items()):
        every = sum(1 for v in sizes.values() if max(v) <= GOAL)
        med = {b: statistics.median(v) for b, v in sizes.items()}
        miss = [(b, med[b], max(sizes[b])) for b in sorted(sizes) if med[b] > GOAL]
        md.append("| %s | %s | %d | %s - %s | %d of %d | %d of %d | %s |" % (
            coll, mpi, np_, human(min(sizes)), human(max(sizes)), every, len(sizes),
            len(sizes) - len(miss), len(sizes),
            ", ".join("%s %.2fx / %.2fx" % (human(b), m, w) for b, m, w in miss) or "none"))
    md.append("")
    return md
