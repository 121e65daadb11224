"""### FunctionDescription:
Name: PredictTeammateThenPlan
Layout: any OvercookedV2 kitchen (v2/ layouts, two or three players; recipes of three typed
ingredients, which a seat may or may not see)
Inputs: the V2 flat state dict (schema overcooked_v2/1: holdings, teammate_holds, recipe where
visible, candidate_recipes, ingredient_need per ingredient, held_fits, pots with ingredients and
state, soups_coming, plates_needed, any_pot_to_start, teammate_last_completed_skill,
teammate_last_inferred_skill, self_last_skill)
Outputs: (inferred_first_teammate_current_skill, self_action_now)

**Partner Inference Tree** (the first teammate)
1. Teammate holds a dish -> deliver_dish.
2. Teammate holds a plate -> plate_soup if a pot holds ingredients, else place_on_counter.
3. Teammate holds ingredient i -> put_ingredient_i_in_pot if a pot is not full, else
   place_on_counter (anything else it holds -> place_on_counter).
4. Teammate empty-handed:
   a. the last inference about it is still useful (pickup_ingredient_i while the pot needs i,
      pickup_plate while a soup is coming) -> keep that inference;
   b. a soup is coming and plates are still needed -> pickup_plate;
   c. the pot still needs an ingredient -> pickup of the first ingredient it needs;
   d. otherwise -> pickup_plate.

**Self Action Selection Tree**
1. Self holds a dish -> deliver_dish.
2. Self holds a plate -> plate_soup when a pot holds ingredients; otherwise place_on_counter.
3. Self holds ingredient i -> put_ingredient_i_in_pot when it fits an open pot for a candidate
   recipe (the visible recipe, else the recipes the pots and hands still allow); otherwise
   place_on_counter.
4. Self empty-handed:
   a. a pot waits to be started by hand -> start_cooking;
   b. a soup is cooking or ready, plates are still needed and the teammate is not predicted to
      fetch or fill one -> pickup_plate;
   c. an ingredient the pot still needs beyond what the teammate is predicted to fetch ->
      pickup_ingredient_i (the first such ingredient);
   d. a soup is coming and the teammate is not predicted to plate -> pickup_plate;
   e. otherwise place_on_counter, which cannot be done empty-handed and so makes self wait.
"""


def first_needed(state, skip):
    for name, n in state["ingredient_need"].items():
        if n - (1 if skip == "pickup_" + name else 0) > 0:
            return name
    return None


def any_ingredients_in_pots(state):
    return len([p for p in state["pot"] if p["count"] > 0]) > 0


def still_useful(state, skill):
    if skill is None:
        return False
    if skill == "pickup_plate":
        return state["soups_coming"] > 0
    if skill.startswith("pickup_ingredient_"):
        return state["ingredient_need"].get(skill[len("pickup_"):], 0) > 0
    return False


def predict_teammate(state):
    mate = state["holdings"]["teammate"]
    me = state["holdings"]["self"]
    if mate == "dish":
        return "deliver_dish"
    if mate == "plate":
        if any_ingredients_in_pots(state):
            return "plate_soup"
        return "place_on_counter"
    if mate.startswith("ingredient_"):
        if state["any_pot_not_full"]:
            return "put_" + mate + "_in_pot"
        return "place_on_counter"
    if mate != "empty":
        return "place_on_counter"
    inferred = state["teammate_last_inferred_skill"]
    if still_useful(state, inferred):
        return inferred
    if state["plates_needed"] > 0 and me not in ("plate", "dish"):
        return "pickup_plate"
    name = first_needed(state, None)
    if name is not None:
        return "pickup_" + name
    return "pickup_plate"


def choose_own(state, mate_skill):
    me = state["holdings"]["self"]
    if me == "dish":
        return "deliver_dish"
    if me == "plate":
        if any_ingredients_in_pots(state):
            return "plate_soup"
        return "place_on_counter"
    if me.startswith("ingredient_"):
        if state["held_fits"]:
            return "put_" + me + "_in_pot"
        return "place_on_counter"
    if me != "empty":
        return "place_on_counter"
    if state["any_pot_to_start"]:
        return "start_cooking"
    plating = mate_skill in ("pickup_plate", "plate_soup")
    cooking = state["any_soup_cooking"] or state["any_soup_ready"]
    if cooking and state["plates_needed"] > 0 and not plating:
        return "pickup_plate"
    name = first_needed(state, mate_skill)
    if name is not None:
        return "pickup_" + name
    if state["soups_coming"] > 0 and not plating:
        return "pickup_plate"
    return "place_on_counter"


def PredictTeammateThenPlan(state):
    mate_skill = predict_teammate(state)
    return mate_skill, choose_own(state, mate_skill)
