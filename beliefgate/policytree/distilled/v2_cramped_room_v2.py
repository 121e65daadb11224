"""### FunctionDescription:
Name: PredictTeammateThenPlan
Layout: v2/cramped_room_v2
Distilled from: bayes-belief:full (DAgger iteration 7, 19200 labelled states, CART depth <= 6; partners v2-cook, v2-server)
Outputs: (inferred_teammate_current_skill, self_action_now)

**Partner Inference Tree**
if teammate holds plate:
   if self can reach a target of put_ingredient_1_in_pot now:
      -> place_on_counter
   else (not: self can reach a target of put_ingredient_1_in_pot now):
      if empty counters > 3:
         if self holds ingredient_1:
            -> plate_soup
         else (not: self holds ingredient_1):
            if the most probable recipe is 0-1-1:
               -> place_on_counter
            else (not: the most probable recipe is 0-1-1):
               if recipe 0-0-0 is still possible:
                  -> place_on_counter
               else (not: recipe 0-0-0 is still possible):
                  -> plate_soup
      else (empty counters <= 3):
         if self is player 1:
            -> plate_soup
         else (not: self is player 1):
            if plates on counters > 0:
               if the believed recipe's probability > 0.9796:
                  -> place_on_counter
               else (the believed recipe's probability <= 0.9796):
                  -> plate_soup
            else (plates on counters <= 0):
               if ingredient_1s on counters > 1:
                  -> place_on_counter
               else (ingredient_1s on counters <= 1):
                  -> plate_soup
else (not: teammate holds plate):
   if teammate holds ingredient_0:
      if ingredients in pot 0 > 1:
         if empty counters > 3:
            if self is player 1:
               if self's last skill is pickup_ingredient_1:
                  -> put_ingredient_0_in_pot
               else (not: self's last skill is pickup_ingredient_1):
                  -> place_on_counter
            else (not: self is player 1):
               -> put_ingredient_0_in_pot
         else (empty counters <= 3):
            -> put_ingredient_0_in_pot
      else (ingredients in pot 0 <= 1):
         -> put_ingredient_0_in_pot
   else (not: teammate holds ingredient_0):
      if the teammate last completed pickup_ingredient_1:
         if cook ticks left in pot 0 > 7:
            -> place_on_counter
         else (cook ticks left in pot 0 <= 7):
            if ingredients in pot 0 > 1:
               if self holds ingredient_0:
                  -> place_on_counter
               else (not: self holds ingredient_0):
                  -> put_ingredient_1_in_pot
            else (ingredients in pot 0 <= 1):
               -> put_ingredient_1_in_pot
      else (not: the teammate last completed pickup_ingredient_1):
         if teammate holds dish:
            -> deliver_dish
         else (not: teammate holds dish):
            if ingredient_1s on counters > 0:
               if the most probable recipe is 1-1-1:
                  -> pickup_ingredient_1
               else (not: the most probable recipe is 1-1-1):
                  -> pickup_ingredient_0
            else (ingredient_1s on counters <= 0):
               if the teammate last completed put_ingredient_1_in_pot:
                  -> pickup_ingredient_0
               else (not: the teammate last completed put_ingredient_1_in_pot):
                  -> pickup_plate

**Self Action Selection Tree**
if self holds plate:
   if self can reach a target of put_ingredient_1_in_pot now:
      -> place_on_counter
   else (not: self can reach a target of put_ingredient_1_in_pot now):
      -> plate_soup
else (not: self holds plate):
   if self holds ingredient_0:
      if pots cooking, ready or full > 0:
         -> place_on_counter
      else (pots cooking, ready or full <= 0):
         if self holds an ingredient an open pot can take:
            -> put_ingredient_0_in_pot
         else (not: self holds an ingredient an open pot can take):
            if the believed recipe's probability > 0.8816:
               -> place_on_counter
            else (the believed recipe's probability <= 0.8816):
               -> put_ingredient_0_in_pot
   else (not: self holds ingredient_0):
      if self holds an ingredient an open pot can take:
         if ingredient_0 the pot needs for the believed recipe > 2:
            -> place_on_counter
         else (ingredient_0 the pot needs for the believed recipe <= 2):
            -> put_ingredient_1_in_pot
      else (not: self holds an ingredient an open pot can take):
         if self can reach a target of put_ingredient_1_in_pot now:
            if self holds dish:
               -> deliver_dish
            else (not: self holds dish):
               if ingredient_0 the pot needs for the believed recipe > 0:
                  -> pickup_ingredient_0
               else (ingredient_0 the pot needs for the believed recipe <= 0):
                  -> pickup_ingredient_1
         else (not: self can reach a target of put_ingredient_1_in_pot now):
            if self holds ingredient_1:
               -> place_on_counter
            else (not: self holds ingredient_1):
               -> pickup_plate
"""


