"""The headline: for every collective, MPI and process count of the MPI benchmark's CSVs
(mpi_*.csv), numacoll's default against the native MPI and the physical references
(limit:*), as one table of ratios and one plot each; every other variant goes to a
separate "variants" plot. Generic over the collective's name."""
from collections import defaultdict

from .common import fmt, human, save, styles

NATIVES = ("native", "native-sm")
# references that are not lower bounds (a plain implementation): left out of the floor
# references that are not floors: limit:pipe (a kernel pipe's copy), limit:cma (the single
# copy by process_vm_readv, a mechanism's cost the floor limit:xcore does not pay)
NOT_A_FLOOR = ("limit:pipe", "limit:cma")
HEADLINE_STYLE = {"default": ("tab:blue", "o"), "native": ("tab:red", "s"),
                  "native-sm": ("tab:orange", "D")}
# size ranges of the table: (label, smallest, largest) in bytes
RANGES = (("small", 1, 1024), ("medium", 1025, (1 << 20) - 1), ("large", 1 << 20, 1 << 62))


def is_headline(alg):
    return alg == "default" or alg in NATIVES or alg.startswith("limit:")


def groups(rows):
    """{(collective, mpi, np): {bytes: {algorithm: row}}}"""
    g = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        g[(r["coll"], r["mpi"], r["procs"])][r["bytes"]][r["alg"]] = r
    return g


def best_native(s):
    """(latency, name) of the faster native row of one size, or None."""
    nat = [(s[a]["med"], a) for a in NATIVES if a in s]
    return min(nat) if nat else None


def floor(s):
    """(latency, name) of the floor of one size, or None. Each limit:* row bounds one part
    of the cost from below (limit:signal the notification, limit:memcpy one local copy,
    limit:xcore one copy across cores, ...), so the tightest floor is the largest of them."""
    refs = [(r["med"], a) for a, r in s.items()
            if a.startswith("limit:") and a not in NOT_A_FLOOR]
    return max(refs) if refs else None


def ratios(sizes):
    """[(bytes, default / best native, native name, default / floor, floor name)]"""
    out = []
    for b in sorted(sizes):
        s = sizes[b]
        if "default" not in s:
            continue
        d = s["default"]["med"]
        bn, fl = best_native(s), floor(s)
        out.append((b, d / bn[0] if bn and bn[0] > 0 else None, bn[1] if bn else None,
                    d / fl[0] if fl and fl[0] > 0 else None, fl[1] if fl else None))
    return out


def size_range(bs):
    if bs == [0]:
        return "-"
    return human(bs[0]) + (" - " + human(bs[-1]) if len(bs) > 1 else "") + " B"


def extremes(rs, i):
    """'worst (at size) / best (at size)' of column I of ratios()."""
    v = [(r[i], r[0], r[i + 1]) for r in rs if r[i] is not None]
    if not v:
        return "-", "-"
    worst, best = max(v), min(v)
    where = (lambda x: "" if x[1] == 0 else " (%s)" % human(x[1]))
    return ("**%s**%s" % (ratio(worst[0]), where(worst)), ratio(best[0]) + where(best))


def ratio(x):
    return ("%.2fx" if x >= 0.1 else "%.2gx") % x


def table(g, info):
    """The headline table: one row per collective, MPI, np and size range."""
    md = ["| collective | MPI | np | sizes | default / best native: worst | best "
          "| default / floor: worst | best | floor |",
          "|---|---|---|---|---|---|---|---|---|"]
    for (coll, mpi, np_), sizes in sorted(g.items()):
        rs = ratios(sizes)
        parts = [[r for r in rs if lo <= r[0] <= hi] for _, lo, hi in RANGES]
        if all(r[0] == 0 for r in rs):
            parts = [rs]
        for part in parts:
            if not part:
                continue
            nw, nb = extremes(part, 1)
            fw, fb = extremes(part, 3)
            fl = sorted({r[4] for r in part if r[4]})
            md.append("| %s | %s | %d | %s | %s | %s | %s | %s | %s |" % (
                coll, info.mpi(mpi), np_, size_range([r[0] for r in part]), nw, nb, fw, fb,
                ", ".join(fl) or "none measured"))
    return md


def _title(coll, mpi, np_, info, what):
    return "MPI_%s, %s, np=%d: %s\n%s" % (coll.capitalize(), info.mpi(mpi), np_, what,
                                          info.machine())


def _lines(ax, sizes, names, st, bold="default"):
    for a in names:
        xs = [b for b in sorted(sizes) if a in sizes[b] and b > 0]
        if not xs:
            continue
        c, m = st[a]
        ax.plot(xs, [sizes[b][a]["med"] for b in xs], color=c, marker=m, ms=5 if a == bold else 4,
                lw=2.2 if a == bold else 1.2, ls="-" if not a.startswith("limit:") else "--",
                label=a)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylabel("latency (us), median, log scale")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)


