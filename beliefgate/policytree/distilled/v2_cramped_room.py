"""### FunctionDescription:
Name: PredictTeammateThenPlan
Layout: v2/cramped_room
Distilled from: overforge (DAgger iteration 0, 2400 labelled states, CART depth <= 6; partners bp-logistics-hi-hi-cramped_room, bp-cooking-hi-hi-cramped_room, bp-sourcing-hi-hi-cramped_room)
Outputs: (inferred_teammate_current_skill, self_action_now)

**Partner Inference Tree**
if teammate holds ingredient_0:
   if plates on counters > 0:
      if self's last skill is pickup_ingredient_0:
         -> place_on_counter
      else (not: self's last skill is pickup_ingredient_0):
         -> put_ingredient_0_in_pot
   else (plates on counters <= 0):
      -> put_ingredient_0_in_pot
else (not: teammate holds ingredient_0):
   if the teammate last completed pickup_plate:
      if self is player 1:
         -> plate_soup
      else (not: self is player 1):
         if empty counters > 3:
            if self's last skill is pickup_plate:
               -> plate_soup
            else (not: self's last skill is pickup_plate):
               if plates on counters > 0:
                  -> place_on_counter
               else (plates on counters <= 0):
                  -> plate_soup
         else (empty counters <= 3):
            -> plate_soup
   else (not: the teammate last completed pickup_plate):
      if teammate holds dish:
         -> deliver_dish
      else (not: teammate holds dish):
         if the teammate last completed place_on_counter:
            if self's last skill is plate_soup:
               if cook ticks left in pot 0 > 10:
                  -> pickup_plate
               else (cook ticks left in pot 0 <= 10):
                  -> pickup_ingredient_0
            else (not: self's last skill is plate_soup):
               -> pickup_plate
         else (not: the teammate last completed place_on_counter):
            -> pickup_ingredient_0

**Self Action Selection Tree**
if self holds plate:
   if self can reach a target of plate_soup now:
      -> plate_soup
   else (not: self can reach a target of plate_soup now):
      -> place_on_counter
else (not: self holds plate):
   if self holds an ingredient an open pot can take:
      -> put_ingredient_0_in_pot
   else (not: self holds an ingredient an open pot can take):
      if self holds ingredient_0:
         -> place_on_counter
      else (not: self holds ingredient_0):
         if self holds dish:
            -> deliver_dish
         else (not: self holds dish):
            if self's last skill is pickup_plate:
               -> pickup_plate
            else (not: self's last skill is pickup_plate):
               if soups coming beyond the teammate's plates and dishes > 0:
                  -> pickup_plate
               else (soups coming beyond the teammate's plates and dishes <= 0):
                  -> pickup_ingredient_0
"""


def predict_teammate(state):
    if state["holdings"]["teammate"] == "ingredient_0":
        if state["counter_counts"].get("plate", 0) > 0:
            if state["self_last_skill"] == "pickup_ingredient_0":
                return "place_on_counter"
            else:
                return "put_ingredient_0_in_pot"
        else:
            return "put_ingredient_0_in_pot"
    elif state["teammate_last_completed_skill"] == "pickup_plate":
        if state["self_player"] == 1:
            return "plate_soup"
        elif state["num_empty_counters"] > 3:
            if state["self_last_skill"] == "pickup_plate":
                return "plate_soup"
            elif state["counter_counts"].get("plate", 0) > 0:
                return "place_on_counter"
            else:
                return "plate_soup"
        else:
            return "plate_soup"
    elif state["holdings"]["teammate"] == "dish":
        return "deliver_dish"
    elif state["teammate_last_completed_skill"] == "place_on_counter":
        if state["self_last_skill"] == "plate_soup":
            if (state["pot"][0]["timers"] or 0) > 10:
                return "pickup_plate"
            else:
                return "pickup_ingredient_0"
        else:
            return "pickup_plate"
    else:
        return "pickup_ingredient_0"


def choose_own(state, mate_skill):
    if state["holdings"]["self"] == "plate":
        if "plate_soup" in state["self_reachable"]:
            return "plate_soup"
        else:
            return "place_on_counter"
    elif state["held_fits"]:
        return "put_ingredient_0_in_pot"
    elif state["holdings"]["self"] == "ingredient_0":
        return "place_on_counter"
    elif state["holdings"]["self"] == "dish":
        return "deliver_dish"
    elif state["self_last_skill"] == "pickup_plate":
        return "pickup_plate"
    elif state["plates_needed"] > 0:
        return "pickup_plate"
    else:
        return "pickup_ingredient_0"


def PredictTeammateThenPlan(state):
    mate_skill = predict_teammate(state)
    return mate_skill, choose_own(state, mate_skill)
