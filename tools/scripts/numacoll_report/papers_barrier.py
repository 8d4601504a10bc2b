"""Paper 1 (hierarchical barrier) and paper 2 (LogP-adaptive barrier): their tables and
figures redrawn from paper1_barrier_runs.csv, paper1_groups_fig*.json, logp_params.csv and
logp_model.csv, beside the numbers the papers report."""
import os
from collections import defaultdict

from .common import cv_percent, fmt, load, load_dicts, load_json, save, styles, trimmed_mean

# paper 2's three algorithms: the model's name -> numacoll's barrier (adaptive_logp.c's
# mapping; `numacoll-bench barrier --logp` names its choice by numacoll's name)
LOGP_ALGS = (("central", "sense-reversing-counter"), ("combining", "combining-tree"),
             ("dissemination", "dissemination"))
LOGP_KEY = {alg: k for k, alg in LOGP_ALGS}


def barrier_runs(out):
    """{(algorithm, P): [time of each run, us]} from paper1_barrier_runs.csv"""
    runs = defaultdict(list)
    p = os.path.join(out, "paper1_barrier_runs.csv")
    if os.path.exists(p):
        for r in load(p):
            runs[(r["alg"], r["procs"])].append(r["med"])
    return runs


def _groups_md(out, paper):
    md = []
    for fig in ("fig2", "fig3"):
        ours = load_json(os.path.join(out, "paper1_groups_%s.json" % fig))
        ref = paper.get("groups", {}).get(fig)
        if not ours or not ref:
            continue
        md += ["#### Fig. %s: %s on the paper's machine (hwloc synthetic `pack:2 numa:2 l3:1 "
               "core:32 pu:1`, `numacoll-topo --synthetic`)" % (fig[3:], ref["about"]), "",
               "| level | numacoll's groups | the paper's | same |", "|---|---|---|---|"]
        mine = {lv["name"]: lv["groups"] for lv in ours.get("levels", [])}
        for name, groups in ref["levels"].items():
            if name in ref.get("levels_as_ranges", []):
                groups = [list(range(a, b + 1)) for a, b in groups]
            got = mine.get(name)
            show = (lambda gs: " ".join(
                "{%d..%d}" % (g[0], g[-1]) if len(g) > 8 and g == list(range(g[0], g[-1] + 1))
                else "{%s}" % ",".join(map(str, g)) for g in gs) if gs else "(none)")
            md.append("| %s | %s | %s | %s |" % (name, show(got), show(groups),
                                                 "yes" if got == groups else "**no**"))
        md.append("")
    return md


