"""Paper 3 (NUMA-aware shared-memory broadcast): its Fig. 7 (time vs the number of
buffers s), Fig. 8/9 (time vs the fragment size f beside the model), Fig. 10 (time vs size
per notification tree), the rotating-root comparison (Fig. 11/13) and the claim "20-60 %
less time than Open MPI coll/sm" as a ratio, beside the paper's numbers."""
import os
from collections import defaultdict

from .common import fmt, human, load, save, styles

TREES = ("kary", "knomial", "flat", "chain", "topo")


def by_param(rows, prefix):
    """{N: row} of the rows whose algorithm is PREFIX=N (queue:s=16 -> 16)."""
    out = {}
    for r in rows:
        tail = r["alg"][len(prefix):]
        if r["alg"].startswith(prefix) and tail.isdigit():
            out[int(tail)] = r
    return out


def _rows(out, name):
    p = os.path.join(out, name)
    return load(p) if os.path.exists(p) else []


def _plot(plt, out, name, series, xlabel, ylabel, title, logx, logy=False):
    fig, ax = plt.subplots(figsize=(8, 5))
    st = styles([s[2] for s in series])
    for xs, ys, label in series:
        c, m = st[label]
        ax.plot(xs, ys, color=c, marker=m, ms=4, label=label)
    if logx:
        ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return save(fig, out, name)


def fig7(plt, out, paper):
    slots = _rows(out, "model_bcast_slots.csv")
    if not slots:
        return [], []
    q, nm = by_param(slots, "queue:s="), by_param(slots, "norm:s=")
    best = min(q, key=lambda k: q[k]["med"]) if q else None
    md = ["### Fig. 7: time vs the number of buffers s (m = %s, f = 8 KiB)" % human(
        slots[0]["bytes"]), "",
        "Fastest here: s = %s; the paper's best: s = %s (its machine: %s)." % (
            best, "-".join(map(str, paper.get("best_slots", []))), paper.get("machine", "?")),
        "", "| s | time (us) | min..max | normalised to s = 1 |", "|---|---|---|---|"]
    for k in sorted(q):
        md.append("| %d%s | %s | %s..%s | %s |" % (
            k, " (fastest)" if k == best else "", fmt(q[k]["med"]), fmt(q[k]["min"]),
            fmt(q[k]["max"]), "%.3f" % nm[k]["med"] if k in nm else "-"))
    md += ["", "![Fig. 7](paper_fig7_bcast_slots.png)", ""]
    files = []
    if plt is not None and nm:
        files.append(_plot(plt, out, "paper_fig7_bcast_slots.png",
                           [(sorted(nm), [nm[k]["med"] for k in sorted(nm)], "measured")],
                           "buffers in the queue s (f = 8 KiB, q = 1)",
                           "time normalised to s = 1",
                           "Broadcast time vs s (paper Fig. 7), core, P = 2", True))
    return md, files


def fig8(plt, out, paper):
    frag = _rows(out, "model_bcast_fragment.csv")
    if not frag:
        return [], []
    meas, model = by_param(frag, "queue:f="), by_param(frag, "model:f=")
    mc = [r for r in frag if r["alg"] == "limit:memcpy"]
    fs = sorted(meas)
    bm = min(fs, key=lambda k: meas[k]["med"]) if fs else None
    bmod = min(model, key=lambda k: model[k]["med"]) if model else None
    md = ["### Fig. 8/9: time vs the fragment size f (m = %s, s = 16)" % human(
        frag[0]["bytes"]), "",
        "The model: t(m) = ceil(m/b)(t_WO + t_A + f t) + ceil(m/f) t_W + m t with b = s f; "
        "its t is this run's memcpy time per byte, t_W the team's measured notification "
        "wait. Fastest measured f: %s; the model's: %s; the paper's best at b = 4 MB: %s.%s" % (
            human(bm) if bm else "-", human(bmod) if bmod else "-",
            "-".join(human(x) for x in paper.get("best_fragment_bytes", [])),
            " memcpy of the message: %s us." % fmt(mc[0]["med"]) if mc else ""), "",
        "| f | measured (us) | min..max | model (us) | measured / model |",
        "|---|---|---|---|---|"]
    for k in fs:
        mo = model.get(k)
        md.append("| %s | %s | %s..%s | %s | %s |" % (
            human(k), fmt(meas[k]["med"]), fmt(meas[k]["min"]), fmt(meas[k]["max"]),
            fmt(mo["med"]) if mo else "-",
            "%.2f" % (meas[k]["med"] / mo["med"]) if mo and mo["med"] > 0 else "-"))
    md += ["", "![Fig. 8/9](paper_fig8_bcast_fragment.png)", ""]
    files = []
    if plt is not None and fs:
        series = [(fs, [meas[k]["med"] for k in fs], "measured"),
                  (sorted(model), [model[k]["med"] for k in sorted(model)], "model")]
        if mc:
            series.append((fs, [mc[0]["med"]] * len(fs), "memcpy of m (one process)"))
        files.append(_plot(plt, out, "paper_fig8_bcast_fragment.png", series,
                           "fragment size f (bytes, s = 16, q = 1)", "time (us), median",
                           "Broadcast time vs f with the model (paper Fig. 8/9), core, P = 2",
                           False))
    return md, files


