import sys; sys.path.insert(0,'tests')
import dpstats
from conftest import make_regression
d = make_regression(n=200, p=6, seed=0)
for g in ["ptr", "none"]:
    fit = dpstats.dp_select("y ~ .", d, method="mistakes", s=2, bounds=(3,3), epsilon=2, random_state=0, guard=g)
    print(g, fit.curator.get("fallback_top_r", {}).keys(), "block_supports" in fit.curator)