def paper1(plt, out, numbers, info):
    """(Markdown lines, PNG names) of paper 1's section."""
    paper = numbers.get("barrier", {})
    runs = barrier_runs(out)
    md = ["## Paper 1: hierarchical barrier (Kurnosov 2022)", ""]
    files = []
    if runs:
        procs = sorted({p for _, p in runs})
        algs = sorted({a for a, _ in runs}, key=lambda a: runs.get((a, procs[-1]), [0])[0])
        names = paper.get("names", {})
        p128 = paper.get("us_128_core_numa_socket_cv", {})
        p64 = paper.get("us_64_one_socket", {})
        nrun = max(len(v) for v in runs.values())
        md += ["Every barrier algorithm of the core benchmark (fork-based, no MPI) at P = %s, "
               "measured the paper's way: %d separate runs, the smallest and the largest "
               "dropped, the mean of the rest (us per barrier), with the coefficient of "
               "variation over the runs. The machines differ: this one has %s; the paper's "
               "is %s, where the CV column is over the three mappings (core, numa, socket), "
               "which this single-node VM cannot vary. P above the CPU count is "
               "oversubscribed and shows scheduling, not the algorithm." % (
                   ", ".join(map(str, procs)), nrun, info.machine(),
                   paper.get("machine", "?")), "",
               "| algorithm | " + " | ".join("P=%d (us, CV)" % p for p in procs) +
               " | paper's name | paper, 64 procs (us) | paper, 128 procs core / numa / "
               "socket (us, CV) |", "|---" * (len(procs) + 4) + "|"]
        for a in algs:
            cells = []
            for p in procs:
                v = runs.get((a, p))
                cells.append("%s (%.0f %%)" % (fmt(trimmed_mean(v)), cv_percent(v)) if v else "-")
            pn = names.get(a, "")
            q = p128.get(pn)
            md.append("| %s | %s | %s | %s | %s |" % (
                a, " | ".join(cells), pn or "-", p64.get(pn, "-"),
                "%s / %s / %s (%s %%)" % tuple(q) if q else "-"))
        md += ["", "![paper 1 barriers](paper1_barriers.png)", ""]
        if plt is not None:
            fig, (ax, axp) = plt.subplots(1, 2, figsize=(13, 5.5), sharey=False)
            st = styles(["P=%d" % p for p in procs] + ["core", "numa", "socket"])
            w = 0.8 / len(procs)
            for i, p in enumerate(procs):
                ys = [trimmed_mean(runs[(a, p)]) if (a, p) in runs else 0 for a in algs]
                err = [cv_percent(runs[(a, p)]) * y / 100 if (a, p) in runs else 0
                       for a, y in zip(algs, ys)]
                ax.bar([x + i * w for x in range(len(algs))], ys, w, yerr=err, capsize=2,
                       color=st["P=%d" % p][0], label="P=%d" % p)
            ax.set_xticks([x + w for x in range(len(algs))])
            ax.set_xticklabels(algs, rotation=60, ha="right", fontsize=8)
            ax.set_yscale("log")
            ax.set_ylabel("us per barrier (trimmed mean of the runs; bar: CV)")
            ax.set_title("this machine (core benchmark)", fontsize=10)
            ax.legend(fontsize=8)
            pal = [a for a in algs if names.get(a) in p128]
            for i, mp in enumerate(("core", "numa", "socket")):
                axp.bar([x + i * 0.27 for x in range(len(pal))],
                        [p128[names[a]][i] for a in pal], 0.27, color=st[mp][0],
                        label="map-by " + mp)
            axp.set_xticks([x + 0.27 for x in range(len(pal))])
            axp.set_xticklabels([names[a] for a in pal], rotation=60, ha="right", fontsize=8)
            axp.set_yscale("log")
            axp.set_ylabel("us per barrier, as reported")
            axp.set_title("the paper: 128 processes, 2x Kunpeng 920 (reported)", fontsize=10)
            axp.legend(fontsize=8)
            fig.suptitle("Paper 1: barrier latency per algorithm", fontsize=11)
            files.append(save(fig, out, "paper1_barriers.png"))
    md += _groups_md(out, paper)
    return (md if len(md) > 2 else []), files


def logp(out):
    params = {r["parameter"]: float(r["value_ns"]) for r in
              load_dicts(os.path.join(out, "logp_params.csv"))}
    model = {}
    for r in load_dicts(os.path.join(out, "logp_model.csv")):
        model[int(r["procs"])] = {k: float(r[k + "_ns"]) / 1000.0 for k, _ in LOGP_ALGS}
        model[int(r["procs"])]["choice"] = LOGP_KEY.get(r["choice"], r["choice"])
    return params, model


def regret(runs, model):
    """[(P, run, chosen, best, excess in %)] for every run of every P with a model row: the
    model's choice measured against the fastest of the three in the same run."""
    out = []
    for p in sorted(model):
        per = {k: runs.get((alg, p)) for k, alg in LOGP_ALGS}
        if not all(per.values()):
            continue
        for i in range(min(len(v) for v in per.values())):
            t = {k: v[i] for k, v in per.items()}
            best = min(t, key=t.get)
            ch = model[p]["choice"]
            if ch not in t:
                continue
            out.append((p, i + 1, ch, best, 100.0 * (t[ch] / t[best] - 1.0)))
    return out


