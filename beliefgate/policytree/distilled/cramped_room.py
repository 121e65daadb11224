"""### FunctionDescription:
Name: PredictTeammateThenPlan
Layout: cramped_room
Distilled from: overforge (DAgger iteration 0, 2400 labelled states, CART depth <= 6; partners balanced, onion-sourcer, plater)
Outputs: (inferred_teammate_current_skill, self_action_now)

**Partner Inference Tree**
if teammate holds dish:
   if self's last skill is fill_dish_with_soup:
      if dishs on counters > 0:
         if empty counters > 7:
            if cook ticks left in pot 0 > 4:
               -> fill_dish_with_soup
            else (cook ticks left in pot 0 <= 4):
               -> place_obj_on_counter
         else (empty counters <= 7):
            -> place_obj_on_counter
      else (dishs on counters <= 0):
         if empty counters > 8:
            if self is player 1:
               -> place_obj_on_counter
            else (not: self is player 1):
               -> fill_dish_with_soup
         else (empty counters <= 8):
            -> fill_dish_with_soup
   else (not: self's last skill is fill_dish_with_soup):
      if self's last skill is deliver_soup:
         -> place_obj_on_counter
      else (not: self's last skill is deliver_soup):
         -> fill_dish_with_soup
else (not: teammate holds dish):
   if the teammate last completed pickup_onion:
      if cook ticks left in pot 0 > 10:
         if empty counters > 4:
            -> place_obj_on_counter
         else (empty counters <= 4):
            -> put_onion_in_pot
      else (cook ticks left in pot 0 <= 10):
         if pot 0 is cooking:
            if empty counters > 4:
               -> place_obj_on_counter
            else (empty counters <= 4):
               -> put_onion_in_pot
         else (not: pot 0 is cooking):
            -> put_onion_in_pot
   else (not: the teammate last completed pickup_onion):
      if the teammate last completed fill_dish_with_soup:
         -> deliver_soup
      else (not: the teammate last completed fill_dish_with_soup):
         if cook ticks left in pot 0 > 13:
            if self's last skill is fill_dish_with_soup:
               if self is player 1:
                  -> pickup_onion
               else (not: self is player 1):
                  -> pickup_dish
            else (not: self's last skill is fill_dish_with_soup):
               if onions on counters > 2:
                  -> pickup_onion
               else (onions on counters <= 2):
                  -> pickup_dish
         else (cook ticks left in pot 0 <= 13):
            if onions in pot 0 > 1:
               if self holds onion:
                  -> pickup_dish
               else (not: self holds onion):
                  -> pickup_onion
            else (onions in pot 0 <= 1):
               -> pickup_onion

**Self Action Selection Tree**
if self holds dish:
   if self's last skill is place_obj_on_counter:
      -> place_obj_on_counter
   else (not: self's last skill is place_obj_on_counter):
      if self's last skill is pickup_dish:
         if the teammate is predicted to fill_dish_with_soup:
            -> place_obj_on_counter
         else (not: the teammate is predicted to fill_dish_with_soup):
            -> fill_dish_with_soup
      else (not: self's last skill is pickup_dish):
         if a pot is not full:
            -> place_obj_on_counter
         else (not: a pot is not full):
            -> fill_dish_with_soup
else (not: self holds dish):
   if self holds onion:
      if onions the idle pots still need beyond the teammate's > 0:
         -> put_onion_in_pot
      else (onions the idle pots still need beyond the teammate's <= 0):
         if self's last skill is put_onion_in_pot:
            -> put_onion_in_pot
         else (not: self's last skill is put_onion_in_pot):
            -> place_obj_on_counter
   else (not: self holds onion):
      if cook ticks left in pot 0 > 13:
         if pots cooking or ready beyond the one the teammate's dish is for > 0:
            -> pickup_dish
         else (pots cooking or ready beyond the one the teammate's dish is for <= 0):
            if self's last skill is pickup_dish:
               -> pickup_dish
            else (not: self's last skill is pickup_dish):
               -> pickup_onion
      else (cook ticks left in pot 0 <= 13):
         if self holds soup:
            -> deliver_soup
         else (not: self holds soup):
            if self's last skill is pickup_dish:
               -> pickup_dish
            else (not: self's last skill is pickup_dish):
               -> pickup_onion
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
    if state["holdings"]["teammate"] == "dish":
        if state["self_last_skill"] == "fill_dish_with_soup":
            if state["num_dish_counters"] > 0:
                if state["num_empty_counters"] > 7:
                    if (state["pot"][0]["timers"] or 0) > 4:
                        return "fill_dish_with_soup"
                    else:
                        return "place_obj_on_counter"
                else:
                    return "place_obj_on_counter"
            elif state["num_empty_counters"] > 8:
                if state["self_player"] == 1:
                    return "place_obj_on_counter"
                else:
                    return "fill_dish_with_soup"
            else:
                return "fill_dish_with_soup"
        elif state["self_last_skill"] == "deliver_soup":
            return "place_obj_on_counter"
        else:
            return "fill_dish_with_soup"
    elif state["teammate_last_completed_skill"] == "pickup_onion":
        if (state["pot"][0]["timers"] or 0) > 10:
            if state["num_empty_counters"] > 4:
                return "place_obj_on_counter"
            else:
                return "put_onion_in_pot"
        elif state["pot"][0]["state"] == "cooking":
            if state["num_empty_counters"] > 4:
                return "place_obj_on_counter"
            else:
                return "put_onion_in_pot"
        else:
            return "put_onion_in_pot"
    elif state["teammate_last_completed_skill"] == "fill_dish_with_soup":
        return "deliver_soup"
    elif (state["pot"][0]["timers"] or 0) > 13:
        if state["self_last_skill"] == "fill_dish_with_soup":
            if state["self_player"] == 1:
                return "pickup_onion"
            else:
                return "pickup_dish"
        elif state["num_onion_counters"] > 2:
            return "pickup_onion"
        else:
            return "pickup_dish"
    elif state["pot"][0]["count"] > 1:
        if state["holdings"]["self"] == "onion":
            return "pickup_dish"
        else:
            return "pickup_onion"
    else:
        return "pickup_onion"


def choose_own(state, mate_skill):
    if state["holdings"]["self"] == "dish":
        if state["self_last_skill"] == "place_obj_on_counter":
            return "place_obj_on_counter"
        elif state["self_last_skill"] == "pickup_dish":
            if mate_skill == "fill_dish_with_soup":
                return "place_obj_on_counter"
            else:
                return "fill_dish_with_soup"
        elif state["any_pot_not_full"]:
            return "place_obj_on_counter"
        else:
            return "fill_dish_with_soup"
    elif state["holdings"]["self"] == "onion":
        if onions_missing(state) - (state["holdings"]["teammate"] == "onion") > 0:
            return "put_onion_in_pot"
        elif state["self_last_skill"] == "put_onion_in_pot":
            return "put_onion_in_pot"
        else:
            return "place_obj_on_counter"
    elif (state["pot"][0]["timers"] or 0) > 13:
        if soups_coming(state) - (state["holdings"]["teammate"] == "dish") > 0:
            return "pickup_dish"
        elif state["self_last_skill"] == "pickup_dish":
            return "pickup_dish"
        else:
            return "pickup_onion"
    elif state["holdings"]["self"] == "soup":
        return "deliver_soup"
    elif state["self_last_skill"] == "pickup_dish":
        return "pickup_dish"
    else:
        return "pickup_onion"


def PredictTeammateThenPlan(state):
    mate_skill = predict_teammate(state)
    return mate_skill, choose_own(state, mate_skill)
