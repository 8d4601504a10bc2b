"""What numacoll-plot's modules share: reading the CSV files, number formats, the run's
machine for the titles, and distinct colours and markers."""
import csv
import json
import os
import re
import statistics

# colours that stay apart on white; a plot takes each at most once
PALETTE = ["tab:blue", "tab:red", "tab:orange", "tab:green", "tab:purple", "tab:brown",
           "tab:pink", "tab:gray", "tab:olive", "tab:cyan", "#000000", "#1b9e77", "#7570b3",
           "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#0b3d91", "#ff6f61", "#2f4f4f",
           "#9acd32", "#8b008b", "#00ced1", "#b8860b", "#4682b4", "#d2691e", "#708090",
           "#dc143c", "#20b2aa", "#9370db", "#556b2f", "#ff1493", "#1e90ff", "#daa520",
           "#800000", "#008080", "#4b0082", "#c71585", "#6b8e23", "#cd853f"]
MARKERS = ["o", "s", "D", "^", "v", "<", ">", "P", "X", "*", "h", "p", "d", "8", "H", "x",
           "+", "1", "2", "3"]

MPI_NAMES = {"openmpi": "Open MPI", "mpich": "MPICH", "core": "fork-based core"}
# file names of the MPI benchmark's CSVs that carry the MPI in the name and no mpi column
MPI_FILE = re.compile(r"mpi_([a-z0-9]+)_([a-z0-9]+)_np([0-9]+)\.csv$")


def load(path):
    """The rows of a latency CSV (collective,algorithm,procs,bytes,latency_us_median,
    latency_us_min,latency_us_max[,mpi][,launch|run]); a row that does not parse is left
    out."""
    rows = []
    m = MPI_FILE.search(os.path.basename(path))
    file_mpi = m.group(2) if m else None
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            try:
                rows.append({
                    "coll": r["collective"], "alg": r["algorithm"], "procs": int(r["procs"]),
                    "bytes": int(float(r["bytes"])), "med": float(r["latency_us_median"]),
                    "min": float(r["latency_us_min"]), "max": float(r["latency_us_max"]),
                    "mpi": r.get("mpi") or file_mpi or "core",
                    "launch": int(r["launch"]) if r.get("launch") else None,
                    "run": int(r["run"]) if r.get("run") else None,
                })
            except (KeyError, ValueError):
                continue
    return rows


def load_dicts(path):
    """Every row of a CSV file as a dict ([] when the file does not exist)."""
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def load_json(path):
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def paper_numbers():
    """The numbers the four papers report (paper_numbers.json beside this module)."""
    return load_json(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                  "paper_numbers.json")) or {}


def fmt(x):
    return "%.3g" % x if abs(x) < 100 else "%.0f" % x


def human(b):
    for unit, n in (("M", 1 << 20), ("K", 1 << 10)):
        if b >= n and b % n == 0:
            return "%d%s" % (b // n, unit)
    return str(b)


def trimmed_mean(xs):
    """The papers' statistic: drop the smallest and the largest value, mean of the rest
    (the plain mean below 3 values)."""
    xs = sorted(xs)
    if len(xs) >= 3:
        xs = xs[1:-1]
    return statistics.mean(xs)


def cv_percent(xs):
    """Coefficient of variation in percent (sample standard deviation / mean)."""
    if len(xs) < 2 or statistics.mean(xs) == 0:
        return 0.0
    return 100.0 * statistics.stdev(xs) / statistics.mean(xs)


class RunInfo:
    """The run's machine, MPI versions and date from run_info.csv (written by the bench
    script), for the plots' titles."""

    def __init__(self, out):
        kv = {r.get("key", ""): r.get("value", "") for r in
              load_dicts(os.path.join(out, "run_info.csv"))}
        self.cpu = kv.get("cpu", "unknown CPU")
        self.cpus = kv.get("cpus", "?")
        self.date = kv.get("date", "date unknown")
        self.host = kv.get("host", "")
        self.mpis = {k[4:]: v for k, v in kv.items() if k.startswith("mpi:")}

    def mpi(self, mpi):
        return self.mpis.get(mpi) or MPI_NAMES.get(mpi, mpi)

    def machine(self):
        return "%s, %s CPUs, %s" % (self.cpu, self.cpus, self.date)


def styles(names, fixed=None):
    """{name: (colour, marker)}: FIXED's choices first, then the palette's unused colours
    and markers in turn; no colour twice (the palette has 40)."""
    fixed = dict(fixed or {})
    used_c = {c for c, _ in fixed.values()}
    used_m = {m for _, m in fixed.values()}
    colours = [c for c in PALETTE if c not in used_c]
    markers = [m for m in MARKERS if m not in used_m] or MARKERS
    out = {}
    i = 0
    for n in names:
        if n in fixed:
            out[n] = fixed[n]
            continue
        out[n] = (colours[i % len(colours)], markers[i % len(markers)])
        i += 1
    return out


def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save(fig, out, name):
    """Write the figure as OUT/NAME (PNG), close it, return NAME."""
    fig.savefig(os.path.join(out, name), dpi=100, bbox_inches="tight")
    import matplotlib.pyplot as plt
    plt.close(fig)
    return name