def paper2(plt, out, numbers, info):
    paper = numbers.get("logp", {})
    params, model = logp(out)
    if not params or not model:
        return [], []
    runs = barrier_runs(out)
    md = ["## Paper 2: adaptive barrier from LogP estimates (Paznikov, Zharikov)", "",
          "The LogP parameters measured here between two CPUs (`numacoll-bench barrier "
          "--logp`, ns) beside the paper's (%s). Its machine, a cluster whose messages "
          "cross a network, is far from this VM's two cores: %s." % (
              paper.get("parameters_unit", ""), paper.get("machine", "?")), "",
          "| parameter | here (ns) | paper |", "|---|---|---|"]
    for k in ("L", "OS", "OR", "G", "round_trip"):
        if k in params:
            md.append("| %s | %s | %s |" % (k, fmt(params[k]),
                                           paper.get("parameters", {}).get(k, "-")))
    md.append("")
    ps = sorted(p for p in model if any((alg, p) in runs for _, alg in LOGP_ALGS))
    md += ["Predicted (model, us) against measured (paper 1's runs, trimmed mean, us) per "
           "P; central counter = sense-reversing-counter, combining tree = combining-tree.", "",
           "| P | " + " | ".join("%s predicted / measured" % k for k, _ in LOGP_ALGS) +
           " | model's choice | measured best | adaptive-logp measured |",
           "|---" * 7 + "|"]
    for p in ps:
        cells = []
        meas = {}
        for k, alg in LOGP_ALGS:
            v = runs.get((alg, p))
            meas[k] = trimmed_mean(v) if v else None
            cells.append("%s / %s" % (fmt(model[p][k]), fmt(meas[k]) if v else "-"))
        best = min((v, k) for k, v in meas.items() if v is not None)[1]
        ad = runs.get(("adaptive-logp", p))
        md.append("| %d | %s | %s | %s | %s |" % (p, " | ".join(cells), model[p]["choice"],
                                                 best, fmt(trimmed_mean(ad)) if ad else "-"))
    md.append("")
    rg = regret(runs, model)
    if rg:
        miss = [r for r in rg if r[4] > 0]
        md += ["**Regret of the adaptive choice**: over %d runs (P = %s), the model's choice "
               "missed the measured best in %d (%.0f %%), by %s on average over the misses "
               "and %.0f %% at most." % (
                   len(rg), ",".join(map(str, ps)), len(miss), 100.0 * len(miss) / len(rg),
                   "%.0f %%" % (sum(r[4] for r in miss) / len(miss)) if miss else "0 %",
                   max(r[4] for r in rg))]
        cpus = int(info.cpus) if str(info.cpus).isdigit() else None
        bound = [r for r in rg if cpus and r[0] <= cpus]
        if bound and len(bound) < len(rg):
            bmiss = [r for r in bound if r[4] > 0]
            md[-1] += (" With P <= %d (no oversubscription, which the model does not know "
                       "of): %d of %d runs missed%s." % (
                           cpus, len(bmiss), len(bound),
                           ", by %.0f %% on average" % (sum(r[4] for r in bmiss) / len(bmiss))
                           if bmiss else ""))
        md.append("")
    chosen = defaultdict(int)
    for p in model:
        chosen[model[p]["choice"]] += 1
    md += ["The model's choices for P = %s here: %s. The paper's over P = 2..100: %s; "
           "adaptive %s %% faster on average than a fixed choice." % (
               ",".join(map(str, sorted(model))),
               ", ".join("%s %d" % kv for kv in sorted(chosen.items())),
               ", ".join("%s %s %%" % kv for kv in paper.get("choice_percent", {}).items()),
               paper.get("adaptive_gain_percent", "?")),
           "", "![paper 2](paper2_logp.png)", ""]
    files = []
    if plt is not None:
        fig, ax = plt.subplots(figsize=(9, 5))
        st = styles(["%s %s" % (k, w) for k, _ in LOGP_ALGS for w in ("predicted", "measured")])
        allp = sorted(model)
        for k, alg in LOGP_ALGS:
            c, m = st[k + " predicted"]
            ax.plot(allp, [model[p][k] for p in allp], color=c, marker=m, ls="--", ms=4,
                    label=k + " predicted")
            mp = [p for p in ps if (alg, p) in runs]
            c, m = st[k + " measured"]
            ax.plot(mp, [trimmed_mean(runs[(alg, p)]) for p in mp], color=c, marker=m, ms=6,
                    label="%s measured (%s)" % (k, alg))
        if str(info.cpus).isdigit() and int(info.cpus) < max(allp):
            ax.axvspan(int(info.cpus), max(allp), color="0.85", alpha=0.5,
                       label="oversubscribed (P > %s CPUs)" % info.cpus)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("processes P")
        ax.set_ylabel("us per barrier")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
        ax.set_title("Paper 2: LogP model vs measured barrier time (core benchmark)\n"
                     + info.machine(), fontsize=10)
        files.append(save(fig, out, "paper2_logp.png"))
    return md, files
