"""Paper 4 (PMIx key-value store locks): acquisitions per second against the readers for
every lock in each mode (kvdb.csv, kvdb_oversubscribed.csv), the writer's acquisition
overhead, and the Get profile as the paper's Table 1 (kvdb_get_profile.csv), beside the
paper's numbers."""
import os
from collections import defaultdict

from .common import fmt, load_dicts, save, styles

MODES = ("read-only", "write-only", "concurrent")
PROPOSAL, BASELINE = "n-mutex-signal", "2n-mutex"


def _kv(out):
    rows = []
    for name in ("kvdb.csv", "kvdb_oversubscribed.csv"):
        for r in load_dicts(os.path.join(out, name)):
            try:
                rows.append({"lock": r["lock"], "mode": r["mode"], "n": int(r["readers"]),
                             "ops": float(r["ops_per_sec_median"]),
                             "lo": float(r["ops_per_sec_min"]),
                             "hi": float(r["ops_per_sec_max"]),
                             "wacq": float(r["writer_acquire_us_median"])
                             if r.get("writer_acquire_us_median") else None})
            except (KeyError, ValueError):
                continue
    return rows


def throughput(plt, out, rows, paper, info):
    by = defaultdict(dict)  # (mode, lock) -> {readers: row}
    for r in rows:
        by[(r["mode"], r["lock"])][r["n"]] = r
    locks = sorted({r["lock"] for r in rows})
    gain = paper.get("gain_over_2n_mutex_percent", {})
    md = ["Lock acquisitions per second (median over repetitions) for every lock and mode; "
          "more readers than CPUs (%s here) shows scheduling, not locking. The paper: %s; it "
          "reports %s over %s." % (
              info.cpus, paper.get("machine", "?"),
              ", ".join("%s +%s %%" % (m, "-".join(map(str, sorted(set(v)))))
                        for m, v in gain.items()), BASELINE), "",
          "| mode | readers | " + " | ".join(locks) + " | %s / %s | paper |" % (
              PROPOSAL, BASELINE), "|---" * (len(locks) + 4) + "|"]
    for m in MODES:
        ns = sorted({n for (mm, _), v in by.items() if mm == m for n in v})
        for n in ns:
            cells = [fmt(by[(m, lk)][n]["ops"]) if n in by.get((m, lk), {}) else "-"
                     for lk in locks]
            p, b = by.get((m, PROPOSAL), {}).get(n), by.get((m, BASELINE), {}).get(n)
            g = gain.get(m)
            # a median of 0 acquisitions/s happens (concurrent mode on a loaded machine)
            ratio = "**%.2fx**" % (p["ops"] / b["ops"]) if p and b and b["ops"] > 0 else "-"
            md.append("| %s | %d | %s | %s | %s |" % (
                m, n, " | ".join(cells), ratio,
                "%.2f-%.2fx" % (1 + g[0] / 100.0, 1 + g[1] / 100.0) if g else "-"))
    md += ["", "![paper 4 throughput](paper4_kv_throughput.png)", ""]
    files = []
    if plt is not None:
        from matplotlib.ticker import MaxNLocator
        fig, axes = plt.subplots(1, 3, figsize=(15, 4.8))
        st = styles(locks)
        for ax, m in zip(axes, MODES):
            for lk in locks:
                v = by.get((m, lk))
                if not v:
                    continue
                ns = sorted(v)
                ax.errorbar(ns, [v[n]["ops"] for n in ns],
                            yerr=[[v[n]["ops"] - v[n]["lo"] for n in ns],
                                  [v[n]["hi"] - v[n]["ops"] for n in ns]],
                            color=st[lk][0], marker=st[lk][1], ms=5, capsize=2, label=lk)
            ax.set_yscale("log")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_xlabel("readers (above %s: oversubscribed)" % info.cpus)
            ax.set_title(m, fontsize=10)
            ax.grid(True, which="both", alpha=0.3)
        axes[0].set_ylabel("lock acquisitions per second")
        axes[-1].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
        fig.suptitle("Paper 4: key-value store locks, %s" % info.machine(), fontsize=11)
        files.append(save(fig, out, "paper4_kv_throughput.png"))
    return md, files


