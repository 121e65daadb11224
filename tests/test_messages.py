"""The message channel (issue 45): typed messages, one per player per step, delivered at the next step,
a budget, counted refusals; logs that carry them; OverForge adopting a talking partner's role split;
a talking partner following requests at its set rate. Real dynamics and real agents throughout."""

from __future__ import annotations

import json

import pytest
from scipy.stats import binom

import beliefgate.agents.registry as R
from beliefgate.envs.messages import (Accept, Channel, ChannelRules, Decline, Inform, Propose, Request,
                                      StepMessages, Talks)
from beliefgate.envs.overcooked.partners import TalkingScriptedAgent, get_partner, make_scripted
from beliefgate.envs.trajlog import read_log
from beliefgate.eval.episode import run_episode

SKILLS = ("pickup_onion", "put_onion_in_pot", "pickup_dish", "fill_dish_with_soup", "deliver_soup",
          "place_obj_on_counter")
ROLES = ("ingredient", "plating", "serving", "staging")


def channel(budget=40, players=2, max_text=200):
    return Channel(players, SKILLS, ROLES, ChannelRules(budget=budget, max_text=max_text))


# --------------------------------------------------------------------------- the channel
def test_a_message_is_delivered_at_the_next_step_to_its_recipients_only():
    ch = channel(players=3)
    assert ch.send(0, 0, [Request(to=1, skill="pickup_dish")]) is not None
    ch.send(2, 0, [Inform(holds="onion", intends="put_onion_in_pot")])
    assert ch.deliver(1) == []  # nothing is heard in the step it is said
    logged = ch.end_step()
    assert [m.kind for m in logged.sent] == ["request", "inform"] and [m.id for m in logged.sent] == [0, 1]
    assert [m.kind for m in ch.deliver(1)] == ["request", "inform"]  # addressed + broadcast
    assert [m.kind for m in ch.deliver(0)] == ["inform"]              # the request was not for seat 0
    assert ch.deliver(2) == []  # its own broadcast is not echoed back, the request was for seat 1
    assert ch.end_step() is None                                      # a silent step logs nothing
    assert ch.deliver(1) == []                                        # delivered once


def test_one_message_per_player_per_step_and_the_budget():
    ch = channel(budget=2)
    first = ch.send(0, 0, [Propose(roles={0: "plating", 1: "ingredient"}), Request(to=1, skill="pickup_onion")])
    assert first.kind == "propose" and first.sender == 0 and first.t == 0
    ch.end_step()
    ch.send(0, 1, [Request(to=1, skill="pickup_onion")])
    ch.end_step()
    assert ch.send(0, 2, [Request(to=1, skill="pickup_onion")]) is None  # the third: over budget
    refused = ch.end_step().refused
    assert [r.reason for r in refused] == ["over_budget"]
    s = ch.summary()
    assert s["sent"] == 2 and s["sent_by_seat"] == [2, 0]
    assert s["refused_by_reason"] == {"one_per_step": 1, "over_budget": 1}


@pytest.mark.parametrize("message, reason", [
    (Propose(roles={0: "chef", 1: "plating"}), "unknown_role"),
    (Propose(roles={0: "plating", 7: "ingredient"}), "unknown_seat"),
    (Request(to=1, skill="juggle"), "unknown_skill"),
    (Request(to=5, skill="pickup_dish"), "unknown_seat"),
    (Request(seat=0, skill="pickup_dish"), "unknown_seat"),  # asking itself
    (Inform(intends="juggle"), "unknown_skill"),
    (Inform(goal="0-1-1"), "unknown_goal"),   # classic Overcooked names no goals
    (Inform(holds="onion", text="x" * 201), "too_long"),
    (Accept(reply_to=3), "unknown_reply"),
    ({"kind": "shout", "text": "hi"}, "malformed"),
    ({"kind": "request", "to": 1}, "malformed"),  # no skill
])
def test_a_bad_message_is_refused_with_its_reason_and_the_channel_goes_on(message, reason):
    ch = channel()
    assert ch.send(0, 4, [message]) is None
    step = ch.end_step()
    assert [(r.sender, r.t, r.reason) for r in step.refused] == [(0, 4, reason)]
    assert ch.summary()["refused_by_reason"] == {reason: 1}
    # the same player may still talk at the next step
    assert ch.send(0, 5, [Request(to=1, skill="pickup_dish")]) is not None


