"""### FunctionDescription:
Name: PredictTeammateThenPlan
Layout: any OvercookedV2 kitchen (v2/ layouts, two or three players; recipes of three typed
ingredients, which a seat may or may not see; connected or split rooms)
Inputs: the V2 flat state dict (schema overcooked_v2/1: holdings, teammate_holds, recipe where
visible, candidate_recipes, ingredient_need and ingredient_sure per ingredient, held_fits, the
skills self and the first teammate can reach now, pots with ingredients and state,
soups_coming, plates_needed, any_pot_to_start, teammate_last_completed_skill,
teammate_last_inferred_skill, self_last_skill)
Outputs: (inferred_first_teammate_current_skill, self_action_now)

**Partner Inference Tree** (the first teammate)
1. Teammate holds a dish -> deliver_dish.
2. Teammate holds a plate -> plate_soup if a pot holds ingredients, else place_on_counter.
3. Teammate holds ingredient i -> put_ingredient_i_in_pot if a pot is not full, else
   place_on_counter (anything else it holds -> place_on_counter).
4. Teammate empty-handed (only skills it can reach now):
   a. the last inference about it is still useful (pickup_ingredient_i while the pot needs i,
      pickup_plate while a soup is coming) -> keep that inference;
   b. a soup is coming and plates are still needed -> pickup_plate;
   c. the pot still needs an ingredient for some candidate recipe -> pickup of the first one;
   d. otherwise -> pickup_plate, or place_on_counter (it waits) where it reaches no plate.

**Self Action Selection Tree** (a skill self cannot reach now is replaced by place_on_counter)
1. Self holds a dish -> deliver_dish (place_on_counter where no serving cell is reachable).
2. Self holds a plate -> plate_soup when a pot holds ingredients; otherwise place_on_counter.
3. Self holds ingredient i -> put_ingredient_i_in_pot when it fits an open pot for a candidate
   recipe and self reaches a pot; otherwise place_on_counter (a hand-over in a split kitchen).
4. Self empty-handed:
   a. a pot waits to be started by hand -> start_cooking;
   b. a soup is cooking or ready, plates are still needed and the teammate is not predicted to
      fetch or fill one -> pickup_plate;
   c. an ingredient the pot needs whichever candidate recipe is active (ingredient_sure), beyond
      what the teammate is predicted to fetch -> pickup_ingredient_i;
   d. the recipe is not visible and several recipes are possible: when the teammate is predicted
      to fetch or put an ingredient, let it lead (its choice narrows the candidates); else guess:
      the first ingredient some candidate needs;
   e. a soup is coming and the teammate is not predicted to plate -> pickup_plate;
   f. otherwise place_on_counter, which cannot be done empty-handed and so makes self wait.
"""


def first_needed(state, key, skip, reach):
    for name, n in state[key].items():
        if n - (1 if skip == "pickup_" + name else 0) > 0 and ("pickup_" + name) in reach:
            return name
    return None


def any_ingredients_in_pots(state):
    return len([p for p in state["pot"] if p["count"] > 0]) > 0


def still_useful(state, skill):
    if skill is None or skill not in state["teammate_reachable"]:
        return False
    if skill == "pickup_plate":
        return state["soups_coming"] > 0
    if skill.startswith("pickup_ingredient_"):
        return state["ingredient_need"].get(skill[len("pickup_"):], 0) > 0
    return False


def predict_teammate(state):
    mate = state["holdings"]["teammate"]
    me = state["holdings"]["self"]
    reach = state["teammate_reachable"]
    if mate == "dish":
        return "deliver_dish"
    if mate == "plate":
        if any_ingredients_in_pots(state):
            return "plate_soup"
        return "place_on_counter"
    if mate.startswith("ingredient_"):
        if state["any_pot_not_full"] and ("put_" + mate + "_in_pot") in reach:
            return "put_" + mate + "_in_pot"
        return "place_on_counter"
    if mate != "empty":
        return "place_on_counter"
    inferred = state["teammate_last_inferred_skill"]
    if still_useful(state, inferred):
        return inferred
    if state["plates_needed"] > 0 and me not in ("plate", "dish") and "pickup_plate" in reach:
        return "pickup_plate"
    name = first_needed(state, "ingredient_need", None, reach)
    if name is not None:
        return "pickup_" + name
    if "pickup_plate" in reach:
        return "pickup_plate"
    return "place_on_counter"


def usable(state, skill):
    if skill in state["self_reachable"]:
        return skill
    return "place_on_counter"


def choose_own(state, mate_skill):
    me = state["holdings"]["self"]
    reach = state["self_reachable"]
    if me == "dish":
        return usable(state, "deliver_dish")
    if me == "plate":
        if any_ingredients_in_pots(state):
            return usable(state, "plate_soup")
        return "place_on_counter"
    if me.startswith("ingredient_"):
        if state["held_fits"]:
            return usable(state, "put_" + me + "_in_pot")
        return "place_on_counter"
    if me != "empty":
        return "place_on_counter"
    if state["any_pot_to_start"] and "start_cooking" in reach:
        return "start_cooking"
    plating = mate_skill in ("pickup_plate", "plate_soup")
    cooking = state["any_soup_cooking"] or state["any_soup_ready"]
    if cooking and state["plates_needed"] > 0 and not plating and "pickup_plate" in reach:
        return "pickup_plate"
    name = first_needed(state, "ingredient_sure", mate_skill, reach)
    if name is not None:
        return "pickup_" + name
    if not state["recipe_visible"] and len(state["candidate_recipes"]) > 1:
        leads = mate_skill.startswith("pickup_ingredient_") or mate_skill.startswith("put_ingredient_")
        if not leads:
            name = first_needed(state, "ingredient_need", mate_skill, reach)
            if name is not None:
                return "pickup_" + name
    if state["soups_coming"] > 0 and not plating and "pickup_plate" in reach:
        return "pickup_plate"
    return "place_on_counter"


def PredictTeammateThenPlan(state):
    mate_skill = predict_teammate(state)
    return mate_skill, choose_own(state, mate_skill)
