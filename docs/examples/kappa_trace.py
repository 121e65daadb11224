"""κ as evidence arrives: prints a worked example and writes docs/img/kappa_trace.png.

    .venv/bin/python docs/examples/kappa_trace.py [--out docs/img/kappa_trace.png]
"""

from __future__ import annotations

import argparse

from beliefgate import Kappa, KappaParams
from beliefgate.figures import pyplot, save_figure

EVIDENCE = [  # (kind, args): three branches, judgments then rollouts of growing depth
    ("judge", ("a", "b", 1)),
    ("judge", ("a", "c", 1)),
    ("judge", ("b", "c", 0)),
    ("rollout", ("a", 1, 0.6)),
    ("rollout", ("c", 1, 0.5)),
    ("rollout", ("b", 1, -0.2)),
    ("rollout", ("a", 2, 0.9)),
    ("rollout", ("c", 2, 0.3)),
    ("judge", ("a", "c", 1)),
    ("rollout", ("a", 3, 1.1)),
]


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs/img/kappa_trace.png")
    args = parser.parse_args(argv)
    params = KappaParams(mu0=0.0, sigma0=1.0, tau=0.5, sigma_r=1.0, theta=0.6, nucleus_p=0.9)
    k = Kappa(["a", "b", "c"], params)
    rows = [{"step": 0, "evidence": "prior", **k.argmax_probs, "kappa": k.kappa, "best": k.best,
             "nucleus": list(k.nucleus), "commit": k.commit}]
    for i, (kind, a) in enumerate(EVIDENCE, 1):
        getattr(k, kind)(*a) if kind == "judge" else k.rollout(a[0], depth=a[1], score=a[2])
        label = f"{a[0]}>{a[1]}" if kind == "judge" and a[2] == 1 else (
            f"{a[1]}>{a[0]}" if kind == "judge" else f"r({a[0]},d={a[1]})={a[2]:+.1f}")
        rows.append({"step": i, "evidence": label, **k.argmax_probs, "kappa": k.kappa, "best": k.best,
                     "nucleus": list(k.nucleus), "commit": k.commit})
    print(f"{'step':>4}  {'evidence':<16} {'P(a)':>6} {'P(b)':>6} {'P(c)':>6} {'kappa':>6}  best nucleus  commit")
    for r in rows:
        print(f"{r['step']:>4}  {r['evidence']:<16} {r['a']:6.3f} {r['b']:6.3f} {r['c']:6.3f} {r['kappa']:6.3f}"
              f"  {r['best']:<4} {','.join(r['nucleus']):<8} {r['commit']}")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 3.6))
    steps = [r["step"] for r in rows]
    bottom = [0.0] * len(rows)
    for name, colour in zip("abc", ("#4c72b0", "#dd8452", "#55a868")):
        vals = [r[name] for r in rows]
        ax.fill_between(steps, bottom, [b + v for b, v in zip(bottom, vals)], step="mid", alpha=0.55,
                        color=colour, label=f"P(argmax = {name})")
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.plot(steps, [r["kappa"] for r in rows], "k-o", ms=3, label="κ")
    ax.axhline(params.theta, color="crimson", ls="--", lw=1, label=f"θ = {params.theta}")
    ax.set_xticks(steps)
    ax.set_xticklabels([r["evidence"] for r in rows], rotation=40, ha="right", fontsize=7)
    ax.set_ylim(0, 1)
    ax.set_ylabel("probability")
    ax.legend(fontsize=7, loc="upper left", ncol=2)
    ax.set_title("κ and the argmax probabilities as judgments and rollouts arrive")
    save_figure(fig, args.out, bbox_inches="tight")
    return rows


if __name__ == "__main__":
    main()
