"""Memory upkeep in the background: the maintenance timer that runs consolidation and
forgetting outside every turn (the steps themselves are `mnemobot.memory.upkeep.maintenance`)."""