def fig10(plt, out):
    core = [r for p in sorted(os.listdir(out)) if p.startswith("core_") and p.endswith(".csv")
            for r in load(os.path.join(out, p)) if r["coll"] == "bcast"]
    trees = defaultdict(dict)
    for r in core:
        # the trees are tree:<name> (bare <name> in CSVs of numacoll 0.1.0)
        alg = r["alg"][5:] if r["alg"].startswith("tree:") else r["alg"]
        if r["bytes"] > 0 and alg in ("default", "limit:memcpy") + TREES:
            trees["tree:" + alg if alg in TREES else alg][r["bytes"]] = r["med"]
    if not trees:
        return [], []
    procs = sorted({r["procs"] for r in core})
    md = ["### Fig. 10: time vs size per notification tree", "",
          "The paper found the binary (k-ary) and chain trees fastest on 8-16 processes; at "
          "P = %s %s" % (",".join(map(str, procs)), "every tree is one edge, so the curves "
                         "differ only in their code path." if procs == [2] else "."), "",
          "![Fig. 10](paper_fig10_bcast_trees.png)", ""]
    files = []
    if plt is not None:
        files.append(_plot(plt, out, "paper_fig10_bcast_trees.png",
                           [(sorted(v), [v[b] for b in sorted(v)], a)
                            for a, v in sorted(trees.items())],
                           "message size (bytes)", "latency (us), median",
                           "Broadcast time vs size per tree (paper Fig. 10), core, P = %s" %
                           ",".join(map(str, procs)), True, True))
    return md, files