def test_a_goal_claim_is_evidence_true_with_probability_trust():
    import math

    import numpy as np

    from beliefgate.beliefs.goal import claim_loglik
    from beliefgate.models.errors import InvalidWeightError, ShapeMismatchError

    ll = claim_loglik(4, 2, 0.9)
    assert np.exp(ll).sum() == pytest.approx(1.0) and ll[2] == pytest.approx(math.log(0.9))
    assert np.allclose(np.delete(ll, 2), math.log(0.1 / 3))
    assert np.array_equal(claim_loglik(1, 0, 0.9), [0.0])      # one goal: nothing to learn
    with pytest.raises(InvalidWeightError, match="trust"):
        claim_loglik(4, 0, 1.0)
    with pytest.raises(ShapeMismatchError, match="claimed goal 4"):
        claim_loglik(4, 4, 0.9)


def test_a_reply_names_a_message_of_someone_else():
    ch = channel()
    ch.send(1, 0, [Propose(roles={1: "plating", 0: "ingredient"})])
    ch.end_step()
    assert ch.send(0, 1, [Decline(reply_to=0, to=1, reason="I plate")]) is not None
    assert ch.send(1, 1, [Accept(reply_to=0)]) is None  # answering itself
    assert ch.end_step().refused[0].reason == "unknown_reply"


# --------------------------------------------------------------------------- the runner and the log
class Chatterbox:
    """An idle player that says a fixed script: two messages at step 1 (one too many), bad ones after."""

    def reset(self, layout, player, seed):
        self.t = -1
        self.heard = []

    def act(self, state, my_events=()):
        self.t += 1
        return 4  # stay

    def info(self):
        return {"skill": None}

    def hear(self, messages):
        self.heard += [(self.t + 1, m.kind, m.sender) for m in messages]

    def messages_out(self):
        script = {1: [Request(to=1, skill="pickup_dish"), Inform(holds=None)],
                  2: [Propose(roles={0: "chef"})], 3: [{"kind": "request", "to": 1, "skill": "x" * 3}],
                  5: [Request(to=1, skill="pickup_onion")], 6: [Request(to=1, skill="pickup_onion")],
                  7: [Request(to=1, skill="pickup_onion")]}
        return script.get(self.t, [])


@pytest.fixture
def chatterbox():
    R.register_agent(R.AgentEntry("chatterbox", lambda option, **kw: Chatterbox(), "says a fixed script"))
    yield "chatterbox"
    R.unregister_agent("chatterbox")


def test_the_runner_carries_logs_and_counts_messages(chatterbox, tmp_path):
    assert isinstance(Chatterbox(), Talks) and not isinstance(make_scripted("plater"), Talks)
    log = tmp_path / "ep.jsonl"
    res = run_episode("cramped_room", chatterbox, "talk-plater-keeps", seed=2, horizon=12, log_path=log,
                      messages=ChannelRules(budget=3))
    m = res.summary["messages"]
    # sent: the requests at 1, 5 and 6 (a budget of 3); refused: one_per_step at 1, unknown_role at 2,
    # unknown_skill at 3, over_budget at 7
    assert m["refused_by_seat"][0] == {"one_per_step": 1, "unknown_role": 1, "unknown_skill": 1, "over_budget": 1}
    assert m["sent_by_seat"][0] == 3 and res.summary["steps"] == 12
    rows = {r.t: r.messages for r in res.trajectory.steps if r.messages is not None}
    assert rows[1].sent[0].kind == "request" and rows[1].refused[0].reason == "one_per_step"
    back = read_log(log)
    assert [r.messages for r in back.steps] == [r.messages for r in res.trajectory.steps]
    lines = log.read_text().splitlines()
    assert all("messages" not in json.loads(line) for line in lines[1:-1]
               if json.loads(line).get("t") not in rows)  # a silent step's line is as before the channel
    assert back.header.config["messages"] == {"budget": 3, "max_text": 200}


