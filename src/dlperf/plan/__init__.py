"""Planning: the campaign plan before any run (plan: its run order and makespan, solved by
schedule's MILP), and the largest batch size or option value that fits (maxbatch's search)."""
