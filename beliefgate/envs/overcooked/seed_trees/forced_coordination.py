"""### FunctionDescription:
Name: PredictTeammateThenPlan
Layout: forced_coordination (player 0 on the pot/serving side, player 1 on the onion/dish
side; everything passes over the middle counters)
Inputs: the flat state dict (holdings, pots with count/state/timers, any_soup_ready,
any_pot_not_full, counter counts, teammate_last_completed_skill,
teammate_last_inferred_skill, self_last_skill, self_player)
Outputs: (inferred_teammate_current_skill, self_action_now)

**Partner Inference Tree**
Supplier side (player 1):
1. holds anything -> place_obj_on_counter.
2. empty: the supplier rules 2a-2c of the Self Action Selection Tree below, seen from
   the teammate; pickup_onion when none of them applies.
Cook side (player 0):
1. holds soup -> deliver_soup; holds a dish -> fill_dish_with_soup; holds an onion ->
   put_onion_in_pot (place_obj_on_counter when every pot is full).
2. empty: a soup is cooking or ready and a dish is on a counter -> pickup_dish;
   otherwise -> pickup_onion.

**Self Action Selection Tree**
Supplier side (self_player 1):
1. Self holds anything -> place_obj_on_counter (hand it over).
2. Self empty:
   a. the pots need more onions than lie on the counters (and than the cook carries)
      -> pickup_onion;
   b. a soup is cooking or ready (or a pot has two onions) and no dish waits on a counter
      and the cook holds none -> pickup_dish;
   c. fewer than three onions are staged and at least two counters are free -> pickup_onion;
   d. otherwise -> put_onion_in_pot, which is not available here and so means wait.
Cook side (self_player 0):
1. Self holds soup -> deliver_soup.
2. Self holds a dish -> fill_dish_with_soup.
3. Self holds an onion -> put_onion_in_pot if a pot is not full, else place_obj_on_counter.
4. Self empty:
   a. a soup is ready or cooking and a dish lies on a counter -> pickup_dish;
   b. a pot is not full and an onion lies on a counter -> pickup_onion;
   c. otherwise -> fill_dish_with_soup, which cannot be done empty-handed: wait.
"""


def onions_missing(state):
    missing = 0
    for pot in state["pot"]:
        if pot["state"] == "idle":
            missing += 3 - pot["count"]
    return missing


def soups_coming(state):
    coming = 0
    for pot in state["pot"]:
        if pot["state"] != "idle" or pot["count"] >= 2:
            coming += 1
    return coming


def supplier_choice(state, mine, other):
    if mine != "empty":
        return "place_obj_on_counter"
    carried = 1 if other == "onion" else 0
    if onions_missing(state) - state["num_onion_counters"] - carried > 0:
        return "pickup_onion"
    if soups_coming(state) > state["num_dish_counters"] and other != "dish":
        return "pickup_dish"
    if state["num_onion_counters"] < 3 and state["num_empty_counters"] >= 2:
        return "pickup_onion"
    return "put_onion_in_pot"


def cook_choice(state, mine):
    if mine == "soup":
        return "deliver_soup"
    if mine == "dish":
        return "fill_dish_with_soup"
    if mine == "onion":
        if state["any_pot_not_full"]:
            return "put_onion_in_pot"
        return "place_obj_on_counter"
    cooking = len([p for p in state["pot"] if p["state"] != "idle"])
    if cooking > 0 and state["num_dish_counters"] > 0:
        return "pickup_dish"
    if state["any_pot_not_full"] and state["num_onion_counters"] > 0:
        return "pickup_onion"
    return "fill_dish_with_soup"


def PredictTeammateThenPlan(state):
    me = state["holdings"]["self"]
    mate = state["holdings"]["teammate"]
    if state["self_player"] == 1:
        return cook_choice(state, mate), supplier_choice(state, me, mate)
    guess = supplier_choice(state, mate, me)
    if guess == "put_onion_in_pot":  # the supplier waits: predict its next pickup
        guess = "pickup_onion"
    return guess, cook_choice(state, me)