def test_what_is_said_is_heard_at_the_next_step(chatterbox):
    box = Chatterbox()
    R.register_agent(R.AgentEntry("chatterbox", lambda option, **kw: box, "the same instance"))
    res = run_episode("cramped_room", chatterbox, "talk-plater-keeps", seed=2, horizon=8)
    said = [(r.t, m.kind, m.sender) for r in res.trajectory.steps if r.messages for m in r.messages.sent]
    assert sorted((t + 1, k, s) for t, k, s in said if s == 1 and t < 7) == sorted(box.heard)
    assert ("accept", 1) in {(k, s) for t, k, s in said}  # the partner answered the request


def test_a_log_written_before_the_channel_still_reads(tmp_path):
    log = tmp_path / "old.jsonl"
    run_episode("cramped_room", "plater", "onion-sourcer", seed=0, horizon=5, log_path=log)
    assert all("messages" not in json.loads(line) for line in log.read_text().splitlines())
    assert all(r.messages is None for r in read_log(log).steps)
    line = json.loads(log.read_text().splitlines()[1])
    line["messages"] = {"sent": [{"kind": "propose", "roles": {"0": "plating"}, "sender": 0, "t": 0, "id": 0}],
                        "refused": []}
    assert StepMessages.model_validate(line["messages"]).sent[0].roles == {0: "plating"}


# --------------------------------------------------------------------------- OverForge
def test_overforge_adopts_the_role_a_talking_partner_proposes_and_keeps_it():
    res = run_episode("cramped_room", "overforge", "talk-sourcer-keeps", seed=0, horizon=40)
    steps = res.trajectory.steps
    proposals = [m for r in steps if r.messages for m in r.messages.sent if m.kind == "propose" and m.sender == 1]
    assert proposals and proposals[0].roles == {1: "ingredient", 0: "plating"}
    answers = [(r.t, m) for r in steps if r.messages for m in r.messages.sent
               if m.sender == 0 and m.kind in ("accept", "decline") and m.reply_to == proposals[0].id]
    assert len(answers) == 1 and answers[0][1].kind == "accept"
    t_accept = answers[0][0]
    # the decision that adopted it committed (kappa >= theta) to a branch whose strategy claims plating
    adopted = [r for r in steps if r.t <= t_accept and r.info[0].get("pcm") and r.info[0]["talk"]["adopted"]]
    pcm = adopted[0].info[0]["pcm"]
    assert pcm["committed"] and pcm["kappa"] >= 0.6
    from beliefgate.agents.overforge.strategies import load_strategies

    strategy = pcm["best"].split("/")[0]
    assert "plating" in load_strategies()[strategy].roles and "ingredient" not in load_strategies()[strategy].roles
    # the partner's proposal entered kappa as judgments: more than the judge's own neighbour pairs
    judged = [e for e in pcm["evidence"] if "left" in e]
    assert len(judged) > len(pcm["branches"]) - 1
    # retention: from then on every decision starts from the agreed strategy and the agent holds it
    later = [r.info[0] for r in steps if r.t > adopted[0].t and r.info[0].get("pcm")]
    assert later and all(i["pcm"]["strategies"][0] == strategy and i["strategy"] == strategy for i in later)
    assert all(r.info[0]["talk"]["agreement"] == strategy for r in steps if r.t >= adopted[0].t)
    assert res.summary["messages"]["refused"] == 0


def test_overforge_without_messages_neither_talks_nor_listens():
    res = run_episode("cramped_room", "overforge:-messages", "talk-sourcer-keeps", seed=0, horizon=20)
    assert res.summary["messages"]["sent_by_seat"][0] == 0
    assert all("talk" not in r.info[0] for r in res.trajectory.steps)


