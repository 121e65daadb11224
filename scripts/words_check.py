"""How well a model writes and reads the channel's messages in words (issue 45; docs/messages.md "Words").

Draws ``--n`` typed messages of every kind over a layout's names (seeded), has seat 0's
:class:`~beliefgate.agents.speech.Speech` phrase each through the model, sends it on a real channel,
has seat 1 read it back through the same model, and prints per kind: how many were read as the
right kind, read exactly, or not read (a counted ``read`` fallback), and the sentences the model
could not write (``speak`` fallbacks, sent as the template sentence). Answers (accept/decline) are
asked after seat 1 proposed or requested something, so there is an open question to answer.

    .venv/bin/python -m llama_cpp.server --model PATH.gguf --port 8081 &   # or any OpenAI-compatible server
    PYTHONPATH=$PWD .venv/bin/python scripts/words_check.py --llm-base-url http://127.0.0.1:8081/v1 --n 30 --seed 1000

Writes one JSON line per message to ``--out`` (default runs/words_check.jsonl) with the config.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np


def typed_messages(rng, library, goals, n):
    from beliefgate.envs.messages import Accept, Decline, Inform, Propose, Request

    kinds = ["propose", "request", "accept", "decline", "inform"]
    out = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        if kind == "propose":
            a, b = rng.choice([r for r in library.roles if r != "staging"], size=2, replace=False)
            out.append(Propose(roles={0: str(a), 1: str(b)}))
        elif kind == "request":
            out.append(Request(to=1, skill=str(rng.choice(library.names))))
        elif kind == "inform":
            out.append(Inform(goal=str(rng.choice(goals))) if goals else Inform(intends=str(rng.choice(library.names))))
        else:
            out.append((Accept if kind == "accept" else Decline)(reply_to=-1, to=1))   # reply_to set when asked
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llm-base-url", required=True)
    ap.add_argument("--llm-model", default="")
    ap.add_argument("--layout", default="v2/cramped_room_v2")
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--max-tokens", type=int, default=80)
    ap.add_argument("--out", default="runs/words_check.jsonl")
    args = ap.parse_args(argv)

    from beliefgate.agents.flat import FlatAgent
    from beliefgate.envs.messages import Accept, Channel, Decline, Request
    from beliefgate.eval.social import read_as_meant
    from beliefgate.planners.client import LLMClient, LLMSettings

    client = LLMClient(LLMSettings(base_url=args.llm_base_url, model=args.llm_model, max_tokens=args.max_tokens,
                                   timeout_s=120.0, deadline_s=600.0))
    agents = []
    for seat in (0, 1):
        agent = FlatAgent()
        agent.speak_with(client)
        agent.reset(args.layout, seat, args.seed + seat)
        agents.append(agent)
    a0, a1 = agents
    lib = a0.library
    goals = a0.speech.vocabulary.goals
    ch = Channel(2, lib.names, lib.roles, goals=goals)
    rng = np.random.default_rng(args.seed)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    config = {"layout": args.layout, "n": args.n, "seed": args.seed, "max_tokens": args.max_tokens,
              "llm": client.describe(), "commit": commit}
    tally = {k: Counter() for k in ("propose", "request", "accept", "decline", "inform")}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    t = 0
    with open(args.out, "w") as fh:
        fh.write(json.dumps({"config": config}) + "\n")
        for msg in typed_messages(rng, lib, goals, args.n):
            if isinstance(msg, (Accept, Decline)):   # seat 1 asks first; seat 0 answers that
                ask = ch.send(1, t, [Request(to=0, skill=str(rng.choice(lib.names)))])
                a1.words_sent(ask)
                a0.words_in([ask])
                ch.end_step()
                t += 1
                msg = msg.model_copy(update={"reply_to": ask.id})
            (say,) = a0.words_out([msg])
            sent = ch.send(0, t, [say])
            t += 1
            if sent is None:
                print(f"refused: {ch.refusals}", file=sys.stderr)
                return 1
            a0.words_sent(sent)
            ch.end_step()
            before = a1.speech.counts["unreadable"]
            read = a1.words_in(ch.deliver(1))
            got = read[0] if read else None
            want = msg.model_dump(exclude={"sender", "t", "id", "text", "to"}, exclude_none=True)
            have = None if got is None else got.model_dump(exclude={"sender", "t", "id", "text", "to"}, exclude_none=True)
            if isinstance(msg, Request):
                want["seat"] = 1
            row = tally[msg.kind]
            row["n"] += 1
            row["unreadable"] += a1.speech.counts["unreadable"] - before
            row["kind_right"] += have is not None and have["kind"] == msg.kind
            row["exact"] += have is not None and read_as_meant(msg, have)
            fh.write(json.dumps({"meant": want, "words": say.text, "read": have}, default=str) + "\n")
    spoken = a0.speech.counts
    print(f"{args.n} messages, {args.layout}, seed {args.seed}, model {client.describe().get('llm_model')}, "
          f"commit {commit}; {spoken['said_by_template']} of {spoken['said']} sentences fell back to the template")
    print(f"{'kind':<9}{'n':>4}{'kind right':>12}{'exact':>7}{'unread':>8}")
    total = Counter()
    for kind, c in tally.items():
        total.update(c)
        print(f"{kind:<9}{c['n']:>4}{c['kind_right']:>12}{c['exact']:>7}{c['unreadable']:>8}")
    print(f"{'all':<9}{total['n']:>4}{total['kind_right']:>12}{total['exact']:>7}{total['unreadable']:>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
