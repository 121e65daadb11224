"""### FunctionDescription:
Name: PredictTeammateThenPlan
Layout: coordination_ring
Distilled from: overforge (DAgger iteration 4, 12000 labelled states, CART depth <= 6; partners balanced, onion-sourcer, plater)
Outputs: (inferred_teammate_current_skill, self_action_now)

**Partner Inference Tree**
if the teammate last completed pickup_onion:
   if a pot is not full:
      if self's last skill is pickup_onion:
         -> put_onion_in_pot
      else (not: self's last skill is pickup_onion):
         if pots cooking or ready > 0:
            if self holds onion:
               if onions the idle pots still need > 1:
                  -> put_onion_in_pot
               else (onions the idle pots still need <= 1):
                  -> place_obj_on_counter
            else (not: self holds onion):
               -> put_onion_in_pot
         else (pots cooking or ready <= 0):
            -> put_onion_in_pot
   else (not: a pot is not full):
      -> place_obj_on_counter
else (not: the teammate last completed pickup_onion):
   if teammate holds dish:
      -> fill_dish_with_soup
   else (not: teammate holds dish):
      if teammate holds soup:
         -> deliver_soup
      else (not: teammate holds soup):
         if the teammate last completed deliver_soup:
            if onions in pot 1 > 1:
               if self's last skill is fill_dish_with_soup:
                  -> pickup_onion
               else (not: self's last skill is fill_dish_with_soup):
                  -> pickup_dish
            else (onions in pot 1 <= 1):
               -> pickup_onion
         else (not: the teammate last completed deliver_soup):
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
            if a pot is not full:
               if self's last skill is place_obj_on_counter:
                  -> pickup_dish
               else (not: self's last skill is place_obj_on_counter):
                  -> pickup_onion
            else (not: a pot is not full):
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
    if state["teammate_last_completed_skill"] == "pickup_onion":
        if state["any_pot_not_full"]:
            if state["self_last_skill"] == "pickup_onion":
                return "put_onion_in_pot"
            elif soups_coming(state) > 0:
                if state["holdings"]["self"] == "onion":
                    if onions_missing(state) > 1:
                        return "put_onion_in_pot"
                    else:
                        return "place_obj_on_counter"
                else:
                    return "put_onion_in_pot"
            else:
                return "put_onion_in_pot"
        else:
            return "place_obj_on_counter"
    elif state["holdings"]["teammate"] == "dish":
        return "fill_dish_with_soup"
    elif state["holdings"]["teammate"] == "soup":
        return "deliver_soup"
    elif state["teammate_last_completed_skill"] == "deliver_soup":
        if state["pot"][1]["count"] > 1:
            if state["self_last_skill"] == "fill_dish_with_soup":
                return "pickup_onion"
            else:
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
    elif state["any_pot_not_full"]:
        if state["self_last_skill"] == "place_obj_on_counter":
            return "pickup_dish"
        else:
            return "pickup_onion"
    elif state["self_last_skill"] == "pickup_onion":
        return "pickup_onion"
    else:
        return "pickup_dish"


def PredictTeammateThenPlan(state):
    mate_skill = predict_teammate(state)
    return mate_skill, choose_own(state, mate_skill)
