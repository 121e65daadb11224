"""### FunctionDescription:
Name: PredictTeammateThenPlan
Layout: v2/demo_cook_simple
Distilled from: bayes-belief:full (DAgger iteration 2, 7200 labelled states, CART depth <= 6; partners v2-cook, v2-server)
Outputs: (inferred_teammate_current_skill, self_action_now)

**Partner Inference Tree**
if teammate holds plate:
   -> plate_soup
else (not: teammate holds plate):
   if the teammate last completed put_ingredient_0_in_pot:
      if teammate can reach a target of pickup_ingredient_2 now:
         -> pickup_ingredient_0
      else (not: teammate can reach a target of pickup_ingredient_2 now):
         if self can reach a target of put_ingredient_0_in_pot now:
            if self holds an ingredient an open pot can take:
               -> pickup_plate
            else (not: self holds an ingredient an open pot can take):
               -> pickup_ingredient_0
         else (not: self can reach a target of put_ingredient_0_in_pot now):
            -> pickup_plate
   else (not: the teammate last completed put_ingredient_0_in_pot):
      if the teammate last completed put_ingredient_1_in_pot:
         if self's last skill is pickup_ingredient_0:
            if self is player 1:
               -> pickup_ingredient_1
            else (not: self is player 1):
               -> pickup_plate
         else (not: self's last skill is pickup_ingredient_0):
            if ingredient_0s on counters > 0:
               -> pickup_ingredient_1
            else (ingredient_0s on counters <= 0):
               if self sees the recipe:
                  -> pickup_plate
               else (not: self sees the recipe):
                  -> pickup_ingredient_1
      else (not: the teammate last completed put_ingredient_1_in_pot):
         if the teammate last completed pickup_ingredient_0:
            -> put_ingredient_0_in_pot
         else (not: the teammate last completed pickup_ingredient_0):
            if teammate holds ingredient_1:
               -> put_ingredient_1_in_pot
            else (not: teammate holds ingredient_1):
               if teammate holds dish:
                  -> deliver_dish
               else (not: teammate holds dish):
                  -> pickup_plate

**Self Action Selection Tree**
if self holds ingredient_0:
   if ingredient_0 the pot needs for the believed recipe > 0:
      -> put_ingredient_0_in_pot
   else (ingredient_0 the pot needs for the believed recipe <= 0):
      if the teammate last completed pickup_ingredient_0:
         -> put_ingredient_0_in_pot
      else (not: the teammate last completed pickup_ingredient_0):
         -> place_on_counter
else (not: self holds ingredient_0):
   if self holds plate:
      -> plate_soup
   else (not: self holds plate):
      if soups coming beyond the teammate's plates and dishes > 0:
         if teammate can reach a target of deliver_dish now:
            -> pickup_ingredient_0
         else (not: teammate can reach a target of deliver_dish now):
            -> pickup_plate
      else (soups coming beyond the teammate's plates and dishes <= 0):
         if ingredient_1 the pot needs for the believed recipe > 0:
            if self holds an ingredient an open pot can take:
               -> put_ingredient_1_in_pot
            else (not: self holds an ingredient an open pot can take):
               if self holds dish:
                  -> deliver_dish
               else (not: self holds dish):
                  -> pickup_ingredient_1
         else (ingredient_1 the pot needs for the believed recipe <= 0):
            if self holds dish:
               -> deliver_dish
            else (not: self holds dish):
               -> pickup_ingredient_0
"""


def predict_teammate(state):
    if state["holdings"]["teammate"] == "plate":
        return "plate_soup"
    elif state["teammate_last_completed_skill"] == "put_ingredient_0_in_pot":
        if "pickup_ingredient_2" in state["teammate_reachable"]:
            return "pickup_ingredient_0"
        elif "put_ingredient_0_in_pot" in state["self_reachable"]:
            if state["held_fits"]:
                return "pickup_plate"
            else:
                return "pickup_ingredient_0"
        else:
            return "pickup_plate"
    elif state["teammate_last_completed_skill"] == "put_ingredient_1_in_pot":
        if state["self_last_skill"] == "pickup_ingredient_0":
            if state["self_player"] == 1:
                return "pickup_ingredient_1"
            else:
                return "pickup_plate"
        elif state["counter_counts"].get("ingredient_0", 0) > 0:
            return "pickup_ingredient_1"
        elif state["recipe_visible"]:
            return "pickup_plate"
        else:
            return "pickup_ingredient_1"
    elif state["teammate_last_completed_skill"] == "pickup_ingredient_0":
        return "put_ingredient_0_in_pot"
    elif state["holdings"]["teammate"] == "ingredient_1":
        return "put_ingredient_1_in_pot"
    elif state["holdings"]["teammate"] == "dish":
        return "deliver_dish"
    else:
        return "pickup_plate"


def choose_own(state, mate_skill):
    if state["holdings"]["self"] == "ingredient_0":
        if state["believed_need"]["ingredient_0"] > 0:
            return "put_ingredient_0_in_pot"
        elif state["teammate_last_completed_skill"] == "pickup_ingredient_0":
            return "put_ingredient_0_in_pot"
        else:
            return "place_on_counter"
    elif state["holdings"]["self"] == "plate":
        return "plate_soup"
    elif state["plates_needed"] > 0:
        if "deliver_dish" in state["teammate_reachable"]:
            return "pickup_ingredient_0"
        else:
            return "pickup_plate"
    elif state["believed_need"]["ingredient_1"] > 0:
        if state["held_fits"]:
            return "put_ingredient_1_in_pot"
        elif state["holdings"]["self"] == "dish":
            return "deliver_dish"
        else:
            return "pickup_ingredient_1"
    elif state["holdings"]["self"] == "dish":
        return "deliver_dish"
    else:
        return "pickup_ingredient_0"


def PredictTeammateThenPlan(state):
    mate_skill = predict_teammate(state)
    return mate_skill, choose_own(state, mate_skill)