def predict_teammate(state):
    if state["holdings"]["teammate"] == "plate":
        if "put_ingredient_1_in_pot" in state["self_reachable"]:
            return "place_on_counter"
        elif state["num_empty_counters"] > 3:
            if state["holdings"]["self"] == "ingredient_1":
                return "plate_soup"
            elif state["believed_recipe"] == "0-1-1":
                return "place_on_counter"
            elif "0-0-0" in state["candidate_recipes"]:
                return "place_on_counter"
            else:
                return "plate_soup"
        elif state["self_player"] == 1:
            return "plate_soup"
        elif state["counter_counts"].get("plate", 0) > 0:
            if (state["believed_confidence"] or 0) > 0.9796:
                return "place_on_counter"
            else:
                return "plate_soup"
        elif state["counter_counts"].get("ingredient_1", 0) > 1:
            return "place_on_counter"
        else:
            return "plate_soup"
    elif state["holdings"]["teammate"] == "ingredient_0":
        if state["pot"][0]["count"] > 1:
            if state["num_empty_counters"] > 3:
                if state["self_player"] == 1:
                    if state["self_last_skill"] == "pickup_ingredient_1":
                        return "put_ingredient_0_in_pot"
                    else:
                        return "place_on_counter"
                else:
                    return "put_ingredient_0_in_pot"
            else:
                return "put_ingredient_0_in_pot"
        else:
            return "put_ingredient_0_in_pot"
    elif state["teammate_last_completed_skill"] == "pickup_ingredient_1":
        if (state["pot"][0]["timers"] or 0) > 7:
            return "place_on_counter"
        elif state["pot"][0]["count"] > 1:
            if state["holdings"]["self"] == "ingredient_0":
                return "place_on_counter"
            else:
                return "put_ingredient_1_in_pot"
        else:
            return "put_ingredient_1_in_pot"
    elif state["holdings"]["teammate"] == "dish":
        return "deliver_dish"
    elif state["counter_counts"].get("ingredient_1", 0) > 0:
        if state["believed_recipe"] == "1-1-1":
            return "pickup_ingredient_1"
        else:
            return "pickup_ingredient_0"
    elif state["teammate_last_completed_skill"] == "put_ingredient_1_in_pot":
        return "pickup_ingredient_0"
    else:
        return "pickup_plate"


def choose_own(state, mate_skill):
    if state["holdings"]["self"] == "plate":
        if "put_ingredient_1_in_pot" in state["self_reachable"]:
            return "place_on_counter"
        else:
            return "plate_soup"
    elif state["holdings"]["self"] == "ingredient_0":
        if state["soups_coming"] > 0:
            return "place_on_counter"
        elif state["held_fits"]:
            return "put_ingredient_0_in_pot"
        elif (state["believed_confidence"] or 0) > 0.8816:
            return "place_on_counter"
        else:
            return "put_ingredient_0_in_pot"
    elif state["held_fits"]:
        if state["believed_need"]["ingredient_0"] > 2:
            return "place_on_counter"
        else:
            return "put_ingredient_1_in_pot"
    elif "put_ingredient_1_in_pot" in state["self_reachable"]:
        if state["holdings"]["self"] == "dish":
            return "deliver_dish"
        elif state["believed_need"]["ingredient_0"] > 0:
            return "pickup_ingredient_0"
        else:
            return "pickup_ingredient_1"
    elif state["holdings"]["self"] == "ingredient_1":
        return "place_on_counter"
    else:
        return "pickup_plate"


def PredictTeammateThenPlan(state):
    mate_skill = predict_teammate(state)
    return mate_skill, choose_own(state, mate_skill)