def test_overforge_declines_a_split_no_strategy_fits_and_says_why(chatterbox):
    class Proposer(Chatterbox):
        def messages_out(self):  # plating for OverForge and serving for itself: no strategy of the library fits
            return [Propose(roles={0: "plating", 1: "serving"})] if self.t == 1 else []

    R.register_agent(R.AgentEntry("chatterbox", lambda option, **kw: Proposer(), "proposes once"))
    res = run_episode("cramped_room", "overforge", chatterbox, seed=1, horizon=40)
    answers = [m for r in res.trajectory.steps if r.messages for m in r.messages.sent if m.sender == 0
               and m.kind in ("accept", "decline")]
    assert [(m.kind, m.reply_to, m.to) for m in answers] == [("decline", 1, 1)]
    assert answers[0].reason == "undecided" or answers[0].reason.startswith("committed to ")
    assert all(r.info[0]["talk"]["agreement"] is None for r in res.trajectory.steps)


def test_a_teammates_message_weighs_in_kappa_by_its_reliability():
    from beliefgate.agents.overforge import make_overforge_agent
    from beliefgate.agents.overforge.record import Branch

    agent = make_overforge_agent("overforge")
    agent.reset("cramped_room", 0, 0)
    agent.talk.hear([Propose(roles={0: "plating", 1: "ingredient"}, sender=1, t=0, id=0)])
    branches = [Branch("finisher", "pickup_dish"), Branch("loader", "pickup_onion"), Branch("supplier", "pickup_onion")]
    counts = {}
    for kept, broken in ((1, 1), (9, 1), (1, 9)):
        agent.talk.reliability[1].kept, agent.talk.reliability[1].broken = kept, broken
        got = agent.talk.judgments(branches, [0.1, 0.5, 0.9])
        assert all(j.left == "finisher/pickup_dish" and j.y == 1 for j in got)
        counts[(kept, broken)] = len(got)
    assert counts == {(1, 1): 2, (9, 1): 4, (1, 9): 0}  # round(listen=2 x reliability) per inconsistent branch
    # a candidate set without a consistent strategy gets the best consistent one
    assert "finisher" in agent.talk.strategies(["loader", "supplier"], {"loader": 1.0, "supplier": 0.9,
                                                                        "finisher": 0.5, "server": 0.8})


def test_a_role_a_split_gives_a_third_seat_too_is_shared_not_a_conflict():
    """With two teammates a split names one role twice ({0: ingredient, 1: plating, 2: plating});
    seat 1 may take it with a plating strategy (before, the third seat's plating ruled every plating
    strategy out, so three OverForges declined every proposal and never agreed)."""
    from beliefgate.agents.overforge import make_overforge_agent
    from beliefgate.agents.overforge.record import Branch

    agent = make_overforge_agent("overforge")
    agent.reset("cramped_room_3p", 1, 0)
    agent.talk.hear([Propose(roles={0: "ingredient", 1: "plating", 2: "plating"}, sender=0, t=0, id=0)])
    ask = agent.talk.asks[0]
    assert ask.my_role == "plating" and ask.other_roles == ("ingredient",)
    assert agent.talk.consistent(ask, Branch("finisher", "pickup_dish"))
    assert not agent.talk.consistent(ask, Branch("loader", "pickup_onion"))


# --------------------------------------------------------------------------- talking partners
@pytest.mark.parametrize("name", ["talk-plater-keeps", "talk-plater-breaks", "talk-server-follows"])
def test_a_talking_partner_follows_requests_at_its_set_rate(name):
    p = get_partner(name).talk.follow
    agent = make_scripted(name)
    assert isinstance(agent, TalkingScriptedAgent)
    agent.reset("cramped_room", 1, seed=11)
    n = 600
    for i in range(n):
        agent.hear([Request(to=1, skill="pickup_dish", sender=0, t=i, id=i)])
        agent.messages_out()
    lo, hi = binom.interval(0.999, n, p)  # the seeded draws: a 99.9% binomial interval around the set rate
    assert lo <= agent.followed <= hi and agent.requests == n
    # a talking partner's other draws are its own: the talk stream is apart from its behaviour's
    plain = make_scripted(name)
    plain.reset("cramped_room", 1, seed=11)
    assert agent.rng.random() == plain.rng.random()