def _bars(ax, row, names, st):
    """One size (barrier): horizontal bars on a log axis, each with its colour and marker."""
    names = sorted(names, key=lambda a: row[a]["med"])
    for i, a in enumerate(names):
        c, m = st[a]
        r = row[a]
        ax.barh(i, r["med"], color=c, alpha=0.55,
                xerr=[[r["med"] - r["min"]], [r["max"] - r["med"]]], capsize=2)
        ax.plot([r["med"]], [i], color=c, marker=m, ls="", ms=6, label=a)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("latency (us), median, bars min..max; log scale")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)


def plot_headline(plt, out, key, sizes, info):
    coll, mpi, np_ = key
    names = [a for a in ("default", "native", "native-sm") if any(a in s for s in sizes.values())]
    names += sorted({a for s in sizes.values() for a in s if a.startswith("limit:")})
    st = styles(names, HEADLINE_STYLE)
    rs = ratios(sizes)
    single = sorted(sizes) == [0] or len(sizes) == 1
    fig, (ax, axr) = plt.subplots(2, 1, figsize=(9, 6.5), sharex=not single,
                                  gridspec_kw={"height_ratios": [3, 1.4]})
    if single:
        b = next(iter(sizes))
        _bars(ax, sizes[b], names, st)
        vals = [(r[1], "best native (%s)" % r[2]) for r in rs if r[1] is not None]
        vals += [(r[3], "floor (%s)" % r[4]) for r in rs if r[3] is not None]
        for i, (v, lab) in enumerate(vals):
            axr.barh(i, v, color="tab:blue" if i == 0 else "tab:green", alpha=0.7)
            axr.text(v, i, " " + ratio(v), va="center", fontsize=8)
        axr.set_yticks(range(len(vals)))
        axr.set_yticklabels(["default / " + lab for _, lab in vals], fontsize=8)
        axr.invert_yaxis()
        axr.axvline(1.0, color="black", lw=1)
        axr.set_xlabel("ratio (< 1: numacoll faster)")
    else:
        _lines(ax, sizes, names, st)
        xs = [r[0] for r in rs if r[1] is not None and r[0] > 0]
        axr.plot(xs, [r[1] for r in rs if r[1] is not None and r[0] > 0], color="tab:blue",
                 marker="o", ms=4, label="default / best native")
        axr.axhline(1.0, color="black", lw=1)
        axr.set_xscale("log", base=2)
        from matplotlib.ticker import FuncFormatter
        # log ratio axis: 2x slower and 2x faster are equally far from the line at 1.0
        axr.set_yscale("log", base=2)
        axr.yaxis.set_major_formatter(FuncFormatter(lambda v, _: "%gx" % v))
        axr.set_xlabel("message size (bytes)")
        axr.set_ylabel("ratio, log scale\n(< 1: numacoll faster)")
        axr.grid(True, which="both", alpha=0.3)
        axr.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    ax.set_title(_title(coll, mpi, np_, info, "numacoll default vs native and floor"),
                 fontsize=10)
    return save(fig, out, "mpi_%s_%s_np%d.png" % (coll, mpi, np_))


def plot_variants(plt, out, key, sizes, info):
    """Every other variant, with the default and the best native for reference; None when
    the group has no other variant."""
    coll, mpi, np_ = key
    other = sorted({a for s in sizes.values() for a in s if not is_headline(a)})
    if not other:
        return None
    names = ["default"] + [a for a in NATIVES if any(a in s for s in sizes.values())] + other
    st = styles(names, HEADLINE_STYLE)
    fig, ax = plt.subplots(figsize=(9, 5.5 if len(sizes) > 1 else 0.3 * len(names) + 2))
    if len(sizes) == 1:
        _bars(ax, next(iter(sizes.values())), [a for a in names if a in next(
            iter(sizes.values()))], st)
    else:
        _lines(ax, sizes, names, st)
        ax.set_xlabel("message size (bytes)")
    ax.set_title(_title(coll, mpi, np_, info, "every numacoll variant"), fontsize=10)
    return save(fig, out, "mpi_%s_%s_np%d_variants.png" % (coll, mpi, np_))


def report(plt, out, mpi_rows, info):
    """(the table's Markdown lines, the figures' Markdown lines, PNG names)"""
    g = groups(mpi_rows)
    if not g:
        return [], [], []
    md = table(g, info)
    figs, files = [], []
    for key, sizes in sorted(g.items()):
        if plt is None:
            continue
        h = plot_headline(plt, out, key, sizes, info)
        v = plot_variants(plt, out, key, sizes, info)
        files += [h] + ([v] if v else [])
        figs.append("- %s, %s, np=%d: [headline](%s)%s" % (
            key[0], info.mpi(key[1]), key[2], h, ", [variants](%s)" % v if v else ""))
    return md, figs, files
