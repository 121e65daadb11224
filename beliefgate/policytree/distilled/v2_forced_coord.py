"""### FunctionDescription:
Name: PredictTeammateThenPlan
Layout: v2/forced_coord
Distilled from: overforge (DAgger iteration 1, 4800 labelled states, CART depth <= 6; partners bp-logistics-hi-hi-forced_coord, bp-cooking-hi-hi-forced_coord, bp-sourcing-hi-hi-forced_coord)
Outputs: (inferred_teammate_current_skill, self_action_now)

**Partner Inference Tree**
if the teammate last completed place_on_counter:
   if cook ticks left in pot 0 > 8:
      -> pickup_plate
   else (cook ticks left in pot 0 <= 8):
      if ingredient_0 the pot needs for some candidate > 1:
         -> pickup_ingredient_0
      else (ingredient_0 the pot needs for some candidate <= 1):
         if ingredients in pot 1 > 1:
            if self holds ingredient_0:
               if ingredients in pot 0 > 1:
                  -> pickup_plate
               else (ingredients in pot 0 <= 1):
                  -> pickup_ingredient_0
            else (not: self holds ingredient_0):
               -> pickup_ingredient_0
         else (ingredients in pot 1 <= 1):
            if self's last skill is pickup_ingredient_0:
               -> pickup_plate
            else (not: self's last skill is pickup_ingredient_0):
               if self holds an ingredient an open pot can take:
                  -> pickup_plate
               else (not: self holds an ingredient an open pot can take):
                  -> pickup_ingredient_0
else (not: the teammate last completed place_on_counter):
   if teammate can reach a target of deliver_dish now:
      if the teammate last completed pickup_ingredient_0:
         -> put_ingredient_0_in_pot
      else (not: the teammate last completed pickup_ingredient_0):
         -> pickup_ingredient_0
   else (not: teammate can reach a target of deliver_dish now):
      if self can reach a target of plate_soup now:
         -> place_on_counter
      else (not: self can reach a target of plate_soup now):
         if the teammate last completed pickup_ingredient_0:
            -> place_on_counter
         else (not: the teammate last completed pickup_ingredient_0):
            -> pickup_ingredient_0

**Self Action Selection Tree**
if self holds ingredient_0:
   if self can reach a target of put_ingredient_0_in_pot now:
      -> put_ingredient_0_in_pot
   else (not: self can reach a target of put_ingredient_0_in_pot now):
      -> place_on_counter
else (not: self holds ingredient_0):
   if self can reach a target of pickup_ingredient_0 now:
      if self holds dish:
         -> deliver_dish
      else (not: self holds dish):
         if self holds plate:
            if self is player 1:
               -> place_on_counter
            else (not: self is player 1):
               -> plate_soup
         else (not: self holds plate):
            if soups coming beyond the teammate's plates and dishes > 1:
               if plates on counters > 0:
                  -> pickup_plate
               else (plates on counters <= 0):
                  -> pickup_ingredient_0
            else (soups coming beyond the teammate's plates and dishes <= 1):
               -> pickup_ingredient_0
   else (not: self can reach a target of pickup_ingredient_0 now):
      if self holds plate:
         -> plate_soup
      else (not: self holds plate):
         if ingredients in pot 0 > 1:
            -> pickup_plate
         else (ingredients in pot 0 <= 1):
            -> deliver_dish
"""


def predict_teammate(state):
    if state["teammate_last_completed_skill"] == "place_on_counter":
        if (state["pot"][0]["timers"] or 0) > 8:
            return "pickup_plate"
        elif state["ingredient_need"]["ingredient_0"] > 1:
            return "pickup_ingredient_0"
        elif state["pot"][1]["count"] > 1:
            if state["holdings"]["self"] == "ingredient_0":
                if state["pot"][0]["count"] > 1:
                    return "pickup_plate"
                else:
                    return "pickup_ingredient_0"
            else:
                return "pickup_ingredient_0"
        elif state["self_last_skill"] == "pickup_ingredient_0":
            return "pickup_plate"
        elif state["held_fits"]:
            return "pickup_plate"
        else:
            return "pickup_ingredient_0"
    elif "deliver_dish" in state["teammate_reachable"]:
        if state["teammate_last_completed_skill"] == "pickup_ingredient_0":
            return "put_ingredient_0_in_pot"
        else:
            return "pickup_ingredient_0"
    elif "plate_soup" in state["self_reachable"]:
        return "place_on_counter"
    elif state["teammate_last_completed_skill"] == "pickup_ingredient_0":
        return "place_on_counter"
    else:
        return "pickup_ingredient_0"


def choose_own(state, mate_skill):
    if state["holdings"]["self"] == "ingredient_0":
        if "put_ingredient_0_in_pot" in state["self_reachable"]:
            return "put_ingredient_0_in_pot"
        else:
            return "place_on_counter"
    elif "pickup_ingredient_0" in state["self_reachable"]:
        if state["holdings"]["self"] == "dish":
            return "deliver_dish"
        elif state["holdings"]["self"] == "plate":
            if state["self_player"] == 1:
                return "place_on_counter"
            else:
                return "plate_soup"
        elif state["plates_needed"] > 1:
            if state["counter_counts"].get("plate", 0) > 0:
                return "pickup_plate"
            else:
                return "pickup_ingredient_0"
        else:
            return "pickup_ingredient_0"
    elif state["holdings"]["self"] == "plate":
        return "plate_soup"
    elif state["pot"][0]["count"] > 1:
        return "pickup_plate"
    else:
        return "deliver_dish"


def PredictTeammateThenPlan(state):
    mate_skill = predict_teammate(state)
    return mate_skill, choose_own(state, mate_skill)