def test_a_followed_request_is_the_partners_next_sub_task(chatterbox):
    class Asker(Chatterbox):
        """A balanced scripted cook that asks its teammate for a dish every 40 steps."""

        def reset(self, layout, player, seed):
            super().reset(layout, player, seed)
            self.cook = make_scripted("balanced")
            self.cook.reset(layout, player, seed)

        def act(self, state, my_events=()):
            self.t += 1
            return self.cook.act(state, my_events)

        def info(self):
            return self.cook.info()

        def messages_out(self):
            return [Request(to=1, skill="pickup_dish")] if self.t % 40 == 5 else []

    R.register_agent(R.AgentEntry("chatterbox", lambda option, **kw: Asker(), "asks for dishes"))
    res = run_episode("cramped_room", chatterbox, "talk-sourcer-keeps", seed=4, horizon=400)
    steps = res.trajectory.steps
    decided = [(r.t, h) for r in steps for h in r.info[1].get("talk", {}).get("heard", []) if h["kind"] == "request"]
    assert len(decided) == 10
    executed = 0
    for t, h in decided:
        started = [r.skills[1] for r in steps[t:t + 31]]
        changes = [s for a, s in zip(started, started[1:]) if s != a and s is not None]
        pickups = [s for s in changes if s.startswith("pickup_")]
        if h["follow"] and started[0] != "pickup_dish" and pickups:  # (already fetching one: nothing to do)
            # the first thing it fetches with empty hands within its patience is what it was asked for
            assert pickups[0] == "pickup_dish", (t, changes[:4])
            executed += 1
    assert sum(h["follow"] for _, h in decided) >= 5  # follow 0.8 of 10 (binomial: P(< 5) = 0.006)
    assert executed >= 3  # (a sourcer fetches onions by preference: without the requests, dishes are rare)
    from beliefgate.eval.social import request_outcomes

    outs = request_outcomes(res.trajectory)
    assert [(o.t + 1, o.seat, o.skill) for o in outs] == [(t, 1, "pickup_dish") for t, _ in decided]


def test_overforge_decides_when_asked_and_weighs_the_asked_skill(chatterbox):
    """A request interrupts OverForge's running skill for a decision (reason ``request``) whose
    branches include the asked skill, favoured in kappa by the teammate's words; it plays the skill
    when kappa commits to it, and answers either way."""

    class Asker(Chatterbox):
        def messages_out(self):
            return [Request(to=0, skill="pickup_dish")] if self.t in (6, 46, 86) else []

    R.register_agent(R.AgentEntry("chatterbox", lambda option, **kw: Asker(), "asks for dishes"))
    res = run_episode("cramped_room", "overforge", chatterbox, seed=3, horizon=120)
    steps = res.trajectory.steps
    heard = [r.t + 1 for r in steps if r.messages for m in r.messages.sent if m.kind == "request"]
    assert heard == [7, 47, 87]
    decided = 0
    for t in heard:
        info = steps[t].info[0]
        pcm = info.get("pcm")
        if steps[t - 1].skills[0] is None or pcm is None:
            continue   # nothing running, or nothing feasible: no interrupt to make
        assert info["reason"] == "request" and info["interrupt"]
        if steps[t].state.players[0].held is not None:
            continue   # a dish needs empty hands: the asked skill is no branch
        asked = [b for b in pcm["branches"] if b.endswith("/pickup_dish")]
        assert asked   # the asked skill is a branch
        # the teammate's words are judgments in favour of it over each other branch
        others = len(pcm["branches"]) - len(asked)
        assert sum(e.get("left") in asked for e in pcm["evidence"]) >= others
        if pcm["committed"] and pcm["best"] in asked:
            assert info["skill"] == "pickup_dish"
        decided += 1
    assert decided >= 2
    said = [m for r in steps if r.messages for m in r.messages.sent if m.sender == 0 and m.kind in ("accept", "decline")]
    assert len(said) >= decided   # every request that reached a decision was answered


def test_followed_and_chance_shares():
    from beliefgate.eval.social import RequestOutcome, chance_share, followed_share

    def o(skill, nxt):
        return RequestOutcome(0, 0, 1, skill, nxt, None)

    outs = [o("a", "a"), o("b", "a"), o("c", "c"), o("a", None)]
    assert followed_share(outs) == pytest.approx(2 / 3)
    # shuffled: each next sub-task against every requested skill (a, b, c): a, a, c match 1 each
    assert chance_share(outs) == pytest.approx(3 / 9)
    import itertools

    perms = list(itertools.permutations(["a", "b", "c"]))
    by_perm = [followed_share([o(s, n) for s, n in zip(p, ["a", "a", "c"])]) for p in perms]
    assert chance_share(outs) == pytest.approx(sum(by_perm) / len(by_perm))


