"""### FunctionDescription:
Name: PredictTeammateThenPlan
Layout: v2/coord_ring
Distilled from: overforge (DAgger iteration 5, 14400 labelled states, CART depth <= 6; partners bp-logistics-hi-hi-coord_ring, bp-cooking-hi-hi-coord_ring, bp-sourcing-hi-hi-coord_ring)
Outputs: (inferred_teammate_current_skill, self_action_now)

**Partner Inference Tree**
if teammate holds ingredient_0:
   -> put_ingredient_0_in_pot
else (not: teammate holds ingredient_0):
   if the teammate last completed pickup_plate:
      if cook ticks left in pot 0 > 10:
         if self is player 1:
            if ingredient_0 the pot needs for some candidate > 1:
               -> plate_soup
            else (ingredient_0 the pot needs for some candidate <= 1):
               -> place_on_counter
         else (not: self is player 1):
            -> plate_soup
      else (cook ticks left in pot 0 <= 10):
         -> plate_soup
   else (not: the teammate last completed pickup_plate):
      if the teammate last completed plate_soup:
         -> deliver_dish
      else (not: the teammate last completed plate_soup):
         if ingredient_0 the pot needs for some candidate > 2:
            if the teammate last completed deliver_dish:
               if ingredients in pot 0 > 1:
                  -> pickup_ingredient_0
               else (ingredients in pot 0 <= 1):
                  -> pickup_plate
            else (not: the teammate last completed deliver_dish):
               -> pickup_ingredient_0
         else (ingredient_0 the pot needs for some candidate <= 2):
            if ingredients in pot 1 > 2:
               -> pickup_plate
            else (ingredients in pot 1 <= 2):
               if self holds plate:
                  -> pickup_ingredient_0
               else (not: self holds plate):
                  -> pickup_plate

**Self Action Selection Tree**
if self holds an ingredient an open pot can take:
   -> put_ingredient_0_in_pot
else (not: self holds an ingredient an open pot can take):
   if self holds plate:
      -> plate_soup
   else (not: self holds plate):
      if teammate can reach a target of put_ingredient_0_in_pot now:
         if self holds dish:
            -> deliver_dish
         else (not: self holds dish):
            -> pickup_ingredient_0
      else (not: teammate can reach a target of put_ingredient_0_in_pot now):
         if self holds ingredient_0:
            -> place_on_counter
         else (not: self holds ingredient_0):
            if cook ticks left in pot 1 > 2:
               -> pickup_plate
            else (cook ticks left in pot 1 <= 2):
               if self is player 1:
                  -> pickup_plate
               else (not: self is player 1):
                  -> pickup_ingredient_0
"""


def predict_teammate(state):
    if state["holdings"]["teammate"] == "ingredient_0":
        return "put_ingredient_0_in_pot"
    elif state["teammate_last_completed_skill"] == "pickup_plate":
        if (state["pot"][0]["timers"] or 0) > 10:
            if state["self_player"] == 1:
                if state["ingredient_need"]["ingredient_0"] > 1:
                    return "plate_soup"
                else:
                    return "place_on_counter"
            else:
                return "plate_soup"
        else:
            return "plate_soup"
    elif state["teammate_last_completed_skill"] == "plate_soup":
        return "deliver_dish"
    elif state["ingredient_need"]["ingredient_0"] > 2:
        if state["teammate_last_completed_skill"] == "deliver_dish":
            if state["pot"][0]["count"] > 1:
                return "pickup_ingredient_0"
            else:
                return "pickup_plate"
        else:
            return "pickup_ingredient_0"
    elif state["pot"][1]["count"] > 2:
        return "pickup_plate"
    elif state["holdings"]["self"] == "plate":
        return "pickup_ingredient_0"
    else:
        return "pickup_plate"


def choose_own(state, mate_skill):
    if state["held_fits"]:
        return "put_ingredient_0_in_pot"
    elif state["holdings"]["self"] == "plate":
        return "plate_soup"
    elif "put_ingredient_0_in_pot" in state["teammate_reachable"]:
        if state["holdings"]["self"] == "dish":
            return "deliver_dish"
        else:
            return "pickup_ingredient_0"
    elif state["holdings"]["self"] == "ingredient_0":
        return "place_on_counter"
    elif (state["pot"][1]["timers"] or 0) > 2:
        return "pickup_plate"
    elif state["self_player"] == 1:
        return "pickup_plate"
    else:
        return "pickup_ingredient_0"


def PredictTeammateThenPlan(state):
    mate_skill = predict_teammate(state)
    return mate_skill, choose_own(state, mate_skill)
