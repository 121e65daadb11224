"""### FunctionDescription:
Name: PredictTeammateThenPlan
Layout: forced_coordination
Distilled from: overforge (DAgger iteration 6, 16800 labelled states, CART depth <= 6; partners balanced, onion-sourcer, plater)
Outputs: (inferred_teammate_current_skill, self_action_now)

**Partner Inference Tree**
Seat 0:
   if the teammate last completed place_obj_on_counter:
      if onions the idle pots still need > 1:
         if onions on counters self can reach > 0:
            if pots cooking or ready beyond the one the teammate's dish is for > 0:
               if empty counters > 10:
                  if cook ticks left in pot 1 > 8:
                     -> pickup_dish
                  else (cook ticks left in pot 1 <= 8):
                     -> pickup_onion
               else (empty counters <= 10):
                  -> pickup_onion
            else (pots cooking or ready beyond the one the teammate's dish is for <= 0):
               -> pickup_onion
         else (onions on counters self can reach <= 0):
            if onions in pot 1 > 0:
               if empty counters both players can reach > 0:
                  if pots cooking or ready > 0:
                     -> pickup_onion
                  else (pots cooking or ready <= 0):
                     -> pickup_dish
               else (empty counters both players can reach <= 0):
                  -> pickup_onion
            else (onions in pot 1 <= 0):
               -> pickup_dish
      else (onions the idle pots still need <= 1):
         if self holds onion:
            -> pickup_dish
         else (not: self holds onion):
            if onions the idle pots still need beyond the teammate's > 0:
               if self's last skill is place_obj_on_counter:
                  if onions on counters > 1:
                     -> pickup_dish
                  else (onions on counters <= 1):
                     -> pickup_onion
               else (not: self's last skill is place_obj_on_counter):
                  -> pickup_onion
            else (onions the idle pots still need beyond the teammate's <= 0):
               if self's last skill is fill_dish_with_soup:
                  if dishs on counters > 1:
                     -> pickup_onion
                  else (dishs on counters <= 1):
                     -> pickup_dish
               else (not: self's last skill is fill_dish_with_soup):
                  -> pickup_dish
   else (not: the teammate last completed place_obj_on_counter):
      if onions the idle pots still need beyond the teammate's > 5:
         -> pickup_onion
      else (onions the idle pots still need beyond the teammate's <= 5):
         -> place_obj_on_counter
Seat 1:
   if the teammate last completed pickup_onion:
      -> put_onion_in_pot
   else (not: the teammate last completed pickup_onion):
      if onions in pot 1 > 2:
         if the teammate last completed pickup_dish:
            -> fill_dish_with_soup
         else (not: the teammate last completed pickup_dish):
            if teammate holds soup:
               -> deliver_soup
            else (not: teammate holds soup):
               if onions in pot 0 > 2:
                  -> pickup_dish
               else (onions in pot 0 <= 2):
                  if dishs on counters self can reach > 0:
                     -> pickup_dish
                  else (dishs on counters self can reach <= 0):
                     -> pickup_onion
      else (onions in pot 1 <= 2):
         if the teammate last completed fill_dish_with_soup:
            -> deliver_soup
         else (not: the teammate last completed fill_dish_with_soup):
            if the teammate last completed pickup_dish:
               -> fill_dish_with_soup
            else (not: the teammate last completed pickup_dish):
               if dishs on counters self can reach > 0:
                  if onions the idle pots still need > 3:
                     -> pickup_onion
                  else (onions the idle pots still need <= 3):
                     -> pickup_dish
               else (dishs on counters self can reach <= 0):
                  -> pickup_onion

**Self Action Selection Tree**
Seat 0:
   if self holds onion:
      if onions the idle pots still need beyond the teammate's > 0:
         if self's last skill is place_obj_on_counter:
            -> place_obj_on_counter
         else (not: self's last skill is place_obj_on_counter):
            -> put_onion_in_pot
      else (onions the idle pots still need beyond the teammate's <= 0):
         -> place_obj_on_counter
   else (not: self holds onion):
      if self holds dish:
         if pots cooking or ready beyond the one the teammate's dish is for > 0:
            if self's last skill is place_obj_on_counter:
               -> place_obj_on_counter
            else (not: self's last skill is place_obj_on_counter):
               -> fill_dish_with_soup
         else (pots cooking or ready beyond the one the teammate's dish is for <= 0):
            if self's last skill is fill_dish_with_soup:
               -> fill_dish_with_soup
            else (not: self's last skill is fill_dish_with_soup):
               -> place_obj_on_counter
      else (not: self holds dish):
         if onions on counters self can reach > 0:
            if self holds soup:
               -> deliver_soup
            else (not: self holds soup):
               if onions in pot 0 > 2:
                  if onions the idle pots still need beyond the teammate's > 0:
                     -> pickup_onion
                  else (onions the idle pots still need beyond the teammate's <= 0):
                     -> pickup_dish
               else (onions in pot 0 <= 2):
                  -> pickup_onion
         else (onions on counters self can reach <= 0):
            if self holds soup:
               -> deliver_soup
            else (not: self holds soup):
               -> pickup_dish
Seat 1:
   if self holds onion:
      -> place_obj_on_counter
   else (not: self holds onion):
      if a pot is not full:
         if self holds dish:
            -> place_obj_on_counter
         else (not: self holds dish):
            if onions in pot 1 > 1:
               if the teammate last completed fill_dish_with_soup:
                  -> pickup_dish
               else (not: the teammate last completed fill_dish_with_soup):
                  -> pickup_onion
            else (onions in pot 1 <= 1):
               -> pickup_onion
      else (not: a pot is not full):
         if self holds dish:
            -> place_obj_on_counter
         else (not: self holds dish):
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


def predict_teammate_seat0(state):
    if state["teammate_last_completed_skill"] == "place_obj_on_counter":
        if onions_missing(state) > 1:
            if state["reach_onion_counters"] > 0:
                if soups_coming(state) - (state["holdings"]["teammate"] == "dish") > 0:
                    if state["num_empty_counters"] > 10:
                        if (state["pot"][1]["timers"] or 0) > 8:
                            return "pickup_dish"
                        else:
                            return "pickup_onion"
                    else:
                        return "pickup_onion"
                else:
                    return "pickup_onion"
            elif state["pot"][1]["count"] > 0:
                if state["shared_empty_counters"] > 0:
                    if soups_coming(state) > 0:
                        return "pickup_onion"
                    else:
                        return "pickup_dish"
                else:
                    return "pickup_onion"
            else:
                return "pickup_dish"
        elif state["holdings"]["self"] == "onion":
            return "pickup_dish"
        elif onions_missing(state) - (state["holdings"]["teammate"] == "onion") > 0:
            if state["self_last_skill"] == "place_obj_on_counter":
                if state["num_onion_counters"] > 1:
                    return "pickup_dish"
                else:
                    return "pickup_onion"
            else:
                return "pickup_onion"
        elif state["self_last_skill"] == "fill_dish_with_soup":
            if state["num_dish_counters"] > 1:
                return "pickup_onion"
            else:
                return "pickup_dish"
        else:
            return "pickup_dish"
    elif onions_missing(state) - (state["holdings"]["teammate"] == "onion") > 5:
        return "pickup_onion"
    else:
        return "place_obj_on_counter"


def predict_teammate_seat1(state):
    if state["teammate_last_completed_skill"] == "pickup_onion":
        return "put_onion_in_pot"
    elif state["pot"][1]["count"] > 2:
        if state["teammate_last_completed_skill"] == "pickup_dish":
            return "fill_dish_with_soup"
        elif state["holdings"]["teammate"] == "soup":
            return "deliver_soup"
        elif state["pot"][0]["count"] > 2:
            return "pickup_dish"
        elif state["reach_dish_counters"] > 0:
            return "pickup_dish"
        else:
            return "pickup_onion"
    elif state["teammate_last_completed_skill"] == "fill_dish_with_soup":
        return "deliver_soup"
    elif state["teammate_last_completed_skill"] == "pickup_dish":
        return "fill_dish_with_soup"
    elif state["reach_dish_counters"] > 0:
        if onions_missing(state) > 3:
            return "pickup_onion"
        else:
            return "pickup_dish"
    else:
        return "pickup_onion"


def predict_teammate(state):
    if state["self_player"] == 0:
        return predict_teammate_seat0(state)
    return predict_teammate_seat1(state)


def choose_own_seat0(state, mate_skill):
    if state["holdings"]["self"] == "onion":
        if onions_missing(state) - (state["holdings"]["teammate"] == "onion") > 0:
            if state["self_last_skill"] == "place_obj_on_counter":
                return "place_obj_on_counter"
            else:
                return "put_onion_in_pot"
        else:
            return "place_obj_on_counter"
    elif state["holdings"]["self"] == "dish":
        if soups_coming(state) - (state["holdings"]["teammate"] == "dish") > 0:
            if state["self_last_skill"] == "place_obj_on_counter":
                return "place_obj_on_counter"
            else:
                return "fill_dish_with_soup"
        elif state["self_last_skill"] == "fill_dish_with_soup":
            return "fill_dish_with_soup"
        else:
            return "place_obj_on_counter"
    elif state["reach_onion_counters"] > 0:
        if state["holdings"]["self"] == "soup":
            return "deliver_soup"
        elif state["pot"][0]["count"] > 2:
            if onions_missing(state) - (state["holdings"]["teammate"] == "onion") > 0:
                return "pickup_onion"
            else:
                return "pickup_dish"
        else:
            return "pickup_onion"
    elif state["holdings"]["self"] == "soup":
        return "deliver_soup"
    else:
        return "pickup_dish"


def choose_own_seat1(state, mate_skill):
    if state["holdings"]["self"] == "onion":
        return "place_obj_on_counter"
    elif state["any_pot_not_full"]:
        if state["holdings"]["self"] == "dish":
            return "place_obj_on_counter"
        elif state["pot"][1]["count"] > 1:
            if state["teammate_last_completed_skill"] == "fill_dish_with_soup":
                return "pickup_dish"
            else:
                return "pickup_onion"
        else:
            return "pickup_onion"
    elif state["holdings"]["self"] == "dish":
        return "place_obj_on_counter"
    else:
        return "pickup_dish"


def choose_own(state, mate_skill):
    if state["self_player"] == 0:
        return choose_own_seat0(state, mate_skill)
    return choose_own_seat1(state, mate_skill)


def PredictTeammateThenPlan(state):
    mate_skill = predict_teammate(state)
    return mate_skill, choose_own(state, mate_skill)
