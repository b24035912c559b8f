"""Best subset selection: objective, exact enumeration, and (later) the certified MIP engine."""
