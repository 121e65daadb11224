"""### FunctionDescription:
Name: PredictTeammateThenPlan
Layout: counter_circuit
Distilled from: overforge (DAgger iteration 0, 2400 labelled states, CART depth <= 6; partners balanced, onion-sourcer, plater)
Outputs: (inferred_teammate_current_skill, self_action_now)

**Partner Inference Tree**
if the teammate last completed pickup_dish:
   -> fill_dish_with_soup
else (not: the teammate last completed pickup_dish):
   if the teammate last completed pickup_onion:
      if onions the idle pots still need beyond the teammate's > -1:
         if cook ticks left in pot 1 > 6:
            if self holds onion:
               -> place_obj_on_counter
            else (not: self holds onion):
               -> put_onion_in_pot
         else (cook ticks left in pot 1 <= 6):
            -> put_onion_in_pot
      else (onions the idle pots still need beyond the teammate's <= -1):
         -> place_obj_on_counter
   else (not: the teammate last completed pickup_onion):
      if teammate holds soup:
         -> deliver_soup
      else (not: teammate holds soup):
         if onions in pot 0 > 1:
            if onions on counters > 0:
               -> pickup_onion
            else (onions on counters <= 0):
               if self is player 1:
                  -> pickup_dish
               else (not: self is player 1):
                  -> pickup_onion
         else (onions in pot 0 <= 1):
            if self holds dish:
               if self is player 1:
                  -> pickup_dish
               else (not: self is player 1):
                  -> pickup_onion
            else (not: self holds dish):
               -> pickup_onion

**Self Action Selection Tree**
if self holds onion:
   if onions the idle pots still need beyond the teammate's > 0:
      -> put_onion_in_pot
   else (onions the idle pots still need beyond the teammate's <= 0):
      if self's last skill is put_onion_in_pot:
         -> put_onion_in_pot
      else (not: self's last skill is put_onion_in_pot):
         -> place_obj_on_counter
else (not: self holds onion):
   if self holds dish:
      -> fill_dish_with_soup
   else (not: self holds dish):
      if self holds soup:
         -> deliver_soup
      else (not: self holds soup):
         if self's last skill is pickup_dish:
            -> pickup_dish
         else (not: self's last skill is pickup_dish):
            if onions the idle pots still need beyond the teammate's > 0:
               -> pickup_onion
            else (onions the idle pots still need beyond the teammate's <= 0):
               if self's last skill is pickup_onion:
                  -> pickup_onion
               else (not: self's last skill is pickup_onion):
                  -> pickup_dish
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
    if state["teammate_last_completed_skill"] == "pickup_dish":
        return "fill_dish_with_soup"
    elif state["teammate_last_completed_skill"] == "pickup_onion":
        if onions_missing(state) - (state["holdings"]["teammate"] == "onion") > -1:
            if (state["pot"][1]["timers"] or 0) > 6:
                if state["holdings"]["self"] == "onion":
                    return "place_obj_on_counter"
                else:
                    return "put_onion_in_pot"
            else:
                return "put_onion_in_pot"
        else:
            return "place_obj_on_counter"
    elif state["holdings"]["teammate"] == "soup":
        return "deliver_soup"
    elif state["pot"][0]["count"] > 1:
        if state["num_onion_counters"] > 0:
            return "pickup_onion"
        elif state["self_player"] == 1:
            return "pickup_dish"
        else:
            return "pickup_onion"
    elif state["holdings"]["self"] == "dish":
        if state["self_player"] == 1:
            return "pickup_dish"
        else:
            return "pickup_onion"
    else:
        return "pickup_onion"


def choose_own(state, mate_skill):
    if state["holdings"]["self"] == "onion":
        if onions_missing(state) - (state["holdings"]["teammate"] == "onion") > 0:
            return "put_onion_in_pot"
        elif state["self_last_skill"] == "put_onion_in_pot":
            return "put_onion_in_pot"
        else:
            return "place_obj_on_counter"
    elif state["holdings"]["self"] == "dish":
        return "fill_dish_with_soup"
    elif state["holdings"]["self"] == "soup":
        return "deliver_soup"
    elif state["self_last_skill"] == "pickup_dish":
        return "pickup_dish"
    elif onions_missing(state) - (state["holdings"]["teammate"] == "onion") > 0:
        return "pickup_onion"
    elif state["self_last_skill"] == "pickup_onion":
        return "pickup_onion"
    else:
        return "pickup_dish"


def PredictTeammateThenPlan(state):
    mate_skill = predict_teammate(state)
    return mate_skill, choose_own(state, mate_skill)