def test_the_pooled_gap_counts_single_request_episodes_and_its_interval_covers_it():
    from beliefgate.eval.social import RequestOutcome, chance_share, followed_share, pooled_gap

    def o(skill, nxt):
        return RequestOutcome(0, 0, 1, skill, nxt, None)

    # six episodes of one request each, all followed, over three skills: per episode every gap is 0
    eps = [[o(s, s)] for s in "abcabc"]
    assert all(followed_share(e) - chance_share(e) == 0 for e in eps)
    gap, lo, hi, used = pooled_gap(eps + [[o("a", None)]], n_boot=2000)
    assert used == 6 and gap == pytest.approx(1 - 1 / 3)   # pooled: chance is 1/3 with three skills
    assert lo <= gap <= hi and lo > 0
    # requests that go the other way of what was asked: below chance
    gap, lo, hi, _ = pooled_gap([[o("a", "b")], [o("b", "a")], [o("a", "b")], [o("b", "a")]], n_boot=2000)
    assert gap == pytest.approx(-0.5) and lo < 0 and hi <= 0   # (a resample of one kind of episode: 0 - 0)
    assert pooled_gap([[o("a", None)]])[3] == 0


def test_a_partner_file_with_a_bad_talk_block_is_refused_naming_the_field(tmp_path):
    from beliefgate.envs.domain import PartnerSpecError
    from beliefgate.envs.overcooked.partners import UnknownPartnerFieldError, load_partner

    base = "format: beliefgate.partner/1\nname: t\nstyles:\n  a: {weights: {pickup_dish: 2}}\n"
    for talk, needle, kind in (("talk: {propose: {self: chef}}", "chef", PartnerSpecError),
                               ("talk: {follow: 1.5}", "follow", PartnerSpecError),
                               ("talk: {shout: true}", "shout", UnknownPartnerFieldError)):
        path = tmp_path / "t.yaml"
        path.write_text(base + talk + "\n")
        with pytest.raises(kind, match=needle):
            load_partner(path)


def test_the_report_draws_the_messages_on_its_timeline(tmp_path):
    from beliefgate.viewer.report import report_data, write_report

    log = tmp_path / "talk.jsonl"
    run_episode("cramped_room", "talk-sourcer-keeps", "talk-plater-keeps", seed=1, horizon=30, log_path=log)
    data = report_data(read_log(log))
    sent = [[r.t, m.sender, m.kind] for r in read_log(log).steps if r.messages for m in r.messages.sent]
    assert [m[:3] for m in data["messages"]] == sent and sent  # proposals at 1, answers at 2


@pytest.mark.slow
def test_the_report_page_draws_the_message_marks_in_a_browser(tmp_path):
    from beliefgate.viewer.report import write_report

    log = tmp_path / "talk.jsonl"
    run_episode("cramped_room", "talk-sourcer-keeps", "talk-plater-keeps", seed=1, horizon=30, log_path=log)
    sent = [[r.t, m.sender, m.kind] for r in read_log(log).steps if r.messages for m in r.messages.sent]
    try:
        from beliefgate.viewer.browser import BrowserUnavailable, find_browser, headless_chromium

        paths = find_browser()
    except (ImportError, BrowserUnavailable) as exc:
        pytest.skip(f"no headless browser: {exc}")
    from selenium.webdriver.common.by import By

    out = tmp_path / "talk.html"
    write_report(log, out)
    driver = headless_chromium(paths=paths)
    try:
        driver.get(out.as_uri())
        end = __import__("time").monotonic() + 10
        while not driver.execute_script("return !!window.beliefgateReport"):
            assert __import__("time").monotonic() < end, "report script"
        marks = driver.find_elements(By.CSS_SELECTOR, "#track-messages text.message")
        assert [m.get_attribute("data-kind") for m in marks] == [m[2] for m in sent]
        assert [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"] == []
    finally:
        driver.quit()
