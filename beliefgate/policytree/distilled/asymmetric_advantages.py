"""### FunctionDescription:
Name: PredictTeammateThenPlan
Layout: asymmetric_advantages
Distilled from: overforge (DAgger iteration 0, 2400 labelled states, CART depth <= 6; partners balanced, onion-sourcer, plater)
Outputs: (inferred_teammate_current_skill, self_action_now)

**Partner Inference Tree**
if the teammate last completed pickup_dish:
   -> fill_dish_with_soup
else (not: the teammate last completed pickup_dish):
   if teammate holds onion:
      -> put_onion_in_pot
   else (not: teammate holds onion):
      if teammate holds soup:
         -> deliver_soup
      else (not: teammate holds soup):
         if the belief gate's most probable teammate skill is pickup_dish:
            -> pickup_dish
         else (not: the belief gate's most probable teammate skill is pickup_dish):
            -> pickup_onion

**Self Action Selection Tree**
if self holds dish:
   if self's last skill is place_obj_on_counter:
      -> place_obj_on_counter
   else (not: self's last skill is place_obj_on_counter):
      if self's last skill is pickup_dish:
         if dishs on counters self can reach > 0:
            if pot 0 is cooking:
               if dishs on counters > 1:
                  -> place_obj_on_counter
               else (dishs on counters <= 1):
                  -> fill_dish_with_soup
            else (not: pot 0 is cooking):
               -> place_obj_on_counter
         else (dishs on counters self can reach <= 0):
            -> fill_dish_with_soup
      else (not: self's last skill is pickup_dish):
         -> fill_dish_with_soup
else (not: self holds dish):
   if self holds onion:
      if cook ticks left in pot 1 > 13:
         -> place_obj_on_counter
      else (cook ticks left in pot 1 <= 13):
         -> put_onion_in_pot
   else (not: self holds onion):
      if self holds soup:
         -> deliver_soup
      else (not: self holds soup):
         if onions the idle pots still need beyond the teammate's > 0:
            if self's last skill is pickup_dish:
               -> pickup_dish
            else (not: self's last skill is pickup_dish):
               -> pickup_onion
         else (onions the idle pots still need beyond the teammate's <= 0):
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
    elif state["holdings"]["teammate"] == "onion":
        return "put_onion_in_pot"
    elif state["holdings"]["teammate"] == "soup":
        return "deliver_soup"
    elif state["teammate_last_inferred_skill"] == "pickup_dish":
        return "pickup_dish"
    else:
        return "pickup_onion"


def choose_own(state, mate_skill):
    if state["holdings"]["self"] == "dish":
        if state["self_last_skill"] == "place_obj_on_counter":
            return "place_obj_on_counter"
        elif state["self_last_skill"] == "pickup_dish":
            if state["reach_dish_counters"] > 0:
                if state["pot"][0]["state"] == "cooking":
                    if state["num_dish_counters"] > 1:
                        return "place_obj_on_counter"
                    else:
                        return "fill_dish_with_soup"
                else:
                    return "place_obj_on_counter"
            else:
                return "fill_dish_with_soup"
        else:
            return "fill_dish_with_soup"
    elif state["holdings"]["self"] == "onion":
        if (state["pot"][1]["timers"] or 0) > 13:
            return "place_obj_on_counter"
        else:
            return "put_onion_in_pot"
    elif state["holdings"]["self"] == "soup":
        return "deliver_soup"
    elif onions_missing(state) - (state["holdings"]["teammate"] == "onion") > 0:
        if state["self_last_skill"] == "pickup_dish":
            return "pickup_dish"
        else:
            return "pickup_onion"
    else:
        return "pickup_dish"


def PredictTeammateThenPlan(state):
    mate_skill = predict_teammate(state)
    return mate_skill, choose_own(state, mate_skill)