def fig11(plt, out, paper, info):
    """Fixed root (mpi_bcast.csv) against the rotating root (rootshift_mpi_bcast.csv):
    numacoll's default normalised to coll/sm (the paper's Fig. 13, root_shift on, and its
    claim) and each variant's rotating / fixed ratio (Fig. 11 normalises to a setting the
    same way)."""
    fixed = defaultdict(dict)
    for p in sorted(os.listdir(out)):
        if p.startswith("mpi_bcast") and p.endswith(".csv"):
            for r in load(os.path.join(out, p)):
                fixed[(r["mpi"], r["procs"], r["bytes"])][r["alg"]] = r["med"]
    shift = defaultdict(dict)
    for r in _rows(out, "rootshift_mpi_bcast.csv"):
        shift[(r["mpi"], r["procs"], r["bytes"])][r["alg"]] = r["med"]
    if not shift:
        return [], []
    lo, hi = paper.get("less_than_coll_sm_percent", [20, 60])
    band = (1 - hi / 100.0, 1 - lo / 100.0)
    md = ["### Fig. 11 and 13: rotating root, and \"%d-%d %% less than coll/sm\"" % (lo, hi),
          "", "The paper (%s) runs IMB with `-root_shift on`; its Fig. 11 shows readahead "
          "off / on on 2 NUMA nodes (this VM has one node, so the readahead effect cannot "
          "appear here) and its Fig. 13 the time normalised to coll/sm, claimed %d-%d %% "
          "less, i.e. a ratio of %.1f-%.1f. Here: numacoll's default / the native of each "
          "MPI (Open MPI: coll/sm, `native-sm`), with a fixed root and a rotating root." % (
              paper.get("fig11", ""), lo, hi, band[0], band[1]), "",
          "| MPI | np | bytes | fixed root: default / coll-sm (or native) | rotating root | "
          "rotating / fixed: default | native | native-sm | in the claim's range |",
          "|---|---|---|---|---|---|---|---|---|"]
    curves = defaultdict(lambda: defaultdict(list))
    within = [0, 0, 0]  # in the claim's range, below it (faster), compared
    for key in sorted(shift):
        mpi, np_, b = key
        s, f = shift[key], fixed.get(key, {})
        ref = "native-sm" if "native-sm" in s else "native"
        rs = s["default"] / s[ref] if "default" in s and s.get(ref) else None
        rf = f["default"] / f[ref] if "default" in f and f.get(ref) else None
        rel = ["%.2f" % (s[a] / f[a]) if a in s and f.get(a) else "-"
               for a in ("default", "native", "native-sm")]
        ok = "-"
        if rs is not None and ref == "native-sm":
            inside = band[0] <= rs <= band[1]
            within[0] += inside
            within[1] += rs < band[0]
            within[2] += 1
            ok = "yes" if inside else ("better" if rs < band[0] else "no")
        md.append("| %s | %d | %s | %s | %s | %s | %s |" % (
            info.mpi(mpi), np_, human(b), "%.2f" % rf if rf else "-",
            "**%.2f**" % rs if rs else "-", " | ".join(rel), ok))
        if rs is not None:
            curves[(mpi, np_)]["rotating root: default / " + ref].append((b, rs))
        if rf is not None:
            curves[(mpi, np_)]["fixed root: default / " + ref].append((b, rf))
    md.append("")
    if within[2]:
        md += ["Claim check (Open MPI, rotating root, default / coll/sm): of %d sizes, %d in "
               "%.1f-%.1f, %d below it (faster than the claim), %d above it." % (
                   within[2], within[0], band[0], band[1], within[1],
                   within[2] - within[0] - within[1]), ""]
    md += ["![Fig. 11/13](paper_fig11_bcast_rootshift.png)", ""]
    files = []
    if plt is not None and curves:
        fig, ax = plt.subplots(figsize=(9, 5))
        names = ["%s np=%d, %s" % (info.mpi(m), n, lab) for (m, n), c in sorted(curves.items())
                 for lab in sorted(c)]
        st = styles(names)
        for (m, n), c in sorted(curves.items()):
            for lab in sorted(c):
                nm = "%s np=%d, %s" % (info.mpi(m), n, lab)
                pts = sorted(c[lab])
                ax.plot([p[0] for p in pts if p[0] > 0], [p[1] for p in pts if p[0] > 0],
                        color=st[nm][0], marker=st[nm][1], ms=4,
                        ls="-" if lab.startswith("rotating") else ":", label=nm)
        ax.axhspan(band[0], band[1], color="tab:green", alpha=0.12,
                   label="the paper's claim vs coll/sm (%.1f-%.1f)" % band)
        ax.axhline(1.0, color="black", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("time normalised to the native (< 1: numacoll faster)")
        ax.set_title("Paper 3 Fig. 11/13: numacoll default / native, fixed and rotating root\n"
                     + info.machine(), fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
        files.append(save(fig, out, "paper_fig11_bcast_rootshift.png"))
    return md, files


def paper3(plt, out, numbers, info):
    paper = numbers.get("bcast", {})
    md, files = [], []
    for part in (fig7(plt, out, paper), fig8(plt, out, paper), fig10(plt, out),
                 fig11(plt, out, paper, info)):
        md += part[0]
        files += part[1]
    if not md:
        return [], []
    head = ["## Paper 3: NUMA-aware shared-memory broadcast (Kurnosov, Tokmasheva)", "",
            "Fig. 7-10 from the core benchmark (fork-based, no MPI, P = 2, q = 1, a new buffer "
            "content every call); the root-shift comparison from the MPI benchmark. The "
            "paper's machine: %s." % paper.get("machine", "?"), ""]
    return head + md, files