def writer(rows):
    w = [r for r in rows if r["wacq"] is not None and r["mode"] in ("write-only", "concurrent")]
    if not w:
        return []
    locks = sorted({r["lock"] for r in w})
    md = ["### The writer's acquisition overhead", "",
          "write-only: the mean time per write acquisition and release; concurrent: the "
          "writer's median wait for the lock while the readers read (us). The paper reports "
          "this overhead in a figure only (no numbers in its text).", "",
          "| mode | readers | " + " | ".join(locks) + " |", "|---" * (len(locks) + 2) + "|"]
    t = {(r["mode"], r["n"], r["lock"]): r["wacq"] for r in w}
    for m, n in sorted({(r["mode"], r["n"]) for r in w}):
        md.append("| %s | %d | %s |" % (m, n, " | ".join(
            fmt(t[(m, n, lk)]) if (m, n, lk) in t else "-" for lk in locks)))
    return md + [""]


def get_profile(plt, out, paper, info):
    rows = load_dicts(os.path.join(out, "kvdb_get_profile.csv"))
    tab = paper.get("get_profile_cycles", {})
    cols = tab.get("columns", ["P7-P1", "P2-P1", "P3-P2", "P4-P3", "P5-P4", "P6-P5",
                               "P7-P6"])
    if not rows:
        return [], []
    unit = rows[0].get("unit", "cycles")
    md = ["### Get profile (the paper's Table 1)", "",
          "Each Get stamped at P1 entry, P2 before the lock, P3 lock taken, P4 key found, P5 "
          "value copied, P6 lock released, P7 exit (100 keys of 50 characters); %s here, "
          "mean and median over every sample, the stamps' cost subtracted. The paper (%s) "
          "profiled OpenPMIx's Get with N clients; numacoll's Get is a different, smaller "
          "function, so compare the shares more than the totals." % (
              unit, paper.get("machine", "?")), "",
          "| source | lock | N | stat | " + " | ".join(cols) + " |",
          "|---" * (len(cols) + 4) + "|"]
    for r in rows:
        md.append("| here | %s | %s | %s | %s |" % (r["lock"], r["readers"], r["stat"],
                                                    " | ".join(r.get(c, "-") for c in cols)))
    for n in sorted((k for k in tab if k.isdigit()), key=int):
        for stat in ("mean", "median"):
            md.append("| paper | OpenPMIx | %s | %s | %s |" % (
                n, stat, " | ".join("%g" % v for v in tab[n][stat])))
    md += ["", "![Get profile](paper4_kv_get_profile.png)", ""]
    files = []
    if plt is not None:
        med = [r for r in rows if r["stat"] == "median"]
        nmax = max(int(r["readers"]) for r in med) if med else 0
        bars = [("%s, N=%d (here)" % (r["lock"], nmax), [float(r[c]) for c in cols[1:]])
                for r in med if int(r["readers"]) == nmax]
        if "2" in tab:
            bars.append(("OpenPMIx, N=2 (paper)", tab["2"]["median"][1:]))
        fig, ax = plt.subplots(figsize=(10, 0.45 * len(bars) + 2.2))
        st = styles(cols[1:])
        for i, (lab, segs) in enumerate(bars):
            left = 0.0
            for c, v in zip(cols[1:], segs):
                v = max(v, 0.0)
                ax.barh(i, v, left=left, color=st[c][0], label=c if i == 0 else None)
                left += v
        ax.set_yticks(range(len(bars)))
        ax.set_yticklabels([b[0] for b in bars], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("%s per Get, median of each segment (negative medians drawn as 0)" % unit)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
        ax.set_title("Paper 4 Table 1: where a Get spends its time\n" + info.machine(),
                     fontsize=10)
        files.append(save(fig, out, "paper4_kv_get_profile.png"))
    return md, files


def paper4(plt, out, numbers, info):
    paper = numbers.get("kv", {})
    rows = _kv(out)
    md, files = [], []
    if rows:
        t = throughput(plt, out, rows, paper, info)
        md += t[0] + writer(rows)
        files += t[1]
    g = get_profile(plt, out, paper, info)
    md += g[0]
    files += g[1]
    if not md:
        return [], []
    return ["## Paper 4: key-value store lock schemes (PMIx)", ""] + md, files
