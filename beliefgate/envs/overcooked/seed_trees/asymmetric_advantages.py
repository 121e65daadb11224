"""### FunctionDescription:
Name: PredictTeammateThenPlan
Layout: asymmetric_advantages (two pots in the middle; each cook has its own onions,
dish dispenser and serving cell)
Inputs: the flat state dict (holdings, pots with count/state/timers, any_soup_ready,
any_pot_not_full, counter counts, teammate_last_completed_skill,
teammate_last_inferred_skill, self_last_skill)
Outputs: (inferred_teammate_current_skill, self_action_now)

**Partner Inference Tree**
1. Teammate holds soup -> deliver_soup.
2. Teammate holds a dish -> fill_dish_with_soup.
3. Teammate holds an onion -> put_onion_in_pot if a pot is not full, else place_obj_on_counter.
4. Teammate empty-handed:
   a. a soup is ready or cooking and nobody holds a dish -> pickup_dish;
   b. it just completed pickup_dish or fill_dish_with_soup and the pot is full -> pickup_dish;
   c. otherwise -> pickup_onion.

**Self Action Selection Tree**
1. Self holds soup -> deliver_soup.
2. Self holds a dish -> fill_dish_with_soup when a pot has onions, is cooking or is ready;
   otherwise place_obj_on_counter.
3. Self holds an onion -> put_onion_in_pot if a pot is not full, else place_obj_on_counter.
4. Self empty-handed:
   a. a soup is ready, nobody holds a dish and the teammate is not predicted to fetch one
      -> pickup_dish;
   b. the pots still need more onions than the teammate carries -> pickup_onion;
   c. a soup is cooking or ready and the teammate is not predicted to fetch a dish
      -> pickup_dish;
   d. otherwise, when no onion is staged yet and at least two counters are empty ->
      pickup_onion (stage one for the next soup); else place_obj_on_counter, which cannot be
      done empty-handed and so makes self wait (never fetch an item that has no use).
"""


def onions_missing(state):
    missing = 0
    for pot in state["pot"]:
        if pot["state"] == "idle":
            missing += 3 - pot["count"]
    return missing


def soups_coming(state):
    return len([p for p in state["pot"] if p["state"] != "idle"])


def predict_teammate(state):
    mate = state["holdings"]["teammate"]
    me = state["holdings"]["self"]
    if mate == "soup":
        return "deliver_soup"
    if mate == "dish":
        return "fill_dish_with_soup"
    if mate == "onion":
        if state["any_pot_not_full"]:
            return "put_onion_in_pot"
        return "place_obj_on_counter"
    if soups_coming(state) > 0 and me != "dish":
        return "pickup_dish"
    last = state["teammate_last_completed_skill"]
    if last in ("pickup_dish", "fill_dish_with_soup") and not state["any_pot_not_full"]:
        return "pickup_dish"
    return "pickup_onion"


def choose_own(state, mate_skill):
    me = state["holdings"]["self"]
    mate = state["holdings"]["teammate"]
    if me == "soup":
        return "deliver_soup"
    if me == "dish":
        if soups_coming(state) > 0 or onions_missing(state) < 3:
            return "fill_dish_with_soup"
        return "place_obj_on_counter"
    if me == "onion":
        if state["any_pot_not_full"]:
            return "put_onion_in_pot"
        return "place_obj_on_counter"
    plating = mate_skill in ("pickup_dish", "fill_dish_with_soup") or mate == "dish"
    if state["any_soup_ready"] and not plating:
        return "pickup_dish"
    carried = 1 if mate == "onion" else 0
    if onions_missing(state) - carried > 0:
        return "pickup_onion"
    if soups_coming(state) > 0 and mate_skill != "pickup_dish":
        return "pickup_dish"
    if state["num_onion_counters"] == 0 and state["num_empty_counters"] >= 2:
        return "pickup_onion"
    return "place_obj_on_counter"


def PredictTeammateThenPlan(state):
    mate_skill = predict_teammate(state)
    return mate_skill, choose_own(state, mate_skill)
